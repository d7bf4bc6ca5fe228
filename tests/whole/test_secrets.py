"""Secrets never leave the environment.

With recognisable fake COHERE_API_KEY and QDRANT_API_KEY set and verbose logging
on, ingest (Cohere path: the real SDK against the loopback FakeCohere) and every
failure path run through the CLI; then every file they wrote (the store and its
metadata) and every captured stdout/stderr is scanned for the keys, raw and
base64-encoded. The count of files scanned is printed. The whole batch workbook's
files and logs are scanned for both keys by ``test_run_bill``, which runs it once
for both checks.
"""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import pytest
from fakes.cohere_server import FakeCohere
from fakes.proxies import direct_env
from fakes.tcp import BlackholeServer, closed_port
from warm_cli import run_cli

COHERE_KEY = "co-SCAN-ME-8d41f0c2a7"
QDRANT_KEY = "qd-SCAN-ME-5e93b1d6f4"
NEEDLES = [k.encode() for k in (COHERE_KEY, QDRANT_KEY)]
NEEDLES += [base64.b64encode(k.encode()) for k in (COHERE_KEY, QDRANT_KEY)]

pytestmark = pytest.mark.slow


def env(**extra: str) -> dict[str, str]:
    base = direct_env({k: v for k, v in os.environ.items() if not k.startswith(("QDRANT_", "COHERE_", "EMBEDDING_"))})
    base.update(COHERE_API_KEY=COHERE_KEY, QDRANT_API_KEY=QDRANT_KEY)
    base.update(extra)
    return base


def cli(*args: str, timeout: float = 300, **extra: str) -> subprocess.CompletedProcess:
    return run_cli(args, env=env(**extra), timeout=timeout, text=False)


def hits(blob: bytes) -> list[bytes]:
    return [n for n in NEEDLES if n in blob]


def scan_tree(root: Path) -> tuple[int, dict[str, list[bytes]]]:
    found, count = {}, 0
    for path in root.rglob("*"):
        if path.is_file():
            count += 1
            h = hits(path.read_bytes())
            if h:
                found[str(path.relative_to(root))] = h
    return count, found


@pytest.mark.timeout(900)
def test_ingest_and_failure_paths_never_reveal_the_keys(tmp_path):
    store = tmp_path / "store"
    captured: list[bytes] = []
    with FakeCohere(dim=1024) as fake:
        cohere = dict(EMBEDDING_PROVIDER="cohere", COHERE_BASE_URL=fake.url, QDRANT_PATH=str(store),
                      EMBEDDING_MAX_RETRIES="1", EMBEDDING_TIMEOUT="2", EMBEDDING_RETRY_BUDGET="3")
        ingest = cli("-v", "ingest", "-q", **cohere)
        assert ingest.returncode == 0, ingest.stderr.decode()[-2000:]
        captured += [ingest.stdout, ingest.stderr]

        assert fake.embed_requests, "ingest never called the Cohere path"
        assert all(r["headers"].get("authorization") == f"Bearer {COHERE_KEY}" for r in fake.embed_requests)

        # Failure paths: each through the CLI with both keys set and verbose logging on.
        cases = []
        for behaviour in [("status", 401), ("status", 403), ("status", 429), ("status", 500), ("status", 503),
                          "hang", "malformed", ("dim", 12), "count_mismatch"]:
            fake.always(behaviour)
            cases.append(cli("-v", "search", "What is ROS2?", timeout=60, **cohere))
        fake.always(None)
        cases.append(cli("-v", "ingest", "-q", "--collection", "fresh", timeout=60,
                         **{**cohere, "COHERE_BASE_URL": f"http://127.0.0.1:{closed_port()}"}))
    with BlackholeServer() as hole:
        cases.append(cli("-v", "stats", timeout=60, QDRANT_URL=hole.url, QDRANT_TIMEOUT="1"))
    cases.append(cli("-v", "search", "x", timeout=60, QDRANT_URL=f"http://127.0.0.1:{closed_port()}",
                     EMBEDDING_PROVIDER="cohere", COHERE_BASE_URL="http://127.0.0.1:9"))
    cases.append(cli("-v", "search", "x", timeout=60, QDRANT_URL=f"http://user:{QDRANT_KEY}@127.0.0.1:9"))
    cases.append(cli("-v", "search", "x", timeout=60, QDRANT_URL=f"https://127.0.0.1:9/?api_key={QDRANT_KEY}"))
    for case in cases:
        assert case.returncode in (2, 3), case.stderr.decode()
        captured += [case.stdout, case.stderr]

    files_store, found_store = scan_tree(store)
    leaks = {f"stream {i}": hits(blob) for i, blob in enumerate(captured) if hits(blob)}
    print(f"\nsecret scan: {files_store} files and {len(captured)} captured streams, {len(cases)} failure paths")
    assert files_store >= 2  # the collection and its metadata database at least
    assert not found_store and not leaks, (found_store, leaks)
