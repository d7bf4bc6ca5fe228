"""Threshold uncertainty: the recommendation, its bootstrap interval, Wilson intervals and AUC agree with libraries."""

from __future__ import annotations

import pytest

from retrieval_lib.checks.retrieval import _thresholds as th
from retrieval_lib.checks.statistics import queries_for_width, wilson
from retrieval_lib.errors import ValidationError

IN = [0.55, 0.6, 0.62, 0.7, 0.5, 0.66, 0.58, 0.61]
OOD = [0.2, 0.25, 0.3, 0.18, 0.22]


def test_separated_sets_give_the_gap_midpoint_with_a_bootstrap_interval_around_it():
    u = th.measure(IN, OOD, resamples=300, seed=1)
    assert u.threshold == pytest.approx((0.5 + 0.3) / 2)
    assert u.threshold_low <= u.threshold <= u.threshold_high
    assert (u.recall, u.rejection, u.auc) == (1.0, 1.0, 1.0)
    assert u.recall_ci[0] < 1.0 and u.recall_ci[1] == pytest.approx(1.0)
    assert "8 in-domain and 5 out-of-domain" in u.sentence()


def test_overlapping_sets_use_youden_and_auc_matches_sklearn():
    from sklearn.metrics import roc_auc_score

    ins, ood = [0.5, 0.4, 0.35, 0.6], [0.45, 0.3, 0.2]
    u = th.measure(ins, ood, resamples=200)
    assert u.auc == pytest.approx(roc_auc_score([1] * 4 + [0] * 3, ins + ood))
    assert u.recall == sum(s >= u.threshold for s in ins) / 4 and u.auc_ci[0] <= u.auc <= u.auc_ci[1] + 1e-9


def test_wilson_matches_scipy_and_more_queries_narrow_it():
    from scipy.stats import binomtest

    ci = binomtest(27, 30).proportion_ci(method="wilson")
    assert wilson(27, 30) == pytest.approx((ci.low, ci.high))
    n = queries_for_width(0.9)
    low, high = wilson(round(0.9 * n), n)
    assert (high - low) / 2 <= 0.05 and n > 30


def test_empty_sets_are_refused():
    with pytest.raises(ValidationError):
        th.measure([], OOD)


def test_an_in_domain_query_with_no_result_is_a_miss_not_a_query_left_out():
    # a team's retriever with its own score cut answers some in-domain questions with nothing: recall counts them
    nan = float("nan")
    u = th.measure([0.8, 0.7, nan, nan], [0.3, 0.2], resamples=50)
    assert u.n_in == 4 and u.recall == pytest.approx(0.5)
    assert th.measure([0.8, 0.7], [0.3, nan], resamples=50).n_ood == 2  # an OOD query answered nothing: rejected
    with pytest.raises(ValidationError):
        th.measure([nan, nan], OOD)  # no in-domain query answered: nothing to place a threshold on
