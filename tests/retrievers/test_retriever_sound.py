"""A sound retriever over the sample book gives the collection's own hit@5 on the golden set, through each kind.

The HTTP endpoint calls the library's own search; the Python function (tests/fixtures/team_function_qdrant.py)
is written as a team writes one (qdrant-client and sentence-transformers) and runs in a child process over a
copy of the store. Both go through the real adapters; the golden set is params/golden/sample_book.yaml.
"""

from __future__ import annotations

import shutil

import pytest
from corpus import SAMPLE_COLLECTION
from team_endpoint import TeamEndpoint

from retrieval_lib.checks.retrieval.golden_set import evaluate_golden
from retrieval_lib.params import load_golden_set
from retrieval_lib.retrievers import AnsweringSearch, open_retriever
from retrieval_lib.search import Retriever

pytestmark = [pytest.mark.usefixtures("no_proxies"), pytest.mark.slow]


@pytest.fixture(scope="module")
def collection(book, embedder):
    return Retriever(book.store, embedder, SAMPLE_COLLECTION)


@pytest.fixture(scope="module")
def golden():
    return load_golden_set("params/golden/sample_book.yaml")


def _evaluate(retriever, golden, collection):
    return evaluate_golden(retriever, golden, vector_count=collection.store.count(SAMPLE_COLLECTION),
                           metadata_completeness=1.0)


def _per_query(report):
    return [(o.query, o.passed) for o in report.outcomes if o.kind in ("golden", "extra")]


def test_a_team_http_endpoint_over_the_book_gives_the_collections_hit_at_5(collection, golden):
    def answer(query, top_k):
        hits = collection.search(query, top_k=top_k).results
        return {"results": [{"id": r.chunk_id, "content": r.content, "score": r.raw_score, "url": r.source_url,
                             "metadata": {"title": r.title}} for r in hits], "query": query}

    direct = _evaluate(collection, golden, collection)
    with TeamEndpoint(answer) as ep:
        asker = open_retriever({"kind": "http", "url": ep.url, "timeout_s": 30})
        try:
            through = _evaluate(AnsweringSearch(asker, collection), golden, collection)
        finally:
            asker.close()
    assert all(r.error is None for r in through.responses)
    assert through.hit_at_k == pytest.approx(direct.hit_at_k) and direct.hit_at_k > 0.5
    assert _per_query(through) == _per_query(direct)
    # the endpoint answers URLs only: each result's file is read from the collection, as the notebooks need it
    assert [r.source_file for r in through.responses[0].results] == \
        [r.source_file for r in direct.responses[0].results]
    assert any("read from the collection" in w for w in through.responses[0].warnings)


def test_a_team_python_function_over_a_copy_of_the_book_gives_the_collections_hit_at_5(book, collection, golden,
                                                                                         tmp_path):
    folder = tmp_path / "store"
    shutil.copytree(book.folder, folder, ignore=shutil.ignore_patterns(".lock"))
    direct = _evaluate(collection, golden, collection)
    asker = open_retriever({"kind": "python", "function": "tests/fixtures/team_function_qdrant.py:search",
                            "env": {"TEAM_QDRANT_PATH": str(folder), "TEAM_COLLECTION": SAMPLE_COLLECTION},
                            "timeout_s": 60})
    try:
        through = _evaluate(AnsweringSearch(asker, collection), golden, collection)
    finally:
        asker.close()
    assert all(r.error is None for r in through.responses), [r.error for r in through.responses]
    assert through.hit_at_k == pytest.approx(direct.hit_at_k) and direct.hit_at_k > 0.5
    assert _per_query(through) == _per_query(direct)


def test_kind_collection_wraps_the_collections_own_search_unchanged(collection):
    asker = open_retriever(None, collection_retriever=collection)
    questions = ["What is inverse kinematics?", "How does Gazebo simulate sensors?"]
    answers = asker.ask_many(questions, 5)
    direct = collection.search_many(questions, top_k=5)
    assert asker.kind == "collection" and all(a.ok for a in answers)
    assert [[h.chunk_id for h in a.hits] for a in answers] == [[r.chunk_id or r.point_id for r in d.results]
                                                             for d in direct]
    assert answers[0].hits[0].score == pytest.approx(direct[0].results[0].raw_score)
