"""Concurrent ``/search`` requests are embedded together (micro-batching), with the serial path's answers."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from fakes.embedders import FakeEmbedder
from service_fixtures import client_for, small_retriever, sqlite_db

from retrieval_lib.errors import EmbeddingError
from retrieval_lib.service import ServiceOptions
from retrieval_lib.service.batching import SearchBatcher
from retrieval_lib.service.errors import ServiceBusyError

QUERIES = ["What is ROS 2?", "Gazebo simulation", "humanoid URDF joints", "lidar point clouds", "launch files",
           "Isaac Sim", "publishers and subscribers", "robot description format"]
# a mix of options: each (top_k, threshold, filters) group is batched apart; 25 is capped with a warning
BODIES = [{"query": q, **extra} for q in QUERIES for extra in (
    {}, {"top_k": 2}, {"top_k": 25}, {"similarity_threshold": 0.2}, {"source_prefix": "module-01-ros2"},
    {"section": "Lidar"})]


def _answers(batching: bool, tmp_path, concurrency: int) -> tuple[list[dict], list[int]]:
    embedder = FakeEmbedder.like_cohere_fake(query_delay=0.02)  # 20 ms a call: requests pile up behind it
    retriever = small_retriever(embedder)
    db = sqlite_db(tmp_path, f"m{batching}.sqlite3")
    db.sync_collection(retriever.store, retriever.collection)
    sizes: list[int] = []
    calls = embedder._embed_queries

    def recording(texts):
        sizes.append(len(texts))
        return calls(texts)

    embedder._embed_queries = recording
    with client_for(retriever, db, options=ServiceOptions(batching=batching)) as s:
        sizes.clear()  # not the warm-up

        def one(body: dict) -> dict:
            response = s.client.post("/search", json=body)
            assert response.status_code == 200, response.text
            answer = response.json()
            answer.pop("took_ms")
            return answer

        with ThreadPoolExecutor(concurrency) as pool:
            return list(pool.map(one, BODIES)), sizes


def test_concurrent_searches_are_embedded_together_with_the_serial_answers(tmp_path):
    serial, serial_sizes = _answers(False, tmp_path, concurrency=1)
    batched, batched_sizes = _answers(True, tmp_path, concurrency=16)
    assert batched == serial  # every result, score, warning and field, in order
    assert serial_sizes == [1] * len(BODIES)
    assert sum(batched_sizes) == len(BODIES) and max(batched_sizes) > 1
    assert len(batched_sizes) < len(BODIES)
    assert any("capped at 20" in w for a in batched for w in a["warnings"])


def test_a_lone_request_runs_at_once_in_a_batch_of_one(tmp_path):
    _, sizes = _answers(True, tmp_path, concurrency=1)
    assert sizes == [1] * len(BODIES)


def test_a_failing_embedding_fails_only_its_batch_and_the_next_one_works():
    retriever = small_retriever(FakeEmbedder.like_cohere_fake(failing_query="down"))
    batcher = SearchBatcher(retriever)
    try:
        with pytest.raises(EmbeddingError):
            batcher.search("down", (5, 0.0, None, None))
        assert batcher.search("ROS 2 nodes", (5, 0.0, None, None)).total_results == 5
    finally:
        batcher.close()


def test_a_full_queue_is_refused_with_service_busy():
    started, release = threading.Event(), threading.Event()
    embedder = FakeEmbedder.like_cohere_fake()
    retriever = small_retriever(embedder)
    inner = embedder._embed_queries

    def held(texts):
        started.set()
        release.wait(10)
        return inner(texts)

    embedder._embed_queries = held
    batcher = SearchBatcher(retriever, max_queue=1, max_batch=1)
    key = (5, 0.0, None, None)
    try:
        with ThreadPoolExecutor(2) as pool:
            running = pool.submit(batcher.search, "first", key)
            assert started.wait(10)  # the worker holds "first" in its embedding call
            queued = pool.submit(batcher.search, "second", key)  # waits in the queue, which is then full
            for _ in range(1000):
                if batcher._pending:
                    break
                threading.Event().wait(0.01)
            with pytest.raises(ServiceBusyError) as refused:
                batcher.search("third", key)
            assert refused.value.limit == 1
            release.set()
            assert running.result(10).total_results == 5 and queued.result(10).total_results == 5
    finally:
        release.set()
        batcher.close()


def test_a_waiting_batch_is_taken_as_soon_as_it_is_full_not_when_the_wait_ends():
    # batch_wait_ms: the first query waits for more; the query that fills the batch wakes it (a 20 s wait that
    # ran out instead would leave the searches below unanswered when their 10 s bound ends)
    embedder = FakeEmbedder.like_cohere_fake()
    retriever = small_retriever(embedder)
    sizes: list[int] = []
    inner = embedder._embed_queries
    embedder._embed_queries = lambda texts: sizes.append(len(texts)) or inner(texts)
    batcher = SearchBatcher(retriever, max_batch=3, max_wait_ms=20_000)
    try:
        with ThreadPoolExecutor(3) as pool:
            answers = [pool.submit(batcher.search, q, (5, 0.0, None, None)) for q in QUERIES[:3]]
            assert [a.result(10).total_results for a in answers] == [5, 5, 5]
        assert sizes == [3]  # one embedding call for the three
    finally:
        batcher.close()
