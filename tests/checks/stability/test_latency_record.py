"""Notebook 06's package side: warm-up, the backend note, gates/findings/metrics and verdict lines, table, figure."""

from __future__ import annotations

import pytest
from fakes.embedders import FakeEmbedder
from qdrant_client import models

from retrieval_lib import Retriever, VectorStore
from retrieval_lib.checks.stability import latency
from retrieval_lib.checks.stability.latency import ConcurrentRun, TimedSearch, Warmup
from retrieval_lib.errors import ValidationError
from retrieval_lib.workbook.report import NotebookReport

RANK_A = (("1", 0.9), ("2", 0.5))
RANK_B = (("2", 0.9), ("1", 0.5))
NOTE = "the store is a test double"


def timed(query: str, ms: float, *, round_no: int = 1, ranking: tuple = RANK_A) -> TimedSearch:
    return TimedSearch(query=query, round=round_no, embed_ms=ms * 0.9, search_ms=ms * 0.1, execution_time_ms=ms,
                       call_ms=ms, ranking=ranking)


def samples(call_ms: list[float]) -> list[TimedSearch]:
    """One query per call, one round, the same ranking for every query."""
    return [timed(f"q{i}", ms) for i, ms in enumerate(call_ms)]


def concurrent(**changes) -> ConcurrentRun:
    base = {"submitted": 10, "concurrency": 2, "completed": 10, "errors": 0, "timed_out": 0, "compared": 10,
            "mismatched": [], "wall_s": 0.5, "timeout_s": 60.0, "call_ms": [float(i) for i in range(1, 11)]}
    return ConcurrentRun(**(base | changes))


def record(tmp_path, timed: list[TimedSearch], run: ConcurrentRun, target: float = 1500, *,
           answered_by: str | None = None):
    """The result of notebook 06 over these timings, recorded; with the gates' verdict lines."""
    queries = list(dict.fromkeys(s.query for s in timed))
    result = latency.Latency(queries, len(queries), 1, timed, run, Warmup(setup_ms=900.0, warmup_ms=40.0),
                             p95_target_ms=target, note=NOTE, answered_by=answered_by)
    report = NotebookReport("06_test", "t", tmp_path)
    result.record(report, show=False)
    return report, "\n".join(str(g) for g in report.gates)


def test_a_fast_clean_run_passes_and_returns_one_verdict_line_per_gate(tmp_path):
    report, text = record(tmp_path, samples([10.0] * 19 + [30.0]), concurrent())
    assert [(g.name, g.passed) for g in report.gates] == [
        ("p95 latency <= 1500 ms", True), ("concurrent run has zero errors", True),
        ("concurrent rankings identical to sequential", True)]
    assert text.splitlines()[1] == "[PASS] concurrent run has zero errors: 10/10 completed, 0 errors, 0 timed out " \
                                   "(2 threads, limit 60 s)"
    assert report.tables == ["tables/06_test_percentiles_sequential.csv", "tables/06_test_percentiles_concurrent.csv"]
    assert (tmp_path / "figures" / "06_test_latency.png").is_file()
    assert report.gates[0].value == pytest.approx(11.0)  # linear p95 of nineteen 10s and one 30
    assert report.gates[0].parameter == "latency_p95_target_ms" and report.gates[0].rule == "<="
    assert report.findings[-1] == NOTE
    assert report.findings[0].startswith("one at a time (20 calls): call_ms p50 10.0 ms, p95 11.0 ms")
    assert "100.0% of calls under 2 s" in report.findings[0] and "embedding takes 90%" in report.findings[1]
    assert "store open 900 ms, first search (loads the model on first use) 40 ms" in report.findings[3]
    m = report.metrics
    assert m["sequential_calls"] == 20 and m["sequential_throughput_qps"] == pytest.approx(20 / 0.22)
    assert m["concurrent_call_ms_max"] == 10.0 and m["concurrent_call_ms_p50"] == pytest.approx(5.5)
    assert m["rankings_stable_across_rounds"] is True and m["rankings_identical"] is True and report.passed


def test_a_slow_p95_fails_the_latency_gate_only(tmp_path):
    report, text = record(tmp_path, samples([2500.0] * 4), concurrent())
    assert [g.passed for g in report.gates] == [False, True, True]
    assert "p95 ABOVE the 1500 ms target" in report.findings[0] and "0.0% of calls under 2 s" in report.findings[0]
    assert text.splitlines()[0].startswith("[FAIL] p95 latency <= 1500 ms: whole-call p95 2500.0 ms")


@pytest.mark.parametrize("changes", [{"errors": 1, "completed": 9, "compared": 9},
                                     {"timed_out": 2, "completed": 8, "compared": 8},
                                     {"completed": 9, "compared": 9}])
def test_errors_timeouts_or_missing_answers_fail_the_concurrency_gate(tmp_path, changes):
    report, _ = record(tmp_path, samples([10.0] * 4), concurrent(**changes))
    g = report.gates[1]
    assert not g.passed and g.value == changes.get("errors", 0) + changes.get("timed_out", 0)
    assert g.detail.startswith(f"{changes['completed']}/10 completed") and g.detail.endswith("limit 60 s)")


def test_a_differing_concurrent_answer_fails_the_ranking_gate_and_is_named(tmp_path):
    report, _ = record(tmp_path, samples([10.0] * 4), concurrent(mismatched=["q1"], score_tol=1e-3))
    g = report.gates[2]
    assert (g.passed, g.value) == (False, 1)
    assert g.detail == "10 answers compared (ids, order, scores within 0.001); differing: q1"


def test_rankings_that_change_between_rounds_are_recorded(tmp_path):
    rounds = [timed("q0", 10.0), timed("q1", 10.0), timed("q0", 10.0, round_no=2, ranking=RANK_B),
              timed("q1", 10.0, round_no=2)]
    report, _ = record(tmp_path, rounds, concurrent())
    assert report.metrics["rankings_stable_across_rounds"] is False
    report, _ = record(tmp_path, rounds[:2] + [timed("q0", 10.0, round_no=2)] + rounds[3:], concurrent())
    assert report.metrics["rankings_stable_across_rounds"] is True


@pytest.mark.parametrize("target", [0, -5, True])
def test_record_refuses_a_target_that_is_not_positive(tmp_path, target):
    with pytest.raises(ValidationError) as err:
        record(tmp_path, samples([10.0]), concurrent(), target=target)
    assert err.value.field == "p95_target_ms"


def test_record_refuses_no_samples(tmp_path):
    with pytest.raises(ValidationError) as err:
        record(tmp_path, [], concurrent())
    assert err.value.field == "samples"


# ---------------------------------------------------------------------- concurrent run texts
def test_concurrent_describe_holds_counts_only_and_lists_failures():
    assert concurrent().describe().splitlines() == [
        "10 searches submitted to 2 threads: 10 completed, 0 errors, 0 timed out",
        "10 answers compared with the sequential ranking; rankings identical: True"]
    text = concurrent(errors=1, completed=9, compared=9, error_types={"EmbeddingError": 1}, mismatched=["q"]).describe()
    assert "errors by type: {'EmbeddingError': 1}" in text and "queries whose ranking differed: ['q']" in text
    assert concurrent(call_ms=[]).call_percentiles() == {}


# ---------------------------------------------------------------------- backend note and warm-up
class ServerStore:
    kind = "server"

    def count(self, collection: str) -> int:
        raise AssertionError("a server's note needs no count")


@pytest.fixture()
def retriever():
    store = VectorStore.in_memory()
    store.create_collection("c", 2)
    store.upsert("c", [models.PointStruct(id=i + 1, vector=[1.0, float(i)], payload={"model_version": "fixed-model"})
                       for i in range(3)])
    yield Retriever(store, FakeEmbedder.fixed([1.0, 0.0]), "c")
    store.close()


def test_the_backend_note_says_what_the_timings_measured(retriever):
    assert "Qdrant server" in latency.backend_note(ServerStore(), "c")
    local = latency.backend_note(retriever.store, "c")
    assert local.startswith("the store is qdrant-client local mode (memory): it searches exactly over all 3 points")


def test_warm_up_opens_the_retriever_once_and_searches_once(retriever):
    class Run:
        opened = 0

        @property
        def retriever(self):
            Run.opened += 1
            return retriever

    warm = latency.warm_up(Run(), "anything", top_k=2)
    assert Run.opened == 1 and retriever.embedder.query_calls == 1
    assert warm.setup_ms >= 0 and warm.warmup_ms > 0


# ---------------------------------------------------------------------- table and figure
def test_percentile_table_and_figure():
    import matplotlib.pyplot as plt

    timed = samples([10.0, 20.0, 30.0, 40.0])
    result = latency.Latency(["q"], 1, 1, timed, concurrent(), Warmup(1.0, 1.0), p95_target_ms=1500, note=NOTE)
    table = result.tables()["percentiles_sequential"].set_index("timing")
    assert table.loc["call_ms", "p50"] == 25.0 and table.loc["call_ms", "max"] == 40.0
    assert table.loc["embed_ms", "p95"] == pytest.approx(34.65)
    fig = latency.figure(timed, concurrent(), 1500)
    try:
        box, bars = fig.axes
        assert [t.get_text() for t in bars.get_xticklabels()] == ["p50", "p95", "p99"]
        assert [round(p.get_height(), 2) for p in bars.patches] == [25.0, 38.5, 39.7]
        assert len(box.get_xticklabels()) == 4  # embed, search, call one at a time, call under concurrency
    finally:
        plt.close(fig)


def test_a_teams_retriever_is_named_as_what_answered_with_no_embedding_split(tmp_path):
    report, _ = record(tmp_path, samples([10.0] * 4), concurrent(), answered_by="the endpoint http://127.0.0.1:9/q")
    assert report.passed
    assert report.findings[1].startswith("the questions were answered by the endpoint http://127.0.0.1:9/q: its own")
    assert "opening the endpoint http://127.0.0.1:9/q 900 ms, its first answer 40 ms" in report.findings[3]
    assert not any("embedding takes" in f or "loads the model" in f for f in report.findings)
    import matplotlib.pyplot as plt

    fig = latency.figure(samples([10.0] * 4), concurrent(), 1500, split=False)
    try:
        assert len(fig.axes[0].get_xticklabels()) == 2  # the whole calls only, one at a time and concurrent
    finally:
        plt.close(fig)


class _Ctx:
    """The parts of a NotebookRun notebook 06's check reads."""

    def __init__(self, retriever, kind: str = "collection") -> None:
        from types import SimpleNamespace

        self.retriever, self.store, self.collection = retriever, retriever.store, "c"
        self.retriever_spec = SimpleNamespace(kind=kind)
        self.asker = SimpleNamespace(describe=lambda: "the function team.py:search (python)")


@pytest.mark.parametrize("kind", ["collection", "python"])
def test_notebook_06_runs_its_check_through_the_context(retriever, tmp_path, kind):
    sets = tmp_path / "q.yaml"
    sets.write_text("in_domain: [alpha, beta]\nout_of_domain: [gamma]\n", encoding="utf-8")
    result = latency.run(_Ctx(retriever, kind), query_sets=str(sets), latency_rounds=2, latency_p95_target_ms=60_000,
                         concurrent_queries=6, concurrency=2, concurrent_timeout_s=60.0, top_k=2,
                         score_tolerance=1e-6)
    assert str(result).splitlines()[:2] == [
        "3 queries (2 in-domain, 1 out-of-domain)",
        "6 timed searches (3 queries x 2 rounds); rankings identical across rounds (ids, order, scores within 1e-06): "
        "True"]
    report = NotebookReport("06_latency", "t", tmp_path)
    result.record(report, show=False)
    assert [g.id for g in report.gates] == ["latency.p95", "latency.concurrent_errors", "latency.concurrent_rankings"]
    assert report.passed
    if kind == "collection":
        assert result.answered_by is None and result.note.startswith("the store is qdrant-client local mode")
    else:
        assert result.answered_by == "the function team.py:search (python)"
        assert result.note.startswith("timed through the function team.py:search (python)")
        assert report.findings[-1] == result.note
