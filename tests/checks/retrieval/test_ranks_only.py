"""A team's retriever that returns no score: 1/rank stands in, and every gate or recommendation that reads a score
(01's order and no-match, 02's three and its threshold, 05's min_score and negatives) is not applicable, with the
reason; the rank-based ones (what is found, at which rank, hit@k, MRR) still judge."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from retrieval_lib.checks.retrieval import golden_set as golden
from retrieval_lib.checks.retrieval import query
from retrieval_lib.checks.retrieval import score_distributions as scores
from retrieval_lib.models import PAYLOAD_FIELDS
from retrieval_lib.params import GoldenQuery, GoldenSet, NegativeQuery
from retrieval_lib.retrievers import Answer, AnsweringSearch, Hit
from retrieval_lib.retrievers.as_search import NO_SCORE, RANKS_ONLY, rank_stand_in
from retrieval_lib.workbook.report import NotebookReport

SITE = "https://book.example"
PAGES = [f"{SITE}/docs/{name}" for name in ("intro", "ros2", "gazebo", "isaac", "vla")]


class Unscored:
    """A team's retriever (the QuestionRetriever protocol) answering pages without a score: ``answers`` maps a
    question to its pages in rank order (absent: an empty answer)."""

    kind = "scripted"

    def __init__(self, answers: dict[str, list[str]], scored: bool = False) -> None:
        self.answers, self.scored = answers, scored

    def ask(self, query: str, top_k: int) -> Answer:
        pages = self.answers.get(query, [])[:top_k]
        return Answer(query=query, top_k=top_k, hits=[
            Hit(rank=i, content=f"text of {p}", source_url=p, source_file=p.rsplit("/", 1)[-1] + ".md",
                score=(1.0 - i / 10 if self.scored else None)) for i, p in enumerate(pages, 1)])

    def ask_many(self, queries, top_k):
        return [self.ask(q, top_k) for q in queries]

    def describe(self) -> str:
        return "scripted"

    def close(self) -> None:
        pass


def searcher(answers: dict[str, list[str]], scored: bool = False) -> AnsweringSearch:
    collection = SimpleNamespace(collection="c", query_max_chars=1000,
                                 store=SimpleNamespace(distinct_values=lambda name, key: list(PAGES)))
    return AnsweringSearch(Unscored(answers, scored), collection)


def gates(report: NotebookReport) -> dict:
    return {g.id: g for g in report.gates}


def test_the_stand_in_is_marked_once_on_the_response_and_read_by_one_function():
    search = searcher({"q": PAGES[:3]})
    response = search.search("q")
    assert [r.raw_score for r in response.results] == pytest.approx([1.0, 0.5, 1 / 3])
    assert NO_SCORE in response.warnings and rank_stand_in([response]) == RANKS_ONLY
    assert rank_stand_in(searcher({"q": PAGES[:3]}, scored=True).search_many(["q"])) is None
    assert rank_stand_in([search.search("nothing")]) is None  # an empty answer holds no stand-in


def test_01_order_and_no_match_are_not_applicable_and_limits_judge_the_count_alone(tmp_path):
    search = searcher({"What is ROS 2?": PAGES[:5], "Gazebo": PAGES[2:4]})
    responses = search.search_many(["What is ROS 2?", "Gazebo"], top_k=5)
    no_match = search.search("What is ROS 2?", top_k=5, similarity_threshold=0.95)
    assert no_match.total_results == 5  # the threshold has no score to drop anything by
    report = NotebookReport("01_query", "t", tmp_path)
    query.QueryAnswers(responses, no_match, top_k=5, similarity_threshold=0.0).record(report)
    g = gates(report)
    assert g["query.ordered"].passed is None and g["query.no_match"].passed is None
    assert g["query.no_match"].detail.startswith(f"not applicable: {RANKS_ONLY}; a threshold has no score")
    assert g["query.limits"].passed is True and "the threshold not judged" in g["query.limits"].detail
    assert g["query.metadata"].passed is not None
    assert "(no score: ranks only)" in report.findings[0] and report.metrics["mean_top1_score"] is None
    # more results than top_k still fail the count
    over = searcher({"q": PAGES}).search_many(["q"], top_k=5)
    over[0].results.append(over[0].results[0])
    over[0] = over[0].model_copy(update={"total_results": 6})
    report = NotebookReport("01_query", "t", tmp_path)
    query.QueryAnswers(over, no_match, top_k=5, similarity_threshold=0.0).record(report)
    assert gates(report)["query.limits"].passed is False


def test_02_gates_and_the_recommended_threshold_are_not_applicable(tmp_path):
    search = searcher({f"in {i}": PAGES[:5] for i in range(3)})  # out-of-domain questions: empty answers
    study = scores.measure(search, [f"in {i}" for i in range(3)], ["pizza", "weather"], top_k=5)
    result = scores.ScoreDistributions.of(study, candidate_threshold=0.35, min_separation=0.1, resamples=20)
    assert result.uncertainty is None and "no threshold can be read" in str(result)
    assert list(result.tables()) == ["scores", "top1_per_query"]
    report = NotebookReport("02_score_distributions", "t", tmp_path)
    result.record(report, show=False)
    g = gates(report)
    assert [g[i].passed for i in ("scores.range", "scores.separation", "scores.threshold")] == [None, None, None]
    assert all(g[i].detail.startswith(f"not applicable: {RANKS_ONLY}; ") for i in g if i.startswith("scores."))
    assert g["scores.threshold"].name == "threshold 0.35 keeps every in-domain query and rejects every OOD query"
    text = " ".join(report.findings)
    assert "recommended threshold" not in text and "midpoint" not in text
    assert "3/3 in-domain and 0/2 out-of-domain queries with at least one result" in text
    assert "recommended_threshold" not in report.metrics and report.metrics["ood_answered"] == 0


def test_05_finds_pages_by_rank_without_min_score_and_negatives_with_results_are_not_applicable(tmp_path):
    gold = GoldenSet(name="t", top_k=5, min_score=0.35, required_passes=2, queries=(
        GoldenQuery(query="isaac", expected_url_patterns=("/docs/isaac",), min_score=0.35),
        GoldenQuery(query="vla", expected_url_patterns=("/docs/vla",), min_score=0.35),
        GoldenQuery(query="lost", expected_url_patterns=("/docs/vla",), min_score=0.35)),
        negatives=(NegativeQuery(query="pizza", max_score=0.35), NegativeQuery(query="weather", max_score=0.35)))
    search = searcher({"isaac": PAGES[:5], "vla": [PAGES[4]], "lost": PAGES[:3], "pizza": PAGES[:2]})
    v = golden.evaluate_golden(search, gold, vector_count=5, metadata_completeness=100.0)
    isaac, vla, lost, pizza, weather = v.outcomes
    # rank 4 scores the stand-in 0.25 < min_score 0.35: judged by rank, it passes, and says min_score was not applied
    assert isaac.passed and isaac.reason == f"expected page at rank 4 (min_score not applied: {RANKS_ONLY})"
    assert isaac.best_relevant_score is None and isaac.top_score is None and vla.passed and not lost.passed
    assert "lower `min_score`" not in golden.golden_hint(v)
    assert v.mrr == pytest.approx((1 / 4 + 1) / 3)  # ranks still judge
    assert not pizza.passed and pizza.reason.startswith("not judged") and weather.passed
    report = NotebookReport("05_golden_set", "t", tmp_path)
    scan = golden.PayloadScan(points=5, field_present=dict.fromkeys(PAYLOAD_FIELDS, 5), complete_points=5,
                              duplicate_hashes={}, model_versions={"m": 5}, foreign_model_points=0,
                              points_per_file={"a.md": 5})
    golden.GoldenSetCheck(gold, v, scan, min_metadata_completeness=100.0).record(report, show=False)
    g = gates(report)
    assert g["golden.passes"].passed is True and "min_score not applied" in g["golden.passes"].detail
    assert g["golden.negatives"].passed is None
    assert g["golden.negatives"].detail == (f"not applicable: {RANKS_ONLY}; 1 of 2 negatives got results, with no "
                                            "score to hold to max_score")
    assert not (tmp_path / "figures" / "05_golden_set_scores_vs_thresholds.png").exists()
    assert not any("smallest margin" in f or "highest negative top score" in f for f in report.findings)


def test_03_and_13_show_no_score_where_ranks_stand_in(tmp_path):
    # the tables a person reads: a 1/rank stand-in printed as a top-1 score (1.000) would read as a perfect match
    from retrieval_lib.checks.retrieval import judgments
    from retrieval_lib.checks.retrieval.source_coverage import CoverageQuery, missed_heading_queries

    search = searcher({"ROS 2 nodes": PAGES[2:4], "Gazebo": PAGES[:2]})
    search.store = SimpleNamespace(scroll=lambda collection, with_payload: iter(()))  # no judged chunk yet
    asked = [CoverageQuery("ROS 2 nodes", "heading", owner="ros2.md")]
    missed = missed_heading_queries(asked, search.search_many(["ROS 2 nodes"]))
    assert missed["top1_file"].tolist() == ["gazebo.md"] and missed["top1_score"].isna().all()

    judged = judgments.evaluate_judged(search, ["Gazebo"], [], top_k=2, cutoff=2)
    assert [(row.rank, row.score) for row in judged.rows] == [(1, None), (2, None)]
    scored = searcher({"Gazebo": PAGES[:2]}, scored=True)
    scored.store = search.store
    assert [row.score for row in judgments.evaluate_judged(scored, ["Gazebo"], [], top_k=2, cutoff=2).rows] == \
        pytest.approx([0.9, 0.8])
