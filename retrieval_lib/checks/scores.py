"""Score distributions: do in-domain and out-of-domain queries separate by similarity?

Seed 000 SC-008 asks for similarity scores normalised to [0, 1]; SC-001 and
seed 004's negative test ask that relevant queries score high and unrelated
ones low. This module turns two sets of :class:`~retrieval_lib.models.SearchResponse`
(in-domain and out-of-domain, "OOD") into the figures that answer where a
similarity threshold should sit:

- :func:`score_frame`: one row per result (set, query, rank, scores),
- :func:`top1_scores`: each query's best ``similarity_score``,
- :func:`clip_counts`: how many raw cosine scores fell outside [0, 1] and were clipped,
- :func:`separation`: ``min(in-domain top-1) - max(OOD top-1)``,
- :func:`threshold_tradeoff`: per threshold, the share of each set that keeps a result,
- :func:`recommend_threshold`: the midpoint of the gap between the sets, if there is one,
- :func:`judge_threshold`: which queries a given threshold keeps and rejects.

A query with no result at all (possible only with a threshold or a filter)
has a top-1 of NaN: it keeps nothing at any threshold.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..models import SearchResponse

__all__ = [
    "score_frame", "top1_scores", "clip_counts", "ClipCounts", "separation", "thresholds_grid",
    "threshold_tradeoff", "ThresholdGap", "recommend_threshold", "ThresholdVerdict", "judge_threshold",
    "top1_summary",
]


def score_frame(sets: Mapping[str, Sequence[SearchResponse]], *, decimals: int = 4):
    """One row per result of every response, labelled with its set.

    Args:
        sets: set label (e.g. ``"in_domain"``) to that set's responses.
        decimals: rounding of the score columns, so tables compare stably.

    Returns:
        A pandas DataFrame with columns ``set, query, rank, similarity_score,
        raw_score, source_file``; a query with no result contributes no row.
    """
    import pandas as pd

    rows = []
    for label, responses in sets.items():
        for response in responses:
            for rank, r in enumerate(response.results, 1):
                rows.append({"set": label, "query": response.query_text, "rank": rank,
                             "similarity_score": round(r.similarity_score, decimals),
                             "raw_score": round(r.raw_score, decimals), "source_file": r.source_file})
    return pd.DataFrame(rows, columns=["set", "query", "rank", "similarity_score", "raw_score", "source_file"])


def top1_scores(responses: Iterable[SearchResponse]) -> list[float]:
    """Each response's best ``similarity_score`` (results are ranked best first); NaN when it has none."""
    return [r.results[0].similarity_score if r.results else math.nan for r in responses]


@dataclass(frozen=True)
class ClipCounts:
    """How the raw cosine scores relate to the [0, 1] similarity scale.

    Attributes:
        scores: results inspected.
        negative: raw scores below 0 (clipped up to 0).
        above_one: raw scores above 1 (rounding of unit vectors; clipped down to 1).
        out_of_range: similarity scores outside [0, 1] after clipping (must be 0).
        min_raw: lowest raw score seen (NaN when there were none).
    """

    scores: int
    negative: int
    above_one: int
    out_of_range: int
    min_raw: float


def clip_counts(responses: Iterable[SearchResponse]) -> ClipCounts:
    """Count raw scores that needed clipping and similarity scores outside [0, 1] (seed 000 SC-008)."""
    results = [r for response in responses for r in response.results]
    return ClipCounts(
        scores=len(results),
        negative=sum(r.raw_score < 0 for r in results),
        above_one=sum(r.raw_score > 1 for r in results),
        out_of_range=sum(not 0.0 <= r.similarity_score <= 1.0 for r in results),
        min_raw=min((r.raw_score for r in results), default=math.nan),
    )


def _finite(values: Iterable[float], missing: float) -> list[float]:
    return [missing if (v is None or math.isnan(v)) else float(v) for v in values]


def separation(in_top1: Sequence[float], ood_top1: Sequence[float]) -> float:
    """``min(in-domain top-1) - max(OOD top-1)``: positive when some threshold splits the sets.

    A query without results counts as top-1 = 0 (an in-domain query that finds
    nothing is as bad as can be; an OOD query that finds nothing is rejected).

    Raises:
        ValueError: either set is empty.
    """
    if not in_top1 or not ood_top1:
        raise ValueError("separation needs at least one in-domain and one out-of-domain score")
    return min(_finite(in_top1, 0.0)) - max(_finite(ood_top1, 0.0))


def thresholds_grid(start: float = 0.0, stop: float = 1.0, step: float = 0.05) -> list[float]:
    """Thresholds ``start, start + step, ... stop`` (inclusive), rounded to avoid 0.15000000000000002."""
    if step <= 0:
        raise ValueError("step must be positive")
    n = int(math.floor((stop - start) / step + 1e-9))
    return [round(start + i * step, 10) for i in range(n + 1)]


def _share_kept(top1: Sequence[float], threshold: float) -> float:
    # NaN >= t is False: a query without results keeps nothing.
    return sum(1 for s in top1 if s >= threshold) / len(top1) if top1 else math.nan


def threshold_tradeoff(in_top1: Sequence[float], ood_top1: Sequence[float],
                       thresholds: Sequence[float] | None = None):
    """Per threshold, the share of each set that would still get at least one result.

    A query keeps at least one result at threshold ``t`` exactly when its
    top-1 ``similarity_score >= t`` (the search keeps scores ``>= t``), so

        in_kept(t)  = |{q in in-domain : top1(q) >= t}| / |in-domain|
        ood_kept(t) = |{q in OOD : top1(q) >= t}| / |OOD|

    A good threshold has ``in_kept = 1`` and ``ood_kept = 0``.

    Args:
        in_top1, ood_top1: top-1 similarity scores (NaN = no result).
        thresholds: default :func:`thresholds_grid` (0.0 to 1.0 by 0.05).

    Returns:
        A DataFrame with columns ``threshold, in_domain_kept, ood_kept, margin``
        where ``margin = in_domain_kept - ood_kept``.
    """
    import pandas as pd

    grid = list(thresholds) if thresholds is not None else thresholds_grid()
    rows = []
    for t in grid:
        kept_in, kept_ood = _share_kept(in_top1, t), _share_kept(ood_top1, t)
        rows.append({"threshold": t, "in_domain_kept": kept_in, "ood_kept": kept_ood,
                     "margin": kept_in - kept_ood})
    return pd.DataFrame(rows, columns=["threshold", "in_domain_kept", "ood_kept", "margin"])


@dataclass(frozen=True)
class ThresholdGap:
    """The gap between the best OOD top-1 and the worst in-domain top-1.

    Attributes:
        highest_ood: max OOD top-1.
        lowest_in_domain: min in-domain top-1.
        width: ``lowest_in_domain - highest_ood`` (negative: the sets overlap).
        recommended: the gap's midpoint when ``width > 0``, else None.
    """

    highest_ood: float
    lowest_in_domain: float
    width: float
    recommended: float | None

    @property
    def has_gap(self) -> bool:
        return self.recommended is not None


def recommend_threshold(in_top1: Sequence[float], ood_top1: Sequence[float]) -> ThresholdGap:
    """Recommend ``(max OOD top-1 + min in-domain top-1) / 2`` when the sets do not overlap.

    The midpoint leaves equal room on both sides for queries not in the sets.
    When the sets overlap (or touch), no threshold separates them and
    ``recommended`` is None.

    Raises:
        ValueError: either set is empty.
    """
    width = separation(in_top1, ood_top1)
    high_ood = max(_finite(ood_top1, 0.0))
    low_in = min(_finite(in_top1, 0.0))
    return ThresholdGap(highest_ood=high_ood, lowest_in_domain=low_in, width=width,
                        recommended=(high_ood + low_in) / 2 if width > 0 else None)


@dataclass(frozen=True)
class ThresholdVerdict:
    """What one threshold does to the two sets.

    Attributes:
        threshold: the threshold judged.
        in_domain_lost: in-domain queries whose top-1 is below it (they would get nothing).
        ood_admitted: OOD queries whose top-1 reaches it (they would get an answer).
    """

    threshold: float
    in_domain_lost: list[str]
    ood_admitted: list[str]

    @property
    def passed(self) -> bool:
        """True when every in-domain query keeps a result and every OOD query gets none."""
        return not self.in_domain_lost and not self.ood_admitted


def judge_threshold(in_domain: Sequence[SearchResponse], ood: Sequence[SearchResponse],
                    threshold: float) -> ThresholdVerdict:
    """Check that ``threshold`` keeps every in-domain query (top-1 >= t) and rejects every OOD one (top-1 < t)."""
    in_top1, ood_top1 = top1_scores(in_domain), top1_scores(ood)
    return ThresholdVerdict(
        threshold=threshold,
        in_domain_lost=[r.query_text for r, s in zip(in_domain, in_top1) if not s >= threshold],
        ood_admitted=[r.query_text for r, s in zip(ood, ood_top1) if s >= threshold],
    )


def top1_summary(sets: Mapping[str, Sequence[float]], *, decimals: int = 3):
    """Min / median / max (and count) of the top-1 scores of each set, as a DataFrame (NaN ignored)."""
    import numpy as np
    import pandas as pd

    rows = []
    for label, values in sets.items():
        arr = np.array([v for v in values if not math.isnan(v)], dtype=float)
        rows.append({"set": label, "queries": len(values), "with_results": int(arr.size),
                     "min_top1": round(float(arr.min()), decimals) if arr.size else math.nan,
                     "median_top1": round(float(np.median(arr)), decimals) if arr.size else math.nan,
                     "max_top1": round(float(arr.max()), decimals) if arr.size else math.nan})
    return pd.DataFrame(rows)
