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

A notebook runs both sets with :func:`measure` and lets :func:`record` write the gates.

A query with no result at all (possible only with a threshold or a filter)
has a top-1 of NaN: it keeps nothing at any threshold.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval_lib.checks.gates import SCORES_RANGE, SCORES_SEPARATION, SCORES_THRESHOLD
from retrieval_lib.errors import ValidationError
from retrieval_lib.models import SearchResponse
from retrieval_lib.params import Provenance
from retrieval_lib.workbook.plots import plain_figure
from retrieval_lib.workbook.report import NotebookReport
from retrieval_lib.workbook.runfiles import write_run

__all__ = [
    "score_frame", "top1_scores", "clip_counts", "ClipCounts", "separation", "thresholds_grid",
    "threshold_tradeoff", "ThresholdGap", "recommend_threshold", "ThresholdVerdict", "judge_threshold",
    "top1_summary", "ScoreStudy", "measure", "per_query_frame", "histogram_figure", "tradeoff_figure", "record",
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
        ValidationError: either set is empty (``field`` names it).
    """
    if not in_top1 or not ood_top1:
        raise ValidationError("separation needs at least one in-domain and one out-of-domain score",
                              field="in_top1" if not in_top1 else "ood_top1")
    return min(_finite(in_top1, 0.0)) - max(_finite(ood_top1, 0.0))


def thresholds_grid(start: float = 0.0, stop: float = 1.0, step: float = 0.05) -> list[float]:
    """Thresholds ``start, start + step, ... stop`` (inclusive), rounded to avoid 0.15000000000000002.

    Raises:
        ValidationError: ``step`` is not positive.
    """
    if step <= 0:
        raise ValidationError(f"step must be positive (got {step})", field="step")
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

    def describe(self) -> str:
        """The gap in one sentence (scores to 3 decimals)."""
        if self.recommended is not None:
            return (f"gap from {self.highest_ood:.3f} (highest OOD top-1) to {self.lowest_in_domain:.3f} (lowest "
                    f"in-domain top-1), width {self.width:.3f}: recommended threshold {self.recommended:.3f}")
        return (f"no gap: the highest OOD top-1 ({self.highest_ood:.3f}) reaches the lowest in-domain top-1 "
                f"({self.lowest_in_domain:.3f}); no threshold separates the sets")


def recommend_threshold(in_top1: Sequence[float], ood_top1: Sequence[float]) -> ThresholdGap:
    """Recommend ``(max OOD top-1 + min in-domain top-1) / 2`` when the sets do not overlap.

    The midpoint leaves equal room on both sides for queries not in the sets.
    When the sets overlap (or touch), no threshold separates them and
    ``recommended`` is None.

    Raises:
        ValidationError: either set is empty.
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


@dataclass(frozen=True)
class ScoreStudy:
    """Both query sets, run through one retriever without a threshold.

    Attributes:
        in_domain, out_of_domain: one response per query of each set, in the set's order.
        top_k: results asked per query.
    """

    in_domain: list[SearchResponse]
    out_of_domain: list[SearchResponse]
    top_k: int

    @property
    def in_top1(self) -> list[float]:
        return top1_scores(self.in_domain)

    @property
    def ood_top1(self) -> list[float]:
        return top1_scores(self.out_of_domain)

    @property
    def gap(self) -> ThresholdGap:
        """:func:`recommend_threshold` of the two sets' top-1 scores."""
        return recommend_threshold(self.in_top1, self.ood_top1)

    def frame(self, *, decimals: int = 4):
        """:func:`score_frame` of both sets (labels ``in_domain`` and ``out_of_domain``)."""
        return score_frame({"in_domain": self.in_domain, "out_of_domain": self.out_of_domain}, decimals=decimals)


def measure(retriever: Any, in_domain: Sequence[str], out_of_domain: Sequence[str], *, top_k: int) -> ScoreStudy:
    """Run both query sets with no threshold, so every query gets its ``top_k`` best chunks.

    Args:
        retriever: a :class:`~retrieval_lib.search.Retriever`.
        in_domain, out_of_domain: the queries of each set.
        top_k: results per query.

    Raises:
        ValidationError: either set is empty. Anything :meth:`Retriever.search_many` raises.
    """
    for name, queries in (("in_domain", in_domain), ("out_of_domain", out_of_domain)):
        if not queries:
            raise ValidationError(f"the {name} query set is empty: the score study needs both sets", field=name)
    return ScoreStudy(in_domain=retriever.search_many(list(in_domain), top_k=top_k),
                      out_of_domain=retriever.search_many(list(out_of_domain), top_k=top_k), top_k=top_k)


def _every_score(responses: Sequence[SearchResponse]) -> list[float]:
    return [r.similarity_score for response in responses for r in response.results]


def per_query_frame(study: ScoreStudy, *, decimals: int = 3):
    """One row per query: set, query, top-1 score (rounded) and its source file; best first within each set."""
    import pandas as pd

    rows = [{"set": label, "query": r.query_text,
             "top1": round(r.results[0].similarity_score, decimals) if r.results else math.nan,
             "top1_source": r.results[0].source_file if r.results else None}
            for label, responses in (("in_domain", study.in_domain), ("out_of_domain", study.out_of_domain))
            for r in responses]
    frame = pd.DataFrame(rows, columns=["set", "query", "top1", "top1_source"])
    return frame.sort_values(["set", "top1"], ascending=[True, False], kind="stable").reset_index(drop=True)


@plain_figure
def histogram_figure(study: ScoreStudy, candidate_threshold: float):
    """Left: each query's top-1 score per set; right: every top-k score per set; the threshold marked."""
    from retrieval_lib.workbook.plots import score_histograms

    return score_histograms(
        [("top-1 score per query", {"in-domain": study.in_top1, "out-of-domain": study.ood_top1}),
         (f"all top-{study.top_k} scores", {"in-domain": _every_score(study.in_domain),
                                            "out-of-domain": _every_score(study.out_of_domain)})],
        threshold=candidate_threshold, threshold_label="candidate_threshold")


@plain_figure
def tradeoff_figure(study: ScoreStudy, candidate_threshold: float):
    """:func:`threshold_tradeoff` as two curves, with the threshold, the gap and the recommendation marked."""
    from retrieval_lib.workbook.plots import share_curves

    table, gap = threshold_tradeoff(study.in_top1, study.ood_top1), study.gap
    return share_curves(
        table["threshold"], {"in-domain kept": table["in_domain_kept"], "out-of-domain kept": table["ood_kept"]},
        threshold=candidate_threshold, threshold_label="candidate_threshold",
        band=(gap.highest_ood, gap.lowest_in_domain) if gap.has_gap else None, band_label="gap between the sets",
        marker=gap.recommended, title="Share of queries that still get a result, per threshold",
        xlabel="similarity threshold", ylabel="share of queries with ≥ 1 result")


def record(report: NotebookReport, study: ScoreStudy, *, candidate_threshold: float,
           min_separation: float, provenance: Provenance | None = None) -> ThresholdVerdict:
    """Record notebook 02's gates, findings and metrics on ``report`` (a NotebookReport).

    Gates: every similarity score within [0, 1] (:func:`clip_counts`, seed 000 SC-008);
    ``separation >= min_separation``; ``candidate_threshold`` keeps every in-domain query and
    rejects every OOD one (:func:`judge_threshold`). Returns that verdict.

    ``provenance``: the query sets' drafted and reviewed queries (``QuerySets.provenance_of``); when the sets
    carry origins, each gate says "on N drafted, M reviewed queries".
    """
    in_top1, ood_top1, gap = study.in_top1, study.ood_top1, study.gap
    clips = clip_counts(study.in_domain + study.out_of_domain)
    verdict = judge_threshold(study.in_domain, study.out_of_domain, candidate_threshold)
    SCORES_RANGE.record(
        report, clips.out_of_range == 0 and clips.scores > 0, value=clips.out_of_range, threshold=0, rule="==",
        unit="scores", provenance=provenance,
        detail=f"{clips.scores} scores, {clips.out_of_range} outside [0, 1]; {clips.negative} raw cosine scores were "
               f"negative and clipped to 0, {clips.above_one} above 1 clipped to 1 (lowest raw score "
               f"{clips.min_raw:.3f})")
    SCORES_SEPARATION.record(
        report, gap.width >= min_separation, value=round(gap.width, 4), threshold=min_separation, rule=">=",
        detail=f"min in-domain top-1 {gap.lowest_in_domain:.3f} - max OOD top-1 {gap.highest_ood:.3f} "
               f"= {gap.width:.3f}", provenance=provenance)
    lost = ", ".join(repr(q) for q in verdict.in_domain_lost) or "none"
    admitted = ", ".join(repr(q) for q in verdict.ood_admitted) or "none"
    SCORES_THRESHOLD.record(
        report, verdict.passed, fill={"candidate_threshold": candidate_threshold}, value=candidate_threshold,
        threshold=candidate_threshold,
        hint=(f"set `candidate_threshold` to {gap.recommended:.3f}, the middle of the gap between the sets"
              if gap.recommended is not None else "no threshold separates the sets: see the trade-off table"),
        detail=f"in-domain queries losing every result: {lost}; OOD queries still answered: {admitted}",
        provenance=provenance)

    answered = [s for s in in_top1 if not math.isnan(s)]  # queries with no result have no top-1 to describe
    median, highest = (statistics.median(answered), max(answered)) if answered else (math.nan, math.nan)
    in_kept, ood_kept = sum(s >= candidate_threshold for s in in_top1), sum(s >= candidate_threshold for s in ood_top1)
    in_scores = _every_score(study.in_domain)
    report.finding(f"in-domain top-1 scores run from {gap.lowest_in_domain:.3f} to {highest:.3f} (median "
                   f"{median:.3f}); out-of-domain top-1 scores reach at most {gap.highest_ood:.3f}")
    report.finding(f"at candidate_threshold {candidate_threshold:g}, {in_kept}/{len(in_top1)} in-domain and "
                   f"{ood_kept}/{len(ood_top1)} out-of-domain queries keep at least one result")
    report.finding(f"recommended threshold {gap.recommended:.3f} (midpoint of the {gap.width:.3f}-wide gap)"
                   if gap.recommended is not None
                   else f"no threshold separates the sets: they overlap by {-gap.width:.3f}")
    report.finding(f"{sum(s < candidate_threshold for s in in_scores)} of {len(in_scores)} in-domain top-{study.top_k} "
                   f"results score below {candidate_threshold:g}: at that threshold those queries keep fewer than "
                   f"{study.top_k} chunks")
    report.finding(f"{clips.negative} of {clips.scores} raw cosine scores were negative (clipped to 0)")
    if provenance is not None and provenance.marked:
        report.finding(f"the query sets hold {provenance.drafted} drafted and {provenance.reviewed} reviewed queries: "
                       "drafted ones repeat their page's own words and run easier than a person's (docs/drafting.md)")
    for name, value in (("in_domain_queries", len(in_top1)), ("ood_queries", len(ood_top1)),
                        ("in_domain_top1_min", gap.lowest_in_domain), ("in_domain_top1_median", median),
                        ("in_domain_top1_max", highest), ("ood_top1_max", gap.highest_ood),
                        ("separation", gap.width), ("recommended_threshold", gap.recommended),
                        ("negative_raw_scores", clips.negative), ("scores_checked", clips.scores)):
        report.metric(name, value)
    write_run(report, study.in_domain + study.out_of_domain, top_k=study.top_k,  # for a later comparison (14)
              kinds=["in_domain"] * len(study.in_domain) + ["out_of_domain"] * len(study.out_of_domain))
    return verdict
