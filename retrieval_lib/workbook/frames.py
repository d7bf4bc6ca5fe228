"""Search results as pandas tables, for notebooks and CSV reports."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from retrieval_lib.models import PAYLOAD_FIELDS, SearchResponse, SearchResult

__all__ = ["results_frame", "result_fields", "RESULT_COLUMNS"]

#: The columns a results table shows by default (stable values only, so nbval can compare them).
RESULT_COLUMNS: tuple[str, ...] = ("query", "rank", "similarity_score", "source_file", "section_title", "chunk_id")


def results_frame(responses: SearchResponse | Iterable[SearchResponse],
                  columns: Sequence[str] | None = RESULT_COLUMNS, *, decimals: int = 3):
    """One row per result: query, rank, score and payload fields.

    Args:
        responses: one response or many.
        columns: columns to keep (None keeps every payload field plus timings).
        decimals: rounding of scores, so tables compare stably across runs.

    Returns:
        A pandas DataFrame (empty, with the columns, when nothing matched).
    """
    import pandas as pd

    if isinstance(responses, SearchResponse):
        responses = [responses]
    rows = []
    for response in responses:
        for rank, r in enumerate(response.results, 1):
            row = {"query": response.query_text, "rank": rank,
                   "similarity_score": round(r.similarity_score, decimals),
                   "raw_score": round(r.raw_score, decimals), "point_id": r.point_id,
                   "missing_fields": ", ".join(r.missing_fields)}
            row.update({name: getattr(r, name) for name in PAYLOAD_FIELDS})
            row.update({"embed_ms": response.embed_ms, "search_ms": response.search_ms})
            rows.append(row)
    frame = pd.DataFrame(rows)
    if columns is None:
        return frame
    return frame.reindex(columns=list(columns))


def result_fields(result: SearchResult, *, decimals: int = 3, exclude: Sequence[str] = ("content",)):
    """One result as a two-column table (``field``, ``value``): its id, payload fields, scores and what is missing.

    Args:
        result: the result to show.
        decimals: rounding of the scores (their last digits depend on the CPU; nbval compares what is shown).
        exclude: fields left out (by default the chunk text, which is long: print it on its own).

    Returns:
        A pandas DataFrame, one row per field, values as text.
    """
    import pandas as pd

    values = result.model_dump(exclude=set(exclude))
    for name in ("similarity_score", "raw_score"):
        if name in values:
            values[name] = round(values[name], decimals)
    values["missing_fields"] = ", ".join(values.get("missing_fields") or []) or "none"
    return pd.DataFrame({"field": list(values), "value": [str(v) for v in values.values()]})
