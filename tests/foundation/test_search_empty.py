"""An empty result is an answer, and it says which of the filters or the threshold removed everything."""

from __future__ import annotations

import pytest
from corpus import DOCS, fill_collection
from fakes.embedders import FakeEmbedder

from retrieval_lib import Retriever, VectorStore

COLLECTION = "book"


@pytest.fixture(scope="module")
def retriever():
    store = VectorStore.in_memory()
    embedder = FakeEmbedder.hashed()
    fill_collection(store, COLLECTION, embedder)
    with Retriever(store, embedder, COLLECTION) as r:
        yield r


def only(warnings: list[str], start: str) -> str:
    (line,) = [w for w in warnings if w.startswith(start)]
    return line


def test_an_unknown_section_is_named_with_the_closest_existing_ones(retriever):
    resp = retriever.search("launch several nodes", section="Launch file")
    assert resp.results == []
    line = only(resp.warnings, "no chunk has section_title 'Launch file'; ")
    sections = {d["section_title"] for d in DOCS}
    assert f"{len(sections)} sections exist, e.g. 'Launch files'" in line


def test_a_prefix_no_file_has_lists_files_that_do_exist(retriever):
    resp = retriever.search("launch", source_prefix="module-09/")
    line = only(resp.warnings, "no source file or URL starts with 'module-09/'; ")
    files = sorted({d["source_file"] for d in DOCS})
    assert line.endswith(f"{len(files)} files exist, e.g. {files[0]!r}, {files[1]!r}, {files[2]!r}")
    assert len(resp.warnings) == 1  # said once, not once per cause


def test_a_threshold_above_every_score_says_the_best_score_not_the_filter(retriever):
    best = retriever.search("Python launch files start nodes", top_k=1).results[0].similarity_score
    resp = retriever.search("Python launch files start nodes", similarity_threshold=0.999)
    assert best < 0.999 and resp.results == []
    line = only(resp.warnings, "no chunk scored at least 0.999 ")
    assert f"(the best scored {best:.3f}); lower the threshold" in line


def test_filters_that_exist_but_exclude_each_other_are_blamed_together(retriever):
    resp = retriever.search("launch", source_prefix="module-02-simulation/", section="Launch files")
    line = only(resp.warnings, "no chunk matches the filters together ")
    assert "source_prefix='module-02-simulation/'" in line and "section='Launch files'" in line
