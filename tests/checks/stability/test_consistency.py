"""Consistency: overlap measures by hand-computed values, and repeated searches over a real in-memory Qdrant."""

from __future__ import annotations

import math
import random

import pytest
from fakes.embedders import FakeEmbedder

from retrieval_lib import Retriever, VectorStore
from retrieval_lib.checks.stability.consistency import (
    compare_rankings,
    consistency_frame,
    jaccard,
    kendall_tau_shared,
    min_adjacent_gap,
    rbo,
    repeat_search,
    summarise_by_query,
)

COLLECTION = "book"


def truncated_rbo(a, b, p):
    """The formula, written out literally, for a cross-check."""
    k = max(len(a), len(b))
    return (1 - p) * sum(p ** (d - 1) * len(set(a[:d]) & set(b[:d])) / d for d in range(1, k + 1))


# ----------------------------------------------------------------------------- measures

def test_jaccard():
    assert jaccard([1, 2, 3], [3, 2, 1]) == 1.0
    assert jaccard([1, 2], [3, 4]) == 0.0
    assert jaccard([1, 2, 3], [2, 3, 4]) == pytest.approx(2 / 4)
    assert jaccard([], []) == 1.0


def test_rbo_truncated_matches_the_formula_by_hand():
    # A = abc, B = acb, p = 0.5: X_1 = 1, X_2 = 1, X_3 = 3 -> 0.5 * (1 + 0.5*1/2 + 0.25*3/3) = 0.75
    assert rbo("abc", "acb", 0.5, extrapolate=False) == pytest.approx(0.75)
    # identical lists: the truncated sum is only 1 - p^k
    assert rbo("abcde", "abcde", 0.9, extrapolate=False) == pytest.approx(1 - 0.9 ** 5)
    rng = random.Random(7)
    for _ in range(50):
        a = rng.sample(range(12), 5)
        b = rng.sample(range(12), 5)
        assert rbo(a, b, 0.9, extrapolate=False) == pytest.approx(truncated_rbo(a, b, 0.9))


def test_rbo_extrapolated_is_one_for_identical_and_zero_for_disjoint():
    assert rbo("abcde", "abcde") == pytest.approx(1.0)
    assert rbo("abcde", "vwxyz") == 0.0
    assert rbo([], []) == 1.0
    # abc vs acb, p=0.5: 0.75 + (X_3/3) * 0.5^3 = 0.875
    assert rbo("abc", "acb", 0.5) == pytest.approx(0.875)
    # a swap at the top costs more than a swap at the bottom
    assert rbo("bacde", "abcde") < rbo("abced", "abcde") < 1.0
    with pytest.raises(ValueError):
        rbo("a", "a", p=1.0)


def test_rbo_handles_lists_of_different_lengths():
    # B is A's prefix: X_d = d for d <= 2, then X_3 = 2
    assert rbo("abc", "ab", 0.5, extrapolate=False) == pytest.approx(0.5 * (1 + 0.5 + 0.25 * 2 / 3))
    assert rbo("abc", "ab") < 1.0


def test_kendall_tau_on_shared_ids():
    assert kendall_tau_shared("abcd", "abcd") == pytest.approx(1.0)
    assert kendall_tau_shared("abcd", "dcba") == pytest.approx(-1.0)
    # shared ids a, b, c in the same relative order; x and y are ignored
    assert kendall_tau_shared("axbc", "abyc") == pytest.approx(1.0)
    assert kendall_tau_shared("abc", "bac") == pytest.approx(1 / 3)
    assert math.isnan(kendall_tau_shared("ab", "ax"))


# ----------------------------------------------------------------------------- against a real store

@pytest.fixture(scope="module")
def book_store(embedder, fill):
    store = VectorStore.in_memory()
    fill(store, COLLECTION, embedder)
    yield store
    store.close()


QUERIES = ["What is ROS 2?", "robot simulation", "battery life of the humanoid"]


def test_repeated_searches_are_identical(book_store, embedder):
    retriever = Retriever(book_store, embedder, COLLECTION)
    runs = repeat_search(retriever, QUERIES, repeats=3, top_k=5)
    assert list(runs) == QUERIES and all(len(r) == 3 for r in runs.values())
    reference = {q: r[0] for q, r in runs.items()}
    batched = {q: [r] for q, r in zip(QUERIES, retriever.search_many(QUERIES))}
    frame = consistency_frame(reference, {"repeat": {q: r[1:] for q, r in runs.items()}, "search_many": batched})
    assert len(frame) == 3 * 2 + 3
    assert frame["identical"].all() and frame["same_order"].all()
    assert (frame["jaccard"] == 1.0).all() and (frame["rbo"] == 1.0).all() and (frame["kendall_tau"] == 1.0).all()
    assert (frame["max_score_diff"] <= 1e-6).all()
    summary = summarise_by_query(frame, ["repeat", "search_many"], reference)
    assert list(summary["query"]) == QUERIES
    assert list(summary["runs"]) == [4, 4, 4]  # reference + 2 repeats + 1 search_many
    assert summary["identical"].all() and summary["identical: repeat"].all() and summary["identical: search_many"].all()
    with pytest.raises(ValueError):
        repeat_search(retriever, QUERIES, repeats=0, top_k=5)


def test_an_unstable_embedder_is_caught(book_store, embedder):
    stable = Retriever(book_store, embedder, COLLECTION)
    noisy = Retriever(book_store, FakeEmbedder(inner=embedder, query_noise=0.2), COLLECTION)
    reference = stable.search("robot simulation", top_k=8)
    runs = [noisy.search("robot simulation", top_k=8) for _ in range(5)]
    comparisons = [compare_rankings(reference, r) for r in runs]
    assert not any(c.identical for c in comparisons)
    assert all(c.max_score_diff > 1e-3 for c in comparisons)
    assert any(not c.same_order for c in comparisons)
    assert min(c.rbo for c in comparisons) < 1.0
    frame = consistency_frame({"robot simulation": reference}, {"noisy": {"robot simulation": runs},
                                                                "stable": {"robot simulation": [reference]}})
    summary = summarise_by_query(frame, ["noisy", "stable"], {"robot simulation": reference}).iloc[0]
    assert summary["runs"] == 7 and not summary["identical"] and not summary["identical: noisy"]
    assert summary["identical: stable"] and summary["min_rbo"] < 1.0 and summary["max_score_diff"] > 1e-3


def test_tiny_noise_changes_scores_but_tolerance_decides(book_store, embedder):
    stable = Retriever(book_store, embedder, COLLECTION)
    reference = stable.search("What is ROS 2?", top_k=5)
    noisy = FakeEmbedder(inner=embedder, query_noise=1e-9)
    jitter = Retriever(book_store, noisy, COLLECTION).search("What is ROS 2?", top_k=5)
    loose = compare_rankings(reference, jitter, tolerance=1e-6)
    strict = compare_rankings(reference, jitter, tolerance=0.0)
    assert loose.same_order and loose.identical
    assert 0 < loose.max_score_diff < 1e-6
    assert not strict.identical


def test_compare_rankings_detects_a_swap(book_store, embedder):
    retriever = Retriever(book_store, embedder, COLLECTION)
    reference = retriever.search("robot simulation", top_k=4)
    swapped_results = [reference.results[1], reference.results[0], *reference.results[2:]]
    swapped = reference.model_copy(update={"results": swapped_results})
    c = compare_rankings(reference, swapped)
    assert not c.same_order and not c.identical
    assert c.max_score_diff == 0.0  # scores compared per id: a swap is not a score change
    assert c.jaccard == 1.0 and c.rbo < 1.0 and c.kendall_tau == pytest.approx(2 / 3)


def test_min_adjacent_gap(book_store, embedder):
    retriever = Retriever(book_store, embedder, COLLECTION)
    response = retriever.search("robot simulation", top_k=5)
    scores = [r.raw_score for r in response.results]
    assert min_adjacent_gap(response) == pytest.approx(min(a - b for a, b in zip(scores, scores[1:])))
    assert min_adjacent_gap(response) >= 0
    assert min_adjacent_gap(retriever.search("robot simulation", top_k=1)) == math.inf
    tied = response.model_copy(update={"results": [response.results[0], response.results[0]]})
    assert min_adjacent_gap(tied) == 0.0
