"""The HTTP protocol uvicorn serves with, plus a header read timeout and a header size limit.

uvicorn times out an idle keep-alive connection (``timeout_keep_alive``) but not a
client that has started a request and stopped halfway through its headers: its
keep-alive timer is cancelled by the first byte, and nothing else is armed
(``uvicorn/protocols/http/httptools_impl.py``, ``data_received``). Such a client
holds its connection for as long as it likes, which is how slowloris works. And
httptools accepts headers of any size.

:func:`guarded_protocol` subclasses uvicorn's own protocol (httptools when installed,
else h11) with two additions, and nothing else changed:

- a timer armed when the connection opens and again when each response completes;
  if the next request's headers are not complete when it fires, the client gets
  ``408`` with the service's error body and the connection is closed (an idle
  keep-alive connection is closed silently, by uvicorn's own timer, first);
- a count of the bytes received before the headers complete; past the limit the
  client gets ``431`` and the connection is closed.

Each cut-off is logged as one warning line (no query: there is no request yet).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from retrieval_lib.service.errors import error_body

__all__ = ["guarded_protocol"]

log = logging.getLogger("uvicorn.error")


def _answer(status: int, reason: str, kind: str, message: str) -> bytes:
    body = json.dumps(error_body(kind, message, status)).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode()
    return head + body


def guarded_protocol(header_timeout: float, max_header_bytes: int) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class with the header timeout and size limit (see the module docstring)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
    except ImportError:  # pragma: no cover - httptools is pinned; h11 is uvicorn's fallback
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base  # type: ignore[assignment]

    timeout_answer = _answer(408, "Request Timeout", "RequestTimeoutError",
                             f"the request headers did not arrive within {header_timeout:g} s")
    too_large_answer = _answer(431, "Request Header Fields Too Large", "RequestTooLargeError",
                               f"the request line and headers are larger than {max_header_bytes} bytes")

    class GuardedProtocol(Base):
        _header_timer: asyncio.TimerHandle | None = None
        _armed_cycle: Any = None
        _header_bytes = 0

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def data_received(self, data: bytes) -> None:
            # bytes count towards the next request's headers only once the last request's body is all in
            # (an answer such as 413 can complete before the body it refused has arrived)
            previous = self._armed_cycle
            waiting = (self._header_timer is not None and self.cycle is previous
                       and (previous is None or not previous.more_body))
            super().data_received(data)
            if not waiting:
                return
            if self.cycle is not previous:  # the headers completed in this chunk: a request started
                self._disarm()
                return
            self._header_bytes += len(data)  # one read at most past the limit: memory stays bounded
            if self._header_bytes > max_header_bytes:
                self._cut(too_large_answer, f"headers over {max_header_bytes} bytes")

        # ------------------------------------------------------------------ the timer
        def _arm(self) -> None:
            self._disarm()
            self._armed_cycle, self._header_bytes = self.cycle, 0
            self._header_timer = self.loop.call_later(header_timeout, self._header_timeout)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timeout(self) -> None:
            self._header_timer = None
            busy = self.cycle is not None and not self.cycle.response_complete  # a request is being served
            if self.transport.is_closing() or busy or self.cycle is not self._armed_cycle:
                return
            previous = self._armed_cycle
            if self._header_bytes == 0:  # never started a request, or still sending an answered one's body
                if previous is not None and previous.more_body:
                    log.warning("closed the connection from %s: the body of an answered request still arriving "
                                "after %g s", self._client_name(), header_timeout)
                self.transport.close()
                return
            self._cut(timeout_answer, f"no complete request headers within {header_timeout:g} s")

        def _client_name(self) -> str:
            return f"{self.client[0]}:{self.client[1]}" if self.client else "a client"

        def _cut(self, answer: bytes, why: str) -> None:
            self._disarm()
            log.warning("closed the connection from %s: %s", self._client_name(), why)
            if not self.transport.is_closing():
                self.transport.write(answer)
                self.transport.close()

    return GuardedProtocol
