"""Nothing lost: processes killed with SIGKILL midway leave nothing corrupt.

- an ingest killed between embedding batches, re-run, converges to exactly the
  collection a clean ingest builds (no duplicates, no orphans);
- a batch run killed midway leaves earlier runs intact and its own folder
  marked incomplete in summary.json.

Embedding goes through the real cohere SDK to the loopback FakeCohere, which
lets the test hold the ingest inside an HTTP call while it kills it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import corpus
import pytest
import yaml
from fakes.cohere_server import FakeCohere
from fakes.proxies import direct_env
from run_progress import wait_for_running_cell

from retrieval_lib.stores.qdrant import VectorStore

KEY = "co-KILL-TEST-5b1e77"
COLLECTION = "killtest"
FIXTURES = corpus.FIXTURES / "notebooks"
pytestmark = pytest.mark.slow


def clean_env(**extra: str) -> dict[str, str]:
    env = direct_env({k: v for k, v in os.environ.items() if not k.startswith(("QDRANT_", "COHERE_", "EMBEDDING_"))})
    env.update(extra)
    return env


def ingest_cmd(store: Path, fake_url: str) -> tuple[list[str], dict[str, str]]:
    cmd = [sys.executable, "-m", "retrieval_lib", "ingest", "--collection", COLLECTION, "--json", "-q"]
    env = clean_env(EMBEDDING_PROVIDER="cohere", COHERE_API_KEY=KEY, COHERE_BASE_URL=fake_url,
                    QDRANT_PATH=str(store), EMBEDDING_MAX_RETRIES="0", EMBEDDING_TIMEOUT="60")
    return cmd, env


def snapshot(store: Path) -> dict[str, tuple]:
    with VectorStore.at_path(store) as vs:
        return {str(p.id): (p.payload["source_file"], p.payload["chunk_sequence"], p.payload["content_hash"],
                            p.payload["total_chunks"], p.payload["file_hash"])
                for p in vs.scroll(COLLECTION, with_payload=True)}


@pytest.mark.timeout(240)
def test_ingest_killed_midway_converges_to_the_clean_collection(tmp_path):
    with FakeCohere(dim=1024) as fake:
        cmd, env = ingest_cmd(tmp_path / "clean", fake.url)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        clean = snapshot(tmp_path / "clean")
        assert len(clean) >= 150

        # Ingest embeds 96 chunks per call across files: a sample-book ingest takes a few calls.
        assert len(fake.embed_requests) >= 2, "the clean ingest fits one call: nothing to kill midway"
        # Second store: the first embed call succeeds, the second never answers, then SIGKILL.
        before = len(fake.embed_requests)
        fake.push("ok", "hang")
        cmd, env = ingest_cmd(tmp_path / "killed", fake.url)
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 90
            while len(fake.embed_requests) - before < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert len(fake.embed_requests) - before >= 2, "the ingest never reached its second embed call"
            time.sleep(0.5)
            proc.kill()
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        partial = snapshot(tmp_path / "killed")
        assert 0 < len(partial) < len(clean), "the kill did not land midway"

        rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        summary = json.loads(rerun.stdout)
        assert summary["files_added"] + summary["files_replaced"] > 0
        converged = snapshot(tmp_path / "killed")
        assert converged == clean  # same ids, texts, sequences and hashes: no duplicates, no orphans

        again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        summary = json.loads(again.stdout)
        assert (summary["files_added"], summary["files_replaced"], summary["chunks_deleted"]) == (0, 0, 0)
        assert KEY not in done.stderr + rerun.stderr + again.stderr + rerun.stdout


@pytest.mark.timeout(180)
def test_batch_run_killed_midway_is_marked_incomplete_and_earlier_runs_survive(tmp_path):
    out = tmp_path / "out"
    fast = tmp_path / "fast.yaml"
    fast.write_text(yaml.safe_dump({"profile": "fixture", "gate_value": 1, "threshold": 1}))
    slow = tmp_path / "slow.yaml"
    slow.write_text(yaml.safe_dump({"profile": "fixture", "gate_value": 1, "threshold": 1, "sleep_s": 60}))

    def start(params: Path) -> subprocess.Popen:
        code = ("import sys; from retrieval_lib.workbook.runner import run_workbook; "
                f"r = run_workbook({str(params)!r}, notebooks='01,03', out_dir={str(out)!r}, progress=False, "
                f"notebook_dir={str(FIXTURES)!r}); sys.exit(r.exit_code)")
        return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    earlier = start(fast)
    assert earlier.wait(timeout=120) == 0
    (earlier_dir,) = list(out.iterdir())
    earlier_files = {p.relative_to(earlier_dir): p.read_bytes() for p in earlier_dir.rglob("*") if p.is_file()}

    proc = start(slow)
    try:
        # midway, by the event rather than a fixed pause: notebook 01's 60 s cell is running
        run_dir = wait_for_running_cell(proc, out, "01_passes.ipynb", "time.sleep(sleep_s)", earlier=[earlier_dir],
                                        timeout=120)
        proc.kill()  # SIGKILL: no handler runs, nothing gets to tidy up
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "incomplete"
    assert summary["passed"] is None
    after = {p.relative_to(earlier_dir): p.read_bytes() for p in earlier_dir.rglob("*") if p.is_file()}
    assert after == earlier_files
