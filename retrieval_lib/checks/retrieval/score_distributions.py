"""Score distributions: do in-domain and out-of-domain queries separate by similarity?

Seed 000 SC-008 asks for similarity scores normalised to [0, 1]; SC-001 and
seed 004's negative test ask that relevant queries score high and unrelated
ones low. The check runs two query sets (in-domain and out-of-domain, "OOD") and turns their answers into the
figures that answer where a similarity threshold should sit: every score, how many raw cosine scores fell outside
[0, 1] and were clipped (:func:`clip_counts`), and the threshold's side (:mod:`._thresholds`).

A query with no result at all (possible only with a threshold or a filter)
has a top-1 of NaN: it keeps nothing at any threshold.

A team's retriever that returns no score gives rank stand-ins
(:func:`~retrieval_lib.retrievers.as_search.rank_stand_in`): all three gates and
the recommended threshold read scores, so they are not applicable; the findings
say how many queries of each set the retriever answered at all.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.gates import SCORES_RANGE, SCORES_SEPARATION, SCORES_THRESHOLD
from retrieval_lib.checks.retrieval import _thresholds
from retrieval_lib.checks.retrieval._thresholds import (
    ThresholdGap,
    ThresholdUncertainty,
    ThresholdVerdict,
    judge_threshold,
    recommend,
    recommend_threshold,
    threshold_tradeoff,
    top1_scores,
)
from retrieval_lib.errors import ValidationError
from retrieval_lib.models import SearchResponse
from retrieval_lib.params import Provenance
from retrieval_lib.retrievers.as_search import rank_stand_in
from retrieval_lib.workbook.plots import plain_figure
from retrieval_lib.workbook.runfiles import write_run

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "ScoreDistributions", "ScoreStudy", "measure", "recommend"]


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
    def unscored(self) -> str | None:
        """Why the answers' scores are rank stand-ins and no similarity, or None when they are scores."""
        return rank_stand_in(self.in_domain + self.out_of_domain)

    @property
    def gap(self) -> ThresholdGap:
        """:func:`recommend_threshold` of the two sets' top-1 scores."""
        return recommend_threshold(self.in_top1, self.ood_top1)

    def frame(self, *, decimals: int = 4):
        """One row per result of both sets: ``set`` (``in_domain`` or ``out_of_domain``), ``query, rank,
        similarity_score, raw_score`` (rounded to ``decimals``, so tables compare stably), ``source_file``."""
        import pandas as pd

        rows = [{"set": label, "query": response.query_text, "rank": rank,
                 "similarity_score": round(r.similarity_score, decimals), "raw_score": round(r.raw_score, decimals),
                 "source_file": r.source_file}
                for label, responses in (("in_domain", self.in_domain), ("out_of_domain", self.out_of_domain))
                for response in responses for rank, r in enumerate(response.results, 1)]
        return pd.DataFrame(rows, columns=["set", "query", "rank", "similarity_score", "raw_score", "source_file"])


def measure(retriever: Any, in_domain: Sequence[str], out_of_domain: Sequence[str], *, top_k: int) -> ScoreStudy:
    """Run both query sets through ``retriever`` with no threshold, so every query gets its ``top_k`` best chunks.

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
        band=(gap.highest_ood, gap.lowest_in_domain) if gap.recommended is not None else None,
        band_label="gap between the sets",
        marker=gap.recommended, title="Share of queries that still get a result, per threshold",
        xlabel="similarity threshold", ylabel="share of queries with ≥ 1 result")


def run(ctx: NotebookRun, *, query_sets: str, top_k: int, candidate_threshold: float,
        min_separation: float) -> ScoreDistributions:
    """Notebook 02's check: both query sets of ``query_sets`` (``in_domain``, ``out_of_domain``) asked of
    ``ctx.retriever`` with no threshold, top ``top_k``; the recommended threshold and its intervals.

    Raises:
        ParamsError: the query sets file is missing, or lacks a set. ValidationError: a set is empty.
    """
    from retrieval_lib.params import load_query_sets

    sets = load_query_sets(query_sets, required=("in_domain", "out_of_domain"))
    study = measure(ctx.retriever, sets["in_domain"], sets["out_of_domain"], top_k=top_k)
    return ScoreDistributions.of(study, candidate_threshold=candidate_threshold, min_separation=min_separation,
                                 provenance=sets.provenance_of("in_domain", "out_of_domain"))


@dataclass
class ScoreDistributions:
    """Notebook 02's result: both sets' answers, the recommended threshold's intervals, and the bars.

    ``provenance``: the query sets' drafted and reviewed queries (``QuerySets.provenance_of``); when the sets carry
    origins, each gate says "on N drafted, M reviewed queries".
    """

    study: ScoreStudy
    uncertainty: ThresholdUncertainty | None  # None: a set without any result has no top-1 to interval
    candidate_threshold: float
    min_separation: float
    provenance: Provenance | None = None

    @classmethod
    def of(cls, study: ScoreStudy, *, candidate_threshold: float, min_separation: float,
           provenance: Provenance | None = None, resamples: int = 1000) -> ScoreDistributions:
        """``study``'s result, with the recommended threshold's intervals (``resamples`` bootstrap rounds); none when
        a set has no query with a result (the range gate then fails, saying "0 scores")."""
        answered = all(any(not math.isnan(s) for s in top1) for top1 in (study.in_top1, study.ood_top1))
        answered = answered and not study.unscored  # rank stand-ins have no threshold to interval
        uncertainty = _thresholds.measure(study.in_top1, study.ood_top1, resamples=resamples) if answered else None
        return cls(study, uncertainty, candidate_threshold, min_separation, provenance)

    @property
    def verdict(self) -> ThresholdVerdict:
        """What ``candidate_threshold`` keeps and rejects (:func:`~._thresholds.judge_threshold`)."""
        return judge_threshold(self.study.in_domain, self.study.out_of_domain, self.candidate_threshold)

    def __str__(self) -> str:
        study = self.study
        head = (f"{len(study.in_domain)} in-domain and {len(study.out_of_domain)} out-of-domain queries, top "
                f"{study.top_k}: {len(study.frame())} ")
        if study.unscored:
            return head + f"results\n{study.unscored}; no threshold can be read from the answers"
        return head + f"scores\n{study.gap.describe()}\n{self._interval()}"

    def _interval(self) -> str:
        return self.uncertainty.sentence() if self.uncertainty is not None else (
            "no interval for the recommended threshold: a query set has no query with a result")

    def tables(self) -> dict[str, Any]:
        """``scores`` (every result), ``top1_per_query``, ``top1_summary`` (per set) and ``tradeoff`` (per
        threshold, the share of each set that keeps a result); with rank stand-ins for scores, the first two only
        (their scores are 1/rank: no summary or threshold reads them)."""
        study = self.study
        if study.unscored:
            return {"scores": study.frame(), "top1_per_query": per_query_frame(study)}
        return {"scores": study.frame(), "top1_per_query": per_query_frame(study),
                "top1_summary": top1_summary({"in_domain": study.in_top1, "out_of_domain": study.ood_top1}),
                "tradeoff": threshold_tradeoff(study.in_top1, study.ood_top1).round(3)}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """Record the tables, the histograms, the trade-off curves and the ROC (``show``: display them), the
        threshold's intervals, then the three gates with their findings and metrics, and the run file."""
        study = self.study
        for name, frame in self.tables().items():
            report.table(frame, name)
        if study.unscored:
            self._record_ranks_only(report, study.unscored)
            return
        report.figure(histogram_figure(study, self.candidate_threshold), "histograms", show=show)
        report.figure(tradeoff_figure(study, self.candidate_threshold), "tradeoff", show=show)
        if self.uncertainty is None:
            report.finding(self._interval())
        else:
            _thresholds.record(report, self.uncertainty)
            report.figure(_thresholds.roc_figure(study.in_top1, study.ood_top1, self.uncertainty), "roc", show=show)
        # gates: every similarity score within [0, 1] (seed 000 SC-008); the separation; what candidate_threshold
        # keeps and rejects
        in_top1, ood_top1, gap = study.in_top1, study.ood_top1, study.gap
        clips = clip_counts(study.in_domain + study.out_of_domain)
        verdict, prov = self.verdict, self.provenance
        candidate_threshold, min_separation = self.candidate_threshold, self.min_separation
        SCORES_RANGE.record(
            report, clips.out_of_range == 0 and clips.scores > 0, value=clips.out_of_range, threshold=0, rule="==",
            unit="scores", provenance=prov,
            detail=f"{clips.scores} scores, {clips.out_of_range} outside [0, 1]; {clips.negative} raw cosine scores "
                   f"were negative and clipped to 0, {clips.above_one} above 1 clipped to 1 (lowest raw score "
                   f"{clips.min_raw:.3f})")
        SCORES_SEPARATION.record(
            report, gap.width >= min_separation, value=round(gap.width, 4), threshold=min_separation, rule=">=",
            detail=(f"no out-of-domain query got a result (the retriever's own cut rejected all "
                    f"{gap.ood_unanswered}); min in-domain top-1 {gap.lowest_in_domain:.3f}"
                    if gap.rejected_by_retriever else
                    f"min in-domain top-1 {gap.lowest_in_domain:.3f} - max OOD top-1 {gap.highest_ood:.3f} "
                    f"= {gap.width:.3f}"), provenance=prov)
        lost = ", ".join(repr(q) for q in verdict.in_domain_lost) or "none"
        admitted = ", ".join(repr(q) for q in verdict.ood_admitted) or "none"
        SCORES_THRESHOLD.record(
            report, verdict.passed, fill={"candidate_threshold": candidate_threshold}, value=candidate_threshold,
            threshold=candidate_threshold,
            hint=(f"set `candidate_threshold` to {gap.recommended:.3f}, the middle of the gap between the sets"
                  if gap.recommended is not None else
                  f"keep `candidate_threshold` at or below {gap.lowest_in_domain:.3f}, the lowest in-domain top-1"
                  if gap.rejected_by_retriever else "no threshold separates the sets: see the trade-off table"),
            detail=f"in-domain queries losing every result: {lost}; OOD queries still answered: {admitted}",
            provenance=prov)

        answered = [s for s in in_top1 if not math.isnan(s)]  # queries with no result have no top-1 to describe
        median, highest = (statistics.median(answered), max(answered)) if answered else (math.nan, math.nan)
        in_kept = sum(s >= candidate_threshold for s in in_top1)
        ood_kept = sum(s >= candidate_threshold for s in ood_top1)
        in_scores = _every_score(study.in_domain)
        unanswered = (f" ({gap.ood_unanswered} of {len(ood_top1)} got no result: the retriever's own cut rejected "
                      "them)" if gap.ood_unanswered else "")
        report.finding(f"in-domain top-1 scores run from {gap.lowest_in_domain:.3f} to {highest:.3f} (median "
                       f"{median:.3f}); " + ("no out-of-domain query got a result" if gap.rejected_by_retriever else
                                             f"out-of-domain top-1 scores reach at most {gap.highest_ood:.3f}"
                                             + unanswered))
        report.finding(f"at candidate_threshold {candidate_threshold:g}, {in_kept}/{len(in_top1)} in-domain and "
                       f"{ood_kept}/{len(ood_top1)} out-of-domain queries keep at least one result")
        report.finding(f"recommended threshold {gap.recommended:.3f} (midpoint of the {gap.width:.3f}-wide gap)"
                       if gap.recommended is not None else
                       f"no threshold to recommend: {gap.describe()}" if gap.rejected_by_retriever
                       else f"no threshold separates the sets: they overlap by {-gap.width:.3f}")
        report.finding(f"{sum(s < candidate_threshold for s in in_scores)} of {len(in_scores)} in-domain "
                       f"top-{study.top_k} results score below {candidate_threshold:g}: at that threshold those "
                       f"queries keep fewer than {study.top_k} chunks")
        report.finding(f"{clips.negative} of {clips.scores} raw cosine scores were negative (clipped to 0)")
        if prov is not None and prov.marked:
            report.finding(f"the query sets hold {prov.drafted} drafted and {prov.reviewed} reviewed queries: "
                           "drafted ones repeat their page's own words and run easier than a person's "
                           "(docs/drafting.md)")
        for name, value in (("in_domain_queries", len(in_top1)), ("ood_queries", len(ood_top1)),
                            ("in_domain_top1_min", gap.lowest_in_domain), ("in_domain_top1_median", median),
                            ("in_domain_top1_max", highest), ("ood_top1_max", gap.highest_ood),
                            ("separation", gap.width), ("recommended_threshold", gap.recommended),
                            ("negative_raw_scores", clips.negative), ("scores_checked", clips.scores)):
            report.metric(name, value)
        self._write_run(report)

    def _write_run(self, report: NotebookReport) -> None:
        study = self.study
        write_run(report, study.in_domain + study.out_of_domain, top_k=study.top_k,  # for a later comparison (14)
                  kinds=["in_domain"] * len(study.in_domain) + ["out_of_domain"] * len(study.out_of_domain))

    def _record_ranks_only(self, report: NotebookReport, reason: str) -> None:
        """The three gates not applicable (each reads a score), and what the answers say without one: how many
        queries of each set the retriever answered at all (an out-of-domain question it answers with nothing is
        rejected by its own threshold or filter)."""
        study, prov = self.study, self.provenance
        SCORES_RANGE.not_applicable(report, f"{reason}; no similarity to hold to [0, 1]")
        SCORES_SEPARATION.not_applicable(report, f"{reason}; no top-1 score to separate the sets by")
        SCORES_THRESHOLD.not_applicable(report, f"{reason}; no score for a threshold to keep or reject",
                                        fill={"candidate_threshold": self.candidate_threshold})
        in_answered = sum(bool(r.results) for r in study.in_domain)
        ood_answered = sum(bool(r.results) for r in study.out_of_domain)
        report.finding(f"{reason}; no threshold can be recommended from its answers (the scores shown are 1/rank "
                       "stand-ins)")
        report.finding(f"the retriever answered {in_answered}/{len(study.in_domain)} in-domain and {ood_answered}/"
                       f"{len(study.out_of_domain)} out-of-domain queries with at least one result (an empty answer "
                       "is its own threshold or filter at work)")
        if prov is not None and prov.marked:
            report.finding(f"the query sets hold {prov.drafted} drafted and {prov.reviewed} reviewed queries")
        for name, value in (("in_domain_queries", len(study.in_domain)), ("ood_queries", len(study.out_of_domain)),
                            ("in_domain_answered", in_answered), ("ood_answered", ood_answered)):
            report.metric(name, value)
        self._write_run(report)
