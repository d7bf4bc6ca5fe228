"""The query log (seed 003 FR-008): one JSON line per request, whatever the request held.

Each line holds exactly :data:`LOG_FIELDS`: time, request id, route, status,
query text, top_k, results returned, took_ms and error type. Nothing else is
written, so no header (``Authorization``, an API key) or setting can reach the
log: the fields are chosen here, not copied from the request.

A line is never lost to its content or to the disk:

- any text is written escaped: lone surrogates (valid JSON, invalid Unicode), control
  characters and the Unicode line separators become ``\\uXXXX`` escapes, so a line is
  one line for every reader and the file stays valid UTF-8; the caller bounds its length;
- a write that fails (disk full, the folder removed, no permission) never raises: it is
  reported on stderr once, and until the file can be written again each line goes to
  stderr instead. A log file that was removed or replaced (rotation) is reopened by path.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

__all__ = ["LOG_FIELDS", "QueryLog", "log_line"]

#: The keys of every log line, in order.
LOG_FIELDS: tuple[str, ...] = ("time", "request_id", "route", "method", "status", "query", "top_k", "results",
                               "took_ms", "error_type")

# Characters json.dumps(ensure_ascii=False) leaves raw that some readers take as line ends.
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def log_line(entry: dict[str, Any]) -> str:
    """One JSON line for ``entry``: readable UTF-8 when it can be, else every non-ASCII character escaped."""
    text = json.dumps(entry, ensure_ascii=False, default=str).translate(_LINE_BREAKS)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape everything rather than write invalid UTF-8
        text = json.dumps(entry, ensure_ascii=True, default=str)
    return text


class QueryLog:
    """Writes one JSON line per request to a stream (stderr by default) or a file.

    Args:
        stream: where lines go; default ``sys.stderr``.
        path: a file to append to instead (opened here, reopened when removed or replaced, closed by
            :meth:`close`).
        fallback: where a failure is reported, and lines go while the log cannot be written (default stderr).
    """

    def __init__(self, stream: IO[str] | None = None, *, path: str | Path | None = None,
                 fallback: IO[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._given = stream
        self._fallback = fallback
        self._stream: IO[str] | None = None
        self._inode: tuple[int, int] | None = None
        self._failing = False
        self._lock = threading.Lock()
        if self.path is not None:
            try:
                self._open()
            except OSError as err:
                self._report(err)

    # ------------------------------------------------------------------ the file
    def _open(self) -> IO[str]:
        if self.path is None:  # pragma: no cover - only a file log is opened
            raise ValueError("this query log writes to a stream, not a file")
        stream = open(self.path, "a", encoding="utf-8", errors="backslashreplace")
        st = os.fstat(stream.fileno())
        self._stream, self._inode = stream, (st.st_dev, st.st_ino)
        return stream

    def _current(self) -> IO[str]:
        """The stream to write to: for a file, reopened when the path no longer names the open file."""
        if self.path is None:
            return self._given or sys.stderr
        if self._stream is not None:
            with contextlib.suppress(OSError):
                st = os.stat(self.path)
                if (st.st_dev, st.st_ino) == self._inode:
                    return self._stream
            self._close_stream()
        return self._open()

    def _close_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()

    def _report(self, err: OSError) -> None:
        if self._failing:
            return
        self._failing = True
        where = f"file {self.path.name!r}" if self.path is not None else "stream"
        why = err.strerror or type(err).__name__
        self._emergency(f"query log: cannot write to the log {where} ({why}); its lines go to stderr until it can "
                        "be written again")

    def _emergency(self, text: str) -> None:
        stream = self._fallback or sys.stderr
        with contextlib.suppress(OSError, ValueError):  # stderr itself is gone: nothing is left to tell
            stream.write(text + "\n")
            stream.flush()

    # ------------------------------------------------------------------ writing
    def write(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Write one line with the :data:`LOG_FIELDS` of ``entry`` (missing ones as null); returns the line's dict.

        Never raises: a failed write is reported once and the line goes to stderr.
        """
        line = {name: entry.get(name) for name in LOG_FIELDS}
        line["time"] = line["time"] or datetime.now(UTC).isoformat(timespec="milliseconds")
        text = log_line(line) + "\n"
        with self._lock:
            try:
                stream = self._current()
                stream.write(text)
                stream.flush()
            except (OSError, ValueError) as err:  # ValueError: the stream was closed under us
                if self.path is not None:
                    self._close_stream()  # a half-written buffer must not be flushed into the next line
                self._report(err if isinstance(err, OSError) else OSError(str(err)))
                self._emergency(text.rstrip("\n"))
                return line
            if self._failing:
                self._failing = False
                self._emergency("query log: writing to the log again")
        return line

    def close(self) -> None:
        with self._lock:
            if self.path is not None:
                self._close_stream()
