"""The shared figure kinds (retrieval_lib.workbook.plots): what each draws from plain data."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pytest
from matplotlib.colors import to_rgba

from retrieval_lib.workbook import plots


@pytest.fixture()
def close_all():
    yield
    plt.close("all")


def legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_score_histograms_one_panel_per_entry_nan_left_out_but_counted(close_all):
    fig = plots.score_histograms([("top-1", {"in": [0.9, 0.8, math.nan], "out": [0.1]}), ("all", {"in": [0.5]})],
                                 threshold=0.35, threshold_label="candidate_threshold")
    left, right = fig.axes
    assert (left.get_title(), right.get_title()) == ("top-1", "all")
    assert legend(left) == ["in (n=3)", "out (n=1)", "candidate_threshold = 0.35"]
    heights = [p.get_height() for p in left.patches]
    assert sum(heights) == 3  # two finite in-domain scores + one out-of-domain; the NaN draws no bar
    assert left.get_xlim() == (0.0, 1.0)
    no_line = plots.score_histograms([("only", {"in": [0.5]})])
    assert legend(no_line.axes[0]) == ["in (n=1)"]


def test_share_curves_draw_each_group_and_the_optional_marks(close_all):
    fig = plots.share_curves([0.0, 0.5, 1.0], {"kept": [1.0, 0.5, 0.0], "ood": [1.0, 0.0, 0.0]}, threshold=0.3,
                             band=(0.2, 0.4), band_label="gap", marker=0.3, marker_label="recommended")
    ax = fig.axes[0]
    assert legend(ax) == ["kept", "ood", "threshold = 0.3", "gap", "recommended = 0.300"]
    assert list(ax.lines[0].get_ydata()) == [1.0, 0.5, 0.0]
    plain = plots.share_curves([0.0, 1.0], {"kept": [1.0, 0.0]})
    assert legend(plain.axes[0]) == ["kept"]


def test_horizontal_bars_keep_order_colours_notes_and_reference(close_all):
    fig = plots.horizontal_bars(["a", "b"], [0.9, 0.2], colours=["tab:blue", "tab:red"], notes=["9/10", "2/10"],
                                xlim=(0, 1.1), reference=0.5, reference_label="minimum", title="rates")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert ax.yaxis_inverted()  # the first label on top
    assert [p.get_facecolor() for p in ax.patches] == [to_rgba("tab:blue"), to_rgba("tab:red")]
    assert [t.get_text() for t in ax.texts] == ["9/10", "2/10"]
    assert legend(ax) == ["minimum"] and ax.get_xlim() == (0.0, 1.1) and ax.get_title() == "rates"
    single = plots.horizontal_bars(["x"], [3], colours="tab:green")
    assert single.axes[0].patches[0].get_facecolor() == to_rgba("tab:green")
    assert single.axes[0].get_legend() is None


def test_annotated_heatmap_prints_values_or_given_texts(close_all):
    fig = plots.annotated_heatmap([[1.0, 0.25], [math.nan, 0.5]], ["r1", "r2"], ["c1", "c2"], title="t",
                                  colorbar_label="rbo")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["1.00", "0.25", "", "0.50"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["r1", "r2"]
    assert len(fig.axes) == 2  # the matrix and its colour bar
    texts = plots.annotated_heatmap([[1.0]], ["r"], ["c"], texts=[["="]])
    assert [t.get_text() for t in texts.axes[0].texts] == ["="]
