"""Text from a collection is shown as text in every figure: never parsed as mathtext.

A book about code holds ``$`` (``value="${mass}"`` in a URDF/xacro block), and so do the titles, file names and
queries drafted from it. Matplotlib reads a label with two dollar signs as mathtext and raises a ValueError when it
draws the figure, which stopped notebook 05 on a real team's book. The rule is one function
(:func:`retrieval_lib.workbook.plots.plain_text`) that :meth:`NotebookReport.figure` applies to every figure.

Fast tests draw every kind of text a figure holds and every shared figure kind with hostile labels; a slow test
drafts and runs the figure notebooks over a collection whose titles and texts are full of ``$ ${x} \\ _ ^``.
"""

from __future__ import annotations

import json
import os
import subprocess

import matplotlib
import pytest
from corpus import DOCS
from fakes.proxies import direct_env
from shapes import build, md5_text_url_title
from warm_cli import run_cli

from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.stores import VectorStore
from retrieval_lib.workbook import plots
from retrieval_lib.workbook.report import NotebookReport

matplotlib.use("Agg")

#: What the issue names: a dollar pair, a xacro substitution, a backslash, a subscript and a superscript mark.
HOSTILE = ['<inertial mass="${mass}" ixx="${ixx}"/>', "${x} and $y$", "C:\\path\\to", "a_b_c", "x^2 ^ y", "$",
           "cost $5 or $6"]


def _every_kind_of_text():
    import matplotlib.pyplot as plt

    fig, (ax, other) = plt.subplots(1, 2)
    ax.barh(HOSTILE, range(len(HOSTILE)), label=HOSTILE[0])  # categorical tick labels from the data
    ax.set_title(HOSTILE[1])
    ax.set_xlabel(HOSTILE[2])
    ax.set_ylabel(HOSTILE[3])
    ax.annotate(HOSTILE[4], (1, 1))
    ax.text(0.5, 0.5, HOSTILE[6])
    ax.legend()
    other.plot([0, 1], [0, 1], label=HOSTILE[1])
    other.set_xticks([0, 1], labels=HOSTILE[:2])
    other.legend(title=HOSTILE[0])
    fig.suptitle(HOSTILE[1])
    return fig


def test_a_figure_with_dollar_signs_fails_to_draw_without_the_rule(tmp_path):
    """The fault is real: the same figure, drawn as matplotlib draws by default, raises."""
    fig = _every_kind_of_text()
    with pytest.raises(ValueError, match=r"\$"):
        fig.savefig(tmp_path / "raw.png")


def test_report_figure_draws_every_kind_of_text_as_written(tmp_path):
    from matplotlib.text import Text

    report = NotebookReport("99_hostile", "hostile labels", tmp_path)
    fig = _every_kind_of_text()
    path = report.figure(fig, "every_text", show=False)
    assert path.stat().st_size > 1000
    shown = {t.get_text() for t in fig.findobj(Text)}
    assert {HOSTILE[0], HOSTILE[1], HOSTILE[2], HOSTILE[6]} <= shown  # the labels kept their words
    assert not [t for t in fig.findobj(Text) if t.get_parse_math()]


@pytest.mark.parametrize("kind", ["score_histograms", "share_curves", "horizontal_bars", "annotated_heatmap",
                                  "threshold_bars", "latency_boxes", "count_histogram"])
def test_every_shared_figure_kind_takes_hostile_labels(kind, tmp_path):
    h = HOSTILE
    figures = {
        "score_histograms": lambda: plots.score_histograms([(h[0], {h[1]: [0.2, 0.4], h[2]: [0.6]})],
                                                           threshold=0.5, threshold_label=h[3]),
        "share_curves": lambda: plots.share_curves([0.2, 0.6], {h[0]: [1.0, 0.4], h[1]: [0.6, 0.1]}, threshold=0.5,
                                                   threshold_label=h[2], marker=0.4, marker_label=h[6]),
        "horizontal_bars": lambda: plots.horizontal_bars(h, [float(i) for i in range(len(h))], title=h[1],
                                                         xlabel=h[2]),
        "annotated_heatmap": lambda: plots.annotated_heatmap([[0.1, 0.9], [0.5, 0.4]], h[:2], h[2:4],
                                                             texts=[[h[0], h[1]], [h[4], h[6]]], title=h[6]),
        "threshold_bars": lambda: plots.threshold_bars([plots.BarPanel(h[0], h[:3], [0.1, 0.5, 0.9], [0.5] * 3,
                                                                       [True, False, True])]),
        "latency_boxes": lambda: plots.latency_boxes({h[0]: [1.0, 2.0, 3.0], h[1]: [2.0, 3.0]},
                                                     {h[4]: 2.0, h[6]: 3.0}, target=2.5, target_label=h[1], title=h[0]),
        "count_histogram": lambda: plots.count_histogram([1, 2, 2, 3, 10], marks={h[0]: 2.0}, xlabel=h[1],
                                                         title=h[6]),
    }
    try:
        fig = figures[kind]()
    except TypeError as err:  # a signature this test guessed wrong must not pass silently
        pytest.fail(f"plots.{kind}: {err}")
    path = NotebookReport("99_hostile", "hostile labels", tmp_path).figure(fig, kind, show=False)
    assert path.exists()


def test_tables_in_a_kernel_do_not_typeset_dollars():
    """JupyterLab typesets ``$...$`` in HTML outputs: a run's tables are marked to be left alone."""
    import pandas as pd

    from retrieval_lib.workbook.report import _display_for_reports

    with pd.option_context("display.html.use_mathjax", True, "styler.html.mathjax", True):
        _display_for_reports()
        html = pd.DataFrame({"content": [HOSTILE[0] + " " + HOSTILE[1]]})._repr_html_()
        assert "tex2jax_ignore" in html
        assert "${mass}" in html and "$y$" in html


# --------------------------------------------------------------------------- the notebooks, end to end

def _hostile(f: int, i: int, text: str, doc: dict) -> tuple:
    """A team's md5/text/url/title collection whose titles and texts are full of the characters mathtext reads."""
    point_id, payload = md5_text_url_title(f, i, text, doc)
    payload["title"] = f'{doc["title"]} (mass="${{mass}}" x_{i}^2 ${{ixx}})'
    payload["text"] = f'{text} <inertial mass="${{mass}}" ixx="${{ixx}}"/> costs $5 or $6 \\ a_b^c'
    return point_id, payload


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_cli(args, env=env, timeout=900, cwd=PROJECT_ROOT)


@pytest.mark.slow
def test_drafted_queries_and_titles_with_dollars_run_the_notebooks_that_plot_them(tmp_path, embedder):
    folder = tmp_path / "store"
    store = VectorStore.at_path(folder)
    build(store, "dollars", _hostile, embedder.embed_documents([d["content"] for d in DOCS]))
    store.close()
    env = {**direct_env(os.environ), "QDRANT_PATH": str(folder), "QDRANT_COLLECTION_NAME": "dollars"}
    for name in ("QDRANT_URL", "DATABASE_URL", "EMBEDDING_PROVIDER", "EMBEDDING_MODEL", "PAYLOAD_FIELDS"):
        env.pop(name, None)
    profile = tmp_path / "dollars.yaml"
    assert _cli("inspect", "--write-profile", str(profile), env=env).returncode == 0
    drafted = _cli("draft", "--out", str(tmp_path / "draft"), "--profile", str(profile), "-q", env=env)
    assert drafted.returncode == 0, drafted.stderr
    golden = (tmp_path / "draft" / "golden.yaml").read_text(encoding="utf-8")
    assert "${mass}" in golden  # the drafted queries carry the titles' dollars into the figures
    run = _cli("run", "--params", str(tmp_path / "draft" / "profile.yaml"), "--notebooks", "03,05",
               "--out", str(tmp_path / "out"), "-q", env=env)
    assert run.returncode in (0, 1), run.stderr
    summary = json.loads(next((tmp_path / "out").glob("*/summary.json")).read_text())
    errors = [(o["notebook"], o.get("error")) for o in summary["outcomes"] if o["status"] == "error"]
    assert not errors
    figures = list((tmp_path / "out").glob("*/figures/*.png"))
    assert len(figures) >= 2


def test_every_figure_builder_of_the_package_draws_plain_text():
    """Every function of the package that builds a figure carries :func:`plots.plain_figure`: a new check's figure
    cannot forget the rule. A builder is a public function of a check module whose name ends in ``figure``, or one of
    the shared figure kinds."""
    import importlib
    import inspect
    import pkgutil

    import retrieval_lib.checks as checks

    builders = [getattr(plots, name) for name in plots.__all__ if inspect.isfunction(getattr(plots, name))
                and name not in ("plain_text", "plain_figure")]
    for info in pkgutil.walk_packages(checks.__path__, "retrieval_lib.checks."):
        module = importlib.import_module(info.name)
        builders += [fn for name, fn in vars(module).items() if inspect.isfunction(fn) and name.endswith("figure")
                     and fn.__module__ == module.__name__ and not name.startswith("_")]
    assert len(builders) >= 20
    bare = [f"{fn.__module__}.{fn.__name__}" for fn in builders if not getattr(fn, "plain_figure", False)]
    assert not bare, f"figure builders without @plain_figure: {bare}"
