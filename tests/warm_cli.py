"""``python -m retrieval_lib`` as a real process, started warm: :func:`run_cli` is :func:`subprocess.run` of it.

A cold start of the command line spends about 5 s of CPU importing torch, transformers and sentence-transformers
before it reads its arguments, and the suite starts over a hundred of them. ``run_cli`` forks each from a server
(``tests/cli_zygote.py``, one per test worker) that imported those libraries once and nothing else: the child
is its own process (pid, environment, working folder, standard streams, exit status, file locks), imports
``retrieval_lib`` after its environment is set, and runs the package's own ``__main__``, so every setting is read
as a fresh process reads it. What a test asserts of the command line (exit codes, the one-line errors, output,
what is written) holds as it would for a cold start.

A run whose environment changes how those libraries import (``HF_*``, ``TORCH*``, ``OMP_*``, ``PYTHON*`` ...:
:data:`IMPORT_ENV`) is forked from a server started with that environment. ``WARM_CLI=0`` starts every run cold.
"""

from __future__ import annotations

import io
import locale
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from warm_kernel import IMPORT_ENV

_SERVER = Path(__file__).resolve().parent / "cli_zygote.py"
_HEADER = struct.Struct("!I")
# IMPORT_ENV: the variables that change how the preloaded libraries import; a run whose values differ gets a server
# of its own ...
#: ... except these, which the forked child applies itself ...
_APPLIED = {"PYTHONUNBUFFERED"}
#: ... and those the imports set themselves (a server says which when it is ready): a test process that imported
#: torch holds them, and an environment copied from it is the same to the libraries.
_SET_BY_IMPORTS: set[str] = set()


def _import_env(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in env.items()
                        if k.startswith(IMPORT_ENV) and k not in _APPLIED and k not in _SET_BY_IMPORTS))


class Zygote:
    """One server (:mod:`cli_zygote`) and the runs forked from it."""

    def __init__(self, key: tuple[tuple[str, str], ...]) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(IMPORT_ENV)}
        env.update(key)
        self._proc = subprocess.Popen([sys.executable, str(_SERVER)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env, cwd=_SERVER.parent)
        self._lock = threading.Lock()
        self._next = 0
        self._pids: dict[int, int] = {}
        self._codes: dict[int, int] = {}
        self._changed = threading.Condition()
        self._gone = False
        self._ready = self._receive()
        _SET_BY_IMPORTS.update(self._ready[2])
        threading.Thread(target=self._listen, daemon=True, name="cli-zygote").start()

    def _receive(self) -> tuple:
        assert self._proc.stdout is not None
        head = self._proc.stdout.read(_HEADER.size)
        if len(head) < _HEADER.size:
            raise RuntimeError(f"the CLI server ({_SERVER.name}) ended (exit {self._proc.wait()})")
        return pickle.loads(self._proc.stdout.read(_HEADER.unpack(head)[0]))

    def _listen(self) -> None:
        while True:
            try:
                message = self._receive()
            except (RuntimeError, OSError, EOFError):
                message = ("gone",)
            with self._changed:
                if message[0] == "started":
                    self._pids[message[1]] = message[2]
                elif message[0] == "exited":
                    self._codes[message[1]] = message[2]
                else:
                    self._codes.update({i: -9 for i in self._pids if i not in self._codes})
                    self._gone = True
                self._changed.notify_all()
            if message[0] == "gone":
                return

    def start(self, argv: Sequence[str], env: Mapping[str, str], cwd: str, stdin: str | None, stdout: str,
              stderr: str) -> int:
        """Fork a run; returns its id (its pid is :meth:`pid`)."""
        assert self._proc.stdin is not None
        with self._lock:
            ident, self._next = self._next, self._next + 1
            blob = pickle.dumps((ident, list(argv), dict(env), cwd, stdin, stdout, stderr))
            self._proc.stdin.write(_HEADER.pack(len(blob)) + blob)
            self._proc.stdin.flush()
        return ident

    def pid(self, ident: int, timeout: float = 60) -> int:
        with self._changed:
            if not self._changed.wait_for(lambda: ident in self._pids or ident in self._codes, timeout):
                raise RuntimeError("the CLI server did not fork a run within 60 s")
            return self._pids.get(ident, -1)

    def wait(self, ident: int, timeout: float | None) -> int | None:
        """The run's return code, or None when it is still running after ``timeout`` seconds."""
        with self._changed:
            if self._changed.wait_for(lambda: ident in self._codes, timeout):
                return self._codes.pop(ident)
            return None


_ZYGOTES: dict[tuple[tuple[str, str], ...], Zygote] = {}
_ZYGOTES_LOCK = threading.Lock()


def _zygote(env: Mapping[str, str]) -> Zygote:
    with _ZYGOTES_LOCK:
        key = _import_env(env)
        if key not in _ZYGOTES:
            zygote = _ZYGOTES[key] = Zygote(key)
            # once it has said what its imports set, the same environment has a shorter key: it is this server's too
            _ZYGOTES.setdefault(_import_env(env), zygote)
        return _ZYGOTES[key]


def run_cli(args: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
            timeout: float | None = 120, text: bool = True, input: str | bytes | None = None,
            ) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run([sys.executable, "-m", "retrieval_lib", *args], capture_output=True, ...)``, forked warm.

    Raises :class:`subprocess.TimeoutExpired` (the run killed) as ``subprocess.run`` does."""
    # bytes arguments (not UTF-8, say) reach the child as the interpreter decodes them at start
    cmd = [sys.executable, "-m", "retrieval_lib", *(os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args)]
    env = dict(os.environ if env is None else env)
    where = os.fspath(cwd) if cwd is not None else os.getcwd()
    if os.environ.get("WARM_CLI") == "0":
        return subprocess.run(cmd, env=env, cwd=where, capture_output=True, text=text, timeout=timeout, input=input)
    with tempfile.TemporaryDirectory(prefix="warm-cli-") as tmp:
        out, err, given = Path(tmp, "stdout"), Path(tmp, "stderr"), None
        if input is not None:
            given = Path(tmp, "stdin")
            given.write_bytes(input.encode() if isinstance(input, str) else input)
        zygote = _zygote(env)
        ident = zygote.start(cmd[3:], env, where, str(given) if given else None, str(out), str(err))
        code = zygote.wait(ident, timeout)
        if code is None:
            pid = zygote.pid(ident)
            if pid > 0:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            zygote.wait(ident, 30)
            raise subprocess.TimeoutExpired(cmd, timeout or 0, _read(out, text), _read(err, text))
        return subprocess.CompletedProcess(cmd, code, _read(out, text), _read(err, text))


def _read(path: Path, text: bool) -> Any:
    """A captured stream as ``subprocess.run`` returns it: bytes, or text decoded as the locale says, with universal
    newlines."""
    data = path.read_bytes() if path.exists() else b""
    return io.TextIOWrapper(io.BytesIO(data), encoding=locale.getpreferredencoding(False)).read() if text else data
