"""``GET /health``: each dependency probed, with its facts.

``vector_store`` counts the collection's points; ``database`` counts the rows of
its table; ``embedder`` reports the model loaded at start-up and the outcome of
its last call (a health check never spends an embedding call: Cohere trial keys
allow 1,000 a month). The service is healthy (200) when the vector store and the
database are usable; otherwise 503 with the same body, the failing dependency
marked ``"reachable": false`` with its error.

``/health`` is unauthenticated, so it names things, never places: the collection,
the store's kind (``embedded``, ``server``, ``memory``, ``edge``) and the database's
kind (``sqlite``, ``postgresql``), but no folder, file or URL; :func:`redact` takes
them out of every error message too.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from retrieval_lib.errors import RetrievalError
from retrieval_lib.search import Retriever

if TYPE_CHECKING:
    from retrieval_lib.service.app import ServiceState

__all__ = ["probe_store", "probe_database", "embedder_facts", "health_body", "redact", "NO_DATABASE"]


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def _places(state: ServiceState) -> list[tuple[str, str]]:
    """(a location, what to say instead), longest first: folders, files, and URLs with credentials."""
    places: list[tuple[str, str]] = []
    store = state.retriever.store
    places.append((str(store.location), f"the {store.kind} vector store"))
    folder = getattr(getattr(store, "store", store), "folder", None)
    if folder:
        places.append((str(folder), f"the {store.kind} vector store"))
    if state.metadata is not None:
        places.append((str(state.metadata.location), f"the {state.metadata.backend} database"))
    # a folder or file is a place on this machine; a server's URL is kept unless it carries a user or password
    kept = {p for p in places if len(p[0]) > 2 and ("://" not in p[0] or "@" in p[0])}
    return sorted(kept, key=lambda p: -len(p[0]))


def redact(message: str, state: ServiceState) -> str:
    """``message`` without the dependencies' folders, files and URLs (each replaced by what it is)."""
    for place, name in _places(state):
        message = message.replace(place, name)
    return message


def probe_store(state: ServiceState) -> dict[str, Any]:
    """reachable, latency_ms, kind, collection, points (or error); never raises."""
    retriever = state.retriever
    t0 = time.perf_counter()
    facts: dict[str, Any] = {"kind": retriever.store.kind, "collection": retriever.collection}
    try:
        points = retriever.store.count(retriever.collection)
    except RetrievalError as err:
        return {"reachable": False, "latency_ms": _ms(t0), **facts, "error": redact(err.message, state)}
    return {"reachable": True, "latency_ms": _ms(t0), **facts, "points": points}


def probe_database(state: ServiceState) -> dict[str, Any]:
    """The database's probe with its kind and no location; :data:`NO_DATABASE` when there is none."""
    metadata = state.read_metadata()
    if metadata is None:
        reason = getattr(state, "metadata_reason", "")
        # a team's database without a table this service reads is configured, and not down: it is not read
        return {**NO_DATABASE, "detail": f"not read: {redact(reason, state)}"} if reason else NO_DATABASE
    facts = dict(metadata.probe())
    facts.pop("location", None)
    facts["kind"] = facts.pop("backend", metadata.backend)
    if "error" in facts:
        facts["error"] = redact(str(facts["error"]), state)
    return facts


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
