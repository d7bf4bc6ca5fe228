"""Query: does a question bring back the right chunks, ranked, with full metadata?

Seed 000 US1 asks for the most relevant chunks with their scores, highest
first; US2 for ``top_k`` and ``similarity_threshold`` to be honoured; US4 /
FR-007 for every payload field (:data:`~retrieval_lib.models.PAYLOAD_FIELDS`)
and the full text; and the edge case "no semantic match above the threshold"
for an empty result with a warning, never an error.

A team's retriever that returns no score has rank stand-ins for scores
(:func:`~retrieval_lib.retrievers.as_search.rank_stand_in`): the order and
no-match gates read scores and are then not applicable; the limits gate judges
the count alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.gates import QUERY_LIMITS, QUERY_METADATA, QUERY_NO_MATCH, QUERY_ORDERED
from retrieval_lib.errors import ValidationError
from retrieval_lib.models import PAYLOAD_FIELDS, SearchResponse, SearchResult
from retrieval_lib.retrievers.as_search import rank_stand_in
from retrieval_lib.validation import validate_params
from retrieval_lib.workbook.frames import results_frame

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "QueryAnswers"]


def run(ctx: NotebookRun, *, queries: Sequence[str], top_k: int, similarity_threshold: float,
        source_prefix: str | None, section: str | None, no_match_threshold: float) -> QueryAnswers:
    """Notebook 01's check: ask ``queries`` of ``ctx.retriever`` with ``top_k``, ``similarity_threshold`` and the
    filters, and the first of them again with the unreachable ``no_match_threshold`` (no filter).

    Raises:
        ValidationError: no query, or a query or a parameter the search refuses.
    """
    if not queries:
        raise ValidationError("queries is empty: give at least one question (params/demo.yaml, 'queries')",
                              field="queries")
    responses = ctx.retriever.search_many(list(queries), top_k=top_k, similarity_threshold=similarity_threshold,
                                          source_prefix=source_prefix, section=section)
    no_match = ctx.retriever.search(queries[0], top_k=top_k, similarity_threshold=no_match_threshold)
    return QueryAnswers(responses, no_match, top_k=top_k, similarity_threshold=similarity_threshold)


@dataclass
class QueryAnswers:
    """Notebook 01's result: each query's answer, the no-match answer, and what was asked for.

    Attributes:
        responses: the queries' answers, searched with ``top_k`` and ``similarity_threshold``.
        no_match: the first query searched with an unreachable threshold (must be empty, with a warning).
    """

    responses: list[SearchResponse]
    no_match: SearchResponse
    top_k: int
    similarity_threshold: float

    @property
    def top(self) -> SearchResult | None:
        """The best result of the first query that has one (None when no query found anything)."""
        return next((r.results[0] for r in self.responses if r.results), None)

    def __str__(self) -> str:
        found = sum(r.total_results for r in self.responses)
        return (f"{len(self.responses)} queries, top {self.top_k}, threshold {self.similarity_threshold:g}: "
                f"{found} results\nno-match threshold {self.no_match.similarity_threshold:g}: "
                f"{self.no_match.total_results} results; warnings: {self.no_match.warnings}")

    def tables(self) -> dict[str, Any]:
        """``results``: one row per result with every payload field, its scores and the search's timings."""
        return {"results": results_frame(self.responses, columns=None)}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """Record the results table, the four gates, a finding per query and the metrics on ``report``.

        Raises:
            ValidationError: ``top_k`` or ``similarity_threshold`` out of range.
        """
        responses, no_match, top_k, similarity_threshold = (self.responses, self.no_match, self.top_k,
                                                            self.similarity_threshold)
        # the served top_k is the requested one capped at MAX_TOP_K, by the validation the search applies
        served, threshold, _ = validate_params(top_k, similarity_threshold)
        report.table(self.tables()["results"], "results")
        results = [res for r in responses for res in r.results]
        unscored = rank_stand_in([*responses, no_match])  # rank stand-ins: nothing here reads them as scores
        unordered = [r.query_text for r in responses
                     if any(a.raw_score < b.raw_score for a, b in zip(r.results, r.results[1:]))]
        missing = sorted({f for res in results for f in res.missing_fields})
        beyond = [r.query_text for r in responses if r.total_results > served
                  or (not unscored and any(res.similarity_score < threshold for res in r.results))]
        if unscored:
            QUERY_ORDERED.not_applicable(report, f"{unscored}; the order is the retriever's own, no score to read it "
                                                 "by")
        else:
            QUERY_ORDERED.record(report, not unordered,
                                 detail="not ordered: " + ", ".join(map(repr, unordered)) if unordered
                                 else "every query's list is non-increasing")
        # a field no result carries and none misses is one the collection never holds (its payload roles)
        seen = {f for res in results for f in PAYLOAD_FIELDS if getattr(res, f) not in (None, "")} | set(missing)
        unheld = [f for f in PAYLOAD_FIELDS if f not in seen]
        present = (f"all {len(PAYLOAD_FIELDS)} payload fields present" if not unheld else
                   f"all {len(PAYLOAD_FIELDS) - len(unheld)} fields this collection holds present (it holds no "
                   f"{', '.join(unheld)})")
        QUERY_METADATA.record(report, not missing, value=missing or None,
                              detail="missing: " + ", ".join(missing) if missing else present)
        QUERY_LIMITS.record(report, not beyond, rule="<=", unit="results",
                            value=max((r.total_results for r in responses), default=0), threshold=top_k,
                            hint="the search returned more than top_k results or a score below the threshold: a bug "
                                 "in retrieval_lib.search, not a setting",
                            detail=f"at most {served} results per query"
                                   + (f" (the threshold not judged: {unscored})" if unscored else
                                      f", every score >= {similarity_threshold:g}")
                                   + (f"; broken by: {', '.join(map(repr, beyond))}" if beyond else ""))
        if unscored:
            QUERY_NO_MATCH.not_applicable(report, f"{unscored}; a threshold has no score to hold the results to "
                                                  f"({no_match.total_results} results at threshold "
                                                  f"{no_match.similarity_threshold:g})")
        else:
            QUERY_NO_MATCH.record(report, no_match.is_empty and bool(no_match.warnings),
                                  value=no_match.total_results, threshold=no_match.similarity_threshold,
                                  detail=f"{no_match.total_results} results, warning: " + "; ".join(no_match.warnings))
        for r in responses:
            if r.results:
                best = r.results[0]
                where = f" § {best.section_title!r}" if best.section_title else ""
                report.finding(f"{r.query_text!r}: top hit {best.source_file or best.source_url}{where} "
                               + ("(no score: ranks only)" if unscored else f"(score {best.similarity_score:.2f})")
                               + f"; {r.total_results} result{'' if r.total_results == 1 else 's'}")
            else:
                report.finding(f"{r.query_text!r}: no result above {similarity_threshold}")
        top1 = [r.results[0].similarity_score for r in responses if r.results]
        report.metric("queries", len(responses))
        report.metric("mean_top1_score", None if unscored else sum(top1) / max(1, len(top1)))
