"""The run's query cache: each distinct query embedded once per run, across kernels, never a secret on disk."""

from __future__ import annotations

import json
import math

import pytest
from fakes.cohere_server import FakeCohere
from fakes.embedders import FakeEmbedder, hashed_bag_of_words

from retrieval_lib.embedding.cache import (
    MAX_BATCH,
    CachedEmbedder,
    QueryCache,
    cache_file,
    query_key,
)
from retrieval_lib.embedding.providers import CohereEmbedder, LocalEmbedder
from retrieval_lib.workbook.registry import NOTEBOOKS, notebook_spec

KEY = "co-CACHE-SECRET-91c2"


def fake() -> FakeEmbedder:
    return FakeEmbedder(hashed_bag_of_words(16), dimension=16)


def test_key_separates_provider_model_input_type_and_text():
    base = query_key("cohere", "m", "search_query", "What is ROS2?")
    assert base == query_key("cohere", "m", "search_query", "What is ROS2?")
    others = {query_key("local", "m", "search_query", "What is ROS2?"),
              query_key("cohere", "m2", "search_query", "What is ROS2?"),
              query_key("cohere", "m", "search_document", "What is ROS2?"),
              query_key("cohere", "m", "search_query", "What is ROS2")}
    assert base not in others and len(others) == 4


def test_each_distinct_query_is_embedded_once_and_vectors_are_unchanged(tmp_path):
    inner = fake()
    emb = CachedEmbedder(inner, QueryCache(tmp_path / "c.json"))
    texts = ["a b", "c d", "a b", "e f"]
    first = emb.embed_queries(texts)
    assert first == fake().embed_queries(texts)  # exactly the vectors the service gives
    assert inner.query_texts == ["a b", "c d", "e f"]  # the repeat inside one call is not sent
    again = emb.embed_queries(["e f", "a b"])
    assert again == [first[3], first[0]] and inner.query_calls == 1
    usage = emb.usage()
    assert (usage.calls, usage.texts, usage.cached) == (1, 3, 3)


def test_cache_is_shared_through_the_file_by_a_later_kernel(tmp_path):
    path = cache_file(tmp_path)
    CachedEmbedder(fake(), QueryCache(path)).embed_queries(["robot arm", "gazebo"])
    later = fake()  # another kernel: a new process would read the same file
    emb = CachedEmbedder(later, QueryCache(path))
    emb.embed_queries(["gazebo", "urdf"])
    assert later.query_texts == ["urdf"]
    assert len(json.loads(path.read_text())["entries"]) == 3
    assert not list(path.parent.glob("*.tmp"))  # written atomically, nothing left behind


def test_a_damaged_cache_file_counts_as_empty(tmp_path):
    path = cache_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    inner = fake()
    CachedEmbedder(inner, QueryCache(path)).embed_queries(["x y"])
    assert inner.query_texts == ["x y"] and json.loads(path.read_text())["format"] == 1


def test_a_bypass_by_name_sends_every_query_and_touches_no_cache(tmp_path):
    bypassing = {s.name for s in NOTEBOOKS if s.bypass}
    assert bypassing >= {"consistency", "latency"}
    cache = QueryCache(cache_file(tmp_path))
    CachedEmbedder(fake(), cache).embed_queries(["q"])
    inner = fake()
    emb = CachedEmbedder(inner, cache, bypass=notebook_spec("latency").bypass)
    emb.embed_queries(["q"])
    emb.embed_queries(["q"])
    assert inner.query_texts == ["q", "q"] and len(cache) == 1
    assert emb.usage().bypass.startswith("latency timings") and emb.usage().cached == 0


def test_documents_are_never_cached(tmp_path):
    inner = fake()
    emb = CachedEmbedder(inner, QueryCache(cache_file(tmp_path)))
    emb.embed_documents(["chunk"])
    emb.embed_documents(["chunk"])
    assert inner.document_calls == 2 and not cache_file(tmp_path).exists()


def test_cohere_queries_go_in_batches_of_96_and_the_file_holds_no_secret(tmp_path):
    texts = [f"question number {i}" for i in range(250)]
    with FakeCohere(dim=384) as server:
        inner = CohereEmbedder(KEY, "embed-english-light-v3.0", base_url=server.url, max_retries=0,
                               batch_size=96)  # the fake stands in for Cohere's own API and its limit
        emb = CachedEmbedder(inner, QueryCache(cache_file(tmp_path)))
        emb.prefetch(texts)
        emb.embed_queries(texts[:96])
        emb.embed_queries(texts)
        sizes = [len(r["json"]["texts"]) for r in server.embed_requests]
    assert sizes == [96, 96, 58] and inner.calls == math.ceil(250 / MAX_BATCH) == 3
    stored = cache_file(tmp_path).read_text()
    assert KEY not in stored and "question number" not in stored and "embed-english" not in stored


def test_local_model_is_not_loaded_to_read_its_name_and_dimension():
    emb = LocalEmbedder()
    assert (emb.model, emb.dimension, emb.max_tokens) == ("all-MiniLM-L6-v2", 384, 256)
    assert emb._loaded is None and emb.calls == 0
    vectors = emb.embed_queries(["What is ROS2?"])
    assert emb._loaded is not None and len(vectors[0]) == emb._st.get_embedding_dimension() == 384
    assert emb._st.max_seq_length == emb.max_tokens and (emb.calls, emb.texts) == (1, 1)


@pytest.mark.parametrize("bad", [{"format": 99, "entries": {"k": [1.0]}}, [1, 2], {"format": 1, "entries": 3}])
def test_a_cache_file_of_another_shape_is_ignored(tmp_path, bad):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(bad))
    assert len(QueryCache(path)) == 0
