"""Ingest on small docs trees: payloads, incrementality, convergence, refusals, the CLI.

Every test but the CLI one uses ``FakeEmbedder.hashed()`` (``tests/fakes/embedders.py``), a deterministic hashed
bag-of-words embedder that also records what it was asked to embed, so "writes
nothing" can be asserted as "embedded nothing, wrote nothing, payloads unchanged".
Stores are in memory or in ``tmp_path``; the project's own ``.qdrant`` is never opened.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fakes.embedders import FakeEmbedder, Killed
from warm_cli import run_cli

from retrieval_lib import VectorStore
from retrieval_lib.collection.ours import point_id_for
from retrieval_lib.embedding.providers import Embedder
from retrieval_lib.errors import DocumentError, ModelMismatchError
from retrieval_lib.ingest import IngestSummary, ingest, prepare_documents
from retrieval_lib.models import PAYLOAD_FIELDS

pytestmark = pytest.mark.timeout(60)

BASE = "https://docs.test"
COLL = "book"
# Small chunks so a page of a few paragraphs makes several chunks.
KW: dict[str, Any] = dict(base_url=BASE, max_tokens=60, overlap_tokens=10, progress=False)


def test_hash_embedder_satisfies_the_protocol():
    e = FakeEmbedder.hashed()
    assert isinstance(e, Embedder)
    a, b = e.embed_documents(["ROS 2 nodes", "pizza dough"])
    assert len(a) == e.dimension and abs(sum(x * x for x in a) - 1) < 1e-9
    assert a != b and e.embed_queries(["ROS 2 nodes"])[0] == a


# --------------------------------------------------------------------------- docs trees

def prose(topic: str, n: int, start: int = 0) -> str:
    """``n`` distinct sentences about ``topic``."""
    return " ".join(f"Step {i} of the {topic} procedure checks item {i} and records result {i * 7}."
                    for i in range(start, start + n))


INTRO = f"""---
title: Welcome Aboard
slug: /welcome
---

# Welcome Aboard

{prose("welcome", 4)}

## Who this is for

{prose("audience", 4)}
"""

INSTALL = f"""---
id: setup-guide
title: Installing the Robot Stack
---

# Installing the Robot Stack

{prose("install", 3)}

## Adding the repository

{prose("repository", 6)}

## Verifying

{prose("verify", 6)}
"""

INSTALL_SHORT = f"""---
id: setup-guide
title: Installing the Robot Stack
---

# Installing the Robot Stack

{prose("install", 5, start=50)}
"""

USAGE = f"""# Using the Stack

{prose("usage", 5)}

## Running a node

```bash
ros2 run demo_nodes_cpp talker --ros-args -p rate:=10
```

{prose("running", 3)}
"""

EXTRA = f"""---
title: Extra Page
---

{prose("extra", 8)}

## More

{prose("more", 8)}
"""

DOCS = {
    "intro.md": INTRO,
    "guide/01-install.md": INSTALL,
    "guide/02-usage.md": USAGE,
}
EXPECTED_URLS = {
    "intro.md": f"{BASE}/docs/welcome",                  # absolute slug
    "guide/01-install.md": f"{BASE}/docs/guide/setup-guide",  # id
    "guide/02-usage.md": f"{BASE}/docs/guide/usage",      # number prefix dropped
}
EXPECTED_TITLES = {
    "intro.md": "Welcome Aboard",
    "guide/01-install.md": "Installing the Robot Stack",
    "guide/02-usage.md": "Using the Stack",  # from the H1: no front matter
}


def write_docs(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
    return root


def points(store: VectorStore, collection: str = COLL) -> dict[str, dict[str, Any]]:
    """point id -> payload (with the vector under ``_vector``)."""
    out = {}
    for p in store.scroll(collection, with_payload=True, with_vectors=True):
        out[str(p.id)] = {**(p.payload or {}), "_vector": [round(x, 6) for x in p.vector]}
    return out


def by_file(snapshot: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for pid, payload in snapshot.items():
        out.setdefault(payload["source_file"], {})[pid] = payload
    return out


def comparable(snapshot: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The snapshot without the write time (which a clean build cannot share)."""
    return {pid: {k: v for k, v in p.items() if k != "processing_timestamp"} for pid, p in snapshot.items()}


def expected_ids(snapshot: dict[str, dict[str, Any]]) -> set[str]:
    """The ids a consistent collection must hold: 0..total_chunks-1 for each file present."""
    totals = {p["source_file"]: p["total_chunks"] for p in snapshot.values()}
    return {point_id_for(f, i) for f, total in totals.items() for i in range(total)}


def assert_consistent(snapshot: dict[str, dict[str, Any]]) -> None:
    """No duplicates, no orphans, one total per file, ids from (source_file, chunk_sequence)."""
    keys = [(p["source_file"], p["chunk_sequence"]) for p in snapshot.values()]
    assert len(keys) == len(set(keys)), "duplicate (source_file, chunk_sequence)"
    for f, pts in by_file(snapshot).items():
        assert len({p["total_chunks"] for p in pts.values()}) == 1, f"{f}: mixed total_chunks"
        assert len({p["file_hash"] for p in pts.values()}) == 1, f"{f}: mixed file versions"
    assert set(snapshot) == expected_ids(snapshot)


def clean_build(docs: Path, **kw: Any) -> dict[str, dict[str, Any]]:
    with VectorStore.in_memory() as fresh:
        ingest(fresh, FakeEmbedder.hashed(), COLL, docs, **{**KW, **kw})
        return points(fresh)


class WriteSpy:
    """Records upserts and non-empty deletes made through a VectorStore."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, store: VectorStore) -> None:
        self.upserts: list[int] = []
        self.deletes: list[list[str]] = []
        real_upsert, real_delete = store.upsert, store.delete

        def upsert(collection, pts):
            pts = list(pts)
            self.upserts.append(len(pts))
            return real_upsert(collection, pts)

        def delete(collection, ids):
            if list(ids):
                self.deletes.append(list(ids))
            return real_delete(collection, ids)

        monkeypatch.setattr(store, "upsert", upsert)
        monkeypatch.setattr(store, "delete", delete)


@pytest.fixture
def store():
    with VectorStore.in_memory() as s:
        yield s


@pytest.fixture
def docs(tmp_path) -> Path:
    return write_docs(tmp_path / "docs", DOCS)


# --------------------------------------------------------------------------- payloads

def test_payload_fields_are_complete_and_correct(store, docs):
    emb = FakeEmbedder.hashed()
    before = datetime.now(UTC).replace(microsecond=0)
    summary = ingest(store, emb, COLL, docs, **KW)
    after = datetime.now(UTC)
    snap = points(store)

    assert isinstance(summary, IngestSummary)
    assert summary.files_added == 3 and summary.files_replaced == summary.files_deleted == 0
    assert summary.chunks_added == summary.chunks_total == len(snap)
    assert summary.files_skipped == 0 and summary.warnings == []
    files = by_file(snap)
    assert set(files) == set(DOCS)
    assert len(files["guide/01-install.md"]) >= 3, "the test needs a multi-chunk file"
    # documents were embedded as documents, not as queries, one text per chunk
    assert emb.query_texts == [] and len(emb.document_texts) == len(snap)

    for pid, p in snap.items():
        for name in PAYLOAD_FIELDS:
            assert p.get(name) not in (None, ""), f"{name} missing in {p['chunk_id']}"
        f, seq = p["source_file"], p["chunk_sequence"]
        assert p["content"].strip()
        assert pid == point_id_for(f, seq)
        assert p["chunk_id"] == f"{f}#{seq}"
        assert p["source_url"] == EXPECTED_URLS[f]
        assert p["title"] == EXPECTED_TITLES[f]
        assert p["content_hash"] == hashlib.sha256(p["content"].encode("utf-8")).hexdigest()
        assert p["total_chunks"] == len(files[f])
        assert p["token_count"] == emb.count_tokens(p["content"])
        assert p["model_version"] == emb.model
        stamp = datetime.fromisoformat(p["processing_timestamp"])
        assert stamp.tzinfo is not None and before <= stamp <= after + timedelta(seconds=1)
        # the chunk starts with its section's heading (or is the intro under the H1)
        first = p["content"].split("\n", 1)[0]
        assert p["section_title"] in first or p["section_title"] == p["title"]
    for pts in files.values():
        assert sorted(p["chunk_sequence"] for p in pts.values()) == list(range(len(pts)))
    sections = {p["section_title"] for p in files["guide/01-install.md"].values()}
    assert {"Adding the repository", "Verifying"} <= sections


def test_chunk_ids_are_deterministic_across_stores(docs):
    with VectorStore.in_memory() as a, VectorStore.in_memory() as b:
        ingest(a, FakeEmbedder.hashed(), COLL, docs, **KW)
        ingest(b, FakeEmbedder.hashed(), "other_name", docs, **KW)
        pa, pb = points(a), points(b, "other_name")
    assert set(pa) == set(pb)
    assert comparable(pa) == comparable(pb)


def test_prepare_documents_writes_nothing_and_matches_ingest(store, docs):
    emb = FakeEmbedder.hashed()
    prepared, hashes, skipped = prepare_documents(docs, emb, base_url=BASE, max_tokens=60, overlap_tokens=10)
    assert emb.document_texts == [] and skipped == [] and set(hashes) == set(DOCS)
    ingest(store, emb, COLL, docs, **KW)
    snap = points(store)
    assert {c.point_id for cs in prepared.values() for c in cs} == set(snap)


# --------------------------------------------------------------------------- incremental

def test_second_ingest_writes_nothing(store, docs, monkeypatch):
    emb = FakeEmbedder.hashed()
    ingest(store, emb, COLL, docs, **KW)
    before = points(store)
    emb.reset()
    spy = WriteSpy(monkeypatch, store)

    summary = ingest(store, emb, COLL, docs, **KW)

    assert (summary.files_added, summary.files_replaced, summary.files_deleted) == (0, 0, 0)
    assert (summary.chunks_added, summary.chunks_replaced, summary.chunks_deleted) == (0, 0, 0)
    assert summary.files_unchanged == 3 and summary.chunks_total == len(before)
    assert emb.document_texts == [] and emb.document_calls == 0
    assert spy.upserts == [] and spy.deletes == []
    assert points(store) == before  # processing_timestamp included


def test_changed_file_is_the_only_one_reembedded(store, docs):
    emb = FakeEmbedder.hashed()
    ingest(store, emb, COLL, docs, **KW)
    before = by_file(points(store))
    emb.reset()
    (docs / "guide/02-usage.md").write_text(USAGE.replace("talker", "listener"), encoding="utf-8")

    summary = ingest(store, emb, COLL, docs, **KW)

    after = by_file(points(store))
    assert summary.files_replaced == 1 and summary.files_unchanged == 2
    assert summary.files_added == summary.files_deleted == 0
    assert summary.chunks_replaced == len(after["guide/02-usage.md"])
    assert len(emb.document_texts) == len(after["guide/02-usage.md"])
    assert all("Using the Stack" in t for t in emb.document_texts)
    assert any("listener" in p["content"] for p in after["guide/02-usage.md"].values())
    assert not any("talker" in p["content"] for p in after["guide/02-usage.md"].values())
    for f in ("intro.md", "guide/01-install.md"):
        assert after[f] == before[f]  # untouched, timestamps included
    assert_consistent(points(store))


def test_shrinking_file_deletes_its_stale_tail(store, docs):
    ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
    old = by_file(points(store))["guide/01-install.md"]
    (docs / "guide/01-install.md").write_text(INSTALL_SHORT, encoding="utf-8")

    summary = ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)

    snap = points(store)
    new = by_file(snap)["guide/01-install.md"]
    assert 0 < len(new) < len(old)
    assert summary.files_replaced == 1
    assert summary.chunks_deleted == len(old) - len(new)
    assert summary.chunks_replaced == len(new) and summary.chunks_added == 0
    assert set(new) == {point_id_for("guide/01-install.md", i) for i in range(len(new))}
    assert all(p["total_chunks"] == len(new) for p in new.values())
    assert_consistent(snap)
    assert comparable(snap) == comparable(clean_build(docs))


def test_growing_file_adds_chunks(store, docs):
    (docs / "guide/01-install.md").write_text(INSTALL_SHORT, encoding="utf-8")
    ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
    old = by_file(points(store))["guide/01-install.md"]
    (docs / "guide/01-install.md").write_text(INSTALL, encoding="utf-8")

    summary = ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)

    new = by_file(points(store))["guide/01-install.md"]
    assert summary.chunks_added == len(new) - len(old) > 0
    assert summary.chunks_replaced == len(old) and summary.chunks_deleted == 0
    assert comparable(points(store)) == comparable(clean_build(docs))


def test_removed_file_loses_its_points(store, docs):
    ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
    before = by_file(points(store))
    (docs / "intro.md").unlink()

    summary = ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)

    after = by_file(points(store))
    assert "intro.md" not in after
    assert summary.files_deleted == 1 and summary.chunks_deleted == len(before["intro.md"])
    assert summary.files_unchanged == 2 and summary.files_added == summary.files_replaced == 0
    assert after == {f: before[f] for f in ("guide/01-install.md", "guide/02-usage.md")}


def test_new_file_is_added_without_touching_the_others(store, docs):
    ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
    before = by_file(points(store))
    write_docs(docs, {"guide/03-extra.md": EXTRA})
    emb = FakeEmbedder.hashed()

    summary = ingest(store, emb, COLL, docs, **KW)

    after = by_file(points(store))
    assert summary.files_added == 1 and summary.files_unchanged == 3
    assert summary.chunks_added == len(after["guide/03-extra.md"]) == len(emb.document_texts)
    assert {f: after[f] for f in before} == before


# --------------------------------------------------------------------------- skipped files

STUB = "---\ntitle: Release Notes\n---\n\n# Release Notes\n\nComing soon.\n"


def test_stub_and_empty_files_are_skipped_with_a_named_warning(store, docs):
    write_docs(docs, {"notes/release-notes.md": STUB, "empty.md": "", "blank.mdx": "\n  \n"})
    emb = FakeEmbedder.hashed()

    summary = ingest(store, emb, COLL, docs, **KW)

    skipped = {"notes/release-notes.md", "empty.md", "blank.mdx"}
    assert set(summary.skipped) == skipped and summary.files_skipped == 3
    for name in skipped:
        assert any(name in w for w in summary.warnings), (name, summary.warnings)
    files = by_file(points(store))
    assert set(files) == set(DOCS)
    assert not any("Coming soon" in t for t in emb.document_texts)
    assert summary.files_added == 3


def test_file_that_becomes_a_stub_loses_its_points(store, docs):
    ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
    (docs / "intro.md").write_text(STUB, encoding="utf-8")

    summary = ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)

    assert "intro.md" not in by_file(points(store))
    assert summary.skipped == ["intro.md"] and any("intro.md" in w for w in summary.warnings)
    assert summary.files_deleted == 1


# --------------------------------------------------------------------------- bad files

BAD = b"---\ntitle: Caf\xe9\n---\n\n# Caf\xe9 notes\n\n" + prose("latin", 5).encode()


@pytest.mark.parametrize("recreate", [False, True])
def test_non_utf8_file_stops_the_ingest_before_anything_is_written(store, docs, recreate, monkeypatch):
    ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
    before = points(store)
    # Changes that a half-run would write: a new file, a changed file, a removed file, and the bad file.
    write_docs(docs, {"guide/03-extra.md": EXTRA, "guide/04-bad.md": BAD})
    (docs / "guide/01-install.md").write_text(INSTALL_SHORT, encoding="utf-8")
    (docs / "intro.md").unlink()
    emb = FakeEmbedder.hashed()
    spy = WriteSpy(monkeypatch, store)

    with pytest.raises(DocumentError) as info:
        ingest(store, emb, COLL, docs, **{**KW, "recreate": recreate})

    assert "guide/04-bad.md" in str(info.value) and info.value.path == "guide/04-bad.md"
    assert "UTF-8" in str(info.value)
    assert emb.document_texts == [] and spy.upserts == [] and spy.deletes == []
    assert points(store) == before


def test_non_utf8_file_creates_no_collection(store, docs):
    write_docs(docs, {"zz-bad.md": BAD})
    with pytest.raises(DocumentError, match="zz-bad.md"):
        ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
    assert not store.exists(COLL)


# --------------------------------------------------------------------------- interrupted runs

# Version 1 and version 2 of a docs tree: one file shrinks, one is unchanged,
# one is removed, one is added, one grows.
V1 = {
    "a.md": f"# Alpha\n\n{prose('alpha', 6)}\n\n## Alpha two\n\n{prose('alpha two', 6)}\n\n"
            f"## Alpha three\n\n{prose('alpha three', 6)}\n",
    "b.md": f"# Bravo\n\n{prose('bravo', 6)}\n\n## Bravo two\n\n{prose('bravo two', 6)}\n",
    "c.md": f"# Charlie\n\n{prose('charlie', 6)}\n\n## Charlie two\n\n{prose('charlie two', 6)}\n",
    "e.md": INSTALL_SHORT,
}
V2 = {
    "a.md": f"# Alpha\n\n{prose('alpha', 4, start=20)}\n",
    "b.md": V1["b.md"],
    "d.md": f"# Delta\n\n{prose('delta', 6)}\n\n## Delta two\n\n{prose('delta two', 6)}\n\n"
            f"## Delta three\n\n{prose('delta three', 6)}\n",
    "e.md": INSTALL,
}


def tree(root: Path, files: dict[str, str]) -> Path:
    for old in root.rglob("*.md") if root.exists() else []:
        old.unlink()
    return write_docs(root, files)


def calls_needed(docs: Path, before: dict[str, str] | None) -> int:
    """Embed calls an ingest of ``docs`` makes with batch_size=2 (over a ``before`` tree if given)."""
    emb = FakeEmbedder.hashed()
    with VectorStore.in_memory() as s:
        if before is not None:
            ingest(s, FakeEmbedder.hashed(), COLL, write_docs(docs.parent / "before", before), **KW)
        ingest(s, emb, COLL, docs, **KW, batch_size=2)
    return emb.document_calls


@pytest.mark.parametrize("kill", ["first", "second", "middle", "last"])
@pytest.mark.parametrize("scenario", ["fresh", "update"])
def test_ingest_killed_while_embedding_converges_on_rerun(tmp_path, scenario, kill):
    docs = tmp_path / "docs"
    with VectorStore.at_path(tmp_path / "store") as store:
        if scenario == "update":
            tree(docs, V1)
            ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
        tree(docs, V2)
        needed = calls_needed(docs, V1 if scenario == "update" else None)
        assert needed >= 4, "the test needs an ingest of several batches"
        die_on = {"first": 1, "second": 2, "middle": needed // 2 + 1, "last": needed}[kill]

        with pytest.raises(Killed):
            ingest(store, FakeEmbedder.hashed(kill_on_document_call=die_on), COLL, docs, **KW, batch_size=2)
        partial = points(store)
        full = clean_build(docs, batch_size=2)
        if scenario == "fresh":  # batches written before the kill stay; the rest is missing
            assert (len(partial) > 0) == (die_on > 1) and len(partial) < len(full)
        else:
            assert comparable(partial) != comparable(full)

        summary = ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW, batch_size=2)
        rerun = points(store)

        assert_consistent(rerun)
        assert comparable(rerun) == comparable(full)
        assert summary.chunks_total == len(rerun)
        assert {p["source_file"] for p in rerun.values()} == set(V2)
        # and a third run has nothing left to do
        emb = FakeEmbedder.hashed()
        third = ingest(store, emb, COLL, docs, **KW)
        assert emb.document_calls == 0 and third.files_unchanged == len(V2)
        assert points(store) == rerun


@pytest.mark.parametrize("fail_on", [1, 2, 4])
def test_ingest_failing_on_upsert_converges_on_rerun(tmp_path, monkeypatch, fail_on):
    docs = tree(tmp_path / "docs", V1)
    with VectorStore.at_path(tmp_path / "store") as store:
        ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
        tree(docs, V2)
        real_upsert = store.upsert
        calls = {"n": 0}

        def upsert(collection, pts):
            calls["n"] += 1
            if calls["n"] == fail_on:
                raise Killed("upsert failed")
            return real_upsert(collection, pts)

        monkeypatch.setattr(store, "upsert", upsert)
        with pytest.raises(Killed):
            ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW, batch_size=2)
        monkeypatch.undo()

        ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW, batch_size=2)
        rerun = points(store)
        assert_consistent(rerun)
        assert comparable(rerun) == comparable(clean_build(docs, batch_size=2))


@pytest.mark.parametrize("which", ["stale tail of a changed file", "removed file"])
def test_ingest_killed_between_upsert_and_delete_converges(tmp_path, monkeypatch, which):
    docs = tree(tmp_path / "docs", V1)
    with VectorStore.at_path(tmp_path / "store") as store:
        ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
        if which == "removed file":
            tree(docs, {k: v for k, v in V1.items() if k != "c.md"})
        else:
            tree(docs, {**V1, "a.md": V2["a.md"]})
        real_delete = store.delete
        failed: list[list[str]] = []

        def delete(collection, ids):
            if list(ids) and not failed:
                failed.append(list(ids))
                raise Killed("killed before the delete")
            return real_delete(collection, ids)

        monkeypatch.setattr(store, "delete", delete)
        with pytest.raises(Killed):
            ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
        monkeypatch.undo()
        assert failed, "the delete must have been reached"
        # the new chunks were written before the failed delete: the file never vanished
        left = points(store)
        if which != "removed file":
            assert any(p["source_file"] == "a.md" and "Step 20 of the alpha" in p["content"] for p in left.values())

        summary = ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
        rerun = points(store)

        assert_consistent(rerun)
        assert comparable(rerun) == comparable(clean_build(docs))
        assert summary.chunks_deleted == len(failed[0])
        if which == "removed file":
            assert "c.md" not in by_file(rerun) and summary.files_deleted == 1


# --------------------------------------------------------------------------- model mismatch

def test_other_dimension_is_refused_and_recreate_rebuilds(store, docs):
    ingest(store, FakeEmbedder.hashed(dimension=32), COLL, docs, **KW)
    before = points(store)
    emb = FakeEmbedder.hashed(dimension=64)

    with pytest.raises(ModelMismatchError) as info:
        ingest(store, emb, COLL, docs, **KW)
    message = str(info.value)
    assert "--recreate" in message and "32" in message and "64" in message
    assert info.value.collection_dimension == 32 and info.value.embedder_dimension == 64
    assert emb.document_texts == [] and points(store) == before
    assert store.vector_params(COLL)[1] == 32

    summary = ingest(store, emb, COLL, docs, **KW, recreate=True)
    assert store.vector_params(COLL)[1] == 64
    assert summary.files_added == 3 and summary.chunks_total == len(before)
    assert all(len(p["_vector"]) == 64 for p in points(store).values())


def test_other_model_with_same_dimension_is_refused_and_recreate_rebuilds(store, docs):
    ingest(store, FakeEmbedder.hashed(model="old-model"), COLL, docs, **KW)
    before = points(store)
    emb = FakeEmbedder.hashed(model="new-model")

    with pytest.raises(ModelMismatchError) as info:
        ingest(store, emb, COLL, docs, **KW)
    message = str(info.value)
    assert "--recreate" in message and "old-model" in message and "new-model" in message
    assert info.value.collection_model == "old-model" and info.value.configured_model == "new-model"
    assert emb.document_texts == [] and points(store) == before

    summary = ingest(store, emb, COLL, docs, **KW, recreate=True)
    after = points(store)
    assert summary.files_added == 3 and set(after) == set(before)
    assert {p["model_version"] for p in after.values()} == {"new-model"}


def test_recreate_on_matching_collection_rebuilds_everything(store, docs):
    ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
    before = points(store)
    emb = FakeEmbedder.hashed()
    summary = ingest(store, emb, COLL, docs, **KW, recreate=True)
    assert summary.files_added == 3 and len(emb.document_texts) == len(before)
    assert comparable(points(store)) == comparable(before)


def test_chunking_settings_are_part_of_the_file_version(store, docs):
    ingest(store, FakeEmbedder.hashed(), COLL, docs, **KW)
    summary = ingest(store, FakeEmbedder.hashed(), COLL, docs, **{**KW, "max_tokens": 120})
    assert summary.files_replaced == 3
    assert comparable(points(store)) == comparable(clean_build(docs, max_tokens=120))
    other_url = {**KW, "max_tokens": 120, "base_url": "https://other.test"}
    summary = ingest(store, FakeEmbedder.hashed(), COLL, docs, **other_url)
    assert summary.files_replaced == 3
    assert all(p["source_url"].startswith("https://other.test/docs/") for p in points(store).values())


# --------------------------------------------------------------------------- MDX

LONG_CODE = "```python\n" + "\n".join(
    f"node_{i} = Node('n{i}', namespace='/robot', parameters=[{{'rate': {i}}}])" for i in range(12)
) + "\n```"
JS_CODE = "```jsx\nimport Tabs from '@theme/Tabs';\n\n<Tabs>\n  <TabItem value=\"a\">A</TabItem>\n</Tabs>\n```"
MDX = f"""---
title: Tabs and Code
---
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';
import {{
  Highlight,
  Note,
}} from '@site/src/components';

export const meta = {{ level: 'advanced' }};

# Tabs and Code

{{/* an editor's comment that must not be embedded */}}

{prose("tabs intro", 4)}

## Launching nodes

<Tabs groupId="distro">
<TabItem value="jazzy" label="Jazzy">

{prose("jazzy", 3)}

{LONG_CODE}

</TabItem>
<TabItem value="humble" label="Humble">

{prose("humble", 3)}

</TabItem>
</Tabs>

## Documenting components

{prose("components", 3)}

{JS_CODE}

<!-- html comment noise -->
"""


def test_mdx_noise_is_dropped_and_code_blocks_stay_whole(store, tmp_path):
    docs = write_docs(tmp_path / "docs", {"guide/03-tabs.mdx": MDX})
    emb = FakeEmbedder.hashed()
    ingest(store, emb, COLL, docs, **KW)
    chunks = sorted(points(store).values(), key=lambda p: p["chunk_sequence"])
    assert len(chunks) >= 3
    assert emb.count_tokens(LONG_CODE) > KW["max_tokens"], "the code block must exceed the chunk size"

    # MDX noise is nowhere (outside the jsx code block, which shows it on purpose)
    for p in chunks:
        text = p["content"].replace(JS_CODE, "")
        for noise in ("import ", "export const", "<Tabs", "</Tabs>", "<TabItem", "</TabItem>", "{/*",
                      "editor's comment", "<!--", "html comment", "Highlight,"):
            assert noise not in text, (noise, p["content"])
        assert p["content"].strip()
    for t in emb.document_texts:
        assert "import Tabs from '@theme/Tabs';\nimport TabItem" not in t
        assert "editor's comment" not in t

    # a code block that fits lies whole inside exactly one chunk, under its own section's heading
    holders = [p for p in chunks if JS_CODE in p["content"]]
    assert len(holders) == 1 and holders[0]["section_title"] == "Documenting components"
    assert holders[0]["content"].startswith("## Documenting components")
    # one longer than a chunk is cut between lines: each part a whole fence, all its lines in order, once
    opener, *inner, closer = LONG_CODE.split("\n")
    parts = [p["content"] for p in chunks if opener in p["content"]]
    assert len(parts) > 1 and all(p.startswith("## Launching nodes") for p in parts)
    fenced = [p.split(opener + "\n", 1)[1] for p in parts]
    assert all(f.count("\n" + closer) == 1 for f in fenced)
    assert [line for f in fenced for line in f.split("\n" + closer)[0].split("\n")] == inner
    # the prose around the tabs survived
    joined = "\n".join(p["content"] for p in chunks)
    for topic in ("jazzy", "humble", "components", "tabs intro"):
        assert f"of the {topic} procedure" in joined
    assert {p["source_url"] for p in chunks} == {f"{BASE}/docs/guide/tabs"}
    assert {p["title"] for p in chunks} == {"Tabs and Code"}


# --------------------------------------------------------------------------- the CLI

_DROP_PREFIXES = ("QDRANT_", "COHERE_", "EMBEDDING_")


def cli_env(store_folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP_PREFIXES)}
    # Empty values win over a project .env, if there is one.
    env.update({"QDRANT_URL": "", "QDRANT_API_KEY": "", "COHERE_API_KEY": "", "EMBEDDING_PROVIDER": "local",
                "EMBEDDING_MODEL": "", "HF_HUB_OFFLINE": "1", "QDRANT_PATH": str(store_folder)})
    return env


def cli(args: list[str], env: dict[str, str], cwd: Path) -> Future[subprocess.CompletedProcess[str]]:
    """The command line started (:func:`warm_cli.run_cli`); ``.result()`` is its completed process."""
    return _RUNS.submit(run_cli, args, env=env, cwd=cwd, timeout=150)


_RUNS = ThreadPoolExecutor(max_workers=2)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_cli_ingest_json_is_incremental_and_bad_file_exits_2(tmp_path):
    good = write_docs(tmp_path / "good", {**DOCS, "notes/release-notes.md": STUB})
    bad = write_docs(tmp_path / "bad", {**DOCS, "guide/04-bad.md": BAD})
    good_store, bad_store = tmp_path / "store-good", tmp_path / "store-bad"
    args = ["--collection", "x", "--json"]

    # the bad run and the first good run load the model at the same time
    first = cli(["ingest", str(good), *args], cli_env(good_store), tmp_path).result()
    failing = cli(["ingest", str(bad), *args], cli_env(bad_store), tmp_path).result()
    out1, err1 = first.stdout, first.stderr
    out_bad, err_bad = failing.stdout, failing.stderr

    assert first.returncode == 0, err1
    s1 = json.loads(out1)
    assert s1["collection"] == "x"
    assert s1["files_added"] == 3 and s1["files_unchanged"] == 0 and s1["chunks_total"] > 0
    assert s1["skipped"] == ["notes/release-notes.md"]
    assert "notes/release-notes.md" in err1 and "Traceback" not in err1

    assert failing.returncode == 2, err_bad
    lines = err_bad.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("error: ") and "guide/04-bad.md" in lines[0], err_bad
    assert out_bad == ""

    second = cli(["ingest", str(good), *args, "--quiet"], cli_env(good_store), tmp_path).result()
    out2, err2 = second.stdout, second.stderr
    assert second.returncode == 0, err2
    s2 = json.loads(out2)
    assert s2["files_added"] == 0 and s2["files_replaced"] == 0 and s2["files_deleted"] == 0
    assert s2["files_unchanged"] == 3 and s2["chunks_added"] == 0
    assert s2["chunks_total"] == s1["chunks_total"]

    # what was written: MiniLM vectors with full payloads; the bad run wrote no collection
    with VectorStore.at_path(good_store) as s:
        stored = points(s, "x")
        assert len(stored) == s1["chunks_total"] and s.vector_params("x")[1] == 384
        assert {p["model_version"] for p in stored.values()} == {"all-MiniLM-L6-v2"}
        assert {p["source_url"] for p in stored.values()} >= {
            "https://physical-ai-book.example/docs/welcome",
            "https://physical-ai-book.example/docs/guide/setup-guide",
        }
    with VectorStore.at_path(bad_store) as s:
        assert not s.exists("x")
