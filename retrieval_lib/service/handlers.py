"""Exception handlers: every error leaves the app as ``{"error": {"type", "message", "status"}}``.

FastAPI answers a request its model refuses with 422 and a list of pydantic
errors; seed 003 asks for 400 with one message, so that handler is replaced and
422 is removed from the published OpenAPI schema. The message names the fields
at fault and never echoes the values sent (they can be huge, or secrets).

A body sent as anything but JSON is 415 (:class:`UnsupportedMediaTypeError`), and a
dependency's message never carries the store's folder or the database's file:
:func:`~retrieval_lib.service.health.redact` replaces them with what they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from retrieval_lib.errors import RetrievalError, ValidationError
from retrieval_lib.service.errors import (
    RequestTimeoutError,
    RequestTooLargeError,
    UnsupportedMediaTypeError,
    error_body,
    status_for,
)
from retrieval_lib.service.guard import LOG_KEY
from retrieval_lib.service.health import redact
from retrieval_lib.service.schemas import SearchRequest, publish_limits

__all__ = ["install_handlers", "without_422"]

_FIELDS = ", ".join(SearchRequest.model_fields)
_HTTP_TYPES = {400: ValidationError.__name__, 404: "NotFound", 405: "MethodNotAllowed",
               408: RequestTimeoutError.__name__, 413: RequestTooLargeError.__name__,
               415: UnsupportedMediaTypeError.__name__}
_JSON_NEEDED = ("send the body as JSON with the header Content-Type: application/json, "
                "e.g. {\"query\": \"What is ROS2?\"}")


def is_json(content_type: str | None) -> bool:
    """Whether a Content-Type names JSON (``application/json``, ``application/*+json``), parameters ignored."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def error_response(request: Request, kind: str, message: str, status: int) -> JSONResponse:
    """The schema's answer, with the error type noted for the query log."""
    entry = request.scope.get(LOG_KEY)
    if isinstance(entry, dict):
        entry["error_type"] = kind
    return JSONResponse(error_body(kind, message, status), status_code=status)


def _where(loc: Any) -> str:
    parts = [str(p) for p in (loc or ()) if p != "body"]
    return ".".join(parts) or "body"


def validation_message(errors: list[dict[str, Any]]) -> str:
    """One sentence for pydantic's errors: the fields at fault and what each must be."""
    said: list[str] = []
    for e in errors:
        kind, where = e.get("type", ""), _where(e.get("loc"))
        if kind == "json_invalid":
            detail = (e.get("ctx") or {}).get("error", "JSON decode error")
            said.append(f"the body is not valid JSON ({detail})")
        elif kind == "extra_forbidden":
            said.append(f"unknown field {where!r} (the fields are {_FIELDS})")
        elif kind == "missing":
            said.append(f"field {where!r} is required" if where != "body" else "a JSON body is required")
        elif kind in ("model_type", "model_attributes_type", "dict_type"):
            said.append("the body must be a JSON object such as {\"query\": \"What is ROS2?\", \"top_k\": 5}")
        else:
            said.append(f"{where}: {str(e.get('msg', 'invalid value')).rstrip('.').lower()}")
    unique = list(dict.fromkeys(said))
    return "; ".join(unique[:5]) + (f"; and {len(unique) - 5} more problems" if len(unique) > 5 else "")


def install_handlers(app: FastAPI) -> None:
    """Register the handlers that turn every error into the one schema."""

    @app.exception_handler(RetrievalError)
    async def _retrieval_error(request: Request, exc: RetrievalError) -> JSONResponse:
        state = getattr(request.app.state, "service", None)
        message = redact(exc.message, state) if state is not None else exc.message
        return error_response(request, type(exc).__name__, message, status_for(exc))

    @app.exception_handler(RequestValidationError)
    async def _request_invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        content_type = request.headers.get("content-type")
        # FastAPI reads a body as JSON only when the Content-Type says JSON; any other body arrives as bytes
        if not is_json(content_type) and any(isinstance(e.get("input"), bytes) for e in errors):
            media = content_type.split(";", 1)[0].strip()[:60] if content_type else None
            shown = f"Content-Type {media!r}" if media is not None else "no Content-Type"
            err = UnsupportedMediaTypeError(f"the body was sent with {shown}; {_JSON_NEEDED}",
                                            content_type=content_type)
            return error_response(request, type(err).__name__, err.message, 415)
        return error_response(request, ValidationError.__name__, validation_message(errors), 400)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
        status = exc.status_code
        if status == 404:
            message = f"no route {request.method} {request.url.path}: the API has POST /search and GET /health"
        elif status == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
        else:
            message = str(exc.detail)
        response = error_response(request, _HTTP_TYPES.get(status, "HTTPError"), message, status)
        if exc.headers:  # e.g. Allow on a 405
            response.headers.update(exc.headers)
        return response


def without_422(app: FastAPI, *, query_max_chars: int = 500) -> Callable[[], dict[str, Any]]:
    """An ``app.openapi`` that publishes 400 (the error schema) where FastAPI would list 422, and every
    limit of the request (:func:`~retrieval_lib.service.schemas.publish_limits`)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
        for path in schema.get("paths", {}).values():
            for operation in path.values():
                operation.get("responses", {}).pop("422", None)
        components = schema.get("components", {}).get("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            components.pop(name, None)
        app.openapi_schema = publish_limits(schema, query_max_chars=query_max_chars)
        return schema

    return openapi
