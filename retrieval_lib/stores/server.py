"""What only a Qdrant server does: its passing failures and how they are retried, its error texts, its telemetry.

:class:`~retrieval_lib.stores.qdrant.VectorStore` calls these on a server (``kind == "server"``) only; they read
qdrant-client's exceptions and Qdrant's JSON and hold no state.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

__all__ = ["RETRIES", "MAX_RETRY_WAIT", "BACKOFF", "retry_wait", "server_message", "counters_of", "tally"]

#: Retries of one server request that failed in passing (429/502/503/504, a connection dropped mid-answer).
RETRIES = 3
#: Longest wait before one retry, in seconds, whatever ``Retry-After`` asks (so a retried call is bounded).
MAX_RETRY_WAIT = 10.0
#: Wait before retry n (0-based) when the server gives no ``Retry-After``.
BACKOFF = (0.5, 1.0, 2.0)
_TRANSIENT = (429, 502, 503, 504)


def server_message(err: Any) -> str:
    """Qdrant's own error text (``{"status": {"error": ...}}``), cut short; "" when the body has none."""
    try:
        status = json.loads(err.content or b"{}").get("status")
    except (ValueError, AttributeError):
        return ""
    text = status.get("error") if isinstance(status, dict) else None
    return str(text)[:300] if text else ""


def retry_wait(err: Exception, attempt: int) -> float | None:
    """Seconds to wait before retrying ``err`` (a server's passing failure), or None: not retried.

    429/502/503/504 are retried honouring ``Retry-After`` (capped at :data:`MAX_RETRY_WAIT`), and a connection
    closed mid-answer: every call the store makes can be repeated safely (reads, and upserts and deletes of points
    by their ids). A refused connection and a timeout are never retried: they would only multiply the wait.
    """
    import httpx
    from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    if attempt >= RETRIES:
        return None
    backoff = BACKOFF[min(attempt, len(BACKOFF) - 1)]
    after: Any = None
    if isinstance(err, ResourceExhaustedResponse):
        after = err.retry_after_s
    elif isinstance(err, UnexpectedResponse) and err.status_code in _TRANSIENT:
        after = err.headers.get("retry-after")
    elif isinstance(err, ResponseHandlingException) and isinstance(
            err.source, httpx.RemoteProtocolError | httpx.ReadError):
        return backoff
    else:
        return None
    try:
        wait = float(after) if after is not None else backoff
    except (TypeError, ValueError):  # an HTTP date, or junk: the backoff
        wait = backoff
    return min(max(wait, 0.0), MAX_RETRY_WAIT)


def counters_of(answer: Any, collection: str) -> dict[str, int] | None:
    """Segment searches of ``collection`` (``{"hnsw", "plain", "exact"}``) from a ``GET /telemetry?details_level=4``
    answer (Qdrant's ``lib/segment/src/telemetry.rs``: each segment's ``vector_index_searches``, empty counters
    left out), summed over its shards and segments; None when the answer lists no segment of it.

    ``hnsw`` counts ``unfiltered_hnsw`` and ``filtered_large_cardinality``; ``plain`` counts ``unfiltered_plain``,
    ``filtered_plain`` and ``filtered_small_cardinality`` (full scans of a segment or of a filter's matches);
    ``exact`` the searches asked exact on an indexed segment.
    """
    kinds = {"hnsw": ("unfiltered_hnsw", "filtered_large_cardinality"),
             "plain": ("unfiltered_plain", "filtered_plain", "filtered_small_cardinality"),
             "exact": ("unfiltered_exact", "filtered_exact")}
    result = (answer or {}).get("result") or {}
    listed = ((result.get("collections") or {}).get("collections")) or []
    found = [c for c in listed if isinstance(c, dict) and c.get("id") == collection]
    if not found:
        return None
    totals = dict.fromkeys(kinds, 0)
    segments = 0
    for shard in found[0].get("shards") or []:
        for segment in ((shard or {}).get("local") or {}).get("segments") or []:
            segments += 1
            for searches in segment.get("vector_index_searches") or []:
                for kind, names in kinds.items():
                    totals[kind] += sum(int((searches.get(n) or {}).get("count") or 0) for n in names)
    return totals if segments else None


def tally(points: Iterable[Any], key: str, limit: int) -> dict[str, int]:
    """Distinct values of ``key`` over ``points`` with their counts, most frequent first, as a facet counts them
    (each element of a list value; booleans as ``true``/``false``; nested objects left out)."""
    counts: dict[str, int] = {}
    for point in points:
        value = (point.payload or {}).get(key)
        for v in value if isinstance(value, list) else [value]:
            if v is not None and not isinstance(v, dict | list):
                text = str(v).lower() if isinstance(v, bool) else str(v)
                counts[text] = counts.get(text, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit])
