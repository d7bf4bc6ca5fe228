"""The query log (seed 003 FR-008): one JSON line per request.

Each line holds exactly :data:`LOG_FIELDS`: time, request id, route, status,
query text, top_k, results returned, took_ms and error type. Nothing else is
written, so no header (``Authorization``, an API key) or setting can reach the
log: the fields are chosen here, not copied from the request.
"""

from __future__ import annotations

import json
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

__all__ = ["LOG_FIELDS", "QueryLog"]

#: The keys of every log line, in order.
LOG_FIELDS: tuple[str, ...] = ("time", "request_id", "route", "method", "status", "query", "top_k", "results",
                               "took_ms", "error_type")


class QueryLog:
    """Writes one JSON line per request to a stream (stderr by default) or a file.

    Args:
        stream: where lines go; default ``sys.stderr``.
        path: a file to append to instead (opened here, closed by :meth:`close`).
    """

    def __init__(self, stream: IO[str] | None = None, *, path: str | Path | None = None) -> None:
        self._own = path is not None
        self._stream: IO[str] = open(path, "a", encoding="utf-8") if path is not None else (stream or sys.stderr)
        self._lock = threading.Lock()

    def write(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Write one line with the :data:`LOG_FIELDS` of ``entry`` (missing ones as null); returns the line's dict."""
        line = {name: entry.get(name) for name in LOG_FIELDS}
        line["time"] = line["time"] or datetime.now(UTC).isoformat(timespec="milliseconds")
        text = json.dumps(line, ensure_ascii=False, default=str)
        with self._lock:
            self._stream.write(text + "\n")
            self._stream.flush()
        return line

    def close(self) -> None:
        if self._own:
            self._stream.close()
