"""Run files: stable query ids, ranx-loadable run and qrels, rank order and sources kept."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from retrieval_lib.errors import ConfigurationError, ValidationError
from retrieval_lib.models import SearchResponse, SearchResult
from retrieval_lib.workbook.report import NotebookReport
from retrieval_lib.workbook.runfiles import query_id, read_run, read_runs, write_run


def response(text: str, hits: list[tuple[str, float, str]]) -> SearchResponse:
    results = [SearchResult(point_id=c, chunk_id=c, source_file=f, source_url=f"/docs/{f}", similarity_score=s,
                            raw_score=s) for c, s, f in hits]
    return SearchResponse(query_text=text, results=results, total_results=len(results), top_k=5,
                          similarity_threshold=0.0, collection="c", model="m", embed_ms=1, search_ms=1,
                          execution_time_ms=2, timestamp=datetime.now(UTC))


def test_query_id_depends_on_the_text_only():
    assert query_id("What is ROS2?") == query_id("  What is   ROS2? ")
    assert query_id("What is ROS2?") != query_id("what is ros2?")
    assert query_id("a").startswith("q") and len(query_id("a")) == 11


def test_written_run_keeps_rank_order_sources_qrels_and_settings(tmp_path):
    report = NotebookReport("05_golden_set", "t", tmp_path)
    report.context = {"collection": "book", "provider": "local", "model": "mini", "dimension": 384}
    responses = [response("q one", [("c2", 0.9, "b.md"), ("c1", 0.8, "a.md")]),
                 response("q two", []), response("q one", [("c9", 0.1, "z.md")])]  # a repeat is kept once
    path = write_run(report, responses, kinds=["golden", "negative", "golden"], top_k=5,
                     qrels={"q one": {"/docs/a.md": 1}}, qrels_level="source_url")
    rf = read_run(path)
    one, two = query_id("q one"), query_id("q two")
    assert list(rf.queries) == [one, two] and rf.queries[two]["kind"] == "negative"
    assert rf.results[one] == [["c2", 0.9, "b.md", "/docs/b.md"], ["c1", 0.8, "a.md", "/docs/a.md"]]
    assert rf.top1(one) == 0.9 and rf.top1(two) is None
    assert rf.qrels == {one: {"/docs/a.md": 1}} and rf.qrels_level == "source_url"
    assert rf.settings == {"collection": "book", "provider": "local", "model": "mini", "dimension": 384, "top_k": 5}
    assert read_runs(tmp_path)["05_golden_set"].run == rf.run


def test_the_judgments_qrels_and_a_run_file_key_a_query_alike(tmp_path):
    """A user joins the judgments' exported qrels with a run file's TREC run (ranx, trec_eval): one id a query."""
    from retrieval_lib.judging.judgments import Judgment, qrels_text, to_qrels

    typed = "What is  ROS2? "  # spacing as a person types it
    judgment = Judgment(typed, "c1", "0" * 64, 2, "ann", "2026-11-28T04:00:00Z")
    rf = read_run(write_run(NotebookReport("05_golden_set", "t", tmp_path), [response(typed, [("c1", 0.9, "a.md")])],
                            kinds="golden", top_k=5))
    assert set(to_qrels([judgment], ids=True)) == set(rf.run) == {query_id("What is ROS2?")}
    assert qrels_text([judgment]) == f"{query_id('What is ROS2?')} 0 c1 2\n"


def test_pairs_as_qrels_merge_per_query(tmp_path):
    report = NotebookReport("03_x", "t", tmp_path)
    path = write_run(report, [response("h", [("c1", 0.5, "a.md")])], kinds="heading", top_k=5,
                     qrels=[("h", "a.md"), ("h", "b.md"), ("not asked", "c.md")], qrels_level="source_file",
                     query_set="derived")
    rf = read_run(path)
    assert rf.qrels == {query_id("h"): {"a.md": 1, "b.md": 1}} and rf.query_set == "derived"


def test_bad_arguments_and_unreadable_files_are_typed_errors(tmp_path):
    report = NotebookReport("03_x", "t", tmp_path)
    with pytest.raises(ValidationError):
        write_run(report, [response("h", [])], kinds=["a", "b"], top_k=5)
    with pytest.raises(ValidationError):
        write_run(report, [response("h", [])], kinds="a", top_k=5, query_set="other")
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ConfigurationError):
        read_run(tmp_path / "bad.json")
    with pytest.raises(ConfigurationError):
        read_runs(tmp_path / "missing")
