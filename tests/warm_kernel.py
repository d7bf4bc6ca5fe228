"""The suite's notebook kernels, started warm: the project's kernel (``retrieval-lib``) as the kernel manager
launches it, only without the 5-7 s of CPU each spends importing torch, transformers and sentence-transformers.

:func:`install` (called by ``tests/conftest.py``, and by ``notebooks/conftest.py`` when ``make test`` runs nbval)
puts a kernelspec of the same name first on ``JUPYTER_PATH`` for the suite and every process it starts (the
command line, papermill, nbval). Its command is this file as a launcher: it forks the kernel from a server
(``tests/kernel_zygote.py``, one per environment that changes how those libraries import, started by the first
launcher that needs it) and stands for it to the kernel manager until it ends: the manager's signals (an
interrupt, a kill of the group) reach the kernel's own group, the kernel's exit status is the launcher's, and a
launcher killed outright takes its kernel with it. The kernel is ``python -m ipykernel_launcher -f FILE`` in the
launcher's folder, environment and standard streams; it imports ``retrieval_lib`` and matplotlib itself.

Where the warm path cannot serve (no server would start, ``WARM_KERNEL=0``), the launcher becomes the cold kernel
(``exec``) with the project kernelspec's own command.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Mapping

KERNEL_NAME = "retrieval-lib"
_HERE = os.path.dirname(os.path.abspath(__file__))
_SERVER = os.path.join(_HERE, "kernel_zygote.py")
#: Environment variables read when the preloaded libraries import or the interpreter starts (their caches,
#: threads, CPU kernels, offline switches): an environment whose values differ gets a server of its own.
IMPORT_ENV = ("HF_", "HUGGINGFACE", "TRANSFORMERS", "SENTENCE_TRANSFORMERS", "TORCH", "ATEN_", "OMP_", "MKL_",
              "KMP_", "OPENBLAS", "TOKENIZERS", "CUDA", "PYTHON", "LD_", "MPL", "XDG_", "HOME", "TMPDIR", "LANG",
              "LC_", "TQDM")
_START_S = 180.0  # a server's imports on a loaded machine


def server_key(env: Mapping[str, str]) -> str:
    """The name of the server an environment's kernels are forked from."""
    wanted = sorted((k, v) for k, v in env.items() if k.startswith(IMPORT_ENV))
    return hashlib.sha256(repr(wanted).encode()).hexdigest()[:20]


def install() -> None:
    """Put the warm ``retrieval-lib`` kernelspec first on ``JUPYTER_PATH`` for this process and its children (once:
    worker processes inherit it). Nothing when ``WARM_KERNEL=0`` or the project kernel is not installed."""
    if os.environ.get("WARM_KERNEL") == "0" or os.environ.get("WARM_KERNEL_DIR"):
        return
    import atexit
    import json
    import shutil
    import tempfile

    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        return
    folder = tempfile.mkdtemp(prefix="warm-kernel-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    data = spec.to_dict()
    data["argv"] = [sys.executable, os.path.abspath(__file__), "--", *data["argv"]]
    os.makedirs(os.path.join(folder, "kernels", KERNEL_NAME))
    with open(os.path.join(folder, "kernels", KERNEL_NAME, "kernel.json"), "w", encoding="utf-8") as out:
        json.dump(data, out, indent=1)
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (folder, os.environ.get("JUPYTER_PATH")) if p)
    os.environ["WARM_KERNEL_DIR"] = folder
    os.environ["WARM_KERNEL_OWNER"] = str(os.getpid())


def _try_connect(path: str):
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        return sock
    except OSError:
        sock.close()
        return None


def _server(folder: str, owner: str, interpreter: list[str]):
    """A connection to this environment's server, started (under a lock, so once) when there is none; None when
    it cannot start."""
    import fcntl
    import subprocess
    import time

    name = server_key(os.environ)
    path = os.path.join(folder, name + ".sock")
    sock = _try_connect(path)
    if sock is not None:
        return sock
    with open(os.path.join(folder, name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sock = _try_connect(path)
        if sock is not None:
            return sock
        with open(os.path.join(folder, name + ".log"), "ab") as log:
            server = subprocess.Popen([*interpreter, _SERVER, path, owner], stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=log, cwd=_HERE, start_new_session=True)
        deadline = time.monotonic() + _START_S
        while time.monotonic() < deadline and server.poll() is None:
            sock = _try_connect(path)
            if sock is not None:
                return sock
            time.sleep(0.05)
        server.kill()
        return None


def launch(argv: list[str]) -> None:
    """``argv``: ``-- COLD_COMMAND...`` (the project kernelspec's command). Never returns."""
    cold = argv[argv.index("--") + 1:]
    folder, owner = os.environ.get("WARM_KERNEL_DIR"), os.environ.get("WARM_KERNEL_OWNER")
    m = cold.index("-m") if "-m" in cold else -1
    if (os.environ.get("WARM_KERNEL") == "0" or not folder or not owner or not os.path.isdir(folder)
            or m < 0 or cold[m + 1] != "ipykernel_launcher"):
        os.execv(cold[0], cold)
    sock = _server(folder, owner, cold[:m])
    if sock is None:
        os.execv(cold[0], cold)
    _stand_for_kernel(sock, cold[m + 2:])


def _stand_for_kernel(sock, args: list[str]) -> None:
    import pickle
    import select
    import signal
    import socket
    import struct

    blob = pickle.dumps((args, dict(os.environ), os.getcwd()))
    socket.send_fds(sock, [struct.pack("!I", len(blob)) + blob], [0, 1, 2])
    parent, buffered = os.getppid(), b""

    def line() -> bytes | None:
        nonlocal buffered
        while b"\n" not in buffered:
            if not select.select([sock], [], [], 1.0)[0]:
                if os.getppid() != parent and pid:  # the kernel manager is gone: so is its kernel, as ipykernel's
                    _signal(signal.SIGKILL)          # own parent poller would end it
                continue
            chunk = sock.recv(64)
            if not chunk:
                return None
            buffered += chunk
        message, buffered = buffered.split(b"\n", 1)
        return message

    def _signal(signum: int, _frame=None) -> None:
        try:
            os.killpg(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    pid = 0
    started = line()
    if started is None or not started.startswith(b"S "):
        os._exit(1)
    pid = int(started.split()[1])
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, _signal)
    ended = line()
    code = int(ended.split()[1]) if ended and ended.startswith(b"E ") else -signal.SIGKILL
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


if __name__ == "__main__":
    launch(sys.argv[1:])
