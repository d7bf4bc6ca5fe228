"""Metrics from judgments (notebook 13): pytrec_eval figures checked by hand, coverage, kappa, gates, tables."""

from __future__ import annotations

import hashlib
import math
import tempfile
from pathlib import Path

import pytest
from fakes.embedders import FakeEmbedder
from qdrant_client import models

from retrieval_lib import Retriever, VectorStore
from retrieval_lib.checks.retrieval import judgments as judged
from retrieval_lib.checks.retrieval.golden_set import QueryOutcome, ValidationReport
from retrieval_lib.errors import ValidationError
from retrieval_lib.judging.judgments import Judgment, JudgmentFile
from retrieval_lib.workbook.report import NotebookReport

CLOCK = "2026-11-23T10:00:00+00:00"
TEXTS = ["chunk zero", "chunk one", "chunk two", "chunk three"]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def j(chunk: int, grade: int, judge: str = "ann", query: str = "q", text: str | None = None) -> Judgment:
    return Judgment(query, f"c#{chunk}", sha(text if text is not None else TEXTS[chunk]), grade, judge, CLOCK)


def record(report: NotebookReport, ev: judged.JudgedEvaluation, *, min_precision_at_3: float,
           min_judged_coverage: float) -> judged.Judgments:
    """Notebook 13's result over ``ev`` (no golden set beside it), recorded on ``report``."""
    result = judged.Judgments(ev, JudgmentFile(path=Path("j.yaml")), "in_domain", None,
                              min_precision_at_3=min_precision_at_3, min_judged_coverage=min_judged_coverage)
    result.record(report, show=False)
    return result


# --------------------------------------------------------------------------- pytrec_eval, by hand
def test_precision_and_graded_ndcg_match_the_hand_computed_figures():
    qrels = {"q1": {"a": 2, "b": 0, "c": 1}}
    ranked = {"q1": ["a", "b", "c", "d", "e"], "q2": ["x", "y"]}
    m = judged.judged_metrics(qrels, ranked, cutoff=3, top_k=5, min_relevant_grade=1)
    # P@3: a and c of the top 3 have grade >= 1
    assert m["q1"]["precision"] == pytest.approx(2 / 3)
    # DCG@5 = 2/log2(2) + 0 + 1/log2(4); ideal order 2, 1, 0: 2/log2(2) + 1/log2(3)
    assert m["q1"]["ndcg"] == pytest.approx((2 + 1 / 2) / (2 + 1 / math.log2(3)))
    # a query with no judgment at all scores 0 (it is not dropped from the mean)
    assert m["q2"] == {"precision": 0.0, "ndcg": 0.0}
    strict = judged.judged_metrics(qrels, ranked, cutoff=3, top_k=5, min_relevant_grade=2)
    assert strict["q1"]["precision"] == pytest.approx(1 / 3)


# --------------------------------------------------------------------------- agreement
def test_cohens_kappa_on_known_inputs_and_the_disagreeing_pairs():
    a = [j(0, 0), j(1, 1), j(2, 2), j(3, 2)]
    b = [j(0, 0, "bob"), j(1, 1, "bob"), j(2, 2, "bob"), j(3, 1, "bob")]
    (ag,) = judged.agreement(a + b)
    # p_o = 3/4; marginals ann (1, 1, 2)/4, bob (1, 2, 1)/4: p_e = (1 + 2 + 2)/16; kappa = (p_o - p_e)/(1 - p_e)
    assert ag.judges == ("ann", "bob") and ag.pairs == 4
    assert ag.kappa == pytest.approx((3 / 4 - 5 / 16) / (1 - 5 / 16))
    assert ag.disagreements == [("q", "c#3", 2, 1)]


def test_kappa_is_one_for_identical_grades_and_undefined_for_a_single_label():
    same = judged.agreement([j(0, 0), j(1, 2), j(0, 0, "bob"), j(1, 2, "bob")])
    assert same[0].kappa == pytest.approx(1.0) and same[0].disagreements == []
    single = judged.agreement([j(0, 2), j(1, 2), j(0, 2, "bob"), j(1, 2, "bob")])
    assert single[0].kappa is None
    # a pair judged on different text is not a pair both judged
    other_text = judged.agreement([j(0, 2), j(0, 0, "bob", text="edited")])
    assert other_text[0].pairs == 0 and other_text[0].kappa is None


# --------------------------------------------------------------------------- the judged view of a real search
@pytest.fixture()
def retriever():
    """Four chunks on four axes; the query 'q' ranks them c#0, c#1, c#2, c#3."""
    store = VectorStore.in_memory()
    store.create_collection("j", 4)
    points = []
    for i, text in enumerate(TEXTS):
        vector = [0.0] * 4
        vector[i] = 1.0
        points.append(models.PointStruct(id=i + 1, vector=vector, payload={
            "chunk_id": f"c#{i}", "source_file": f"f{i}.md", "content": text, "content_hash": sha(text),
            "model_version": "table-model"}))
    store.upsert("j", points)
    yield Retriever(store, FakeEmbedder.table({"q": [0.8, 0.6, 0.4, 0.2], "p": [0.1, 0.2, 0.3, 0.9]}), "j")
    store.close()


def test_partly_judged_top_3_gives_bounds_and_says_how_much_was_judged(retriever):
    ev = judged.evaluate_judged(retriever, ["q"], [j(0, 2), j(1, 0)], top_k=3)
    assert [r.state for r in ev.rows] == ["judged", "judged", "unjudged"]
    assert ev.precision_low == pytest.approx(1 / 3) and ev.precision_high == pytest.approx(2 / 3)
    assert ev.judged(3) == (2, 3)
    assert "between 0.333" in ev.precision_text() and "2 of 3 top-3 results judged" in ev.precision_text()
    assert list(judged.unjudged_frame(ev)["chunk_id"]) == ["c#2"]
    report = NotebookReport("13_judgments", "t", tempfile.mkdtemp())
    record(report, ev, min_precision_at_3=0.3, min_judged_coverage=1.0)
    sc006, coverage = report.gates
    assert sc006.passed and sc006.value == 0.333 and "2 of 3" in sc006.detail
    assert not coverage.passed and coverage.value == pytest.approx(0.667, abs=1e-3)
    assert report.metrics["unjudged_results"] == 1


def test_fully_judged_top_3_gives_one_figure_and_the_gate_fails_below_the_bar(retriever):
    ev = judged.evaluate_judged(retriever, ["q"], [j(0, 2), j(1, 0), j(2, 1)], top_k=3)
    assert ev.precision_low == ev.precision_high == pytest.approx(2 / 3)
    assert ev.precision_text() == "precision@3 0.667 (all 3 top-3 results judged)"
    report = NotebookReport("13_judgments", "t", tempfile.mkdtemp())
    record(report, ev, min_precision_at_3=0.8, min_judged_coverage=1.0)
    assert [g.passed for g in report.gates] == [False, True]
    assert "graded 0" in (report.gates[0].hint or "")
    strict = judged.evaluate_judged(retriever, ["q"], [j(0, 2), j(1, 0), j(2, 1)], top_k=3, min_relevant_grade=2)
    assert strict.precision_low == pytest.approx(1 / 3)


def test_a_stale_judgment_is_listed_and_its_result_counts_as_unjudged(retriever):
    ev = judged.evaluate_judged(retriever, ["q"], [j(0, 2), j(1, 2, text="older text"), j(9, 2, text="gone")], top_k=3)
    assert [r.state for r in ev.rows] == ["judged", "stale", "unjudged"]
    assert ev.precision_low == pytest.approx(1 / 3)
    frame = judged.stale_frame(ev)
    assert sorted(zip(frame["chunk_id"], frame["reason"])) == [("c#1", "changed"), ("c#9", "gone")]
    report = NotebookReport("13_judgments", "t", tempfile.mkdtemp())
    record(report, ev, min_precision_at_3=0.0, min_judged_coverage=0.0)
    assert report.metrics["stale_judgments"] == 2 and any("stale" in f for f in report.findings)


def test_ndcg_and_per_query_table_over_two_queries(retriever):
    ev = judged.evaluate_judged(retriever, ["q", "p"], [j(0, 2), j(1, 1), j(3, 2, query="p")], top_k=2, cutoff=2)
    # q: grades 2, 1 in the ideal order -> nDCG 1; p ranks c#3 first, then c#2 (unjudged) -> nDCG 1
    assert ev.ndcg == pytest.approx(1.0)
    table = judged.per_query_frame(ev)
    assert list(table["judged_top2"]) == ["2/2", "1/2"] and list(table["P@2"]) == [1.0, 0.5]


def test_kappa_findings_when_two_judges_judged(retriever):
    ev = judged.evaluate_judged(retriever, ["q"], [j(0, 2), j(1, 0), j(0, 2, "bob"), j(1, 1, "bob")], top_k=2,
                                cutoff=2)
    report = NotebookReport("13_judgments", "t", tempfile.mkdtemp())
    record(report, ev, min_precision_at_3=0.5, min_judged_coverage=1.0)
    assert "kappa_ann_bob" in report.metrics and any("1 disagreements" in f for f in report.findings)
    assert list(judged.disagreements_frame(ev)["chunk_id"]) == ["c#1"]
    # two judges of a pair: the qrel is the lower grade, so c#1 (0 and 1) is not relevant
    assert ev.precision_low == pytest.approx(1 / 2)


@pytest.mark.parametrize("kw, field", [({"cutoff": 6}, "cutoff"), ({"min_relevant_grade": 0}, "min_relevant_grade")])
def test_bad_arguments_are_validation_errors(retriever, kw, field):
    with pytest.raises(ValidationError) as err:
        judged.evaluate_judged(retriever, ["q"], [], top_k=5, **kw)
    assert err.value.field == field


def test_thresholds_outside_0_1_are_refused(retriever):
    ev = judged.evaluate_judged(retriever, ["q"], [], top_k=3)
    with pytest.raises(ValidationError, match="min_precision_at_3"):
        record(NotebookReport("13_judgments", "t", tempfile.mkdtemp()), ev, min_precision_at_3=80,
               min_judged_coverage=1.0)


def test_golden_verdicts_beside_the_judgments(retriever):
    ev = judged.evaluate_judged(retriever, ["q", "p"], [j(0, 1), j(1, 2), j(3, 0, query="p")], top_k=2, cutoff=2)
    outcomes = [QueryOutcome("q", "golden", True, "", first_relevant_rank=1),
                QueryOutcome("p", "extra", True, "", first_relevant_rank=2),
                QueryOutcome("never judged", "golden", False, "")]
    validation = ValidationReport(passed=True, total_queries=2, passed_queries=1, required_passes=1,
                                  failed_queries=[], vector_count=4, metadata_completeness=100.0, negatives_total=0,
                                  negatives_passed=0, hit_at_k=1.0, mrr=1.0, ndcg_at_k=1.0, top_k=2,
                                  outcomes=outcomes)
    frame = judged.golden_frame(validation, ev)
    assert list(frame["query"]) == ["q", "p"]
    assert list(frame["first_relevant_rank"].astype("float").fillna(0)) == [2.0, 0.0]
    assert list(frame["agree"]) == [True, False]


# --------------------------------------------------------------------------- the check, through a run's context
class _Ctx:
    """The parts of a NotebookRun notebook 13's check reads."""

    def __init__(self, retriever, run_dir, absent: str | None = None) -> None:
        self.retriever = retriever
        self.store, self.collection = retriever.store, retriever.collection
        self.report = NotebookReport("13_judgments", "t", run_dir)
        self.absent = absent

    def collection_absent(self) -> str | None:
        return self.absent


def test_the_check_reads_the_judgments_asks_the_set_and_records_its_tables(retriever, tmp_path):
    import yaml

    from retrieval_lib.judging import save_judgments

    path = tmp_path / "judgments.yaml"
    save_judgments(JudgmentFile(path=path, judge="ann", judgments=[j(0, 2), j(1, 0), j(2, 1)]))
    (tmp_path / "sets.yaml").write_text("in_domain: [q]\n", encoding="utf-8")
    (tmp_path / "golden.yaml").write_text(yaml.safe_dump({
        "top_k": 3, "min_score": 0.1, "required_passes": 1,
        "queries": [{"query": "q", "expected_url_patterns": ["f0.md"]}]}), encoding="utf-8")
    ctx = _Ctx(retriever, tmp_path)
    params = dict(judgments=str(path), agreement_files=[], query_sets=str(tmp_path / "sets.yaml"),
                  judged_query_set="in_domain", judged_top_k=3, min_relevant_grade=1, min_precision_at_3=0.8,
                  min_judged_coverage=1.0, judge="", golden_set=str(tmp_path / "golden.yaml"))
    result = judged.run(ctx, **params)
    assert isinstance(result, judged.Judgments)
    assert str(result).splitlines()[1] == ("1 questions of 'in_domain', top 3: 3 of 3 results judged, 0 stale "
                                           "judgments; precision@3 0.667 (all 3 top-3 results judged)")
    assert result.agreement_text() == "0 pairs of judges"
    beside = result.tables()["golden_vs_judgments"]
    assert list(beside["query"]) == ["q"] and list(beside["agree"]) == [True]
    result.record(ctx.report, show=False)
    assert [(g.id, g.passed) for g in ctx.report.gates] == [("judged.precision", False), ("judged.coverage", True)]
    assert [Path(t).stem for t in ctx.report.tables] == [
        f"13_judgments_{n}" for n in ("per_query", "results", "unjudged", "stale", "golden_vs_judgments")]
    absent = judged.run(_Ctx(retriever, tmp_path, absent="only the chatbot's retriever"), **params)
    report = NotebookReport("13_judgments", "t", tmp_path)
    absent.record(report, show=False)
    assert [(g.id, g.passed) for g in report.gates] == [("judged.precision", None), ("judged.coverage", None)]
