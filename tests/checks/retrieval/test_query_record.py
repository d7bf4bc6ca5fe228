"""Notebook 01's check (checks.retrieval.query): its questions, table, gates, findings and metrics, each gate passing
and failing."""

from __future__ import annotations

import pytest
from responses import answer, hit

from retrieval_lib.checks.retrieval import query
from retrieval_lib.errors import ValidationError
from retrieval_lib.models import PAYLOAD_FIELDS
from retrieval_lib.validation import MAX_TOP_K
from retrieval_lib.workbook.report import NotebookReport

EMPTY = answer("What is ROS2?", [], threshold=0.95, warnings=["no chunk scored at least 0.95"])


def gates(report: NotebookReport) -> dict:
    return {g.name: g for g in report.gates}


def recorded(responses, no_match=EMPTY, *, top_k=5, similarity_threshold=0.0, tmp_path) -> NotebookReport:
    report = NotebookReport("01_query", "t", tmp_path)
    query.QueryAnswers(responses, no_match, top_k=top_k, similarity_threshold=similarity_threshold).record(report)
    return report


def test_good_answers_pass_every_gate_with_findings_and_metrics(tmp_path):
    responses = [answer("What is ROS2?", [hit(0.8), hit(0.6, "m/b.md")]), answer("Gazebo", [hit(0.4, "m/g.md")])]
    report = recorded(responses, tmp_path=tmp_path)
    assert report.passed and len(report.gates) == 4
    g = gates(report)
    assert g["every result carries full metadata"].detail == f"all {len(PAYLOAD_FIELDS)} payload fields present"
    limits = g["top_k and threshold respected"]
    assert (limits.value, limits.threshold, limits.rule) == (2, 5, "<=")
    assert limits.detail == "at most 5 results per query, every score >= 0"
    no_match = g["no-match threshold gives an empty result, not an error"]
    assert (no_match.value, no_match.threshold) == (0, 0.95)
    assert report.findings[0].startswith("'What is ROS2?': top hit module-01-ros2/01-ros2-overview.md § 'Overview' "
                                         "(score 0.80); 2 results")
    assert report.metrics == {"queries": 2, "mean_top1_score": pytest.approx(0.6)}
    assert report.tables == ["tables/01_query_results.csv"]


def test_a_top_hit_without_a_section_is_named_without_one(tmp_path):
    # team #9's chunk before its page's first heading has no section: "§ None" read as a section named None
    report = recorded([answer("Gazebo", [hit(0.4, "m/g.md", section="")])], tmp_path=tmp_path)
    assert report.findings[0] == "'Gazebo': top hit m/g.md (score 0.40); 1 result"


def test_results_out_of_order_fail_the_ranking_gate(tmp_path):
    report = recorded([answer("q1", [hit(0.8)]), answer("q2", [hit(0.5), hit(0.7, "m/b.md")])], tmp_path=tmp_path)
    ranked = gates(report)["results ordered by score, highest first"]
    assert not ranked.passed and ranked.detail == "not ordered: 'q2'"
    assert not report.passed


def test_a_missing_payload_field_fails_the_metadata_gate(tmp_path):
    report = recorded([answer("q", [hit(0.8), hit(0.7, "m/b.md", drop=("title", "token_count"))])],
                      tmp_path=tmp_path)
    meta = gates(report)["every result carries full metadata"]
    assert not meta.passed and meta.value == ["title", "token_count"]
    assert meta.detail == "missing: title, token_count"
    assert gates(recorded([answer("q", [hit(0.8)])], tmp_path=tmp_path))["every result carries full metadata"].passed


def test_more_results_than_top_k_or_a_score_below_the_threshold_fail_the_limits_gate(tmp_path):
    six = answer("six", [hit(0.9 - i / 100, f"m/{i}.md") for i in range(6)])
    too_many = gates(recorded([six], tmp_path=tmp_path))["top_k and threshold respected"]
    assert not too_many.passed and too_many.value == 6 and "broken by: 'six'" in too_many.detail
    low = answer("low", [hit(0.5), hit(0.2, "m/b.md")], threshold=0.3)
    below = gates(recorded([low], similarity_threshold=0.3, tmp_path=tmp_path))["top_k and threshold respected"]
    assert not below.passed and "'low'" in below.detail


def test_the_limit_is_the_served_top_k_capped_at_max_top_k(tmp_path):
    full = answer("many", [hit(0.9 - i / 100, f"m/{i}.md") for i in range(MAX_TOP_K)], top_k=MAX_TOP_K)
    limits = gates(recorded([full], top_k=MAX_TOP_K + 10, tmp_path=tmp_path))["top_k and threshold respected"]
    assert limits.passed and limits.detail.startswith(f"at most {MAX_TOP_K} results per query")
    over = gates(recorded([full], top_k=MAX_TOP_K - 1, tmp_path=tmp_path))["top_k and threshold respected"]
    assert not over.passed and over.detail.endswith("broken by: 'many'")


def test_a_no_match_query_with_results_or_without_a_warning_fails(tmp_path):
    guessed = answer("What is ROS2?", [hit(0.96)], threshold=0.95)
    gate = "no-match threshold gives an empty result, not an error"
    assert not gates(recorded([answer("q", [hit(0.8)])], guessed, tmp_path=tmp_path))[gate].passed
    silent = answer("What is ROS2?", [], threshold=0.95)
    assert not gates(recorded([answer("q", [hit(0.8)])], silent, tmp_path=tmp_path))[gate].passed


def test_arguments_out_of_range_are_validation_errors(tmp_path):
    with pytest.raises(ValidationError) as err:
        recorded([answer("q", [hit(0.8)])], top_k=0, tmp_path=tmp_path)
    assert err.value.field == "top_k"


class CannedRetriever:
    """Answers each query with the canned response of that text (any threshold: the no-match one is ``EMPTY``)."""

    def __init__(self, canned):
        self.canned, self.asked = canned, []

    def search_many(self, queries, **kwargs):
        self.asked.append(("many", list(queries), kwargs))
        return [self.canned[q] for q in queries]

    def search(self, query, **kwargs):
        self.asked.append(("one", query, kwargs))
        return EMPTY


class Ctx:
    def __init__(self, retriever):
        self.retriever = retriever


def test_run_asks_the_questions_with_the_filters_and_the_first_again_at_the_no_match_threshold(tmp_path):
    canned = {"What is ROS2?": answer("What is ROS2?", [hit(0.8)]), "Gazebo": answer("Gazebo", [])}
    retriever = CannedRetriever(canned)
    result = query.run(Ctx(retriever), queries=["What is ROS2?", "Gazebo"], top_k=3, similarity_threshold=0.2,
                       source_prefix="module-01", section=None, no_match_threshold=0.95)
    assert retriever.asked == [
        ("many", ["What is ROS2?", "Gazebo"], dict(top_k=3, similarity_threshold=0.2, source_prefix="module-01",
                                                   section=None)),
        ("one", "What is ROS2?", dict(top_k=3, similarity_threshold=0.95))]
    assert result.top is canned["What is ROS2?"].results[0]
    assert str(result).splitlines() == [
        "2 queries, top 3, threshold 0.2: 1 results",
        "no-match threshold 0.95: 0 results; warnings: ['no chunk scored at least 0.95']"]
    frame = result.tables()["results"]
    assert list(frame["query"]) == ["What is ROS2?"] and set(frame.columns) >= set(PAYLOAD_FIELDS)
    report = NotebookReport("01_query", "t", tmp_path)
    result.record(report)
    assert report.passed and len(report.gates) == 4


def test_run_without_a_question_is_a_validation_error_naming_queries():
    with pytest.raises(ValidationError) as err:
        query.run(Ctx(CannedRetriever({})), queries=[], top_k=5, similarity_threshold=0.0, source_prefix=None,
                  section=None, no_match_threshold=0.95)
    assert err.value.field == "queries"
