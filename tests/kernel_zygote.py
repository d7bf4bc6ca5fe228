"""The server behind :mod:`warm_kernel`: imports the model's stack once, then forks one notebook kernel
(``python -m ipykernel_launcher -f CONNECTION_FILE``) per launcher that connects. Started by a launcher
(``tests/warm_kernel.py``), never by hand: ``python tests/kernel_zygote.py SOCKET OWNER_PID``.

Protocol, on a Unix socket: a launcher sends a length-prefixed pickle ``(argv, env, cwd)`` with its standard input,
output and error attached (``SCM_RIGHTS``); the server forks the kernel, which takes those streams, that folder and
that environment and leads a process group of its own; the server answers ``S <pid>`` at once and ``E <status>``
when the kernel ends (the status as :mod:`subprocess` gives it). When the launcher's connection closes first (the
kernel manager killed it), the kernel's group is killed. The server binds its socket only after the imports (a
socket that accepts is a ready server), runs one thread, and has run no torch operation when it forks. It ends,
killing what it forked, when the process that owns the suite (``OWNER_PID``) is gone.
"""

from __future__ import annotations

import builtins
import os
import pickle
import select
import signal
import socket
import struct
import sys

from cli_zygote import become, exit_as, preload, run_as_main
from warm_kernel import server_key

#: The model's stack and the kernel's own; not matplotlib, whose backend the kernel chooses (MPLBACKEND) when it
#: starts, and nothing of the package, which the notebook imports in the kernel's environment.
PRELOAD = ("torch", "transformers", "sentence_transformers", "qdrant_client", "numpy", "pandas", "yaml", "pydantic",
           "httpx", "cohere", "tqdm", "IPython", "ipykernel.kernelapp", "zmq", "tornado", "jupyter_client")
_HEADER = struct.Struct("!I")
#: Modules that choose what they are when they are imported, by whether they run in a kernel (tqdm's notebook or
#: terminal bars): the kernel imports them again itself.
_CHOSEN_AT_IMPORT = ("tqdm.autonotebook", "tqdm.auto")


class _KernelShell:
    """What an import asks of IPython's ``get_ipython()`` inside a kernel (pandas sets its display defaults by it)."""

    kernel = True
    config: dict = {"IPKernelApp": {}}


def _request(conn: socket.socket) -> tuple[list[str], dict[str, str], str, list[int]]:
    data, fds = b"", []
    while len(data) < _HEADER.size or len(data) < _HEADER.size + _HEADER.unpack(data[:_HEADER.size])[0]:
        chunk, got, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        if not chunk:
            raise EOFError
        data, fds = data + chunk, fds + got
    argv, env, cwd = pickle.loads(data[_HEADER.size:])
    return argv, env, cwd, fds


def _kernel(argv: list[str], env: dict[str, str], cwd: str, fds: list[int]) -> None:
    """In the forked child: become the kernel; never returns."""
    code = 1
    try:
        for name in _CHOSEN_AT_IMPORT:
            sys.modules.pop(name, None)
        os.setsid()  # a group of its own, as the kernel manager starts a kernel, so the whole group can be signalled
        become(cwd, env, (fds[0], fds[1], fds[2]))
        code = run_as_main("ipykernel_launcher", argv)
    finally:
        exit_as(code)


def main() -> None:
    path, owner = sys.argv[1], int(sys.argv[2])
    builtins.get_ipython = _KernelShell  # type: ignore[attr-defined]  # as the kernel's shell is while it imports
    try:
        preload(PRELOAD)
    finally:
        del builtins.get_ipython  # type: ignore[attr-defined]  # the kernel installs its own
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(path + ".new"):
        os.unlink(path + ".new")
    listener.bind(path + ".new")
    listener.listen(64)
    os.replace(path + ".new", path)
    # an environment that already holds what the imports set (copied from a process that imported torch) is the
    # same to the libraries: its launchers find this server under that name too
    alias = os.path.join(os.path.dirname(path), server_key(os.environ) + ".sock")
    if alias != path and not os.path.lexists(alias):
        os.symlink(path, alias)
    kernels: dict[int, socket.socket] = {}  # pid -> its launcher's connection
    orphans: set[int] = set()  # kernels whose launcher is gone, killed, not yet reaped
    while True:
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            break
        waiting = [listener, *(conn for pid, conn in kernels.items() if pid not in orphans)]
        for ready in select.select(waiting, [], [], 0.05)[0]:
            if ready is listener:
                conn, _ = listener.accept()
                try:
                    argv, env, cwd, fds = _request(conn)
                except (EOFError, OSError, pickle.UnpicklingError):
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for other in kernels.values():
                        other.close()
                    conn.close()
                    _kernel(argv, env, cwd, fds)
                for fd in fds:
                    os.close(fd)
                kernels[pid] = conn
                conn.sendall(f"S {pid}\n".encode())
            elif not ready.recv(1):  # the launcher is gone: so is its kernel
                for pid, conn in kernels.items():
                    if conn is ready:
                        _kill_group(pid, signal.SIGKILL)
                        orphans.add(pid)
        while kernels:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = kernels.pop(pid)
            orphans.discard(pid)
            try:
                conn.sendall(f"E {os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:
                pass
            conn.close()
    for pid in kernels:
        _kill_group(pid, signal.SIGKILL)
    try:
        os.unlink(path)
    except OSError:
        pass


def _kill_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":
    main()
