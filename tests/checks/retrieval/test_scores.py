"""Score distributions: top-1 scores, clipping, separation, threshold trade-off and recommendation."""

from __future__ import annotations

import math

import pytest
from fakes.embedders import FakeEmbedder
from qdrant_client import models

from retrieval_lib import Retriever, VectorStore
from retrieval_lib.checks.retrieval._thresholds import (
    THRESHOLDS,
    judge_threshold,
    recommend_threshold,
    threshold_tradeoff,
    top1_scores,
)
from retrieval_lib.checks.retrieval.score_distributions import ScoreStudy, clip_counts, top1_summary


def unit(deg: float) -> list[float]:
    rad = math.radians(deg)
    return [math.cos(rad), math.sin(rad)]


@pytest.fixture()
def angled():
    """Docs at 0° and 30°; queries whose cosines to them are known (some negative)."""
    table = {"doc0": unit(0), "doc30": unit(30),
             "near": unit(10),        # cos 10° = 0.985, cos 20° = 0.940
             "far": unit(150),        # cos 150° = -0.866, cos 120° = -0.5
             "side": unit(100)}       # cos 100° = -0.174, cos 70° = 0.342
    embedder = FakeEmbedder.table(table)  # scores are exact cosines we choose
    store = VectorStore.in_memory()
    store.create_collection("c", 2)
    store.upsert("c", [
        models.PointStruct(id=1, vector=table["doc0"],
                           payload={"source_file": "a.md", "model_version": "table-model"}),
        models.PointStruct(id=2, vector=table["doc30"],
                           payload={"source_file": "b.md", "model_version": "table-model"}),
    ])
    retriever = Retriever(store, embedder, "c")
    yield retriever
    store.close()


def test_negative_cosines_are_clipped_to_zero_and_counted(angled):
    responses = angled.search_many(["near", "far", "side"], top_k=2)
    counts = clip_counts(responses)
    assert counts.scores == 6
    assert counts.negative == 3          # far: both; side: the 0° doc
    assert counts.above_one == 0
    assert counts.out_of_range == 0
    assert counts.min_raw == pytest.approx(-0.866, abs=1e-3)
    far = responses[1]
    assert [r.similarity_score for r in far.results] == [0.0, 0.0]
    assert far.results[0].raw_score == pytest.approx(-0.5, abs=1e-6)
    assert top1_scores(responses) == pytest.approx([math.cos(math.radians(10)), 0.0, math.cos(math.radians(70))],
                                                   abs=1e-6)


def test_score_frame_has_one_row_per_result_labelled_by_set(angled):
    near, far = angled.search_many(["near", "far"], top_k=2)
    frame = ScoreStudy([near], [far], top_k=2).frame()
    assert list(frame["set"]) == ["in_domain", "in_domain", "out_of_domain", "out_of_domain"]
    assert list(frame["rank"]) == [1, 2, 1, 2]
    assert frame.loc[0, "source_file"] == "a.md" and frame.loc[2, "source_file"] == "b.md"
    assert (frame["similarity_score"] >= 0).all()
    assert (frame["raw_score"] < 0).sum() == 2


def test_empty_response_has_nan_top1_and_keeps_nothing(angled):
    empty = angled.search("far", top_k=2, similarity_threshold=0.5)
    assert empty.is_empty
    assert math.isnan(top1_scores([empty])[0])
    table = threshold_tradeoff([math.nan], [0.2])
    assert list(table["in_domain_kept"][:2]) == [0.0, 0.0]


def test_separation_is_min_in_domain_minus_max_ood():
    assert recommend_threshold([0.9, 0.42, 0.7], [0.1, 0.24]).width == pytest.approx(0.18)
    assert recommend_threshold([0.3], [0.5]).width == pytest.approx(-0.2)
    # a query without result counts as 0
    assert recommend_threshold([0.6, math.nan], [0.2]).width == pytest.approx(-0.2)
    with pytest.raises(ValueError):
        recommend_threshold([], [0.1])


def test_the_thresholds_are_inclusive_and_clean():
    assert len(THRESHOLDS) == 21 and THRESHOLDS[0] == 0.0 and THRESHOLDS[-1] == 1.0
    assert THRESHOLDS[3] == 0.15 and THRESHOLDS[7] == 0.35


def test_tradeoff_counts_queries_with_top1_at_or_above_threshold():
    in_top1 = [0.4, 0.6, 0.9, 0.35]
    ood_top1 = [0.1, 0.2, 0.35]
    table = threshold_tradeoff(in_top1, ood_top1).set_index("threshold").loc[[0.0, 0.35, 0.5, 1.0]]
    assert list(table["in_domain_kept"]) == [1.0, 1.0, 0.5, 0.0]
    assert list(table["ood_kept"]) == pytest.approx([1.0, 1 / 3, 0.0, 0.0])
    assert list(table["margin"]) == pytest.approx([0.0, 2 / 3, 0.5, 0.0])
    default = threshold_tradeoff(in_top1, ood_top1)
    assert len(default) == 21
    # monotone: raising the threshold never keeps more
    assert default["in_domain_kept"].is_monotonic_decreasing and default["ood_kept"].is_monotonic_decreasing


def test_recommendation_is_the_midpoint_of_the_gap():
    gap = recommend_threshold([0.416, 0.9, 0.6], [0.236, 0.1])
    assert gap.recommended is not None
    assert gap.highest_ood == pytest.approx(0.236) and gap.lowest_in_domain == pytest.approx(0.416)
    assert gap.width == pytest.approx(0.18)
    assert gap.recommended == pytest.approx(0.326)


def test_no_recommendation_when_the_sets_overlap_or_touch():
    overlap = recommend_threshold([0.3, 0.8], [0.5, 0.1])
    assert overlap.recommended is None and overlap.width == pytest.approx(-0.2)
    touch = recommend_threshold([0.5], [0.5])
    assert touch.recommended is None


def test_judge_threshold_names_lost_and_admitted_queries(angled):
    near, far, side = angled.search_many(["near", "far", "side"], top_k=2)
    # near top-1 0.985, side top-1 0.342, far top-1 0.0
    ok = judge_threshold([near], [far, side], 0.5)
    assert ok.passed and ok.in_domain_lost == [] and ok.ood_admitted == []
    bad = judge_threshold([near, side], [far], 0.5)
    assert not bad.passed and bad.in_domain_lost == ["side"]
    admits = judge_threshold([near], [side, far], 0.3)
    assert admits.ood_admitted == ["side"] and not admits.passed
    # the boundary: top-1 exactly at the threshold is kept
    at = judge_threshold([near], [far], near.results[0].similarity_score)
    assert at.in_domain_lost == []


def test_top1_summary_ignores_missing_and_rounds():
    frame = top1_summary({"in": [0.41666, 0.9, 0.5], "ood": [0.2, math.nan]})
    row_in = frame.set_index("set").loc["in"]
    assert row_in["min_top1"] == 0.417 and row_in["median_top1"] == 0.5 and row_in["max_top1"] == 0.9
    row_ood = frame.set_index("set").loc["ood"]
    assert row_ood["queries"] == 2 and row_ood["with_results"] == 1 and row_ood["max_top1"] == 0.2
