"""The service notebook 08 validates: one at a URL, or this project's own, started as a child process
(``python -m retrieval_lib serve``) on a free loopback port for the notebook and the tests.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from retrieval_lib.config import Settings
from retrieval_lib.errors import ConfigurationError

__all__ = ["free_port", "ServiceProcess", "own_service", "LOOPBACK"]

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port nothing listens on right now (the kernel's choice for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class ServiceProcess:
    """``python -m retrieval_lib serve`` as a child process on a free loopback port.

    ``with ServiceProcess(env={...}) as svc: svc.url ...``; on exit it is stopped (SIGTERM, then SIGKILL after
    ``stop_timeout``). ``startup_seconds`` is the time from launch to the first ``/health`` 200 (seed 003 SC-001),
    None if never healthy. ``env`` goes on top of this process's environment (``inherit_env``) or alone; ``args``
    are extra options for ``serve`` (``["--log-file", "q.log"]``); ``require_healthy``: wait for a 200, not just
    any answer (a 503 from a service whose dependency is down is an answer).
    """

    def __init__(self, *, env: Mapping[str, str] | None = None, inherit_env: bool = True, args: Sequence[str] = (),
                 startup_timeout: float = 60.0, require_healthy: bool = True, stop_timeout: float = 10.0) -> None:
        self.port = free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        self.env = {**(os.environ if inherit_env else {}), **(env or {})}
        self.args = list(args)
        self.startup_timeout = startup_timeout
        self.require_healthy = require_healthy
        self.stop_timeout = stop_timeout
        self.startup_seconds: float | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None

    def start(self) -> ServiceProcess:
        """Launch and wait until ``/health`` answers (200 when ``require_healthy``).

        Raises:
            ConfigurationError: the process exited, or did not answer in time (its last output is quoted).
        """
        import httpx

        self._stderr = tempfile.TemporaryFile()
        command = [sys.executable, "-m", "retrieval_lib", "serve", "--host", LOOPBACK, "--port", str(self.port),
                   *self.args]
        t0 = time.perf_counter()
        self.process = subprocess.Popen(command, env=self.env, stdin=subprocess.DEVNULL, stdout=self._stderr,
                                        stderr=self._stderr)
        atexit.register(self.stop)  # a kernel that dies mid-notebook must not leave the service running
        deadline = t0 + self.startup_timeout
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while time.perf_counter() < deadline:
                if self.process.poll() is not None:
                    self._fail(f"the service exited with code {self.process.returncode} before answering")
                try:
                    status = client.get(self.url + "/health").status_code
                except httpx.TransportError:
                    status = None
                if status == 200:
                    self.startup_seconds = time.perf_counter() - t0
                    return self
                if status is not None and not self.require_healthy:
                    return self
                time.sleep(0.05)
        self._fail(f"/health did not answer {'200 ' if self.require_healthy else ''}within {self.startup_timeout:g} s")
        raise AssertionError("unreachable")  # pragma: no cover - _fail raises

    def output(self) -> str:
        """What the child wrote to stdout and stderr so far (its query log included)."""
        if self._stderr is None:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")

    def _fail(self, why: str) -> None:
        tail = "\n".join(self.output().strip().splitlines()[-5:])
        self.stop()
        raise ConfigurationError(f"{why}; its last output:\n{tail}", option="api_url")

    def stop(self) -> int | None:
        """Stop the child (gracefully first); returns its exit code."""
        proc = self.process
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def close(self) -> None:
        self.stop()
        atexit.unregister(self.stop)
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()


@contextmanager
def own_service(settings: Settings, *, startup_timeout: float = 120.0) -> Iterator[ServiceProcess]:
    """The project's own service for the duration of a ``with`` block, on a free loopback port.

    An embedded store can be opened by one process only, and the caller (a notebook)
    keeps its own: the service gets a copy of the folder (its SQLite metadata included),
    removed afterwards. A server store is shared as it is.

    Raises:
        ConfigurationError: the embedded store does not exist, or the service did not start.
    """
    if not settings.qdrant_url and not Path(settings.qdrant_path).is_dir():
        raise ConfigurationError(f"the embedded store {settings.qdrant_path} does not exist: run `make sample` "
                                 "(or `python -m retrieval_lib ingest`), or set QDRANT_PATH", variable="QDRANT_PATH")
    with tempfile.TemporaryDirectory(prefix="retrieval-api-") as tmp:
        env: dict[str, str] = {}
        if not settings.qdrant_url:
            copy = Path(tmp) / "store"
            shutil.copytree(settings.qdrant_path, copy, ignore=shutil.ignore_patterns(".lock"))
            env["QDRANT_PATH"] = str(copy)
        with ServiceProcess(env=env, startup_timeout=startup_timeout) as svc:
            yield svc
