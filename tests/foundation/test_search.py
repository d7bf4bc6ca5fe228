"""Validated semantic search over a real (in-memory / embedded) Qdrant with the real MiniLM embedder."""

from __future__ import annotations

import hashlib
import math
import random
import uuid

import pytest
from corpus import BOOK
from fakes.embedders import FakeEmbedder
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from qdrant_client import models

from retrieval_lib import Retriever, SearchResponse, VectorStore
from retrieval_lib.errors import CollectionNotFoundError, ModelMismatchError, ValidationError
from retrieval_lib.models import PAYLOAD_FIELDS
from retrieval_lib.search import MAX_TOP_K, same_ranking, validate_params, validate_query
from retrieval_lib.stores import collection_stats

COLLECTION = "book"


@pytest.fixture(scope="module")
def book_store(embedder, fill):
    store = VectorStore.in_memory()
    fill(store, COLLECTION, embedder)
    store.create_collection("other", embedder.dimension)
    yield store
    store.close()


@pytest.fixture()
def retriever(book_store, embedder):
    return Retriever(book_store, embedder, COLLECTION)


def docs_by_id(book_docs):
    return {str(d["id"]): d for d in book_docs}


# ----------------------------------------------------------------------------- relevance and payload

@pytest.mark.parametrize("query, expected_file", [
    ("How do I describe a robot's links and joints in XML?", "module-02-simulation/02-urdf.md"),
    ("recipe for pizza dough", "appendices/e-recipes.md"),
    ("physics simulator to test robots in a virtual world", "module-02-simulation/01-gazebo-basics.md"),
    ("How long does the humanoid's battery last?", "appendices/b-hardware-reference.md"),
    ("generate synthetic training data with photorealistic rendering", "module-03-isaac/01-isaac-sim.md"),
])
def test_most_relevant_chunk_ranks_first(retriever, query, expected_file):
    response = retriever.search(query, top_k=3)
    assert response.results[0].source_file == expected_file


def test_response_carries_query_timings_and_full_metadata(retriever, book_docs, embedder):
    response = retriever.search("  What is ROS 2?  ", top_k=4)
    assert isinstance(response, SearchResponse)
    assert response.query_text == "What is ROS 2?"
    assert response.total_results == len(response.results) == 4
    assert response.top_k == 4
    assert response.embed_ms >= 0 and response.search_ms >= 0
    assert response.execution_time_ms == pytest.approx(response.embed_ms + response.search_ms, abs=0.01)
    assert response.timestamp.tzinfo is not None
    assert isinstance(response.warnings, list)
    docs = docs_by_id(book_docs)
    for r in response.results:
        doc = docs[r.point_id]
        assert r.missing_fields == []
        for name in PAYLOAD_FIELDS:
            assert getattr(r, name) is not None, name
        assert r.source_file == doc["source_file"]
        assert r.source_url == f"{BOOK}/docs/{doc['route']}"
        assert r.title == doc["title"] and r.section_title == doc["section_title"]
        assert r.content == doc["content"]
        assert r.content_hash == hashlib.sha256(r.content.encode()).hexdigest()
        assert r.model_version == embedder.model
        assert 0.0 <= r.similarity_score <= 1.0


def test_long_content_is_returned_in_full(retriever, book_docs):
    urdf = next(d for d in book_docs if d["section_title"] == "URDF")
    assert len(urdf["content"]) > 2000
    top = retriever.search("URDF joints links XML robot description", top_k=1).results[0]
    assert top.content == urdf["content"]


def test_results_are_ordered_by_score_highest_first(retriever):
    response = retriever.search("robot simulation", top_k=13)
    scores = [r.raw_score for r in response.results]
    assert len(scores) == 13
    assert scores == sorted(scores, reverse=True)
    assert [r.similarity_score for r in response.results] == sorted(
        (r.similarity_score for r in response.results), reverse=True)


def test_repeated_query_returns_the_identical_list(retriever):
    first = retriever.search("ROS 2 topics and nodes", top_k=10)
    for _ in range(3):
        again = retriever.search("ROS 2 topics and nodes", top_k=10)
        assert [r.point_id for r in again.results] == [r.point_id for r in first.results]
        # scores may move in the last bits (local mode re-normalises stored vectors), never more
        assert same_ranking(again.ranking(), first.ranking())


def test_top_k_limits_the_number_of_results(retriever):
    assert len(retriever.search("robots", top_k=1).results) == 1
    three = retriever.search("robots", top_k=3)
    assert three.total_results == 3
    assert same_ranking(three.ranking(), retriever.search("robots", top_k=10).ranking()[:3])


def test_threshold_drops_chunks_below_it(retriever):
    everything = retriever.search("pizza dough recipe", top_k=13)
    scores = [r.similarity_score for r in everything.results]
    cut = (scores[2] + scores[3]) / 2  # between the third and the fourth: keeps exactly the top three
    kept = retriever.search("pizza dough recipe", top_k=13, similarity_threshold=cut)
    assert all(r.similarity_score >= cut for r in kept.results)
    assert [r.point_id for r in kept.results] == [r.point_id for r in everything.results[:3]]
    assert kept.similarity_threshold == cut


def test_threshold_too_high_gives_an_empty_response_with_a_warning(retriever):
    response = retriever.search("pizza dough recipe", similarity_threshold=0.99)
    assert response.results == [] and response.total_results == 0 and response.is_empty
    assert any("0.99" in w for w in response.warnings)


# ----------------------------------------------------------------------------- filters

def test_source_prefix_matches_source_file_prefix(retriever, book_docs):
    response = retriever.search("robots", top_k=20, source_prefix="module-02-simulation/")
    expected = {str(d["id"]) for d in book_docs if d["source_file"].startswith("module-02-simulation/")}
    assert {r.point_id for r in response.results} == expected
    assert response.filters == {"source_prefix": "module-02-simulation/"}


def test_source_prefix_matches_a_full_url_prefix(retriever, book_docs):
    response = retriever.search("robots", top_k=20, source_prefix=f"{BOOK}/docs/module-03-isaac/")
    expected = {str(d["id"]) for d in book_docs if d["source_file"].startswith("module-03-isaac/")}
    assert {r.point_id for r in response.results} == expected


def test_source_prefix_matches_the_url_path(retriever):
    # The URL slug differs from the file name: only the URL path starts with this.
    response = retriever.search("robots", top_k=20, source_prefix="/docs/module-01-ros2/what")
    assert [r.source_file for r in response.results] == ["module-01-ros2/01-ros2-overview.md"]


def test_source_prefix_is_a_prefix_not_a_substring(retriever):
    response = retriever.search("ROS 2 nodes", source_prefix="ros2")
    assert response.results == []
    assert response.warnings and any("ros2" in w for w in response.warnings)


def test_source_prefix_matching_nothing_is_an_empty_response_not_an_error(retriever):
    response = retriever.search("ROS 2", source_prefix="module-99/")
    assert response.is_empty and response.total_results == 0
    assert any("module-99/" in w for w in response.warnings)


def test_section_is_an_exact_match(retriever):
    response = retriever.search("launch files", top_k=20, section="Launch files")
    assert [r.section_title for r in response.results] == ["Launch files"]
    assert response.filters == {"section": "Launch files"}


def test_section_matching_nothing_is_empty_not_an_error(retriever):
    assert retriever.search("launch files", section="Launch").is_empty


def test_source_prefix_and_section_combine(retriever):
    both = retriever.search("launch", top_k=20, source_prefix="module-01-ros2/", section="Launch files: advanced")
    assert [r.point_id for r in both.results] == ["4"]
    assert retriever.search("launch", source_prefix="module-02-simulation/", section="Launch files").is_empty


# ----------------------------------------------------------------------------- search_many

def test_search_many_gives_the_same_results_as_single_searches(retriever):
    queries = ["What is ROS 2?", "pizza dough", "simulated lidar point clouds", "battery life"]
    many = retriever.search_many(queries, top_k=5)
    assert [r.query_text for r in many] == queries
    for query, batched in zip(queries, many):
        single = retriever.search(query, top_k=5)
        assert [r.point_id for r in batched.results] == [r.point_id for r in single.results]
        for a, b in zip(batched.results, single.results):
            assert a.raw_score == pytest.approx(b.raw_score, abs=1e-5)
            assert a.content == b.content


def test_search_many_applies_filters_like_search(retriever):
    many = retriever.search_many(["robots", "ROS"], top_k=20, source_prefix="module-03-isaac/")
    for response in many:
        assert response.results and all(r.source_file.startswith("module-03-isaac/") for r in response.results)


def test_search_many_validates_every_query_before_embedding(book_store, embedder):
    counting = FakeEmbedder(inner=embedder)
    r = Retriever(book_store, counting, COLLECTION)
    with pytest.raises(ValidationError):
        r.search_many(["fine", "   "])
    with pytest.raises(ValidationError):
        r.search_many("one string")
    assert counting.query_calls == 0


# ----------------------------------------------------------------------------- validation

@pytest.mark.parametrize("query", ["", " ", "   \t\n  "])
def test_empty_or_whitespace_query_is_rejected(retriever, query):
    with pytest.raises(ValidationError) as info:
        retriever.search(query)
    assert info.value.field == "query"


@pytest.mark.parametrize("query", [None, 5, b"bytes", ["list"]])
def test_non_text_query_is_rejected(retriever, query):
    with pytest.raises(ValidationError):
        retriever.search(query)


def test_query_over_the_limit_is_rejected_stating_the_limit(retriever):
    assert retriever.search("a" * 1000, top_k=1).results  # at the limit: fine
    with pytest.raises(ValidationError) as info:
        retriever.search("a" * 1001)
    assert "1000" in str(info.value)
    assert info.value.field == "query"


def test_query_limit_follows_the_configured_maximum(book_store, embedder):
    r = Retriever(book_store, embedder, COLLECTION, query_max_chars=40)
    with pytest.raises(ValidationError) as info:
        r.search("x" * 41)
    assert "40" in str(info.value)


@pytest.mark.parametrize("top_k", ["5", None, True, False, 1.5, 0, -1, 5.0])
def test_invalid_top_k_is_rejected(retriever, top_k):
    with pytest.raises(ValidationError) as info:
        retriever.search("ROS 2", top_k=top_k)
    assert info.value.field == "top_k"


@pytest.mark.parametrize("threshold", [math.nan, "0.5", None, -0.01, 1.01, math.inf, True])
def test_invalid_threshold_is_rejected(retriever, threshold):
    with pytest.raises(ValidationError) as info:
        retriever.search("ROS 2", similarity_threshold=threshold)
    assert info.value.field == "similarity_threshold"


@pytest.mark.parametrize("threshold", [0, 0.0, 1, 1.0])
def test_threshold_bounds_are_accepted(retriever, threshold):
    assert retriever.search("ROS 2", similarity_threshold=threshold).similarity_threshold == float(threshold)


@pytest.mark.parametrize("kwargs", [{"source_prefix": ""}, {"source_prefix": 3}, {"section": "  "}])
def test_invalid_filters_are_rejected(retriever, kwargs):
    with pytest.raises(ValidationError):
        retriever.search("ROS 2", **kwargs)


def test_invalid_input_is_rejected_before_anything_is_embedded(book_store, embedder):
    counting = FakeEmbedder(inner=embedder)
    r = Retriever(book_store, counting, COLLECTION)
    for kwargs in ({"query": "  "}, {"query": "ok", "top_k": "5"}, {"query": "ok", "similarity_threshold": math.nan}):
        with pytest.raises(ValidationError):
            r.search(**kwargs)
    assert counting.query_calls == 0


@given(st.text(alphabet=" \t\n\r\u00a0\u2003", max_size=30))
def test_any_whitespace_only_query_is_invalid(text):
    with pytest.raises(ValidationError):
        validate_query(text, 1000)


@hsettings(max_examples=60)
@given(st.integers(min_value=1, max_value=10_000))
def test_top_k_above_the_maximum_is_capped_with_a_warning(top_k):
    got, _, warnings = validate_params(top_k, 0.5)
    assert got == min(top_k, MAX_TOP_K)
    assert bool(warnings) == (top_k > MAX_TOP_K)


# ----------------------------------------------------------------------------- ties and capping (controlled vectors)

def tied_store(ids, vector=(1.0, 0.0, 0.0, 0.0)):
    store = VectorStore.in_memory()
    store.create_collection("ties", len(vector))
    store.upsert("ties", [models.PointStruct(id=i, vector=list(vector), payload={
        "content": f"chunk {i}", "model_version": "fixed-model"}) for i in ids])
    return store


def test_top_k_above_twenty_is_capped_with_a_warning():
    store = tied_store(range(1, 31))
    response = Retriever(store, FakeEmbedder.fixed([1, 0, 0, 0]), "ties").search("x", top_k=25)
    assert response.top_k == MAX_TOP_K
    assert len(response.results) == MAX_TOP_K
    assert any("20" in w for w in response.warnings)


def test_identical_vectors_are_ordered_by_point_id_uuid():
    rng = random.Random(7)
    ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(12)]
    store = tied_store(ids)
    response = Retriever(store, FakeEmbedder.fixed([1, 0, 0, 0]), "ties").search("x", top_k=12)
    assert [r.point_id for r in response.results] == sorted(ids)


def test_tie_at_the_cut_keeps_the_lowest_ids_even_with_many_ties():
    rng = random.Random(3)
    ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(40)]
    store = tied_store(ids)
    r = Retriever(store, FakeEmbedder.fixed([1, 0, 0, 0]), "ties")
    assert [x.point_id for x in r.search("x", top_k=3).results] == sorted(ids)[:3]
    many = r.search_many(["x", "y"], top_k=3)
    assert all([x.point_id for x in m.results] == sorted(ids)[:3] for m in many)


def test_identical_vectors_with_integer_ids_are_ordered_numerically():
    ids = list(range(1, 31))
    random.Random(5).shuffle(ids)
    store = tied_store(ids)
    response = Retriever(store, FakeEmbedder.fixed([1, 0, 0, 0]), "ties").search("x", top_k=5)
    assert [r.point_id for r in response.results] == ["1", "2", "3", "4", "5"]


def test_a_better_score_outranks_a_lower_id():
    store = tied_store([1, 2, 3])
    store.upsert("ties", [models.PointStruct(id=9, vector=[1.0, 1.0, 0, 0], payload={"model_version": "fixed-model"})])
    response = Retriever(store, FakeEmbedder.fixed([1, 1, 0, 0]), "ties").search("x", top_k=4)
    assert [r.point_id for r in response.results] == ["9", "1", "2", "3"]
    assert response.results[0].similarity_score == pytest.approx(1.0)


# ----------------------------------------------------------------------------- collection checks

def test_missing_collection_lists_the_collections_that_exist(book_store, embedder):
    with pytest.raises(CollectionNotFoundError) as info:
        Retriever(book_store, embedder, "nope").search("ROS 2")
    err = info.value
    assert err.collection == "nope"
    assert err.available == ["book", "other"]
    assert "book" in str(err) and "other" in str(err) and "nope" in str(err)


def test_dimension_mismatch_names_both_sizes_and_the_model_before_searching(embedder):
    store = VectorStore.in_memory()
    store.create_collection("small", 8)
    store.upsert("small", [models.PointStruct(id=1, vector=[0.1] * 8, payload={"model_version": embedder.model})])
    counting = FakeEmbedder(inner=embedder)
    with pytest.raises(ModelMismatchError) as info:
        Retriever(store, counting, "small").search("ROS 2")
    err = info.value
    assert (err.collection_dimension, err.embedder_dimension) == (8, 384)
    assert "8" in str(err) and "384" in str(err) and embedder.model in str(err)
    assert counting.query_calls == 0


def test_a_teams_collection_of_another_size_gets_its_advice_once_and_never_ours_to_rebuild_it(embedder):
    # team #6 (1536-d Gemini vectors) with MiniLM configured: "set EMBEDDING_PROVIDER/EMBEDDING_MODEL" twice
    from retrieval_lib.collection import CollectionView

    store = VectorStore.in_memory()
    store.create_collection("theirs", 8)
    store.upsert("theirs", [models.PointStruct(id=str(uuid.uuid4()), vector=[0.1] * 8, payload={"text": "a chunk"})])
    with pytest.raises(ModelMismatchError) as info:
        Retriever(CollectionView(store), embedder, "theirs").search("ROS 2")
    message = str(info.value)
    assert message.count("EMBEDDING_PROVIDER/EMBEDDING_MODEL") == 1 and "--recreate" not in message
    assert "re-embed it with your own pipeline" in message


def test_chunks_embedded_with_another_model_are_refused(embedder, fill, book_docs):
    store = VectorStore.in_memory()
    fill(store, "light", embedder, book_docs[:3], model_version="embed-english-light-v3.0")  # also 384-d
    with pytest.raises(ModelMismatchError) as info:
        Retriever(store, embedder, "light").search("ROS 2")
    err = info.value
    assert err.collection_model == "embed-english-light-v3.0" and err.configured_model == embedder.model
    assert "embed-english-light-v3.0" in str(err) and embedder.model in str(err)


def test_a_collection_mixing_models_is_refused_even_if_the_first_chunk_matches(embedder, fill, book_docs):
    store = VectorStore.in_memory()
    fill(store, "mixed", embedder, book_docs)
    foreign = book_docs[-1]
    store.upsert("mixed", [models.PointStruct(
        id=999, vector=embedder.embed_documents([foreign["content"]])[0],
        payload={"content": foreign["content"], "model_version": "embed-english-light-v3.0"})])
    with pytest.raises(ModelMismatchError) as info:
        Retriever(store, embedder, "mixed").search("pizza")
    assert "embed-english-light-v3.0" in str(info.value)


def test_model_check_can_be_switched_off(embedder, fill, book_docs):
    store = VectorStore.in_memory()
    fill(store, "light", embedder, book_docs[:3], model_version="embed-english-light-v3.0")
    response = Retriever(store, embedder, "light", check_model=False).search("ROS 2")
    assert response.results


def test_empty_collection_gives_an_empty_response_with_a_warning(embedder):
    store = VectorStore.in_memory()
    store.create_collection("empty", embedder.dimension)
    response = Retriever(store, embedder, "empty").search("ROS 2")
    assert response.is_empty and response.total_results == 0
    assert any("empty" in w for w in response.warnings)


def test_points_lacking_payload_fields_come_back_with_the_gaps_listed(embedder, book_docs, payload_for):
    store = VectorStore.in_memory()
    store.create_collection("partial", embedder.dimension)
    pizza, ros = book_docs[11], book_docs[0]
    full = payload_for(ros, embedder.model)
    partial = {"content": pizza["content"], "source_file": pizza["source_file"], "model_version": embedder.model}
    vectors = embedder.embed_documents([pizza["content"], ros["content"]])
    store.upsert("partial", [models.PointStruct(id=1, vector=vectors[0], payload=partial),
                             models.PointStruct(id=2, vector=vectors[1], payload=full)])
    response = Retriever(store, embedder, "partial").search("pizza dough", top_k=2)
    assert [r.point_id for r in response.results] == ["1", "2"]
    gap = response.results[0]
    assert gap.content == pizza["content"] and gap.source_url is None
    # the chunk id falls back to the point id, which every point has
    assert set(gap.missing_fields) == set(PAYLOAD_FIELDS) - {"content", "source_file", "model_version", "chunk_id"}
    assert gap.chunk_id == "1"
    assert response.results[1].missing_fields == []
    assert any("source_url" in w and "section_title" in w for w in response.warnings)


def test_search_works_on_an_embedded_folder_store(tmp_path, embedder, fill, book_docs):
    with VectorStore.at_path(tmp_path / "store") as store:
        fill(store, COLLECTION, embedder, book_docs)
    with VectorStore.at_path(tmp_path / "store") as store:  # reopened: the data persisted
        response = Retriever(store, embedder, COLLECTION).search("pizza dough", top_k=2)
        assert response.results[0].source_file == "appendices/e-recipes.md"
        assert collection_stats(store, COLLECTION).vector_count == len(book_docs)
