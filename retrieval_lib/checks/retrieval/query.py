"""Query: does a question bring back the right chunks, ranked, with full metadata?

Seed 000 US1 asks for the most relevant chunks with their scores, highest
first; US2 for ``top_k`` and ``similarity_threshold`` to be honoured; US4 /
FR-007 for every payload field (:data:`~retrieval_lib.models.PAYLOAD_FIELDS`)
and the full text; and the edge case "no semantic match above the threshold"
for an empty result with a warning, never an error.

:func:`run` is the check (notebook 01 and ``check query``): it asks the questions of ``ctx.retriever`` (the team's
retriever when the profile names one); its :class:`QueryAnswers` judges the answers against those rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.gates import QUERY_LIMITS, QUERY_METADATA, QUERY_NO_MATCH, QUERY_ORDERED
from retrieval_lib.errors import ValidationError
from retrieval_lib.models import PAYLOAD_FIELDS, SearchResponse, SearchResult
from retrieval_lib.validation import validate_params
from retrieval_lib.workbook.frames import results_frame

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "QueryAnswers", "missing_fields", "out_of_order", "over_limits"]

#: The gates this check records.
GATES = (QUERY_ORDERED, QUERY_METADATA, QUERY_LIMITS, QUERY_NO_MATCH)


def missing_fields(responses: Sequence[SearchResponse]) -> list[str]:
    """Payload fields that some result lacks (sorted; empty when every result carries all of them)."""
    return sorted({f for r in responses for res in r.results for f in res.missing_fields})


def out_of_order(responses: Sequence[SearchResponse]) -> list[str]:
    """Queries whose results are not ranked by ``raw_score``, highest first."""
    return [r.query_text for r in responses
            if any(a.raw_score < b.raw_score for a, b in zip(r.results, r.results[1:]))]


def over_limits(responses: Sequence[SearchResponse], top_k: int, similarity_threshold: float) -> list[str]:
    """Queries with more results than the served ``top_k``, or a result scored below the threshold.

    The served ``top_k`` is the requested one capped at :data:`~retrieval_lib.validation.MAX_TOP_K`, by
    the same :func:`~retrieval_lib.validation.validate_params` the search applies.

    Raises:
        ValidationError: ``top_k`` or ``similarity_threshold`` out of range.
    """
    served, threshold, _ = validate_params(top_k, similarity_threshold)
    return [r.query_text for r in responses
            if r.total_results > served or any(res.similarity_score < threshold for res in r.results)]


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
        _record(report, self.responses, self.no_match, top_k=self.top_k,
                similarity_threshold=self.similarity_threshold)


def _record(report: NotebookReport, responses: Sequence[SearchResponse], no_match: SearchResponse, *, top_k: int,
            similarity_threshold: float) -> None:
    """Notebook 01's table, gates, findings and metrics (:meth:`QueryAnswers.record`).

    Raises:
        ValidationError: ``top_k`` or ``similarity_threshold`` out of range.
    """
    served = validate_params(top_k, similarity_threshold)[0]
    report.table(results_frame(responses, columns=None), "results")
    unordered, missing = out_of_order(responses), missing_fields(responses)
    beyond = over_limits(responses, top_k, similarity_threshold)
    QUERY_ORDERED.record(report, not unordered,
                         detail="not ordered: " + ", ".join(map(repr, unordered)) if unordered
                         else "every query's list is non-increasing")
    # a field no result carries and none misses is one the collection never holds (its payload roles)
    seen = {f for resp in responses for r in resp.results for f in PAYLOAD_FIELDS if getattr(r, f) not in (None, "")}
    seen |= {f for resp in responses for r in resp.results for f in r.missing_fields}
    unheld = [f for f in PAYLOAD_FIELDS if f not in seen]
    present = (f"all {len(PAYLOAD_FIELDS)} payload fields present" if not unheld else
               f"all {len(PAYLOAD_FIELDS) - len(unheld)} fields this collection holds present (it holds no "
               f"{', '.join(unheld)})")
    QUERY_METADATA.record(report, not missing, value=missing or None,
                          detail="missing: " + ", ".join(missing) if missing else present)
    QUERY_LIMITS.record(report, not beyond, rule="<=", unit="results",
                        value=max((r.total_results for r in responses), default=0), threshold=top_k,
                        hint="the search returned more than top_k results or a score below the threshold: a bug in "
                             "retrieval_lib.search, not a setting",
                        detail=f"at most {served} results per query, every score >= {similarity_threshold:g}"
                               + (f"; broken by: {', '.join(map(repr, beyond))}" if beyond else ""))
    QUERY_NO_MATCH.record(report, no_match.is_empty and bool(no_match.warnings),
                          value=no_match.total_results, threshold=no_match.similarity_threshold,
                          detail=f"{no_match.total_results} results, warning: " + "; ".join(no_match.warnings))
    for r in responses:
        if r.results:
            best = r.results[0]
            report.finding(f"{r.query_text!r}: top hit {best.source_file} § {best.section_title!r} "
                           f"(score {best.similarity_score:.2f}); {r.total_results} results")
        else:
            report.finding(f"{r.query_text!r}: no result above {similarity_threshold}")
    top1 = [r.results[0].similarity_score for r in responses if r.results]
    report.metric("queries", len(responses))
    report.metric("mean_top1_score", sum(top1) / max(1, len(top1)))
