"""The one percentile: latency figures in notebooks, the service validator and the benchmarks agree on it."""

from __future__ import annotations

import math
from collections.abc import Iterable

from retrieval_lib.errors import ValidationError

__all__ = ["percentile"]


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q``-th percentile of ``values``, by linear interpolation (``numpy.percentile``'s default).

    With the values sorted as x_0 <= ... <= x_{n-1} and h = (n - 1) * q / 100::

        P(q) = x_floor(h) + (h - floor(h)) * (x_ceil(h) - x_floor(h))

    so P(0) is the minimum, P(100) the maximum and P(50) the median; a
    percentile may fall between two observed values.

    Args:
        values: the observations (e.g. latencies in ms); at least one.
        q: the percentile, from 0 to 100.

    Raises:
        ValidationError: no values, a value that is not a finite number, or
            ``q`` outside [0, 100].
    """
    import numpy as np

    data = [float(v) for v in values]
    if not data:
        raise ValidationError("percentile of no values is undefined", field="values")
    if not all(math.isfinite(v) for v in data):
        raise ValidationError("percentile needs finite numbers (no NaN or infinity)", field="values")
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 <= q <= 100:
        raise ValidationError(f"percentile q must be a number from 0 to 100 (got {q!r})", field="q")
    return float(np.percentile(np.asarray(data), q, method="linear"))
