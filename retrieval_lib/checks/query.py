"""Query: does a question bring back the right chunks, ranked, with full metadata?

Seed 000 US1 asks for the most relevant chunks with their scores, highest
first; US2 for ``top_k`` and ``similarity_threshold`` to be honoured; US4 /
FR-007 for every payload field (:data:`~retrieval_lib.models.PAYLOAD_FIELDS`)
and the full text; and the edge case "no semantic match above the threshold"
for an empty result with a warning, never an error. :func:`record` judges a
notebook's responses against those rules.
"""

from __future__ import annotations

from collections.abc import Sequence

from retrieval_lib.checks.gates import QUERY_LIMITS, QUERY_METADATA, QUERY_NO_MATCH, QUERY_ORDERED
from retrieval_lib.models import PAYLOAD_FIELDS, SearchResponse
from retrieval_lib.validation import validate_params
from retrieval_lib.workbook.report import NotebookReport

__all__ = ["missing_fields", "out_of_order", "over_limits", "record"]


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


def record(report: NotebookReport, responses: Sequence[SearchResponse], no_match: SearchResponse, *, top_k: int,
           similarity_threshold: float) -> None:
    """Record notebook 01's gates, findings and metrics on ``report`` (a NotebookReport).

    Args:
        responses: the notebook's queries, searched with ``top_k`` and ``similarity_threshold``.
        no_match: a query searched with an unreachable threshold (must be empty, with a warning).
        top_k, similarity_threshold: what was asked for.

    Raises:
        ValidationError: ``top_k`` or ``similarity_threshold`` out of range.
    """
    served = validate_params(top_k, similarity_threshold)[0]
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
