"""The two routes: ``POST /search`` and ``GET /health``.

Both are plain (synchronous) functions: the retriever, the embedder and the
database drivers block, so FastAPI runs each request in its thread pool and
the event loop stays free to accept the next one. A search is validated in its
own thread, then embedded and searched together with the queries that arrive
with it (:mod:`.batching`), unless the app was built with ``batching=False``.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from retrieval_lib.errors import EmbeddingError, ValidationError
from retrieval_lib.service.guard import LOG_KEY
from retrieval_lib.service.health import embedder_facts, health_body, probe_database, probe_store
from retrieval_lib.service.join import join_results
from retrieval_lib.service.schemas import (
    FILTER_MAX_CHARS,
    VISIBLE_CHARACTER,
    ErrorAnswer,
    HealthAnswer,
    SearchAnswer,
    SearchRequest,
)
from retrieval_lib.validation import validate_filter, validate_params, validate_query

if TYPE_CHECKING:
    from retrieval_lib.service.app import ServiceState

__all__ = ["router", "run_search"]

router = APIRouter()

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorAnswer, "description": "invalid input: empty, invisible or over-long query, top_k < 1 or "
                                               "not an integer, threshold outside [0, 1], malformed JSON, wrong "
                                               "types, unknown fields"},
    408: {"model": ErrorAnswer, "description": "the request body stopped arriving (read timeout)"},
    413: {"model": ErrorAnswer, "description": "request body over the size limit"},
    415: {"model": ErrorAnswer, "description": "the body was not sent as JSON (Content-Type: application/json)"},
    502: {"model": ErrorAnswer, "description": "the embedding service failed"},
    503: {"model": ErrorAnswer, "description": "the vector store or the metadata database is unavailable, or the "
                                               "service is busy"},
    500: {"model": ErrorAnswer, "description": "a bug (the body still has the schema)"},
}
_VISIBLE = re.compile(VISIBLE_CHARACTER)


def _state(request: Request) -> ServiceState:
    return request.app.state.service


def run_search(state: ServiceState, body: SearchRequest) -> dict[str, Any]:
    """Validate, search, join with the metadata rows (one query), and build the answer.

    Raises:
        ValidationError: bad input (400); EmbeddingError (502); VectorStoreError,
        CollectionNotFoundError, DatabaseUnavailableError (503).
    """
    t0 = time.perf_counter()
    limit = state.options.query_max_chars
    if len(body.query) > limit:  # the API's own limit (the published maxLength), with the API's own advice
        raise ValidationError(f"query is {len(body.query)} characters; this API accepts at most {limit}: "
                              "shorten it", field="query")
    text = validate_query(body.query, limit)  # type, emptiness, valid Unicode
    if _VISIBLE.search(text) is None:
        raise ValidationError("query has no visible characters (only zero-width or format characters, such as "
                              "a BOM): type a question, e.g. \"What is ROS 2?\"", field="query")
    for name in ("source_prefix", "section"):
        value = getattr(body, name)
        if isinstance(value, str) and len(value) > FILTER_MAX_CHARS:
            raise ValidationError(f"{name} is {len(value)} characters; this API accepts at most {FILTER_MAX_CHARS}",
                                  field=name)
    threshold = 0.0 if body.similarity_threshold is None else body.similarity_threshold
    try:
        if state.batcher is None:
            response = state.retriever.search(text, top_k=body.top_k, similarity_threshold=threshold,
                                              source_prefix=body.source_prefix, section=body.section)
        else:  # checked here, in the request's thread, so one bad request never fails a batch
            validate_params(body.top_k, threshold)
            validate_filter(body.source_prefix, "source_prefix")
            validate_filter(body.section, "section")
            # the values as sent: the batch's search_many caps top_k with the same warning as a lone search
            response = state.batcher.search(text, (body.top_k, float(threshold), body.source_prefix, body.section))
    except EmbeddingError:
        state.embedder_ok = False
        raise
    state.embedder_ok, state.embed_ms = True, response.embed_ms
    metadata = state.read_metadata()
    rows = metadata.rows_for([r.chunk_id for r in response.results if r.chunk_id]) if metadata else None
    items, warnings = join_results(response.results, rows)
    return {
        "query": response.query_text,
        "results": items,
        "total_results": len(items),
        "took_ms": round((time.perf_counter() - t0) * 1000, 3),
        "warnings": list(response.warnings) + warnings,
    }


@router.post("/search", response_model=SearchAnswer, responses=_ERRORS,
             summary="Semantic search: the best chunks for a question, with their metadata")
def search(body: SearchRequest, request: Request) -> JSONResponse:
    entry = request.scope.get(LOG_KEY, {})
    entry.update(query=body.query, top_k=body.top_k)
    answer = run_search(_state(request), body)
    entry["results"] = answer["total_results"]
    # built from typed values already, so it is sent as it is (response_model documents it for OpenAPI)
    return JSONResponse(answer)


@router.get("/health", response_model=HealthAnswer, responses={503: {"model": HealthAnswer}},
            summary="Each dependency's reachability, latency and facts")
def health(request: Request) -> JSONResponse:
    state = _state(request)
    status, body = health_body(probe_store(state), probe_database(state),
                               embedder_facts(state.retriever, state.embedder_ok, state.embed_ms))
    entry = request.scope.get(LOG_KEY)
    if isinstance(entry, dict) and status != 200:
        entry["error_type"] = "Unavailable"
    return JSONResponse(body, status_code=status)
