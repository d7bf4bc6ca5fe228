"""Search responses built by hand, for tests of the checks' ``record`` functions.

A real search cannot give some answers a check must judge (results out of order,
more results than asked, a field missing from one result), so these build them
directly: :func:`hit` is one result with a full payload (as ingest writes it),
:func:`answer` one response.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from corpus import make_payload

from retrieval_lib.models import SearchResponse, SearchResult

__all__ = ["hit", "answer"]

_STAMP = datetime(2025, 1, 15, 10, 0, tzinfo=UTC)


def hit(score: float, source_file: str = "module-01-ros2/01-ros2-overview.md", *, point_id: str | None = None,
        section: str = "Overview", source_url: str | None = None, drop: Sequence[str] = ()) -> SearchResult:
    """One result scored ``score`` (raw cosine), from ``source_file``; ``drop`` leaves payload fields out."""
    route = source_file.removesuffix(".md")
    payload: dict[str, Any] = make_payload(
        {"source_file": source_file, "route": route, "title": "Title", "section_title": section,
         "content": f"{section} of {source_file}."}, "fake-model")
    if source_url is not None:
        payload["source_url"] = source_url
    for name in drop:
        payload.pop(name)
    return SearchResult.from_point(point_id or f"{source_file}@{score}", score, payload)


def answer(query: str, results: Sequence[SearchResult], *, top_k: int = 5, threshold: float = 0.0,
           warnings: Sequence[str] = (), filters: dict[str, str] | None = None) -> SearchResponse:
    """One response to ``query`` holding ``results`` as given (in that order, however many)."""
    return SearchResponse(query_text=query, results=list(results), total_results=len(results), top_k=top_k,
                          similarity_threshold=threshold, filters=filters or {}, collection="c", model="fake-model",
                          embed_ms=1.0, search_ms=1.0, execution_time_ms=2.0, timestamp=_STAMP,
                          warnings=list(warnings))
