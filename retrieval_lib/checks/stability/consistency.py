"""Consistency: does the same query always return the same ranking (seed 000 SC-004, seed 003 SC-005)?

A ranking is the list of ``(point_id, raw_score)`` pairs of a response
(:meth:`~retrieval_lib.models.SearchResponse.ranking`). Two rankings are
*identical* when they hold the same point ids in the same order and every
score differs by at most a tolerance.

Where rankings differ, overlap measures say by how much:

- Jaccard of the id sets: ``|A ∩ B| / |A ∪ B|``,
- rank-biased overlap (:func:`rbo`), which weighs the top ranks most,
- Kendall's tau on the ids both lists share (:func:`kendall_tau_shared`).

The same questions asked in other languages are compared with their English originals by :mod:`._languages`.

:func:`run` is the check (notebook 04 and ``check consistency``): it runs the phases (repeats, a fresh client, a
batch) and the other languages; its :class:`Consistency` lines them up (:func:`phase_runs`), compares them
(:func:`consistency_frame`) and records the gates, figures and tables.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.gates import CONSISTENCY_PHASE, CONSISTENCY_PHASES
from retrieval_lib.checks.stability._languages import (
    LanguageComparison,
    compare_languages,
    jaccard,
    load_language_queries,
    overlap_figure,
)
from retrieval_lib.errors import ValidationError
from retrieval_lib.models import SearchResponse
from retrieval_lib.search import SCORE_TOLERANCE, same_ranking
from retrieval_lib.validation import whole_number
from retrieval_lib.workbook.plots import plain_figure
from retrieval_lib.workbook.report import NotebookReport
from retrieval_lib.workbook.runfiles import write_run

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookRun

__all__ = ["run", "Consistency", "jaccard", "rbo", "load_language_queries"]


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
        ValidationError: ``p`` outside (0, 1).
    """
    if not 0.0 < p < 1.0:
        raise ValidationError(f"p must be within (0, 1), got {p}", field="p")
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
    """One response compared with a reference response to the same query: ``max_score_diff`` is the largest
    ``|score_ref - score_other|`` over shared ids (0.0 when none are shared); ``identical``: ``same_order`` and
    every score within the tolerance."""

    same_order: bool
    max_score_diff: float
    jaccard: float
    rbo: float
    kendall_tau: float
    identical: bool


def compare_rankings(reference: SearchResponse, other: SearchResponse, *,
                     tolerance: float = SCORE_TOLERANCE) -> RankingComparison:
    """Compare ``other`` with ``reference`` (ids, order, scores and overlap; RBO at p = 0.9).

    Scores are compared per point id (raw scores), so a swap of two results
    shows up in ``same_order`` and the overlap measures, not as a score jump.
    """
    ref, oth = reference.ranking(), other.ranking()
    ids_ref, ids_oth = [i for i, _ in ref], [i for i, _ in oth]
    score_oth = dict(oth)
    diffs = [abs(s - score_oth[i]) for i, s in ref if i in score_oth]
    return RankingComparison(
        same_order=ids_ref == ids_oth, max_score_diff=max(diffs, default=0.0), jaccard=jaccard(ids_ref, ids_oth),
        rbo=rbo(ids_ref, ids_oth), kendall_tau=kendall_tau_shared(ids_ref, ids_oth),
        identical=same_ranking(ref, oth, score_tol=tolerance))


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
    """Run each query ``repeats`` times, one :meth:`Retriever.search` call each: query text to its responses, in run
    order.

    Raises:
        ValidationError: ``repeats`` below 1. Anything :meth:`Retriever.search` raises.
    """
    whole_number(repeats, "repeats", low=1)
    return {q: [retriever.search(q, top_k=top_k) for _ in range(repeats)] for q in queries}


def phase_runs(repeated: Mapping[str, Sequence[SearchResponse]], *,
               fresh: Mapping[str, Sequence[SearchResponse]] | None = None,
               batched: Sequence[SearchResponse] | None = None,
               ) -> tuple[dict[str, SearchResponse], dict[str, dict[str, list[SearchResponse]]]]:
    """Line up the runs, ``(reference, phases)`` for :func:`consistency_frame`: each query's first repeat is its
    reference; every other run is compared with it. Phase ``"repeat"``: runs 2..n of ``repeated``
    (:func:`repeat_search` through one retriever); ``"fresh client"``: ``fresh``, through a newly opened retriever;
    ``"search_many"``: ``batched``, one ``search_many`` pass over the same queries, in ``repeated``'s order.
    """
    reference = {q: runs[0] for q, runs in repeated.items()}
    phases = {"repeat": {q: list(runs[1:]) for q, runs in repeated.items()}}
    if fresh is not None:
        phases["fresh client"] = {q: list(runs) for q, runs in fresh.items()}
    if batched is not None:
        phases["search_many"] = {q: [r] for q, r in zip(repeated, batched)}
    return reference, phases


def consistency_frame(reference: Mapping[str, SearchResponse],
                      runs: Mapping[str, Mapping[str, Sequence[SearchResponse]]], *,
                      tolerance: float = SCORE_TOLERANCE):
    """One row per (query, phase, run): each run of ``runs`` (phase -> query -> responses) compared with the query's
    ``reference`` response, ``max_score_diff`` rounded to 6 places and the overlap measures to 4.
    """
    import pandas as pd

    rows = []
    for phase, by_query in runs.items():
        for query, responses in by_query.items():
            for i, response in enumerate(responses, 1):
                c = compare_rankings(reference[query], response, tolerance=tolerance)
                rows.append({"query": query, "phase": phase, "run": i, "identical": c.identical,
                             "same_order": c.same_order, "max_score_diff": round(c.max_score_diff, 6),
                             "jaccard": round(c.jaccard, 4), "rbo": round(c.rbo, 4),
                             "kendall_tau": round(c.kendall_tau, 4)})
    return pd.DataFrame(rows, columns=["query", "phase", "run", "identical", "same_order", "max_score_diff",
                                       "jaccard", "rbo", "kendall_tau"])


def summarise_by_query(frame, phases: Sequence[str], reference: Mapping[str, SearchResponse]):
    """Collapse :func:`consistency_frame` to one row per query (queries in first-seen order).

    Columns: ``query``, ``runs`` (comparisons + 1 for the reference), one
    ``identical: <phase>`` column per phase (all of that phase's runs identical),
    ``identical`` (every run of every phase), ``max_score_diff``, the minimum
    ``jaccard``, ``rbo`` and ``kendall_tau`` over all runs, and ``min_adjacent_gap``
    of each query's reference response (how close it is to a swap), rounded to 5 places.
    """
    import pandas as pd

    rows = []
    for query, group in frame.groupby("query", sort=False):
        row: dict[str, object] = {"query": query, "runs": len(group) + 1}
        for phase in phases:
            part = group[group["phase"] == phase]
            row[f"identical: {phase}"] = bool(part["identical"].all()) if len(part) else None
        row.update({"identical": bool(group["identical"].all()), "max_score_diff": group["max_score_diff"].max(),
                    "min_jaccard": group["jaccard"].min(), "min_rbo": group["rbo"].min(),
                    "min_kendall_tau": group["kendall_tau"].min()})
        row["min_adjacent_gap"] = round(min_adjacent_gap(reference[str(query)]), 5)
        rows.append(row)
    return pd.DataFrame(rows)


def exact_score_diffs(reference: Mapping[str, SearchResponse],
                      phases: Mapping[str, Mapping[str, Sequence[SearchResponse]]]) -> dict[str, float]:
    """Per phase, the unrounded largest ``max_score_diff`` against the reference (last bits: they vary by run)."""
    return {phase: max((compare_rankings(reference[q], r).max_score_diff for q, runs in by_query.items() for r in runs),
                       default=0.0)
            for phase, by_query in phases.items()}


@plain_figure
def rbo_figure(frame, queries: Sequence[str], *, tolerance: float = SCORE_TOLERANCE):
    """Queries x runs: RBO against the reference, ``"="`` where the run is identical."""
    from retrieval_lib.workbook.plots import annotated_heatmap

    # repeat runs 2..n were compared with run 1; the other phases ran once
    labels = [f"repeat {run + 1}" if phase == "repeat" else phase for phase, run in zip(frame["phase"], frame["run"])]
    # as floats, so a query without a run in some column is NaN (an empty cell), never "identical"
    matrix = frame.assign(column=labels, identical=frame["identical"].astype(float))
    columns = list(dict.fromkeys(labels))
    rbo_values = matrix.pivot(index="query", columns="column", values="rbo").reindex(index=queries, columns=columns)
    same = matrix.pivot(index="query", columns="column", values="identical").reindex(index=queries, columns=columns)
    texts = [["=" if same.iat[i, j] == 1.0 else ("" if math.isnan(rbo_values.iat[i, j]) else
                                                 f"{rbo_values.iat[i, j]:.2f}") for j in range(len(columns))]
             for i in range(len(queries))]
    return annotated_heatmap(rbo_values.to_numpy(dtype=float), list(queries), columns, texts=texts,
                             title=f"RBO of each run against the first (\"=\": identical ids, order and scores "
                                   f"within {tolerance:g})", colorbar_label="rank-biased overlap (p = 0.9)")


# --------------------------------------------------------------------------- notebook 04
def run(ctx: NotebookRun, *, consistency_queries: Sequence[str], repeats: int, top_k: int, score_tolerance: float,
        language_queries: str, min_cross_lingual_jaccard: float | None) -> Consistency:
    """Notebook 04's check: each query ``repeats`` times through one client, once through a fresh client, once in
    a ``search_many`` pass; then ``language_queries``' questions in other languages against their English ones.

    The questions go to ``ctx.retriever`` (the team's retriever when the profile names one, and then the language
    part names it as what was measured). Between the phases the run's store is closed (an embedded store's folder
    cannot be opened twice in one process), so the next use of ``ctx.retriever`` opens a new client.
    """
    queries = list(consistency_queries)
    repeated = repeat_search(ctx.retriever, queries, repeats, top_k)
    batched = ctx.retriever.search_many(queries, top_k=top_k)
    ctx.close()
    fresh = repeat_search(ctx.retriever, queries, 1, top_k)
    reference, phases = phase_runs(repeated, fresh=fresh, batched=batched)
    # what answered the questions: the team's retriever, or the collection searched with the configured model
    measured = ctx.asker.describe() if ctx.retriever_spec.kind != "collection" else ctx.retriever.embedder.model
    cross = compare_languages(ctx.retriever, load_language_queries(language_queries), top_k=top_k, model=measured)
    return Consistency(queries, repeats, top_k, score_tolerance, reference, phases, cross,
                       min_cross_lingual_jaccard=min_cross_lingual_jaccard)


@dataclass
class Consistency:
    """Notebook 04's result: every run against its query's first run, and the other languages against English.

    ``languages`` None: no language part (nothing recorded for it).
    """

    queries: list[str]
    repeats: int
    top_k: int
    tolerance: float
    reference: dict[str, SearchResponse]
    phases: dict[str, dict[str, list[SearchResponse]]]
    languages: LanguageComparison | None = None
    min_cross_lingual_jaccard: float | None = None
    detail: Any = field(init=False, repr=False)
    per_query: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.detail = consistency_frame(self.reference, self.phases, tolerance=self.tolerance)
        self.per_query = summarise_by_query(self.detail, list(self.phases), self.reference)

    @property
    def failures(self) -> dict[str, list[str]]:
        """Phase to the queries (sorted) with a run not identical to their first run."""
        return {phase: sorted(set(part.loc[~part["identical"], "query"]))
                for phase, part in self.detail.groupby("phase", sort=False)}

    def __str__(self) -> str:
        fresh = self.phases.get("fresh client", {})
        lines = [f"{len(self.queries)} queries x {self.repeats} repeats + 1 search_many pass, top {self.top_k}",
                 f"fresh client: {len(fresh)} queries re-run",
                 f"{int((~self.detail['identical']).sum())} of {len(self.detail)} runs differ from their query's "
                 "first run"]
        if self.languages is not None:
            lines.append(f"chance Jaccard@{self.top_k} between different English questions: "
                         f"{self.languages.chance_jaccard:.3f}")
        return "\n".join(lines)

    def score_noise(self) -> str:
        """The exact largest score difference per phase (last bits of floating point: they vary between runs)."""
        return "\n".join(f"{phase:>13}: max |score difference| = {diff:.3g} (tolerance {self.tolerance:g})"
                         for phase, diff in exact_score_diffs(self.reference, self.phases).items())

    def tables(self) -> dict[str, Any]:
        """``first_runs`` (each query's first answer), ``comparisons`` (every run), ``per_query``, ``differing``
        (the runs not identical), and with languages ``languages`` (per question) and ``language_summary``."""
        from retrieval_lib.workbook.frames import results_frame

        out = {"first_runs": results_frame(list(self.reference.values())), "comparisons": self.detail,
               "per_query": self.per_query, "differing": self.detail[~self.detail["identical"]]}
        if self.languages is not None:
            out |= {"languages": self.languages.pairs(), "language_summary": self.languages.summary()}
        return out

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """The tables, the RBO matrix and the languages' figure; one gate per phase (every run of the phase
        identical to its query's first run: the standard phases' gates are
        :data:`~retrieval_lib.checks.gates.CONSISTENCY_PHASES`, another phase's is ``"identical: <phase>"``) and
        the languages' gate (when ``min_cross_lingual_jaccard`` is set), findings and metrics; the run file a
        comparison reads."""
        frame, per_query, tolerance, repeats = self.detail, self.per_query, self.tolerance, self.repeats
        report.table(frame, "comparisons")
        report.table(per_query, "per_query")
        report.figure(rbo_figure(frame, self.queries, tolerance=tolerance), "rbo_matrix", show=show)
        if self.languages is not None:
            report.table(self.languages.pairs(), "languages")
            report.figure(overlap_figure(self.languages), "languages", show=show)
        for phase, bad in self.failures.items():
            part = frame[frame["phase"] == phase]
            standard = CONSISTENCY_PHASES.get(phase)
            gate, item = (standard, None) if standard else (CONSISTENCY_PHASE, phase)
            gate.record(
                report, not bad, fill={"repeats": repeats, "phase": phase}, item=item, value=len(bad), threshold=0,
                rule="==", unit="queries",
                hint=f"compare the listed queries' runs in the comparisons table; raise `score_tolerance` "
                     f"({tolerance:g}) only if they differ by float noise, not in ids or order",
                detail=(f"{len(part)} runs of {part['query'].nunique()} queries: ids, order and scores within "
                        f"{tolerance:g} of the first run" if not bad else "differs: " + ", ".join(map(repr, bad))))
        identical, queries = int(frame["identical"].sum()), frame["query"].nunique()
        report.finding(f"{identical} of {len(frame)} runs identical to their query's first run "
                       f"({queries} queries, {repeats} repeats, a fresh client, one search_many pass)")
        report.finding(f"largest score difference (rounded to 6 places): {frame['max_score_diff'].max():.6f}; "
                       f"minimum RBO {frame['rbo'].min():.2f}, minimum Jaccard {frame['jaccard'].min():.2f}")
        closest = per_query.loc[per_query["min_adjacent_gap"].idxmin()]
        # judged on the gap as shown (rounded): the finding quotes that number
        margin = closest["min_adjacent_gap"] / tolerance if tolerance else math.inf
        report.finding(f"closest neighbouring scores in any ranking differ by {closest['min_adjacent_gap']:.5f} "
                       f"({closest['query']!r}), {margin:,.0f} x score_tolerance: "
                       + ("score noise within the tolerance cannot reorder these lists" if margin > 1
                          else "noise within the tolerance could reorder this list"))
        for name, value in (("queries", queries), ("runs_compared", len(frame)), ("identical_runs", identical),
                            ("max_score_diff", float(frame["max_score_diff"].max())),
                            ("min_rbo", float(frame["rbo"].min())), ("min_jaccard", float(frame["jaccard"].min())),
                            ("min_adjacent_gap", float(per_query["min_adjacent_gap"].min()))):
            report.metric(name, value)
        if self.reference:  # the run file a later comparison reads (workbook.runfiles)
            write_run(report, list(self.reference.values()), kinds="consistency",
                      top_k=max(r.top_k for r in self.reference.values()))
        if self.languages is not None:
            self.languages.record(report, min_cross_lingual_jaccard=self.min_cross_lingual_jaccard)
