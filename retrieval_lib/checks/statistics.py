"""The statistics checks of several families share, each from a well-kept library.

The interval of one proportion (score distributions on recall and rejection at the recommended threshold, the
embedding contract on the share of chunks that retrieve their own point, reachability on the sampled share no query
reaches): the Wilson score interval (``scipy.stats.binomtest``), and how many trials narrow it to +-``target``.

Paired statistics of two runs over the same judged queries (14's run-to-run comparison, 15's side by side):

- per-query IR metrics and the paired test: ranx (``evaluate``, ``compare`` with ``stat_test="student"``, the
  paired t-test, or ``"fisher"``, Fisher's randomisation test);
- the 95% interval of a mean per-query delta: ``scipy.stats.bootstrap`` (percentile method, resampling queries);
- the smallest change a paired t-test detects at 80% power: the noncentral t distribution (``scipy.stats.nct``)::

      power(d) = P(T > t_crit) + P(T < -t_crit),  T ~ nct(df = n - 1, nc = d * sqrt(n) / sd),
      t_crit = t_{1 - alpha/2, n - 1};   MDE = the d where power(d) = 0.8

- a shift of score distributions: the two-sample Kolmogorov-Smirnov test (``scipy.stats.ks_2samp``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from retrieval_lib.errors import ValidationError

__all__ = ["wilson", "queries_for_width", "TESTS", "evaluate_per_query", "paired_p_values", "compile_ranx",
           "bootstrap_interval",
           "detectable_effect", "queries_needed", "KsShift", "ks_shift"]

def wilson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the proportion ``successes / n`` (scipy); (nan, nan) for n = 0."""
    from scipy.stats import binomtest

    if n == 0:
        return math.nan, math.nan
    ci = binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def queries_for_width(share: float, target: float = 0.05, *, limit: int = 100_000) -> int:
    """Queries needed for the Wilson 95% interval around ``share`` to be at most +-``target`` wide."""
    n = 2
    while n < limit:  # bounded: n grows by a quarter each round
        low, high = wilson(round(share * n), n)
        if (high - low) / 2 <= target:
            return n
        n = int(n * 1.25) + 1
    return limit


# --------------------------------------------------------------------------- two runs over the same queries
#: ranx's paired tests this comparison offers: the paired t-test and Fisher's randomisation test.
TESTS = ("student", "fisher")


#: ranx compiles its numba functions for the longest document id it is given (a fixed-width string type), so
#: every new longest id would compile them again (seconds): ids reach ranx as fixed-width numbers of this width.
_ID_WIDTH = 12


class _Ids:
    """Document ids as ranx gets them: one fixed-width number per id, the same in the qrels and every run."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}

    def __call__(self, doc: str) -> str:
        if doc not in self._ids:
            self._ids[doc] = f"{len(self._ids):0{_ID_WIDTH}d}"
        return self._ids[doc]

    def qrels(self, qrels: Mapping[str, Mapping[str, int]]):
        from ranx import Qrels

        return Qrels({q: {self(d): g for d, g in docs.items()} for q, docs in qrels.items()})

    def run(self, run: Mapping[str, Mapping[str, float]], name: str):
        from ranx import Run

        # ranx cannot hold a query without results: an empty query keeps one document no qrels name (scores 0)
        return Run({q: ({self(d): s for d, s in docs.items()} or {self("\0no result"): 0.0})
                    for q, docs in run.items()}, name=name)


def evaluate_per_query(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                       metrics: Sequence[str]) -> dict[str, dict[str, float]]:
    """Each metric per judged query: ``{metric: {query id: value}}`` (ranx ``evaluate``; a judged query the run
    lacks scores 0).

    Raises:
        ValidationError: a metric name ranx does not know (e.g. ``ndcg@5``, ``mrr``, ``hit_rate@5``, ``recall@5``).
    """
    from ranx import evaluate

    ids = _Ids()
    judged, r = ids.qrels(qrels), ids.run({q: run.get(q, {}) for q in qrels}, "run")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba's type-safety notes on ranx's own code
            evaluate(judged, r, list(metrics), make_comparable=True)
    except (KeyError, ValueError, AssertionError, NameError) as err:
        raise ValidationError(f"ranx cannot compute {list(metrics)}: {err}; use names like ndcg@5, mrr, "
                              "hit_rate@5, recall@5, precision@5", field="metric") from None
    return {m: {q: float(v) for q, v in r.scores[m].items()} for m in metrics}


def paired_p_values(qrels: Mapping[str, Mapping[str, int]], baseline: Mapping[str, Mapping[str, float]],
                    candidate: Mapping[str, Mapping[str, float]], metrics: Sequence[str], *,
                    test: str = "student", seed: int = 42) -> dict[str, float]:
    """Two-sided p-value of each metric's paired test between two runs over the judged queries (ranx ``compare``).

    A test with no variation at all (every query scored the same in both runs) has p = 1.

    Raises:
        ValidationError: ``test`` not one of :data:`TESTS`.
    """
    if test not in TESTS:
        raise ValidationError(f"test must be one of {TESTS} (got {test!r})", field="test")
    from ranx import compare

    ids = _Ids()
    judged = ids.qrels(qrels)
    runs = [ids.run({q: baseline.get(q, {}) for q in qrels}, "baseline"),
            ids.run({q: candidate.get(q, {}) for q in qrels}, "candidate")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a t-test of identical samples; that is p = 1 below
        report = compare(judged, runs, list(metrics), stat_test=test,
                         make_comparable=True, random_seed=seed)
    found = report.to_dict()["baseline"]["comparisons"]["candidate"]
    return {m: (1.0 if found[m] is None or math.isnan(float(found[m])) else float(found[m])) for m in metrics}


def compile_ranx() -> None:
    """Compile ranx's numba functions this module calls into numba's cache in the ranx package (``make setup``).

    ranx compiles them on first use and caches the machine code (``cache=True``): about 45 s of CPU on 2 cores,
    which every process that first evaluates a run would otherwise pay at once (a fresh machine's first notebook
    14 or 15, and each worker of the test suite, in parallel before any has written the cache). Evaluates and
    compares two small runs with the types the checks pass (string ids, float scores, integer grades), for the
    metrics of :data:`~retrieval_lib.checks.comparison.compare.DEFAULT_METRICS` plus recall and precision, and every
    test of :data:`TESTS`; the ids reach ranx at one fixed width (:class:`_Ids`), so no run compiles them again."""
    qrels = {"q1": {"a": 1}, "q2": {"b": 2}, "q3": {"c": 1}}
    baseline = {"q1": {"a": 0.9, "x": 0.5}, "q2": {"y": 0.8, "b": 0.4}, "q3": {}}
    candidate = {"q1": {"x": 0.9, "a": 0.5}, "q2": {"b": 0.8}, "q3": {"c": 0.7}}
    metrics = ["ndcg@5", "mrr", "hit_rate@5", "recall@5", "precision@5"]
    evaluate_per_query(qrels, candidate, metrics)
    for test in TESTS:
        paired_p_values(qrels, baseline, candidate, metrics, test=test)


def bootstrap_interval(deltas: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000,
                       seed: int = 42) -> tuple[float, float]:
    """The percentile-bootstrap interval of the mean of ``deltas`` (queries resampled with replacement).

    One value, or all equal, gives the point itself; no values give (nan, nan).
    """
    import numpy as np
    from scipy.stats import bootstrap

    values = np.asarray(list(deltas), dtype=float)
    if values.size == 0:
        return math.nan, math.nan
    if values.size == 1 or np.all(values == values[0]):
        return float(values[0]), float(values[0])
    res = bootstrap((values,), np.mean, confidence_level=confidence, n_resamples=resamples, method="percentile",
                    rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _power(d: float, n: int, sd: float, alpha: float) -> float:
    from scipy.stats import nct
    from scipy.stats import t as student

    df = n - 1
    crit = float(student.ppf(1 - alpha / 2, df))
    nc = d * math.sqrt(n) / sd
    value = float(nct.sf(crit, df, nc) + nct.cdf(-crit, df, nc))
    return 1.0 if math.isnan(value) else value  # scipy's nct gives nan far in the tail, where power is 1


def detectable_effect(n: int, sd: float, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest mean change a two-sided paired t-test at ``alpha`` finds with probability ``power``, given
    ``n`` queries whose per-query changes have standard deviation ``sd`` (inf when n < 2, 0 when sd is 0)."""
    from scipy.optimize import brentq

    if n < 2:
        return math.inf
    if sd <= 0:
        return 0.0
    hi = sd
    while _power(hi, n, sd, alpha) < power:  # bounded: power -> 1 as d grows; 60 doublings is far beyond any sd
        hi *= 2
        if hi > sd * 2**60:
            return math.inf
    return float(brentq(lambda d: _power(d, n, sd, alpha) - power, 0.0, hi, xtol=1e-6))


def queries_needed(effect: float, sd: float, *, alpha: float = 0.05, power: float = 0.8, limit: int = 100_000) -> int:
    """How many judged queries a paired t-test needs to detect a mean change of ``effect`` (``limit`` if more)."""
    if effect <= 0:
        return limit
    if sd <= 0:
        return 2
    def enough(n: int) -> bool:
        return detectable_effect(n, sd, alpha=alpha, power=power) <= effect

    hi = 2
    while hi < limit and not enough(hi):  # bounded by limit: doubling
        hi *= 2
    if hi >= limit:
        return limit
    lo = max(2, hi // 2)
    while lo < hi:  # bisection between the last too-small n and the first large-enough one
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid + 1, hi)
    return hi


@dataclass(frozen=True)
class KsShift:
    """A two-sample KS test of one kind of queries' top-1 scores, baseline against candidate."""

    kind: str
    baseline_n: int
    candidate_n: int
    baseline_median: float
    candidate_median: float
    statistic: float
    p_value: float

    def shifted(self, alpha: float) -> bool:
        return self.p_value < alpha


def ks_shift(kind: str, baseline: Sequence[float], candidate: Sequence[float]) -> KsShift:
    """``scipy.stats.ks_2samp`` of two samples of top-1 scores (statistic 0 and p 1 when either is empty)."""
    import numpy as np
    from scipy.stats import ks_2samp

    if not baseline or not candidate:
        return KsShift(kind, len(baseline), len(candidate), math.nan, math.nan, 0.0, 1.0)
    res = ks_2samp(list(baseline), list(candidate))
    return KsShift(kind, len(baseline), len(candidate), float(np.median(baseline)), float(np.median(candidate)),
                   float(res.statistic), float(res.pvalue))
