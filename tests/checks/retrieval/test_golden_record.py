"""Notebook 05's package side: the qrels a golden run owns, its gates/findings/metrics, its tables and figure."""

from __future__ import annotations

import hashlib

import pytest
import yaml
from fakes.embedders import FakeEmbedder
from qdrant_client import models

from retrieval_lib import Retriever, VectorStore
from retrieval_lib.checks.collection.collection_health import PayloadScan
from retrieval_lib.checks.retrieval import golden_set as golden
from retrieval_lib.checks.retrieval.golden_set import NO_RELEVANT_PAGE, QueryOutcome, ValidationReport
from retrieval_lib.errors import ValidationError
from retrieval_lib.models import PAYLOAD_FIELDS
from retrieval_lib.params import GoldenSet
from retrieval_lib.workbook.report import NotebookReport

SITE = "https://book.example"
PAGES = {"ik": "/docs/m1/ik", "arm": "/docs/m1/arm", "gazebo": "/docs/m2/gazebo", "intro": "/docs/intro"}
AXES = {name: i for i, name in enumerate([*PAGES, "pizza"])}


def axis(name: str) -> list[float]:
    v = [0.0] * len(AXES)
    v[AXES[name]] = 1.0
    return v


# ---------------------------------------------------------------------- qrels, from a real evaluation
@pytest.fixture()
def retriever():
    store = VectorStore.in_memory()
    store.create_collection("g", len(AXES))
    points = []
    for i, (name, page) in enumerate(PAGES.items()):
        content = f"text of {page}"
        payload = {"chunk_id": f"{page}#0", "source_file": page.removeprefix("/docs/") + ".md",
                   "source_url": SITE + page, "title": page, "section_title": "S", "content": content,
                   "content_hash": hashlib.sha256(content.encode()).hexdigest(), "chunk_sequence": 0,
                   "total_chunks": 1, "processing_timestamp": "2026-01-01T00:00:00+00:00", "token_count": 3,
                   "model_version": "table-model"}
        points.append(models.PointStruct(id=i + 1, vector=axis(name), payload=payload))
    store.upsert("g", points)
    table = {f"about {name}": axis(name) for name in AXES}
    yield Retriever(store, FakeEmbedder.table(table), "g")
    store.close()


def evaluate(retriever, tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump({
        "top_k": 2, "min_score": 0.6, "required_passes": 1,
        "queries": [{"query": "about ik", "expected_url_patterns": ["/docs/m1"]},
                    {"query": "about gazebo", "expected_url_patterns": ["/docs/m9"]}],
        "extra_queries": [{"query": "about intro", "expected_url_patterns": ["/docs/intro"], "min_score": 0.7}],
        "negatives": [{"query": "about pizza", "max_score": 0.4}]}))
    return golden.evaluate_golden(retriever, golden.load_golden_set(path), vector_count=4,
                                  metadata_completeness=100.0)


def test_each_outcome_carries_its_relevant_pages_and_the_report_gives_the_trec_qrels(retriever, tmp_path):
    v = evaluate(retriever, tmp_path)
    ik, gazebo, intro, pizza = v.outcomes
    assert set(ik.relevant_pages) == {SITE + "/docs/m1/ik", SITE + "/docs/m1/arm"}
    assert gazebo.relevant_pages == () and intro.relevant_pages == (SITE + "/docs/intro",)
    assert pizza.kind == "negative" and pizza.relevant_pages == ()
    # golden queries only, numbered in set order; a query with no relevant page keeps a stand-in so it scores 0
    assert golden.trec_qrels(v.outcomes) == {"q0": {page: 1 for page in ik.relevant_pages}, "q1": {NO_RELEVANT_PAGE: 1}}
    assert (ik.threshold, intro.threshold, pizza.threshold) == (0.6, 0.7, 0.4)
    assert ik.expected_url_patterns == ("/docs/m1",)
    # ik finds its page at rank 1, gazebo has none: hit@2 and MRR are 1/2
    assert v.hit_at_k == pytest.approx(0.5) and v.mrr == pytest.approx(0.5)


def test_the_golden_set_table_shows_the_qrels_it_was_judged_with(retriever, tmp_path):
    v = evaluate(retriever, tmp_path)
    table = golden.golden_set_frame(v)
    assert list(table["kind"]) == ["golden", "golden", "extra", "negative"]
    assert list(table["relevant_pages"]) == [len(o.relevant_pages) for o in v.outcomes] == [2, 0, 1, 0]
    assert list(table["threshold"]) == ["score >= 0.6", "score >= 0.6", "score >= 0.7", "every score < 0.4"]
    assert table["expected_url_patterns"].iloc[3] == "(none: out of domain)"


def test_relevant_pages_match_whole_segments_in_page_order():
    pages = [SITE + "/docs/intro", SITE + "/docs/introduction/setup", SITE + "/docs/intro/more"]
    assert golden.relevant_pages(["/docs/intro"], pages) == (pages[0], pages[2])
    assert golden.relevant_pages([], pages) == ()


# ---------------------------------------------------------------------- record, on hand-made reports
def outcome(query: str, kind: str = "golden", *, passed: bool = True, best: float | None = 0.7,
            top: float | None = 0.7, threshold: float = 0.5, pages: tuple[str, ...] = ("p1",)) -> QueryOutcome:
    return QueryOutcome(query=query, kind=kind, passed=passed, reason="because",
                        first_relevant_rank=1 if best else None, best_relevant_score=best, top_score=top,
                        top_source="a.md", threshold=threshold,
                        relevant_pages=pages if kind != "negative" else ())


def report_of(outcomes: list[QueryOutcome], *, required: int = 2, ndcg: float = 1.0) -> ValidationReport:
    gold = [o for o in outcomes if o.kind == "golden"]
    negs = [o for o in outcomes if o.kind == "negative"]
    passed, neg_passed = sum(o.passed for o in gold), sum(o.passed for o in negs)
    return ValidationReport(passed=passed >= required and neg_passed == len(negs), total_queries=len(gold),
                            passed_queries=passed, required_passes=required,
                            failed_queries=[{"query": o.query, "reason": o.reason} for o in gold if not o.passed],
                            vector_count=10, metadata_completeness=100.0, negatives_total=len(negs),
                            negatives_passed=neg_passed, hit_at_k=1.0, mrr=0.75, ndcg_at_k=ndcg, top_k=5,
                            outcomes=outcomes)


def scan_of(points: int = 10, complete: int = 10) -> PayloadScan:
    return PayloadScan(points=points, field_present=dict.fromkeys(PAYLOAD_FIELDS, complete), complete_points=complete,
                       duplicate_hashes={}, model_versions={"m": points}, foreign_model_points=0,
                       points_per_file={"a.md": points})


#: A hand-written golden set (no drafted entries), as the results above were judged on.
GOLDEN = GoldenSet(name="t", top_k=5, min_score=0.5, required_passes=2, queries=())


def record(report: NotebookReport, validation: ValidationReport, scan: PayloadScan, *,
           min_metadata_completeness: float) -> None:
    """Notebook 05's result over ``validation`` and ``scan``, recorded on ``report``."""
    result = golden.GoldenSetCheck(GOLDEN, validation, scan, min_metadata_completeness=min_metadata_completeness)
    result.record(report, show=False)


def gates(report: NotebookReport) -> dict[str, tuple[bool, object, object]]:
    return {g.name: (g.passed, g.value, g.threshold) for g in report.gates}


def test_record_passes_every_gate_on_a_good_run(tmp_path):
    report = NotebookReport("05_test", "t", tmp_path)
    v = report_of([outcome("a", best=0.9), outcome("b", best=0.62, threshold=0.6), outcome("c", "extra"),
                   outcome("n", "negative", best=None, top=0.3, threshold=0.5)])
    record(report, v, scan_of(), min_metadata_completeness=100.0)
    assert gates(report) == {"at least 2 golden queries pass": (True, 2, 2),
                             "every negative returns nothing relevant": (True, 1, 1),
                             "metadata completeness >= 100%": (True, 100.0, 100.0)}
    assert report.gates[0].detail.startswith("2/2 golden queries found an expected page in the top 5")
    assert "smallest margin: 'b' best relevant score 0.620 vs min_score 0.6" in report.findings
    assert any(f.startswith("1/1 negatives returned nothing relevant; highest negative top score 0.300")
               for f in report.findings)
    assert not any(f.startswith(("FAILED", "nDCG")) for f in report.findings)
    assert report.metrics["extra_passed"] == 1 and report.metrics["validation_report_passed"] is True
    assert report.metrics["metadata_completeness"] == 100.0 and report.passed


def test_record_fails_the_golden_gate_and_names_each_failed_query(tmp_path):
    report = NotebookReport("05_test", "t", tmp_path)
    v = report_of([outcome("a"), outcome("b", passed=False, best=None), outcome("c", "extra", passed=False)])
    record(report, v, scan_of(), min_metadata_completeness=100.0)
    assert gates(report)["at least 2 golden queries pass"] == (False, 1, 2)
    assert "FAILED golden 'b': because" in report.findings and "FAILED extra 'c': because" in report.findings
    assert not report.passed and report.metrics["validation_report_passed"] is False


def test_record_fails_the_negative_gate_when_a_negative_scores_too_high(tmp_path):
    report = NotebookReport("05_test", "t", tmp_path)
    v = report_of([outcome("a"), outcome("b"), outcome("n", "negative", passed=False, best=None, top=0.8)])
    record(report, v, scan_of(), min_metadata_completeness=100.0)
    assert gates(report)["every negative returns nothing relevant"] == (False, 0, 1)
    assert gates(report)["at least 2 golden queries pass"][0] is True


def test_record_fails_the_completeness_gate_from_the_scan(tmp_path):
    report = NotebookReport("05_test", "t", tmp_path)
    record(report, report_of([outcome("a"), outcome("b")]), scan_of(points=8, complete=7),
                  min_metadata_completeness=99.0)
    gate = report.gates[2]
    assert (gate.name, gate.passed, gate.value) == ("metadata completeness >= 99%", False, 87.5)
    assert gate.detail == "7/8 points carry every payload field" and gate.parameter == "min_metadata_completeness"


def test_record_explains_an_ndcg_below_one_by_the_queries_with_several_relevant_pages(tmp_path):
    report = NotebookReport("05_test", "t", tmp_path)
    v = report_of([outcome("a", pages=("p1", "p2", "p3")), outcome("b")], ndcg=0.8)
    record(report, v, scan_of(), min_metadata_completeness=100.0)
    assert ("nDCG@5 < 1 because 1 golden queries' patterns cover several pages ('a': 3) that their top 5 does "
            "not all show") in report.findings


def test_record_refuses_a_completeness_minimum_outside_0_to_100(tmp_path):
    with pytest.raises(ValidationError) as err:
        record(NotebookReport("05_test", "t", tmp_path), report_of([outcome("a"), outcome("b")]), scan_of(),
               min_metadata_completeness=101.0)
    assert err.value.field == "min_metadata_completeness"


# ---------------------------------------------------------------------- tables and figure
def test_tables_round_scores_and_keep_ranks_whole():
    v = report_of([outcome("a", best=0.123456, top=0.98765), outcome("b", passed=False, best=None, top=None)])
    frame = golden.outcomes_frame(v, decimals=3)
    assert list(frame["best_relevant_score"].iloc[:1]) == [0.123] and frame["top_score"].iloc[0] == 0.988
    assert str(frame["first_relevant_rank"].dtype) == "Int64" and frame["first_relevant_rank"].isna().iloc[1]
    assert list(golden.ir_frame(v, decimals=2)["value"]) == [1.0, 0.75, 1.0]
    seed004 = golden.report_frame(v).set_index("field")["value"].to_dict()
    assert seed004["failed_queries"] == "b: because" and seed004["passed"] == "False"


def test_scores_figure_draws_one_bar_per_query_in_two_panels():
    import matplotlib.pyplot as plt

    v = report_of([outcome("a"), outcome("b", passed=False, best=None), outcome("n", "negative", top=0.2)])
    fig = golden.scores_figure(v)
    try:
        top, bottom = fig.axes
        assert len(top.patches) == 2 and len(bottom.patches) == 1
        assert [t.get_text() for t in top.get_yticklabels()] == ["a", "b"]
        assert top.patches[1].get_width() == 0.0  # no expected page: drawn at 0
    finally:
        plt.close(fig)


def test_golden_hint_names_the_min_score_that_would_pass_when_pages_were_found_below_it():
    v = report_of([outcome("a", passed=False, best=0.815, threshold=0.95),
                   outcome("b", passed=False, best=0.702, threshold=0.95),
                   outcome("c", passed=False, best=0.6, threshold=0.95)], required=2)
    hint = golden.golden_hint(v)
    assert hint.startswith("min_score 0.95 is above the failing golden hits (highest 0.815)")
    assert "lower `min_score` to 0.702" in hint and "to let 2 pass" in hint


def test_golden_hint_names_the_queries_whose_pages_are_missing():
    v = report_of([outcome("a"), outcome("where is it", passed=False, best=None)], required=2)
    hint = golden.golden_hint(v)
    assert hint.startswith("no expected page in the top 5 for 'where is it'") and "expected_url_patterns" in hint


# ---------------------------------------------------------------------- the check, through a run's context
class _Ctx:
    """The parts of a NotebookRun notebook 05's check reads."""

    def __init__(self, retriever, run_dir, absent: str | None = None) -> None:
        self.retriever = self.collection_retriever = retriever
        self.store, self.collection = retriever.store, retriever.collection
        self.report = NotebookReport("05_golden_set", "t", run_dir)
        self.absent = absent

    def collection_absent(self) -> str | None:
        return self.absent


def test_the_check_scans_the_collection_asks_the_set_and_records_its_tables(retriever, tmp_path):
    v = evaluate(retriever, tmp_path)  # writes g.yaml
    ctx = _Ctx(retriever, tmp_path)
    result = golden.run(ctx, golden_set=str(tmp_path / "g.yaml"), min_metadata_completeness=100.0)
    assert isinstance(result, golden.GoldenSetCheck)
    assert [o.passed for o in result.validation.outcomes] == [o.passed for o in v.outcomes]
    assert str(result).splitlines()[1] == ("4 points scanned (4 in the collection); 4 complete: metadata "
                                           "completeness 100.00%")
    assert list(result.tables()) == ["golden_set", "outcomes", "ir_metrics", "validation_report"]
    result.record(ctx.report, show=False)
    assert [g.id for g in ctx.report.gates] == ["golden.passes", "golden.negatives", "health.completeness"]
    assert [g.passed for g in ctx.report.gates] == [True, True, True]
    assert (tmp_path / "figures" / "05_golden_set_scores_vs_thresholds.png").is_file()


def test_with_only_a_teams_retriever_the_check_is_not_applicable_with_the_reason(retriever, tmp_path):
    ctx = _Ctx(retriever, tmp_path, absent="only the chatbot's retriever is configured")
    result = golden.run(ctx, golden_set="never read.yaml", min_metadata_completeness=99.0)
    assert result.tables() == {}
    result.record(ctx.report, show=False)
    assert [(g.id, g.name, g.passed) for g in ctx.report.gates] == [
        ("golden.passes", "the golden queries pass", None),
        ("golden.negatives", "every negative returns nothing relevant", None),
        ("health.completeness", "metadata completeness >= 99%", None)]
    assert all(g.detail.startswith("only the chatbot's retriever") or "only the chatbot" in str(g)
               for g in ctx.report.gates)
