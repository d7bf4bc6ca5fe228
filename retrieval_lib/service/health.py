"""``GET /health``: each dependency probed, with its facts.

``vector_store`` counts the collection's points; ``database`` counts the rows of
its table; ``embedder`` reports the model loaded at start-up and the outcome of
its last call (a health check never spends an embedding call: Cohere trial keys
allow 1,000 a month). The service is healthy (200) when the vector store and the
database are usable; otherwise 503 with the same body, the failing dependency
marked ``"reachable": false`` with its error.
"""

from __future__ import annotations

import time
from typing import Any

from retrieval_lib.errors import RetrievalError
from retrieval_lib.search import Retriever

__all__ = ["probe_store", "embedder_facts", "health_body", "NO_DATABASE"]


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def probe_store(retriever: Retriever) -> dict[str, Any]:
    """reachable, latency_ms, location, collection, points (or error); never raises."""
    t0 = time.perf_counter()
    facts: dict[str, Any] = {"location": retriever.store.location, "collection": retriever.collection}
    try:
        points = retriever.store.count(retriever.collection)
    except RetrievalError as err:
        return {"reachable": False, "latency_ms": _ms(t0), **facts, "error": err.message}
    return {"reachable": True, "latency_ms": _ms(t0), **facts, "points": points}


def embedder_facts(retriever: Retriever, last_ok: bool | None, last_ms: float | None) -> dict[str, Any]:
    """provider, model, dimension, and reachable/latency_ms of the last embedding call (None before the first)."""
    e = retriever.embedder
    return {"reachable": last_ok, "latency_ms": last_ms, "provider": e.provider, "model": e.model,
            "dimension": e.dimension}


#: The database's facts when the served collection has none: results come from the vector payload.
NO_DATABASE: dict[str, Any] = {"reachable": None, "configured": False,
                               "detail": "not configured (no DATABASE_URL for this collection): results come from "
                                         "the vector payload"}


def health_body(store: dict[str, Any], database: dict[str, Any], embedder: dict[str, Any]) -> tuple[int, dict]:
    """(status code, body) from the three dependencies' facts; a database that is not configured is not down."""
    ok = bool(store.get("reachable")) and (bool(database.get("reachable")) or database.get("configured") is False)
    body = {"status": "ok" if ok else "unavailable",
            "dependencies": {"vector_store": store, "database": database, "embedder": embedder}}
    return (200 if ok else 503), body
