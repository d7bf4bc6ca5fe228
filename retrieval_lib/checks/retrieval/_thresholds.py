"""Where the similarity threshold should sit, and how sure that is (notebook 02's thresholds).

From each query's top-1 score (:func:`top1_scores`; a query with no result has NaN, and keeps nothing at any
threshold):

- :func:`threshold_tradeoff`: per threshold, the share of each set that keeps a result;
- :func:`recommend_threshold`: the gap between the sets (its width, the separation, is ``min(in-domain top-1) -
  max(OOD top-1)``) and its midpoint, if there is one;
- :func:`judge_threshold`: which queries a given threshold keeps and rejects;
- :func:`recommend`: the gap's midpoint, or where the sets overlap the threshold maximising Youden's
  J = TPR - FPR of scikit-learn's ``roc_curve``; :func:`measure` its 95% interval from a stratified bootstrap (each
  set resampled with replacement, the recommendation recomputed);
- in-domain recall (share of in-domain queries keeping a result) and out-of-domain rejection (share of OOD
  queries losing every result) at that threshold, each with a Wilson 95% interval
  (:func:`~retrieval_lib.checks.statistics.wilson`), and how many queries would bring it to +-0.05;
- the ROC curve and AUC of top-1 scores (in domain = positive), AUC with a bootstrap interval.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from retrieval_lib.checks.statistics import queries_for_width, wilson
from retrieval_lib.errors import ValidationError
from retrieval_lib.models import SearchResponse
from retrieval_lib.workbook.plots import plain_figure

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport

__all__ = ["top1_scores", "threshold_tradeoff", "ThresholdGap", "recommend_threshold", "ThresholdVerdict",
           "judge_threshold", "ThresholdUncertainty", "recommend", "measure", "roc_figure", "record"]


def top1_scores(responses: Iterable[SearchResponse]) -> list[float]:
    """Each response's best ``similarity_score`` (results are ranked best first); NaN when it has none."""
    return [r.results[0].similarity_score if r.results else math.nan for r in responses]


def _finite(values: Iterable[float], missing: float) -> list[float]:
    return [missing if (v is None or math.isnan(v)) else float(v) for v in values]


#: The thresholds of the trade-off table: 0.0 to 1.0 by 0.05.
THRESHOLDS = [round(i * 0.05, 2) for i in range(21)]


def _share_kept(top1: Sequence[float], threshold: float) -> float:
    # NaN >= t is False: a query without results keeps nothing.
    return sum(1 for s in top1 if s >= threshold) / len(top1) if top1 else math.nan


def threshold_tradeoff(in_top1: Sequence[float], ood_top1: Sequence[float]):
    """Per threshold, the share of each set that would still get at least one result.

    A query keeps at least one result at threshold ``t`` exactly when its
    top-1 ``similarity_score >= t`` (the search keeps scores ``>= t``), so

        in_kept(t)  = |{q in in-domain : top1(q) >= t}| / |in-domain|
        ood_kept(t) = |{q in OOD : top1(q) >= t}| / |OOD|

    A good threshold has ``in_kept = 1`` and ``ood_kept = 0``.

    Returns:
        A DataFrame with columns ``threshold`` (each of :data:`THRESHOLDS`), ``in_domain_kept, ood_kept, margin``
        where ``margin = in_domain_kept - ood_kept``; NaN top-1 scores are queries without a result.
    """
    import pandas as pd

    rows = []
    for t in THRESHOLDS:
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
        ood_unanswered: OOD queries that got no result (a retriever's own cut or filter rejected them).
        ood_answered: OOD queries that got one; when 0, the retriever rejects them all itself and no threshold of
            the client's is recommended (a midpoint with an unknown score would be a guess).
    """

    highest_ood: float
    lowest_in_domain: float
    width: float
    recommended: float | None
    ood_unanswered: int = 0
    ood_answered: int = 1

    @property
    def rejected_by_retriever(self) -> bool:
        """Whether no OOD query got any result: the retriever's own cut (or filter) rejects every one."""
        return self.ood_answered == 0

    def describe(self) -> str:
        """The gap in one sentence (scores to 3 decimals)."""
        if self.rejected_by_retriever:
            return (f"the retriever's own cut already rejects every out-of-domain query (none got a result); any "
                    f"threshold up to {self.lowest_in_domain:.3f} (lowest in-domain top-1) keeps every in-domain query")
        if self.recommended is not None:
            return (f"gap from {self.highest_ood:.3f} (highest OOD top-1) to {self.lowest_in_domain:.3f} (lowest "
                    f"in-domain top-1), width {self.width:.3f}: recommended threshold {self.recommended:.3f}")
        return (f"no gap: the highest OOD top-1 ({self.highest_ood:.3f}) reaches the lowest in-domain top-1 "
                f"({self.lowest_in_domain:.3f}); no threshold separates the sets")


def recommend_threshold(in_top1: Sequence[float], ood_top1: Sequence[float]) -> ThresholdGap:
    """The gap between the sets; recommend ``(max OOD top-1 + min in-domain top-1) / 2`` when they do not overlap.

    The midpoint leaves equal room on both sides for queries not in the sets. When the sets overlap (or touch), no
    threshold separates them and ``recommended`` is None. A query without results counts as top-1 = 0 (an in-domain
    query that finds nothing is as bad as can be; an OOD query that finds nothing is rejected). When no OOD query got
    any result (a chatbot's retriever with a cut of its own), ``recommended`` is None too and the gap says so.

    Raises:
        ValidationError: either set is empty (``field`` names it).
    """
    if not in_top1 or not ood_top1:
        raise ValidationError("separation needs at least one in-domain and one out-of-domain score",
                              field="in_top1" if not in_top1 else "ood_top1")
    high_ood, low_in = max(_finite(ood_top1, 0.0)), min(_finite(in_top1, 0.0))
    width = low_in - high_ood
    unanswered = sum(1 for v in ood_top1 if v is None or math.isnan(v))
    answered = len(ood_top1) - unanswered
    return ThresholdGap(highest_ood=high_ood, lowest_in_domain=low_in, width=width,
                        recommended=(high_ood + low_in) / 2 if width > 0 and answered else None,
                        ood_unanswered=unanswered, ood_answered=answered)


@dataclass(frozen=True)
class ThresholdVerdict:
    """What one threshold does to the two sets.

    Attributes:
        in_domain_lost: in-domain queries whose top-1 is below it (they would get nothing).
        ood_admitted: OOD queries whose top-1 reaches it (they would get an answer).
    """

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
    return ThresholdVerdict(in_domain_lost=[r.query_text for r, s in zip(in_domain, in_top1) if not s >= threshold],
                            ood_admitted=[r.query_text for r, s in zip(ood, ood_top1) if s >= threshold])


def recommend(in_top1: Sequence[float], ood_top1: Sequence[float]) -> float:
    """The gap's midpoint when the sets separate, else the Youden-J threshold of the ROC curve."""
    import numpy as np
    from sklearn.metrics import roc_curve

    gap = recommend_threshold(in_top1, ood_top1)
    if gap.recommended is not None:
        return float(gap.recommended)
    labels = [1] * len(in_top1) + [0] * len(ood_top1)
    fpr, tpr, cuts = roc_curve(labels, list(in_top1) + list(ood_top1))
    best = int(np.argmax(tpr - fpr))
    return float(min(cuts[best], 1.0))


@dataclass(frozen=True)
class ThresholdUncertainty:
    """The recommended threshold with its intervals (see the module docstring)."""

    threshold: float
    threshold_low: float
    threshold_high: float
    recall: float
    recall_ci: tuple[float, float]
    rejection: float
    rejection_ci: tuple[float, float]
    auc: float
    auc_ci: tuple[float, float]
    n_in: int
    n_ood: int
    needed_in: int
    needed_ood: int

    def sentence(self) -> str:
        return (f"with {self.n_in} in-domain and {self.n_ood} out-of-domain queries the recommended threshold "
                f"{self.threshold:.3f} has a 95% interval {self.threshold_low:.3f}-{self.threshold_high:.3f} "
                f"(width {self.threshold_high - self.threshold_low:.3f}); recall {self.recall:.2f} "
                f"[{self.recall_ci[0]:.2f}, {self.recall_ci[1]:.2f}] and rejection {self.rejection:.2f} "
                f"[{self.rejection_ci[0]:.2f}, {self.rejection_ci[1]:.2f}] at it; +-0.05 on recall needs about "
                f"{self.needed_in} in-domain queries, on rejection about {self.needed_ood} out-of-domain ones")


def measure(in_top1: Sequence[float], ood_top1: Sequence[float], *, resamples: int = 1000,
            seed: int = 0) -> ThresholdUncertainty:
    """Bootstrap the recommendation and AUC; Wilson intervals for recall and rejection.

    Raises:
        ValidationError: either set empty, or no query of it answered (only NaN top-1 scores).
    """
    import numpy as np
    from sklearn.metrics import roc_auc_score

    if not any(not math.isnan(v) for v in in_top1) or not any(not math.isnan(v) for v in ood_top1):
        raise ValidationError("thresholds need in-domain and out-of-domain top-1 scores", field="query_sets")
    # a query with no result has top-1 0 (as recommend_threshold reads it): an in-domain one is a miss at any
    # threshold, not a query left out of the recall
    ins, oods = np.array(_finite(in_top1, 0.0)), np.array(_finite(ood_top1, 0.0))
    rng = np.random.default_rng(seed)
    t = recommend(list(ins), list(oods))
    labels = np.r_[np.ones(ins.size), np.zeros(oods.size)]
    auc = float(roc_auc_score(labels, np.r_[ins, oods]))
    boot_t, boot_auc = [], []
    for _ in range(resamples):  # bounded: a fixed number of stratified resamples
        bi, bo = rng.choice(ins, ins.size), rng.choice(oods, oods.size)
        boot_t.append(recommend(list(bi), list(bo)))
        # AUC = P(in-domain top-1 > OOD top-1) + P(tie) / 2 (what roc_auc_score computes, without its overhead)
        boot_auc.append(float((bi[:, None] > bo[None, :]).mean() + 0.5 * (bi[:, None] == bo[None, :]).mean()))
    kept, rejected = int((ins >= t).sum()), int((oods < t).sum())
    recall, rejection = kept / ins.size, rejected / oods.size
    return ThresholdUncertainty(
        t, float(np.percentile(boot_t, 2.5)), float(np.percentile(boot_t, 97.5)), recall, wilson(kept, ins.size),
        rejection, wilson(rejected, oods.size), auc,
        (float(np.percentile(boot_auc, 2.5)), float(np.percentile(boot_auc, 97.5))), int(ins.size), int(oods.size),
        queries_for_width(recall), queries_for_width(rejection))


@plain_figure
def roc_figure(in_top1: Sequence[float], ood_top1: Sequence[float], u: ThresholdUncertainty):
    """The ROC curve of top-1 scores (in domain positive), with the recommended threshold marked."""
    import matplotlib.pyplot as plt
    from sklearn.metrics import roc_curve

    # queries without a result are left out, as :func:`measure` leaves them out of the AUC in the legend
    in_top1, ood_top1 = ([v for v in top1 if not math.isnan(v)] for top1 in (in_top1, ood_top1))
    fpr, tpr, _ = roc_curve([1] * len(in_top1) + [0] * len(ood_top1), list(in_top1) + list(ood_top1))
    fig, ax = plt.subplots(figsize=(5, 4.5))
    ax.plot(fpr, tpr, drawstyle="steps-post", label=f"AUC {u.auc:.3f} [{u.auc_ci[0]:.3f}, {u.auc_ci[1]:.3f}]")
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":")
    ax.scatter([1 - u.rejection], [u.recall], color="tab:red", zorder=3, label=f"threshold {u.threshold:.3f}")
    ax.set_xlabel("out-of-domain queries answered (false positive rate)")
    ax.set_ylabel("in-domain queries answered (recall)")
    ax.set_title("ROC of top-1 scores, in domain against out of domain", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def record(report: NotebookReport, u: ThresholdUncertainty) -> None:
    """Record the threshold's intervals as findings and metrics (no gate: 02's gates judge the threshold)."""
    report.finding(u.sentence())
    report.finding(f"ROC AUC of top-1 scores {u.auc:.3f} (95% interval {u.auc_ci[0]:.3f}-{u.auc_ci[1]:.3f})")
    for name, value in (("threshold_ci_low", u.threshold_low), ("threshold_ci_high", u.threshold_high),
                        ("recall_at_recommended", u.recall), ("rejection_at_recommended", u.rejection),
                        ("roc_auc", u.auc)):
        report.metric(name, value)
