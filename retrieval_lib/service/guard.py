"""The outermost layer of the service: request ids, the body-size limit, the query log, last-resort 500s.

A plain ASGI middleware (no per-request task or body buffering), so it costs
microseconds. For every HTTP request it:

- gives the request an id (``X-Request-ID`` on the answer, ``request_id`` in the log);
- refuses a body over the limit with 413 *before* anything reads it: at once when
  ``Content-Length`` says so, else as soon as the bytes received pass the limit;
- answers 408 (and closes the connection) when the body pauses longer than the read
  timeout (headers are timed by the server's protocol: :mod:`.protocol`);
- turns an exception nothing else handled into a 500 with the error schema (the
  traceback goes to the server's own log, never into the answer), and a request
  cancelled by a shutdown into a 503 (``ShuttingDown``);
- writes one query-log line when the answer is sent.

Routes and exception handlers add the query, top_k, result count and error type
to ``scope[LOG_KEY]``, a dict this layer creates.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import Any

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from retrieval_lib.service.errors import INTERNAL_ERROR, RequestTimeoutError, RequestTooLargeError, error_body
from retrieval_lib.service.querylog import QueryLog

__all__ = ["RequestGuard", "LOG_KEY"]

log = logging.getLogger(__name__)

#: The error type of a request stopped by a shutdown (SIGTERM's grace period ran out).
SHUTTING_DOWN = "ShuttingDown"
#: The scope key of the per-request dict the query-log line is built from.
LOG_KEY = "retrieval_lib.log"
# Longest query text copied into a log line: the API refuses long queries, but the log still
# records what was refused, and must not grow by the body limit per line.
_LOG_QUERY_CHARS = 1000


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` when the bytes received pass the limit (FastAPI re-raises HTTPExceptions)."""

    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413, detail=_too_large(limit).message)
        self.limit = limit


class BodyTimeout(HTTPException):
    """Raised from ``receive`` when the body pauses longer than the read timeout."""

    def __init__(self, timeout: float) -> None:
        err = RequestTimeoutError(f"the request body stopped arriving: nothing for {timeout:g} s; send the whole "
                                  "body at once", timeout=timeout)
        super().__init__(status_code=408, detail=err.message, headers={"connection": "close"})
        self.timeout = timeout


def _too_large(limit: int) -> RequestTooLargeError:
    return RequestTooLargeError(f"the request body is larger than {limit} bytes; send a smaller body "
                                "(a query is at most a few hundred characters)", limit=limit)


def _json_response(status: int, body: dict[str, Any], request_id: str, *,
                   close: bool = False) -> tuple[Message, Message]:
    data = json.dumps(body).encode()
    start: Message = {"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
        (b"x-request-id", request_id.encode()), *([(b"connection", b"close")] if close else [])]}
    return start, {"type": "http.response.body", "body": data}


class RequestGuard:
    """ASGI middleware; see the module docstring.

    Args:
        app: the application.
        querylog: where the one line per request goes.
        max_body_bytes: the largest body accepted.
        body_timeout: seconds the body may pause between two reads (None: no limit).
    """

    def __init__(self, app: ASGIApp, *, querylog: QueryLog, max_body_bytes: int,
                 body_timeout: float | None = None) -> None:
        self.app = app
        self.querylog = querylog
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        request_id = uuid.uuid4().hex[:16]
        entry: dict[str, Any] = {"request_id": request_id, "route": scope.get("path"), "method": scope.get("method")}
        scope[LOG_KEY] = entry
        started = False
        limit, timeout, received = self.max_body_bytes, self.body_timeout, 0

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                entry["status"] = message["status"]
                message = {**message, "headers": [*message.get("headers", []), (b"x-request-id", request_id.encode())]}
            await send(message)

        async def receive_limited() -> Message:
            nonlocal received
            if timeout is None:
                message = await receive()
            else:
                try:
                    message = await asyncio.wait_for(receive(), timeout)
                except TimeoutError:
                    raise BodyTimeout(timeout) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        try:
            declared = _content_length(scope)
            if declared is not None and declared > limit:
                err = _too_large(limit)
                entry.update(status=413, error_type=type(err).__name__)
                for message in _json_response(413, error_body(type(err).__name__, err.message, 413), request_id):
                    await send(message)
                return
            await self.app(scope, receive_limited, send_with_id)
        except asyncio.CancelledError:
            # uvicorn cancels what is still running when SIGTERM's graceful shutdown runs out of time: answer
            # 503 (retry elsewhere) instead of its traceback and plain-text 500; the task ends here either way
            entry.update(status=entry.get("status") or 503, error_type=SHUTTING_DOWN)
            if not started:
                said = ("the service is shutting down and stopped this request before it finished; retry "
                        "(another instance, or this one once restarted)")
                for part in _json_response(503, error_body(SHUTTING_DOWN, said, 503), request_id, close=True):
                    await send(part)
        except Exception as exc:  # the last resort: a bug must still answer with the schema
            close = False
            if isinstance(exc, BodyTooLarge):
                kind, status, message_text = RequestTooLargeError.__name__, 413, str(exc.detail)
            elif isinstance(exc, BodyTimeout):
                kind, status, message_text, close = RequestTimeoutError.__name__, 408, str(exc.detail), True
            else:
                log.exception("request %s failed with an unhandled %s", request_id, type(exc).__name__)
                kind, status = INTERNAL_ERROR, 500
                message_text = f"internal error (request {request_id}); the server log has the details"
            entry.setdefault("error_type", kind)
            if started:  # the answer is half sent: nothing valid can follow
                entry["status"] = entry.get("status") or status
                return
            entry["status"] = status
            for message in _json_response(status, error_body(kind, message_text, status), request_id, close=close):
                await send(message)
        finally:
            entry["took_ms"] = round((time.perf_counter() - t0) * 1000, 3)
            query = entry.get("query")
            if isinstance(query, str) and len(query) > _LOG_QUERY_CHARS:
                entry["query"] = query[:_LOG_QUERY_CHARS] + "…"
            self.querylog.write(entry)


def _content_length(scope: Scope) -> int | None:
    try:
        return int(Headers(scope=scope)["content-length"])
    except (KeyError, ValueError):
        return None
