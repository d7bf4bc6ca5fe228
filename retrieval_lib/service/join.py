"""Joining vector hits with their metadata rows by ``chunk_id`` (seed 003 FR-004, FR-005).

The row is the metadata's source of truth; the point's payload fills what the
row lacks. A hit whose row is missing is still returned, from its payload, and
the answer's warnings name its ``chunk_id``: a hit is never silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrieval_lib.book.routes import route_of_stored_path
from retrieval_lib.models import SearchResult
from retrieval_lib.stores.metadata import slug_of

__all__ = ["join_results", "MISSING_ROWS_WARNING"]

#: The warning's opening words (the notebook and tests look for them).
MISSING_ROWS_WARNING = "no metadata row for chunk_id"
# Chunk ids listed in one warning before "and N more".
_LISTED = 10


def _first(*values: Any) -> Any:
    return next((v for v in values if v not in (None, "")), None)


def join_results(results: Sequence[SearchResult],
                 rows: Mapping[str, Mapping[str, Any]] | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The answer's result items, in the retriever's order, and warnings about hits without rows.

    Args:
        results: the ranked hits, as :meth:`~retrieval_lib.search.Retriever.search` returns them.
        rows: metadata rows by chunk_id (:meth:`~retrieval_lib.stores.metadata.MetadataDB.rows_for`); None when
            the collection has no metadata database (every item comes from the payload, and that is no gap).

    Returns:
        (items with :data:`~retrieval_lib.service.schemas.RESULT_FIELDS`, warnings).
    """
    items: list[dict[str, Any]] = []
    missing: list[str] = []
    unkeyed: list[str] = []
    for r in results:
        chunk_id = r.chunk_id or r.point_id
        if not r.chunk_id:
            unkeyed.append(r.point_id)
        row = rows.get(chunk_id) if r.chunk_id and rows is not None else None
        if row is None:
            if rows is not None:
                missing.append(chunk_id)
            row = {}
        items.append({
            "chunk_id": chunk_id,
            "snippet": r.content or "",
            "source_path": _first(row.get("source_path"), r.source_file),
            # the page's route: the row's, the URL's path, or (a collection of file paths) the route of the file
            "slug": _first(row.get("slug"), slug_of(r.source_url), route_of_stored_path(r.source_file)),
            "title": _first(row.get("title"), r.title),
            "score": r.similarity_score,
            "section_title": _first(row.get("section_title"), r.section_title),
            "source_url": _first(row.get("source_url"), r.source_url),
            "chunk_sequence": _first(row.get("chunk_sequence"), r.chunk_sequence),
        })
    warnings: list[str] = []
    if unkeyed:
        warnings.append(f"{len(unkeyed)} hits carry no chunk_id in their payload; their point id stands in for it")
    if missing:
        shown = ", ".join(missing[:_LISTED]) + (f" and {len(missing) - _LISTED} more" if len(missing) > _LISTED else "")
        warnings.append(f"{MISSING_ROWS_WARNING} {shown}: returned from the vector payload "
                        "(run `python -m retrieval_lib ingest` to write the rows)")
    return items, warnings
