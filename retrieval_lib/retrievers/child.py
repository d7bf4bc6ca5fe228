"""``kind: python``: a team's retrieval function, run in a child process of its own by the standard-library shim.

One child answers a whole :meth:`~PythonRetriever.ask_many`. Its imports, globals, ``print`` s, ``sys.exit`` or
crash stay in the child: an exception answers that question with ``raised <Type>``; an exit or a crash answers it
with ``exited <code>`` (and the last line the child wrote to stderr), and the next question starts a new child; a
question that takes longer than ``timeout_s`` is ``timeout``: the child is killed and restarted. The interpreter
is the spec's ``python`` (default: this one), so the team's dependencies need not be in our venv.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from retrieval_lib.params import resolve_path
from retrieval_lib.retrievers.base import MappedRetriever, _Failed
from retrieval_lib.retrievers.spec import RetrieverSpec, expand, one_line

__all__ = ["PythonRetriever", "SHIM"]

#: The shim the child runs, by path (it imports nothing from this package).
SHIM = Path(__file__).with_name("_shim.py")


def _resolved_function(function: str) -> str:
    where, _, name = function.rpartition(":")
    if where.endswith(".py") or "/" in where or os.sep in where:
        return f"{resolve_path(where).resolve()}:{name}"
    return function


class PythonRetriever(MappedRetriever):
    """A team's Python function in a child process (see the module docstring)."""

    kind = "python"

    def __init__(self, spec: RetrieverSpec) -> None:
        super().__init__(spec)
        self.function = _resolved_function(str(spec.function))
        self.interpreter = spec.python or sys.executable
        self.top_k_arg: str | None = spec.top_k_arg
        self._proc: subprocess.Popen[bytes] | None = None
        self._channel: int | None = None
        self._buffer = b""
        self._log: IO[bytes] | None = None
        self._fatal: _Failed | None = None
        #: the function's own time on the last question, measured in the child (the adapter's cost is the rest)
        self.last_call_ms: float | None = None
        self._lock = threading.Lock()  # one child answers one question at a time (a concurrent run queues here)

    def describe(self) -> str:
        return f"python {self.spec.function}" + (f" (with {self.spec.python})" if self.spec.python else "")

    # ------------------------------------------------------------------ the child
    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        for name, value in self.spec.env.items():
            env[name], used = expand(value, where=f"the retriever's env {name}")
            self._secrets = sorted(set(self._secrets) | set(used))
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def _start(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        read_end, write_end = os.pipe()
        self._log = tempfile.TemporaryFile()
        paths = [str(resolve_path(p).resolve()) for p in self.spec.path]
        try:
            self._proc = subprocess.Popen(
                [self.interpreter, "-u", str(SHIM), str(write_end), self.function, json.dumps(paths),
                 self.top_k_arg or ""],
                stdin=subprocess.PIPE, stdout=self._log, stderr=self._log, pass_fds=(write_end,),
                env=self._environment(), close_fds=True)
        except OSError as err:
            os.close(read_end)
            self._fatal = _Failed("not started", f"cannot run {self.interpreter}: {err.strerror or err}")
            raise self._fatal from None
        finally:
            os.close(write_end)
        self._channel = read_end
        self._buffer = b""
        hello = self._read_line(self.spec.startup_timeout_s, starting=True)
        if "fatal" in hello:
            self._stop()
            self._fatal = _Failed("import failed", f"{self.spec.function}: {hello['fatal']}")
            raise self._fatal
        self.top_k_arg = hello.get("top_k_arg")

    def _read_line(self, timeout_s: float, *, starting: bool = False) -> dict[str, Any]:
        assert self._channel is not None and self._proc is not None
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self._stop()
                what = "import" if starting else "answer"
                raise _Failed("timeout", f"{self.describe()} gave no {what} within {timeout_s:g} s: the child was "
                              "stopped (raise timeout_s if it is only slow)")
            ready, _, _ = select.select([self._channel], [], [], min(left, 1.0))
            if not ready:
                continue
            data = os.read(self._channel, 65536)
            if not data:  # the child closed the channel: it exited
                code = self._proc.wait(timeout=10)
                last = self._last_log_line()
                self._stop()
                raise _Failed(f"exited {code}", f"{self.describe()} ended"
                              + (f"; its last line of output: {last}" if last else ""))
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def _last_log_line(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0, os.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(0, size - 4096))
        lines = [ln for ln in self._log.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        return one_line(lines[-1], 200) if lines else ""

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
            if proc.stdin:
                proc.stdin.close()
        if self._channel is not None:
            os.close(self._channel)
            self._channel = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def close(self) -> None:
        """End the child (closing its stdin lets the shim finish; a child that does not is killed)."""
        proc = self._proc
        if proc is not None and proc.poll() is None and proc.stdin:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                proc.stdin.close()
                proc.wait(timeout=5)
        self._stop()

    # ------------------------------------------------------------------ one question
    def _call(self, query: str, top_k: int) -> Any:
        with self._lock:  # one child answers one question at a time
            self.start_ms = 0.0
            if self._proc is None or self._proc.poll() is not None:
                self._stop()
                started = time.perf_counter()
                self._start()
                self.start_ms = (time.perf_counter() - started) * 1000
            assert self._proc is not None and self._proc.stdin is not None
            try:
                self._proc.stdin.write((json.dumps({"query": query, "top_k": top_k}) + "\n").encode("utf-8"))
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError):
                pass  # the child is gone: reading says how it ended
            reply = self._read_line(self.spec.timeout_s)
            self.last_call_ms = reply.get("call_ms")
            if "error" in reply:
                raise _Failed(f"raised {reply.get('type') or 'an exception'}", str(reply["error"]))
            return reply.get("ok")
