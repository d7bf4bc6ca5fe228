"""The workbook never writes to a collection it did not build.

A collection built the way a team's pipeline builds one (md5 ids, ``text/url/title/chunk_index``, no model name)
is fingerprinted (points, payloads, vectors, payload indexes, config), then ``inspect --write-profile`` and every
notebook's check with that profile go over it, then it is fingerprinted again: the two must be identical.
``ingest`` must refuse it, and no hint may tell its owners to ``--recreate`` it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from corpus import DOCS
from fakes.proxies import direct_env
from shapes import build, md5_text_url_title
from warm_cli import run_cli

from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.stores import VectorStore

COLLECTION = "their_book"
pytestmark = pytest.mark.slow
#: The fewest repeats, rounds and concurrent requests each notebook takes (a profile's keys, as YAML values).
LIGHT = {"repeats": 2, "latency_rounds": 1, "concurrent_queries": 8, "concurrency": 2, "api_repeats": 1,
         "api_concurrency": "[2]", "api_latency_rounds": 1, "ann_queries": 20, "ann_slice_queries": 5}


def fingerprint(folder: Path, collection: str) -> str:
    """A digest of everything a write could change: every point's id, payload and vector, the payload indexes,
    and the collection's configuration."""
    store = VectorStore.at_path(folder)
    try:
        info = store.client.get_collection(collection)
        h = hashlib.sha256()
        h.update(json.dumps(info.config.model_dump(mode="json"), sort_keys=True).encode())
        h.update(json.dumps(sorted((info.payload_schema or {}).keys())).encode())
        points = sorted(store.client.scroll(collection, limit=10_000, with_payload=True, with_vectors=True)[0],
                        key=lambda p: str(p.id))
        for p in points:
            h.update(str(p.id).encode())
            h.update(json.dumps(p.payload, sort_keys=True).encode())
            h.update(json.dumps([round(x, 7) for x in p.vector]).encode())
        return f"{len(points)}:{h.hexdigest()}"
    finally:
        store.close()


def _cli(*args: str, env: dict[str, str], timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return run_cli(args, env=env, timeout=timeout, cwd=PROJECT_ROOT)


@pytest.fixture(scope="module")
def their_store(tmp_path_factory, embedder):
    folder = tmp_path_factory.mktemp("theirs") / "store"
    store = VectorStore.at_path(folder)
    build(store, COLLECTION, md5_text_url_title, embedder.embed_documents([d["content"] for d in DOCS]))
    store.close()
    env = {**direct_env(os.environ), "QDRANT_PATH": str(folder), "QDRANT_COLLECTION_NAME": COLLECTION}
    for name in ("QDRANT_URL", "DATABASE_URL", "EMBEDDING_PROVIDER", "EMBEDDING_MODEL", "PAYLOAD_FIELDS"):
        env.pop(name, None)
    return folder, env


def test_every_check_leaves_a_foreign_collection_exactly_as_it_was(their_store, tmp_path, monkeypatch, capsys):
    """Every notebook's check, through ``check NAME`` (the one entry its notebook calls too), in one process: the
    notebooks add only their parameters and views, so this covers what a full ``run`` reads without starting 17
    kernels (the full run through papermill is test_run_bill's)."""
    from retrieval_lib.cli.main import main
    from retrieval_lib.workbook.registry import NOTEBOOKS

    folder, env = their_store
    before = fingerprint(folder, COLLECTION)
    profile = tmp_path / "their_book.yaml"
    inspected = _cli("inspect", "--write-profile", str(profile), env=env)
    assert inspected.returncode == 0, inspected.stderr
    assert "built by another pipeline (read-only here)" in inspected.stdout
    assert "content               <- text" in inspected.stdout
    # what each check judges does not depend on how many rounds it times or how many concurrent requests it
    # sends, so those are cut to the least
    with profile.open("a", encoding="utf-8") as f:
        f.write("".join(f"{k}: {v}\n" for k, v in LIGHT.items()))
    for name in list(os.environ):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    gates, said = [], [inspected.stdout, inspected.stderr]
    for spec in NOTEBOOKS:
        if spec.name == "compare":  # compares two runs' files: it reads no collection
            continue
        code = main(["check", spec.name, "--params", str(profile), "--out", str(tmp_path / spec.name), "--json"])
        out, err = capsys.readouterr()
        assert code in (0, 1), (spec.name, err)  # gates may fail; no check may raise
        result = json.loads(out)
        gates += result["gates"]
        said += [out, err]
    assert fingerprint(folder, COLLECTION) == before
    na = [g for g in gates if g["passed"] is None]
    assert na and all(g["detail"].startswith("not applicable: ") and len(g["detail"]) > 30 for g in na)
    assert "--recreate" not in "".join(said)
    # 07's size gate judges the collection by its own count (13 points), not by the sample book's 150
    assert yaml.safe_load(profile.read_text())["min_points"] == 13
    size = [g for g in gates if g["name"] == "at least 13 points"]
    assert len(size) == 1 and size[0]["passed"] is True


def test_ingest_refuses_a_foreign_collection_and_names_the_override(their_store):
    folder, env = their_store
    before = fingerprint(folder, COLLECTION)
    for args in (("ingest", "--collection", COLLECTION, "-q"), ("ingest", "--collection", COLLECTION, "--recreate")):
        proc = _cli(*args, env=env)
        assert proc.returncode == 2, proc.stderr
        assert "--allow-foreign-collection" in proc.stderr and proc.stderr.count("\n") == 1
    assert fingerprint(folder, COLLECTION) == before
