"""The suite's warm command line (``warm_cli.run_cli``) is the command line: what a test reads of a warm run is
what a cold ``python -m retrieval_lib`` gives (exit status, standard output and error), in the run's own working
folder and environment, and a run past its timeout is killed as ``subprocess.run`` kills it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest
from fakes.proxies import direct_env
from fakes.tcp import BlackholeServer
from warm_cli import run_cli

pytestmark = pytest.mark.timeout(180)


def _env(**extra: str) -> dict[str, str]:
    env = direct_env({k: v for k, v in os.environ.items() if not k.startswith(("QDRANT_", "COHERE_", "EMBEDDING_"))})
    env.update(extra)
    return env


def _cold(args: list[str], env: dict[str, str], cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "retrieval_lib", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("args", [
    ["--help"],
    ["search", "   "],  # exit 2, one line
    ["run", "--params", "no-such-profile.yaml"],  # a path read from the run's own folder
    ["check", "no_such_check"],  # argparse's own error and its suggestion
], ids=["help", "blank-query", "relative-path", "unknown-check"])
def test_a_warm_run_gives_what_a_cold_one_gives(args, tmp_path):
    env = _env(QDRANT_PATH=str(tmp_path / "store"))
    warm, cold = run_cli(args, env=env, cwd=tmp_path), _cold(args, env, tmp_path)
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert warm.returncode in (0, 2) and "Traceback" not in warm.stderr


def test_the_run_reads_its_own_environment(tmp_path):
    env = _env(QDRANT_URL="http://127.0.0.1:9", QDRANT_TIMEOUT="2")
    proc = run_cli(["search", "x"], env=env, cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "127.0.0.1:9" in proc.stderr and proc.stderr.count("\n") == 1


def test_a_run_past_its_timeout_is_killed(tmp_path):
    """A run that waits on a server that never answers is killed at its timeout: TimeoutExpired, and the
    connection it held is closed (the process is gone)."""
    with BlackholeServer() as hole:
        env = _env(QDRANT_URL=hole.url, QDRANT_TIMEOUT="60")
        with pytest.raises(subprocess.TimeoutExpired):
            run_cli(["stats"], env=env, cwd=tmp_path, timeout=8)
        assert hole.connections >= 1, "the run never reached the server"
        deadline = time.monotonic() + 10
        while _held(hole) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _held(hole), "the timed-out run still holds its connection"


def _held(hole: BlackholeServer) -> bool:
    """Whether a client still holds a connection the server accepted: what it sent is read off, then a closed
    connection reads as end of file and an open one would block."""
    held = False
    for conn in list(hole._conns):
        try:
            while conn.recv(65536, socket.MSG_DONTWAIT):
                pass
        except BlockingIOError:
            held = True
        except OSError:
            pass
    return held
