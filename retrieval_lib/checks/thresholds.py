"""How sure is the recommended similarity threshold? Intervals from the queries we have (notebook 02).

- the recommended threshold (:func:`retrieval_lib.checks.scores.recommend_threshold`: the middle of the gap
  between in-domain and out-of-domain top-1 scores; where they overlap, the threshold maximising Youden's
  J = TPR - FPR of scikit-learn's ``roc_curve``) and its 95% interval from a stratified bootstrap (each set
  resampled with replacement, the recommendation recomputed);
- in-domain recall (share of in-domain queries keeping a result) and out-of-domain rejection (share of OOD
  queries losing every result) at that threshold, each with a Wilson 95% interval (``scipy.stats.binomtest``);
- the ROC curve and AUC of top-1 scores (in domain = positive), AUC with a bootstrap interval;
- how many queries would bring the Wilson interval to +-``target`` (default 0.05).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval_lib.checks.scores import recommend_threshold
from retrieval_lib.errors import ValidationError
from retrieval_lib.workbook.plots import plain_figure
from retrieval_lib.workbook.report import NotebookReport

__all__ = ["ThresholdUncertainty", "recommend", "wilson", "queries_for_width", "measure", "roc_figure", "record"]


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
        ValidationError: either set empty (or only NaN top-1 scores).
    """
    import numpy as np
    from sklearn.metrics import roc_auc_score

    ins = np.array([s for s in in_top1 if not math.isnan(s)], dtype=float)
    oods = np.array([s for s in ood_top1 if not math.isnan(s)], dtype=float)
    if ins.size == 0 or oods.size == 0:
        raise ValidationError("thresholds need in-domain and out-of-domain top-1 scores", field="query_sets")
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
