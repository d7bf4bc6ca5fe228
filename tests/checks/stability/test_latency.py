"""Latency measurement and the bounded concurrent run, on an in-memory collection."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from fakes.embedders import FakeEmbedder

from retrieval_lib import Retriever, VectorStore
from retrieval_lib.checks.stability.latency import (
    TIMING_FIELDS,
    ConcurrentRun,
    latency_percentiles,
    percentile,
    reference_rankings,
    run_concurrent,
    time_searches,
    unstable_queries,
)
from retrieval_lib.errors import ValidationError
from retrieval_lib.search import same_ranking

COLLECTION = "book"
QUERIES = ["What is ROS 2?", "Gazebo physics simulator", "pizza dough", "humanoid battery life"]


@pytest.fixture(scope="module")
def store(embedder, fill):
    s = VectorStore.in_memory()
    fill(s, COLLECTION, embedder)
    yield s
    s.close()


@pytest.fixture()
def retriever(store, embedder):
    r = Retriever(store, embedder, COLLECTION)
    r.search("warm up")
    return r


# ---------------------------------------------------------------------- percentile
def test_percentile_interpolates_linearly_like_numpy():
    values = [10.0, 20.0, 30.0, 40.0]
    assert percentile(values, 50) == pytest.approx(25.0)
    assert percentile(values, 95) == pytest.approx(38.5)  # h = 3 * 0.95 = 2.85 -> 30 + 0.85 * 10
    assert percentile(values, 0) == 10.0
    assert percentile(values, 100) == 40.0
    rng = np.random.default_rng(7)
    data = rng.exponential(20.0, size=97).tolist()
    for q in (1, 37.5, 95, 99):
        assert percentile(data, q) == pytest.approx(float(np.percentile(data, q)))


def test_percentile_ignores_input_order_and_handles_one_value():
    assert percentile([40, 10, 30, 20], 50) == pytest.approx(25.0)
    assert percentile([7.5], 95) == 7.5


@pytest.mark.parametrize("values, q", [([], 50), ([1.0, float("nan")], 50), ([1.0, float("inf")], 50),
                                       ([1.0, 2.0], -1), ([1.0, 2.0], 100.5), ([1.0], True)])
def test_percentile_rejects_bad_input(values, q):
    with pytest.raises(ValidationError):
        percentile(values, q)


# ---------------------------------------------------------------------- sequential timing
def test_time_searches_times_every_call_in_round_order(retriever):
    samples = time_searches(retriever, QUERIES, rounds=2, top_k=3)
    assert [(s.round, s.query) for s in samples] == [(r, q) for r in (1, 2) for q in QUERIES]
    for s in samples:
        assert s.embed_ms > 0 and s.search_ms > 0
        assert s.execution_time_ms == pytest.approx(s.embed_ms + s.search_ms, abs=0.01)
        # the wall clock around the call includes the library's own split
        assert s.call_ms >= s.execution_time_ms - 0.01
        assert 1 <= len(s.ranking) <= 3
    by_query = reference_rankings(samples)
    assert by_query["pizza dough"][0][0] == "12"  # the recipe chunk wins its own query
    assert unstable_queries(samples) == []


def test_time_searches_rejects_bad_arguments(retriever):
    with pytest.raises(ValidationError):
        time_searches(retriever, [], rounds=1)
    with pytest.raises(ValidationError):
        time_searches(retriever, QUERIES, rounds=0)


def test_latency_percentiles_per_field(retriever):
    samples = time_searches(retriever, QUERIES, rounds=1)
    table = latency_percentiles(samples)
    assert set(table) == set(TIMING_FIELDS)
    for f in TIMING_FIELDS:
        values = [getattr(s, f) for s in samples]
        assert table[f]["p50"] == pytest.approx(float(np.percentile(values, 50)))
        assert min(values) <= table[f]["p50"] <= table[f]["p95"] <= table[f]["p99"] <= max(values)
    assert list(latency_percentiles(samples, ["call_ms"])) == ["call_ms"]
    with pytest.raises(ValidationError):
        latency_percentiles(samples, ["wall"])
    with pytest.raises(ValidationError):
        latency_percentiles([])


def test_unstable_queries_spots_a_ranking_that_changed(retriever):
    samples = time_searches(retriever, QUERIES[:2], rounds=2)
    changed = samples[3].__class__(**{**samples[3].__dict__, "ranking": tuple(reversed(samples[3].ranking))})
    assert unstable_queries(samples[:3] + [changed]) == [QUERIES[1]]


def test_same_ranking():
    a = [("1", 0.9), ("2", 0.8)]
    assert same_ranking(a, list(a))
    assert not same_ranking(a, [("2", 0.9), ("1", 0.8)])
    assert not same_ranking(a, a[:1])
    # last-bit noise (qdrant-client local mode moves repeated scores by ~1e-8) is the same ranking ...
    assert same_ranking(a, [("1", 0.9), ("2", 0.8 + 9e-9)])
    assert same_ranking(a, [("1", 0.9), ("2", 0.8000001)])
    # ... a real score change is not, and score_tol=0 asks for bit-identical scores
    assert not same_ranking(a, [("1", 0.9), ("2", 0.8 + 5e-6)])
    assert not same_ranking(a, [("1", 0.9), ("2", 0.8 + 9e-9)], score_tol=0.0)


def test_unstable_queries_ignores_last_bit_noise_but_flags_a_score_change(retriever):
    samples = time_searches(retriever, QUERIES[:2], rounds=2)
    first, second = samples[0], samples[2]
    assert first.query == second.query == QUERIES[0]

    def nudged(sample, by):
        (pid, score), *rest = sample.ranking
        return sample.__class__(**{**sample.__dict__, "ranking": ((pid, score + by), *rest)})

    assert unstable_queries(samples[:2] + [nudged(second, 8.9e-9), samples[3]]) == []
    assert unstable_queries(samples[:2] + [nudged(second, 1e-4), samples[3]]) == [QUERIES[0]]


# ---------------------------------------------------------------------- concurrency
def test_concurrent_answers_match_sequential(retriever):
    reference = reference_rankings(time_searches(retriever, QUERIES))
    run = run_concurrent(retriever, QUERIES, n=30, concurrency=4, reference=reference, timeout_s=60)
    assert isinstance(run, ConcurrentRun)
    assert (run.submitted, run.completed, run.errors, run.timed_out, run.compared) == (30, 30, 0, 0, 30)
    assert run.mismatched == [] and run.rankings_identical
    assert len(run.call_ms) == 30 and all(ms > 0 for ms in run.call_ms)
    assert run.throughput_qps == pytest.approx(30 / run.wall_s)


def test_concurrent_run_detects_a_different_ranking(retriever):
    reference = reference_rankings(time_searches(retriever, QUERIES))
    reference[QUERIES[2]] = tuple(reversed(reference[QUERIES[2]]))
    run = run_concurrent(retriever, QUERIES, n=8, concurrency=3, reference=reference)
    assert run.mismatched == [QUERIES[2]]  # listed once though it ran twice
    assert run.errors == 0 and not run.rankings_identical


def test_concurrent_errors_are_counted_not_raised(store, embedder):
    r = Retriever(store, FakeEmbedder(inner=embedder, failing_query=QUERIES[1]), COLLECTION)
    r.search(QUERIES[0])
    run = run_concurrent(r, QUERIES, n=10, concurrency=3)
    # queries[1] is jobs 1, 5 and 9
    assert (run.completed, run.errors, run.error_types) == (7, 3, {"EmbeddingError": 3})
    assert run.throughput_qps > 0


class _Gated:
    """An embedder whose query batches wait until the test opens ``gate`` (or ``GATE_S`` passes).

    The order of events then shows a bounded run, on any machine: ``run_concurrent`` must come back
    while every search is still held at the gate. A run that waited for its calls would only come back
    after ``GATE_S``, with them completed.
    """

    GATE_S = 30.0

    def __init__(self, inner) -> None:
        self.inner = inner
        self.provider, self.model, self.dimension = inner.provider, inner.model, inner.dimension
        self.max_tokens = inner.max_tokens
        self.count_tokens = inner.count_tokens
        self.embed_documents = inner.embed_documents
        self.gate = threading.Event()

    def embed_queries(self, texts):
        if not self.gate.wait(self.GATE_S):
            self.gate.set()  # nobody opened it: open it for every call, so a run that waits fails, not hangs
        return self.inner.embed_queries(texts)


@pytest.mark.timeout(120)
def test_concurrent_run_is_bounded_by_its_timeout(store, embedder):
    gated = _Gated(embedder)
    slow = FakeEmbedder(inner=gated)
    r = Retriever(store, slow, COLLECTION)
    r.check_compatibility()
    try:
        run = run_concurrent(r, QUERIES, n=40, concurrency=2, timeout_s=0.5)
        # it came back at its deadline with every search still held at the gate: it did not wait for them
        assert not gated.gate.is_set()
        assert (run.completed, run.errors, run.timed_out) == (0, 0, 40)
        assert run.wall_s >= 0.45  # and it did wait its 0.5 s deadline out (load only makes this longer)
        assert slow.peak <= 2  # never more threads than asked for
    finally:
        gated.gate.set()  # let the running calls finish before the store is closed
        deadline = time.monotonic() + 60
        while slow.running and time.monotonic() < deadline:
            time.sleep(0.01)
    assert slow.running == 0
    assert slow.query_calls <= 2  # the calls already running finished; the 38 never started were cancelled


def test_concurrent_run_without_reference_cannot_claim_identical(retriever):
    run = run_concurrent(retriever, QUERIES, n=4, concurrency=2)
    assert run.completed == 4 and run.compared == 0 and not run.rankings_identical


def test_run_concurrent_rejects_bad_arguments(retriever):
    for kwargs in ({"n": 0, "concurrency": 2}, {"n": 2, "concurrency": 0}, {"n": 2, "concurrency": True},
                   {"n": 2, "concurrency": 2, "timeout_s": 0}):
        with pytest.raises(ValidationError):
            run_concurrent(retriever, QUERIES, **kwargs)
    with pytest.raises(ValidationError):
        run_concurrent(retriever, [], n=1, concurrency=1)
    with pytest.raises(ValidationError, match="no reference ranking"):
        run_concurrent(retriever, QUERIES, n=2, concurrency=1, reference={QUERIES[0]: ()})
