"""Notebook 03's check (checks.retrieval.source_coverage): its study, tables, figure, gates, findings and metrics,
each gate passing and failing."""

from __future__ import annotations

from collections import Counter

import pytest
from corpus import DOCS, fill_collection
from fakes.embedders import FakeEmbedder
from responses import answer, hit

from retrieval_lib import Retriever, VectorStore
from retrieval_lib.checks.retrieval import source_coverage as coverage
from retrieval_lib.checks.retrieval._topics import TopicLanding, TopicStudy, prefix_hits
from retrieval_lib.checks.retrieval.source_coverage import CoverageQuery, SourceFile
from retrieval_lib.errors import ValidationError
from retrieval_lib.params import GoldenQuery, GoldenSet, Topic, TopicSet
from retrieval_lib.workbook.report import NotebookReport

REACHABLE = "every source file is reachable by a query"
LANDS = "'Gazebo simulation' lands in m2/"
SOURCES = [SourceFile("m1/a.md", "A", 3, ("Alpha",)), SourceFile("m2/b.md", "B", 2, ("Beta", "Bravo")),
           SourceFile("m3/c.md", "C", 1, ("Gamma",))]


def study(*, reach_c: bool = True) -> coverage.CoverageStudy:
    """a.md and b.md found by their headings ("Bravo" misses b.md); c.md found only by a golden query if ``reach_c``."""
    queries = [CoverageQuery("Alpha", "heading", "m1/a.md"), CoverageQuery("Beta", "heading", "m2/b.md"),
               CoverageQuery("Bravo", "heading", "m2/b.md"), CoverageQuery("Gamma", "heading", "m3/c.md"),
               CoverageQuery("golden question", "golden")]
    responses = [answer("Alpha", [hit(0.8, "m1/a.md")]), answer("Beta", [hit(0.7, "m2/b.md")]),
                 answer("Bravo", [hit(0.6, "m1/a.md")]), answer("Gamma", [hit(0.5, "m1/a.md")]),
                 answer("golden question", [hit(0.7, "m3/c.md" if reach_c else "m2/b.md")])]
    return coverage.CoverageStudy(sources=SOURCES, queries=queries, responses=responses,
                                  files=coverage.measure_coverage(SOURCES, queries, responses), top_k=5)


def primary(*files: str):
    return answer("Gazebo simulation", [hit(0.9 - i / 10, f) for i, f in enumerate(files)])


def topic(response, prefix: str = "m2/") -> TopicStudy:
    """The profile's one topic (``primary_query``/``primary_prefix``), landed as ``response`` says."""
    one = TopicLanding(response.query_text, prefix, "reviewed", response, prefix_hits(response, prefix),
                       len(response.results), True)
    return TopicStudy(TopicSet((Topic(response.query_text, prefix),)), [one], top_k=5)


def record(s, lands, tmp_path, *, min_reachable_share=1.0, min_primary_share=0.6, prefix="m2/"):
    report = NotebookReport("03_source_coverage", "t", tmp_path)
    result = coverage.SourceCoverage(s, topic(lands, prefix), points=sum(f.chunks for f in s.sources),
                                     min_reachable_share=min_reachable_share, min_primary_share=min_primary_share)
    result.record(report, show=False)
    return report, {g.name: g for g in report.gates}, report.metrics["primary_share"]


def test_every_file_reached_and_the_query_in_its_module_pass_with_findings_and_metrics(tmp_path):
    report, gates, share = record(study(), primary("m2/b.md", "m2/x.md", "m2/y.md", "m1/a.md"), tmp_path)
    assert report.passed and len(gates) == 2
    assert [g.id for g in report.gates] == ["coverage.reachable", "coverage.topic.gazebo_simulation"]
    assert (gates[REACHABLE].value, gates[REACHABLE].rule, gates[REACHABLE].parameter) == (1.0, ">=",
                                                                                          "min_reachable_share")
    assert gates[REACHABLE].detail == "3/3 files in some query's top-5; none unreachable"
    assert gates[LANDS].value == 0.75 and gates[LANDS].detail == "3/4 results from m2/"
    assert share == 0.75
    assert report.findings == [
        "'Gazebo simulation': 75% of the top 5 from m2/",
        "3 source files (6 chunks); 3 reachable by unfiltered top-5 retrieval",
        "heading queries find their own file in 2 of 4 cases (mean per-file hit rate 0.50); 2 files below 1.0",
        "2 of 3 files are also reached by a query not taken from their own headings (another file's heading or a "
        "golden query)",
        "lowest heading hit rate: m3/c.md (0/1)",
    ]
    assert report.metrics["missed_heading_queries"] == 2 and report.metrics["unreachable_files"] == []
    assert report.metrics["primary_share"] == 0.75 and report.metrics["queries"] == 5
    assert [t.split("/")[1] for t in report.tables] == [
        "03_source_coverage_inventory.csv", "03_source_coverage_coverage.csv",
        "03_source_coverage_missed_heading_queries.csv", "03_source_coverage_topics.csv"]
    assert report.figures == ["figures/03_source_coverage_hit_rate.png"]


def test_an_unreachable_file_fails_the_reachability_gate_and_is_named(tmp_path):
    s = study(reach_c=False)
    assert s.unreachable == ["m3/c.md"] and s.reachable_share == pytest.approx(2 / 3)
    report, gates, _ = record(s, primary("m2/b.md"), tmp_path)
    assert not gates[REACHABLE].passed and not report.passed
    assert gates[REACHABLE].value == pytest.approx(0.6667)
    assert gates[REACHABLE].detail == "2/3 files in some query's top-5; unreachable: m3/c.md"
    _, gates, _ = record(s, primary("m2/b.md"), tmp_path, min_reachable_share=0.6)
    assert gates[REACHABLE].passed


def test_a_query_landing_elsewhere_fails_the_module_gate(tmp_path):
    _, gates, _ = record(study(), primary("m1/a.md", "m2/b.md", "m3/c.md", "m1/d.md"), tmp_path)
    assert not gates[LANDS].passed and gates[LANDS].value == 0.25 and gates[LANDS].detail == "1/4 results from m2/"
    _, gates, share = record(study(), primary(), tmp_path)
    assert not gates[LANDS].passed and gates[LANDS].detail == "0/0 results from m2/" and share == 0.0


def test_gate_value_and_detail_count_the_same_results_source_url_included(tmp_path):
    # a URL prefix: no source_file starts with it, only the URL's path does; value and detail must both count it
    by_url = hit(0.9, "m2/b.md", source_url="https://book.example/docs/m2/b")
    report, _, share = record(study(), answer("Gazebo simulation", [by_url, hit(0.5, "m1/a.md")]), tmp_path,
                              prefix="/docs/m2/", min_primary_share=0.5)
    lands = report.gates[1]
    assert share == 0.5 and lands.passed and lands.value == 0.5 and lands.detail == "1/2 results from /docs/m2/"
    assert prefix_hits(answer("q", [by_url]), "/docs/m2/") == 1


def test_measure_scans_asks_headings_and_golden_queries_and_judges_each_file():
    embedder = FakeEmbedder.hashed()
    store = VectorStore.in_memory()
    try:
        fill_collection(store, "c", embedder)
        golden = GoldenSet(name="g", top_k=5, min_score=0.3, required_passes=1,
                           queries=(GoldenQuery("Gazebo physics simulator", ("gazebo",), 0.3),),
                           extra_queries=(GoldenQuery("pizza dough", ("recipes",), 0.3),))
        s = coverage.measure(Retriever(store, embedder, "c"), top_k=3, headings_per_file=2, golden=golden)
    finally:
        store.close()
    assert [src.path for src in s.sources] == sorted({d["source_file"] for d in DOCS})
    assert Counter(q.origin for q in s.queries) == {"heading": len(s.queries) - 2, "golden": 1, "extra": 1}
    assert s.queries[-2:] == [CoverageQuery("Gazebo physics simulator", "golden"),
                              CoverageQuery("pizza dough", "extra")]
    assert all(len(r.results) <= 3 and not r.filters for r in s.responses)
    assert s.files == coverage.measure_coverage(s.sources, s.queries, s.responses)
    inventory = coverage.inventory_frame(s.sources)
    assert list(inventory.columns) == ["source_file", "title", "chunks", "headings"]
    assert inventory["chunks"].sum() == len(DOCS)


def test_argument_checks_are_validation_errors_naming_the_field():
    with pytest.raises(ValidationError) as err:
        coverage.heading_queries(SOURCES[0], 0)
    assert err.value.field == "limit"
    with pytest.raises(ValidationError) as err:
        coverage.measure_coverage(SOURCES, [CoverageQuery("x", "golden")], [])
    assert err.value.field == "responses"


def test_hit_rate_figure_has_one_bar_per_file_and_marks_the_unreachable_red():
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba

    fig = coverage.hit_rate_figure(study(reach_c=False))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["m1/a.md", "m2/b.md", "m3/c.md"]  # best rate first
    assert [p.get_facecolor() for p in ax.patches][-1] == to_rgba("tab:red")
    assert [t.get_text() for t in ax.texts] == ["1/1", "1/2", "0/1"]
    plt.close(fig)


class Ctx:
    """What the check reads of a notebook's run: the retriever, the collection, and whether it can be opened."""

    def __init__(self, retriever, absent=None):
        self.retriever, self._absent = retriever, absent
        self.store, self.collection = (retriever.store, retriever.collection) if retriever else (None, "c")

    def collection_absent(self):
        return self._absent


def test_run_asks_headings_golden_and_topic_queries_and_records_the_tables(tmp_path):
    embedder = FakeEmbedder.hashed()
    store = VectorStore.in_memory()
    try:
        fill_collection(store, "c", embedder)
        result = coverage.run(Ctx(Retriever(store, embedder, "c")), golden_set="params/golden/sample_book.yaml",
                              coverage_top_k=3, min_reachable_share=0.5, headings_per_file=2,
                              primary_query="Gazebo simulation", primary_prefix="module-02-simulation/", topics="",
                              min_primary_share=0.0)
    finally:
        store.close()
    assert result.points == len(DOCS) and result.topics.landings[0].topic == "Gazebo simulation"
    lines = str(result).splitlines()
    assert lines[0] == f"{len(result.study.sources)} source files, {len(DOCS)} chunks scanned of {len(DOCS)} points " \
                       "in the collection"
    assert lines[-1].startswith("1 topic queries from primary_query")
    assert set(result.tables()) == {"inventory", "coverage", "missed_heading_queries", "topics"}
    report = NotebookReport("03_source_coverage", "t", tmp_path)
    result.record(report, show=False)
    assert [g.id for g in report.gates] == ["coverage.reachable", "coverage.topic.gazebo_simulation"]


def test_with_only_a_teams_retriever_the_check_is_not_applicable_and_says_why(tmp_path):
    result = coverage.run(Ctx(None, absent="only the chatbot's retriever is configured"), golden_set="x.yaml",
                          coverage_top_k=3, min_reachable_share=1.0, headings_per_file=2, primary_query="q",
                          primary_prefix="p/", topics="", min_primary_share=0.6)
    report = NotebookReport("03_source_coverage", "t", tmp_path)
    result.record(report)
    assert [(g.id, g.passed, g.name) for g in report.gates] == [
        ("coverage.reachable", None, "every source file is reachable by a query"),
        ("coverage.topics", None, "topic queries land in their own section")]
    assert report.passed and "only the chatbot's retriever" in report.gates[0].detail
    assert result.tables() == {}
