"""`run --dry-run` / `plan`: the embed calls a run will make, worked out from the params without embedding anything.

The plan's exactness against a real run is asserted in test_run_bill.py; here: what each notebook's row says for
given params, the batching arithmetic per provider, the command's words and errors, and the runner's prefetch.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import shutil

import nbformat
import pytest
from corpus import SAMPLE_COLLECTION

from retrieval_lib.cli.commands.plan import lines, plan_run
from retrieval_lib.cli.main import main
from retrieval_lib.config import PROJECT_ROOT, load_settings
from retrieval_lib.errors import EmbeddingUnavailableError
from retrieval_lib.params import load_golden_set, load_query_sets
from retrieval_lib.workbook.runner import list_notebooks, load_profile, run_workbook

DEMO = load_profile(PROJECT_ROOT / "params" / "demo.yaml").values


def _settings(provider: str):
    base = dataclasses.replace(load_settings(), collection_name=SAMPLE_COLLECTION)
    if provider == "cohere":
        return dataclasses.replace(base, embedding_provider="cohere", embedding_model="embed-english-v3.0")
    return base


@pytest.mark.parametrize("provider", ["local", "cohere"])
def test_each_notebook_row_follows_from_the_params(book, provider):
    plan = plan_run(DEMO, list_notebooks(None), _settings(provider), store=book.store)
    rows = {n.notebook[:2]: n for n in plan.notebooks}
    ceil = (lambda n: math.ceil(n / 96)) if provider == "cohere" else (lambda n: 1 if n else 0)
    q, r = len(DEMO["consistency_queries"]), DEMO["repeats"]
    assert rows["04"].calls == q * r + ceil(q) + q + ceil(30)  # 30 language questions in languages.yaml
    sets = load_query_sets(PROJECT_ROOT / DEMO["query_sets"])
    n = len(sets["in_domain"]) + len(sets["out_of_domain"])
    assert rows["06"].calls == 1 + n * DEMO["latency_rounds"] + DEMO["concurrent_queries"]
    golden = load_golden_set(PROJECT_ROOT / DEMO["golden_set"])
    g = len(golden.queries)
    assert rows["08"].calls == (DEMO["api_latency_rounds"] + 1) * g
    assert rows["08"].service_calls == g + 2 + g * DEMO["api_repeats"] + sum(DEMO["api_concurrency"]) + \
        DEMO["api_latency_rounds"] * g
    assert rows["09"].calls == ceil(64) and len(rows["09"].queries) == 64
    assert all(rows[k].calls == 0 and not rows[k].queries for k in ("07", "11", "14"))
    # every cache-reading notebook's queries are prefetched once, and the notebooks send none themselves
    assert set(DEMO["queries"]) | {q.query for q in golden.queries} | set(sets["in_domain"]) <= set(plan.prefetch)
    assert len(plan.prefetch) == len(set(plan.prefetch))
    assert all(rows[k].calls == 0 for k in ("01", "02", "03", "05", "10", "12", "13"))
    assert plan.prefetch_calls == ceil(len(plan.prefetch))
    assert plan.total_calls == plan.prefetch_calls + sum(x.calls for x in plan.notebooks)
    # 03's heading queries come from the collection: every file's first heading that is not its title
    assert len(rows["03"].queries) > len(golden.queries) + 100
    text = "\n".join(lines(plan))
    assert f"total: {plan.total_calls} calls" in text and "04_consistency" in text
    assert ("an API bill" if provider == "cohere" else "no API bill") in text


def test_a_notebook_the_plan_does_not_know_is_said_so(book, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("top_k = 5", metadata={"tags": ["parameters"]})]
    nbformat.write(nb, tmp_path / "15_custom.ipynb")
    plan = plan_run({}, [tmp_path / "15_custom.ipynb"], _settings("local"), store=book.store)
    assert not plan.notebooks[0].known and plan.prefetch == []
    assert any("not planned (calls unknown): 15_custom" in line for line in lines(plan))


def test_the_dry_run_prints_the_plan_and_runs_nothing(book, tmp_path, monkeypatch, capsys):
    shutil.copytree(book.folder, tmp_path / "store")
    monkeypatch.setenv("QDRANT_PATH", str(tmp_path / "store"))
    monkeypatch.setenv("QDRANT_COLLECTION_NAME", SAMPLE_COLLECTION)
    for name in ("QDRANT_URL", "QDRANT_ENGINE", "EMBEDDING_PROVIDER", "EMBEDDING_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["run", "--dry-run", "--notebooks", "01,04", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "01_query" in out and "04_consistency" in out and "06_latency" not in out
    assert not (tmp_path / "out").exists()
    assert main(["plan", "--json", "--notebooks", "05"]) == 0
    data = json.loads(capsys.readouterr().out)
    golden = load_golden_set(PROJECT_ROOT / DEMO["golden_set"])
    texts = {q.query for q in golden.queries + golden.extra_queries} | {n.query for n in golden.negatives}
    assert data["prefetch"] == {"queries": len(texts), "calls": 1}  # 05 asks the golden set: one local encode
    assert [n["notebook"] for n in data["notebooks"]] == ["05_golden_set"]
    assert main(["run", "--dry-run", "--params", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err


def test_a_failed_prefetch_is_recorded_and_the_run_goes_on(tmp_path):
    folder = tmp_path / "nb"
    folder.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "python3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell('run_dir = ""', metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("from retrieval_lib.workbook.report import open_run\n"
                                          "print(open_run('01_trivial', run_dir, title='trivial').finish())")]
    nbformat.write(nb, folder / "01_trivial.ipynb")
    (tmp_path / "p.yaml").write_text("profile: t\n", encoding="utf-8")

    def failing(params, notebooks, settings):
        raise EmbeddingUnavailableError("the embedding service answered 503 after 3 attempts; retry later",
                                        provider="cohere", model="embed-english-v3.0", status=503, attempts=3)

    result = run_workbook(tmp_path / "p.yaml", out_dir=tmp_path / "out", progress=False, notebook_dir=folder,
                          prefetch=failing)
    summary = json.loads((result.run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["status"] == "complete" and result.outcomes[0].status != "error"
    assert summary["embedding"]["prefetch"]["error"].startswith("EmbeddingUnavailableError: the embedding service")
    assert summary["embedding"]["prefetch"]["calls"] == 0
    assert "prefetch 0 for the run's 0 distinct queries (failed: EmbeddingUnavailableError" in \
        html.unescape((result.run_dir / "index.html").read_text(encoding="utf-8"))


def test_a_retriever_set_only_in_the_environment_plans_the_side_by_side_queries(monkeypatch, capsys):
    # one rule (retrievers.team_retriever) for the plan and the kernel: RETRIEVER_SPEC alone names the team's retriever
    side = [nb for nb in list_notebooks(None) if nb.stem.endswith("side_by_side")]
    golden = load_golden_set(PROJECT_ROOT / DEMO["golden_set"])
    asked = [q.query for q in golden.queries + golden.extra_queries]
    monkeypatch.delenv("RETRIEVER_SPEC", raising=False)
    assert plan_run(DEMO, side, load_settings()).notebooks[0].queries == []
    monkeypatch.setenv("RETRIEVER_SPEC", '{"kind": "http", "url": "http://127.0.0.1:9/search"}')
    assert plan_run(DEMO, side, load_settings()).notebooks[0].queries == asked
    # a profile that names the collection decides over the environment, as in a run (its RETRIEVER_SPEC wins)
    assert plan_run({**DEMO, "retriever": {"kind": "collection"}}, side, load_settings()).notebooks[0].queries == []
    monkeypatch.delenv("QDRANT_URL", raising=False)
    assert main(["plan", "--json", "--notebooks", side[0].stem[:2]]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["notebooks"][0]["queries"] == len(asked) and data["prefetch"]["queries"] == len(set(asked))
