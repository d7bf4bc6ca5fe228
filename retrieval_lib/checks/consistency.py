"""Consistency: does the same query always return the same ranking (seed 000 SC-004, seed 003 SC-005)?

A ranking is the list of ``(point_id, raw_score)`` pairs of a response
(:meth:`~retrieval_lib.models.SearchResponse.ranking`). Two rankings are
*identical* when they hold the same point ids in the same order and every
score differs by at most a tolerance.

Where rankings differ, overlap measures say by how much:

- Jaccard of the id sets: ``|A ∩ B| / |A ∪ B|``,
- rank-biased overlap (:func:`rbo`), which weighs the top ranks most,
- Kendall's tau on the ids both lists share (:func:`kendall_tau_shared`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from ..models import SearchResponse
from ..search import SCORE_TOLERANCE, same_ranking

__all__ = ["jaccard", "rbo", "kendall_tau_shared", "RankingComparison", "compare_rankings",
           "repeat_search", "consistency_frame", "summarise_by_query", "min_adjacent_gap"]


def jaccard(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Jaccard similarity of the id sets: ``|A ∩ B| / |A ∪ B|`` (1.0 when both are empty)."""
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def rbo(a: Sequence[Hashable], b: Sequence[Hashable], p: float = 0.9, *, extrapolate: bool = True) -> float:
    """Rank-biased overlap of two rankings (Webber, Moffat & Zobel, 2010).

    With ``X_d = |A_{1:d} ∩ B_{1:d}|`` the overlap of the first ``d`` items and
    ``k`` the length of the longer list, the truncated sum is

        RBO = (1-p) Σ_{d=1..k} p^{d-1} |A_{1:d} ∩ B_{1:d}| / d

    It is a lower bound: two identical lists of length ``k`` score only
    ``1 - p^k`` (0.41 for k=5, p=0.9). With ``extrapolate`` (the default)
    the overlap seen at depth ``k`` is assumed to continue, which adds
    ``(X_k / k) p^k`` (Webber et al., eq. 32, RBO_ext), so identical lists
    score exactly 1 and disjoint ones 0.

    Args:
        a, b: ids in rank order (duplicates are not expected).
        p: persistence, 0 < p < 1; smaller weighs the top ranks more.
        extrapolate: add the tail term (RBO_ext) rather than return the bare sum.

    Returns:
        A number in [0, 1]; 1.0 when both lists are empty.

    Raises:
        ValueError: ``p`` outside (0, 1).
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be within (0, 1), got {p}")
    k = max(len(a), len(b))
    if k == 0:
        return 1.0
    seen_a: set[Hashable] = set()
    seen_b: set[Hashable] = set()
    overlap = 0
    total = 0.0
    for d in range(1, k + 1):
        x = a[d - 1] if d <= len(a) else None
        y = b[d - 1] if d <= len(b) else None
        if x is not None and y is not None and x == y:
            overlap += 1
        else:
            if x is not None:
                overlap += x in seen_b
            if y is not None:
                overlap += y in seen_a
        if x is not None:
            seen_a.add(x)
        if y is not None:
            seen_b.add(y)
        total += p ** (d - 1) * overlap / d
    value = (1 - p) * total
    if extrapolate:
        value += (overlap / k) * p ** k
    return min(1.0, max(0.0, value))


def kendall_tau_shared(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Kendall's tau between the ranks two lists give to the ids they share.

    Uses ``scipy.stats.kendalltau`` on (rank in a, rank in b) of the shared
    ids. 1.0 = same relative order, -1.0 = reversed. NaN when fewer than two
    ids are shared (no pair to order).
    """
    from scipy.stats import kendalltau

    rank_b = {x: i for i, x in enumerate(b)}
    shared = [x for x in a if x in rank_b]
    if len(shared) < 2:
        return math.nan
    ranks_a = list(range(len(shared)))  # shared ids in a's order
    ranks_b = [rank_b[x] for x in shared]
    return float(kendalltau(ranks_a, ranks_b).statistic)


@dataclass(frozen=True)
class RankingComparison:
    """One response compared with a reference response to the same query.

    Attributes:
        same_ids: the same set of point ids.
        same_order: the same ids in the same order.
        max_score_diff: largest ``|score_ref - score_other|`` over shared ids (0.0 when none are shared).
        jaccard, rbo, kendall_tau: overlap measures (see the module functions).
        identical: ``same_order`` and ``max_score_diff <= tolerance``.
    """

    same_ids: bool
    same_order: bool
    max_score_diff: float
    jaccard: float
    rbo: float
    kendall_tau: float
    identical: bool


def compare_rankings(reference: SearchResponse, other: SearchResponse, *, tolerance: float = SCORE_TOLERANCE,
                     p: float = 0.9) -> RankingComparison:
    """Compare ``other`` with ``reference`` (ids, order, scores and overlap).

    Scores are compared per point id (raw scores), so a swap of two results
    shows up in ``same_order`` and the overlap measures, not as a score jump.
    """
    ref, oth = reference.ranking(), other.ranking()
    ids_ref, ids_oth = [i for i, _ in ref], [i for i, _ in oth]
    score_oth = dict(oth)
    diffs = [abs(s - score_oth[i]) for i, s in ref if i in score_oth]
    max_diff = max(diffs, default=0.0)
    same_order = ids_ref == ids_oth
    return RankingComparison(
        same_ids=set(ids_ref) == set(ids_oth), same_order=same_order, max_score_diff=max_diff,
        jaccard=jaccard(ids_ref, ids_oth), rbo=rbo(ids_ref, ids_oth, p), kendall_tau=kendall_tau_shared(ids_ref, ids_oth),
        identical=same_ranking(ref, oth, score_tol=tolerance),
    )


def min_adjacent_gap(response: SearchResponse) -> float:
    """Smallest score difference between neighbouring ranks: how close the ranking is to a swap.

    ``min_{i} (score_i - score_{i+1})`` over the raw scores in rank order. A
    ranking is robust to numerical noise of size ``e`` when this gap is much
    larger than ``e``; a gap of 0 is an exact tie (broken by point id).
    ``inf`` when there are fewer than two results.
    """
    scores = [s for _, s in response.ranking()]
    return min((a - b for a, b in zip(scores, scores[1:])), default=math.inf)


def repeat_search(retriever, queries: Sequence[str], repeats: int, top_k: int) -> dict[str, list[SearchResponse]]:
    """Run each query ``repeats`` times, one :meth:`Retriever.search` call each.

    Returns:
        query text to its responses, in run order.

    Raises:
        ValueError: ``repeats`` below 1. Anything :meth:`Retriever.search` raises.
    """
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    return {q: [retriever.search(q, top_k=top_k) for _ in range(repeats)] for q in queries}


def consistency_frame(reference: Mapping[str, SearchResponse],
                      runs: Mapping[str, Mapping[str, Sequence[SearchResponse]]], *,
                      tolerance: float = SCORE_TOLERANCE, p: float = 0.9, decimals: int = 6):
    """One row per (query, phase, run): each run compared with the query's reference response.

    Args:
        reference: query to its reference response (normally the first repeat).
        runs: phase name (e.g. ``"repeat"``, ``"fresh client"``, ``"search_many"``)
            to query to that phase's responses.
        tolerance: largest score difference still "identical".
        p: RBO persistence.
        decimals: rounding of ``max_score_diff`` (the overlap measures use 4).

    Returns:
        A DataFrame with columns ``query, phase, run, identical, same_order,
        max_score_diff, jaccard, rbo, kendall_tau``.
    """
    import pandas as pd

    rows = []
    for phase, by_query in runs.items():
        for query, responses in by_query.items():
            for i, response in enumerate(responses, 1):
                c = compare_rankings(reference[query], response, tolerance=tolerance, p=p)
                rows.append({"query": query, "phase": phase, "run": i, "identical": c.identical,
                             "same_order": c.same_order, "max_score_diff": round(c.max_score_diff, decimals),
                             "jaccard": round(c.jaccard, 4), "rbo": round(c.rbo, 4),
                             "kendall_tau": round(c.kendall_tau, 4)})
    return pd.DataFrame(rows, columns=["query", "phase", "run", "identical", "same_order", "max_score_diff",
                                       "jaccard", "rbo", "kendall_tau"])


def summarise_by_query(frame, *, phases: Sequence[str] | None = None):
    """Collapse :func:`consistency_frame` to one row per query (queries in first-seen order).

    Columns: ``query``, ``runs`` (comparisons + 1 for the reference), one
    ``identical: <phase>`` column per phase (all of that phase's runs identical),
    ``identical`` (every run of every phase), ``max_score_diff``, and the minimum
    ``jaccard``, ``rbo`` and ``kendall_tau`` over all runs.
    """
    import pandas as pd

    phases = list(phases) if phases is not None else list(dict.fromkeys(frame["phase"]))
    rows = []
    for query, group in frame.groupby("query", sort=False):
        row: dict[str, object] = {"query": query, "runs": len(group) + 1}
        for phase in phases:
            part = group[group["phase"] == phase]
            row[f"identical: {phase}"] = bool(part["identical"].all()) if len(part) else None
        row.update({"identical": bool(group["identical"].all()), "max_score_diff": group["max_score_diff"].max(),
                    "min_jaccard": group["jaccard"].min(), "min_rbo": group["rbo"].min(),
                    "min_kendall_tau": group["kendall_tau"].min()})
        rows.append(row)
    return pd.DataFrame(rows)
