"""The server behind :mod:`warm_cli`: imports the heavy libraries once, then forks one ``python -m retrieval_lib``
per request. Started by :class:`warm_cli.Zygote` (``python tests/cli_zygote.py``), never by hand.

Protocol, on its standard input and output (length-prefixed pickles): a request ``(id, argv, env, cwd, stdin,
stdout, stderr)`` (the last three are file paths) is answered ``("started", id, pid)`` as soon as the child is
forked, and ``("exited", id, returncode)`` when it ends (``returncode`` as :mod:`subprocess` gives it: the exit status,
or minus the signal that ended it). The server runs one thread and has run no torch operation when it forks, so a
child starts as a fresh interpreter would, only without the imports. It ends when its standard input closes.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import sys

#: What a cold ``python -m retrieval_lib`` spends its first seconds importing (about 5 s of CPU with the model's
#: stack); nothing of the package itself, which the child imports after its environment is set.
PRELOAD = ("torch", "transformers", "sentence_transformers", "qdrant_client", "numpy", "pandas", "yaml", "pydantic",
           "httpx", "cohere", "tqdm", "matplotlib", "papermill", "nbformat")
_HEADER = struct.Struct("!I")


def _read_exactly(fd: int, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _send(fd: int, message: tuple) -> None:
    blob = pickle.dumps(message)
    os.write(fd, _HEADER.pack(len(blob)) + blob)


def become(cwd: str, env: dict[str, str], streams: tuple[int, int, int]) -> None:
    """In a forked child: take ``streams`` as standard input, output and error, ``cwd`` and ``env``, and the
    standard streams, signal dispositions and ``sys.path[0]`` an interpreter started there would have."""
    import io
    import locale

    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_DFL if signum != signal.SIGPIPE else signal.SIG_IGN)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, given in enumerate(streams):
        if given != fd:
            os.dup2(given, fd)
            os.close(given)
    encoding = "utf-8" if sys.flags.utf8_mode else locale.getencoding()
    sys.stdin = sys.__stdin__ = open(0, encoding=encoding, closefd=False)
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))  # -u: the text layer writes through
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=encoding,
                                                   write_through=unbuffered)
    sys.stderr = sys.__stderr__ = open(2, "w", encoding=encoding, errors="backslashreplace",
                                       buffering=1, closefd=False)
    sys.path[0] = cwd  # as `python -m` leaves it


def run_as_main(module: str, argv: list[str]) -> int:
    """``python -m module *argv`` in this process: its exit status as the interpreter would give it (minus the
    signal for a KeyboardInterrupt that ended it), after the ``atexit`` functions and a flush of the streams."""
    import atexit
    import runpy
    import traceback

    sys.argv = ["-m", *argv]
    code = 1
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit_:
        if exit_.code is None:
            code = 0
        elif isinstance(exit_.code, int):
            code = exit_.code & 0xFF
        else:
            print(exit_.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:  # noqa: BLE001 - printed as the interpreter prints an uncaught exception
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream at exit, as the interpreter ignores it
            pass
    return code


def exit_as(code: int) -> None:
    """End this process with ``code``: an exit status, or minus a signal that it then dies of."""
    if code < 0:  # ended by a signal, as the interpreter re-raises SIGINT after printing the traceback
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF if code >= 0 else 1)


def preload(names: tuple[str, ...]) -> dict[str, str]:
    """Import ``names`` (those not installed are passed over); returns what the imports set in the environment
    themselves (torch sets KMP_INIT_AT_FORK, for one)."""
    before = dict(os.environ)
    for name in names:
        try:
            __import__(name)
        except ImportError:
            pass
    return {k: v for k, v in os.environ.items() if before.get(k) != v}


def _child(argv: list[str], env: dict[str, str], cwd: str, stdin: str | None, stdout: str, stderr: str) -> None:
    """In the forked child: become ``python -m retrieval_lib *argv`` in ``cwd`` with ``env``; never returns."""
    code = 1
    try:
        fds = tuple(os.open(path, flags, 0o600) for path, flags in (
            (stdin or os.devnull, os.O_RDONLY),
            (stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            (stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)))
        become(cwd, env, fds)  # type: ignore[arg-type]
        code = run_as_main("retrieval_lib", argv)
    finally:
        exit_as(code)


def main() -> None:
    # the protocol takes over the standard streams; anything an import prints goes to stderr
    rfd, wfd = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    _send(wfd, ("ready", os.getpid(), preload(PRELOAD)))
    children: dict[int, int] = {}
    open_ = True
    while open_ or children:
        ready, _, _ = select.select([rfd] if open_ else [], [], [], 0.02)
        if ready:
            try:
                size = _HEADER.unpack(_read_exactly(rfd, _HEADER.size))[0]
                request = pickle.loads(_read_exactly(rfd, size))
            except EOFError:
                open_ = False
                continue
            ident, *rest = request
            pid = os.fork()
            if pid == 0:
                os.close(rfd)
                os.close(wfd)
                _child(*rest)
            children[pid] = ident
            _send(wfd, ("started", ident, pid))
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            _send(wfd, ("exited", children.pop(pid), os.waitstatus_to_exitcode(status)))


if __name__ == "__main__":
    main()
