"""Source coverage over a real in-memory Qdrant with the real MiniLM embedder."""

from __future__ import annotations

import pytest

from retrieval_lib import Retriever, VectorStore
from retrieval_lib.checks.retrieval._topics import prefix_hits, under_prefix
from retrieval_lib.checks.retrieval.source_coverage import (
    CoverageQuery,
    SourceFile,
    build_queries,
    coverage_frame,
    heading_queries,
    measure_coverage,
    missed_heading_queries,
    scan_sources,
)

COLLECTION = "cov"


@pytest.fixture(scope="module")
def cov_docs(book_docs):
    docs = [dict(d) for d in book_docs]
    # launch-files: two chunks, given out of order, headings must come back in chunk_sequence order
    for d in docs:
        if d["id"] == 3:
            d.update(chunk_sequence=1, total_chunks=3, section_title="Launch files")
        if d["id"] == 4:
            d.update(chunk_sequence=0, total_chunks=3, section_title="Launch Files for ROS 2 Systems",
                     title="Launch Files for ROS 2 Systems")
    docs.append(dict(id=14, source_file="module-01-ros2/05-launch-files.md", route="module-01-ros2/launch",
                     title="Launch Files for ROS 2 Systems", section_title="Launch arguments",
                     content="Launch arguments let you change a node's parameters from the command line.",
                     chunk_sequence=2, total_chunks=3))
    return docs


# A file whose only heading is "Gazebo" but whose text is about nothing in particular: its own heading
# query finds the real Gazebo chunk first, so with top_k=1 no query ever retrieves it.
SHADOWED = dict(id=99, source_file="appendices/z-errata.md", route="appendices/errata", title="Errata",
                section_title="Gazebo", content="Errata: page numbers of the printed edition were corrected.")


@pytest.fixture(scope="module")
def cov_store(embedder, fill, cov_docs):
    store = VectorStore.in_memory()
    fill(store, COLLECTION, embedder, [*cov_docs, SHADOWED])
    yield store
    store.close()


@pytest.fixture()
def retriever(cov_store, embedder):
    return Retriever(cov_store, embedder, COLLECTION)


def test_scan_lists_every_file_with_its_chunk_count(cov_store, cov_docs):
    sources = scan_sources(cov_store, COLLECTION, batch_size=3)  # several scroll pages
    assert [s.path for s in sources] == sorted({d["source_file"] for d in cov_docs} | {SHADOWED["source_file"]})
    assert sum(s.chunks for s in sources) == len(cov_docs) + 1 == 15
    launch = next(s for s in sources if s.path == "module-01-ros2/05-launch-files.md")
    assert launch.chunks == 3
    assert launch.headings == ("Launch Files for ROS 2 Systems", "Launch files", "Launch arguments")
    assert launch.title == "Launch Files for ROS 2 Systems"


def test_heading_queries_skip_the_title_and_respect_the_limit():
    source = SourceFile("m/x.md", "Gazebo Basics", 5, ("Gazebo basics", "Worlds", "Plugins", "Sensors"))
    assert heading_queries(source, 2) == ["Worlds", "Plugins"]
    assert heading_queries(source, 10) == ["Worlds", "Plugins", "Sensors"]
    only_title = SourceFile("m/y.md", "Glossary", 1, ("Glossary",))
    assert heading_queries(only_title, 6) == ["Glossary"]
    # a collection that stores neither titles nor headings (text, url, chunk_id): the file's name is asked, so the
    # file is judged by a question rather than failed for one nobody asked
    for path in ("docs/01-ros2/02-nodes-and-topics.md", "https://book.example/docs/ros2/nodes_and_topics/"):
        assert heading_queries(SourceFile(path, "", 3, ()), 2) == ["nodes and topics"]
    with pytest.raises(ValueError):
        heading_queries(source, 0)


def test_build_queries_adds_extra_after_headings(cov_store):
    sources = scan_sources(cov_store, COLLECTION)
    queries = build_queries(sources, 6, extra=[("What is ROS 2?", "golden")])
    assert queries[-1] == CoverageQuery("What is ROS 2?", "golden", None)
    launch = [q.text for q in queries if q.owner == "module-01-ros2/05-launch-files.md"]
    assert launch == ["Launch files", "Launch arguments"]
    assert all(q.origin == "heading" for q in queries[:-1])


def test_a_file_no_query_retrieves_is_unreachable(retriever, cov_store):
    sources = scan_sources(cov_store, COLLECTION)
    queries = build_queries(sources, 6, extra=[("physics simulator for testing robots", "golden")])
    responses = retriever.search_many([q.text for q in queries], top_k=1)
    coverage = {c.path: c for c in measure_coverage(sources, queries, responses)}
    shadowed = coverage["appendices/z-errata.md"]
    assert not shadowed.reachable and shadowed.reached_by == []
    assert shadowed.heading_queries == ["Gazebo"] and shadowed.heading_hit_rate == 0.0
    gazebo = coverage["module-02-simulation/01-gazebo-basics.md"]
    assert gazebo.reachable and "physics simulator for testing robots" in gazebo.reached_by
    assert "Gazebo" in gazebo.reached_by  # the errata's own heading query reached the real Gazebo file
    # "Gazebo" is also the Gazebo file's own heading, so only the golden query counts as independent
    assert gazebo.reached_by_others == ["physics simulator for testing robots"]
    missed = missed_heading_queries(queries, responses)
    row = missed.set_index("source_file").loc["appendices/z-errata.md"]
    assert row["heading_query"] == "Gazebo" and row["top1_file"] == "module-02-simulation/01-gazebo-basics.md"
    weak = {c.path for c in coverage.values() if len(c.heading_hits) < len(c.heading_queries)}
    assert set(missed["source_file"]) == weak
    frame = coverage_frame(list(coverage.values()))
    assert frame.set_index("source_file").loc["appendices/z-errata.md", "reachable"] == False  # noqa: E712
    assert frame["reached_by"].str.len().gt(0).sum() == sum(c.reachable for c in coverage.values())


def test_with_a_larger_top_k_every_file_is_reached(retriever, cov_store):
    sources = scan_sources(cov_store, COLLECTION)
    queries = build_queries(sources, 6)
    responses = retriever.search_many([q.text for q in queries], top_k=5)
    coverage = measure_coverage(sources, queries, responses)
    assert all(c.reachable for c in coverage)
    launch = next(c for c in coverage if c.path == "module-01-ros2/05-launch-files.md")
    assert launch.heading_hit_rate == 1.0 and len(launch.heading_queries) == 2
    missed = missed_heading_queries(queries, responses)
    assert set(missed["source_file"]) == {c.path for c in coverage if c.heading_hit_rate < 1.0}


def test_filtered_searches_are_refused(retriever, cov_store):
    sources = scan_sources(cov_store, COLLECTION)
    queries = [CoverageQuery("robots", "golden")]
    filtered = retriever.search_many(["robots"], top_k=3, source_prefix="appendices/z-errata")
    with pytest.raises(ValueError, match="unfiltered"):
        measure_coverage(sources, queries, filtered)
    with pytest.raises(ValueError):
        measure_coverage(sources, queries, [])


def test_prefix_hits_counts_results_in_the_module(retriever):
    response = retriever.search("Gazebo physics simulation of robots with simulated sensors", top_k=4)
    files = [r.source_file for r in response.results]
    expected = sum(f.startswith("module-02-simulation/") for f in files)
    assert prefix_hits(response, "module-02-simulation/") == expected
    assert expected >= 2
    assert prefix_hits(response, "nowhere/") == 0
    empty = retriever.search("Gazebo", similarity_threshold=0.999)
    assert prefix_hits(empty, "module-02-simulation/") == 0


def test_a_source_under_the_teams_own_folders_is_under_the_prefix():
    # a team's ingest keeps its folders in front of the book's: docs/..., an absolute path, a URL's path
    for path in ("module-02-simulation/01-why.md", "docs/module-02-simulation/01-why.md",
                 "/home/me/site/docs/module-02-simulation/01-why.md", "/docs/module-02-simulation/why"):
        assert under_prefix(path, "module-02-simulation/"), path
    assert under_prefix("/docs/m2/x", "/docs/m2/") and under_prefix("docs/m2/x", "/docs/m2/")
    # a folder named alike, or the prefix inside a name, is not under it; nor is anything under an empty prefix
    for path in ("docs/old-module-02-simulation/x.md", "module-02-simulation.md", "", None):
        assert not under_prefix(path, "module-02-simulation/"), path
    assert not under_prefix("docs/x.md", "")
