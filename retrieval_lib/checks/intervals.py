"""The interval of a proportion, shared by checks of several families.

:func:`wilson` is the Wilson score interval of ``successes / n`` (``scipy.stats.binomtest``): the score
distributions put it on recall and rejection at the recommended threshold, the embedding contract on the share of
sampled chunks that retrieve their own point, reachability on the sampled share of chunks no query reaches.
:func:`queries_for_width` says how many trials would narrow it to +-``target``.
"""

from __future__ import annotations

import math

__all__ = ["wilson", "queries_for_width"]


def wilson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion (scipy); (nan, nan) for n = 0."""
    from scipy.stats import binomtest

    if n == 0:
        return math.nan, math.nan
    ci = binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def queries_for_width(share: float, target: float = 0.05, *, limit: int = 100_000) -> int:
    """Queries needed for the Wilson 95% interval around ``share`` to be at most +-``target`` wide."""
    n = 2
    while n < limit:
        low, high = wilson(round(share * n), n)
        if (high - low) / 2 <= target:
            return n
        n = int(n * 1.25) + 1
    return limit
