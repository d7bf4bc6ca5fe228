"""The book check's read of a collection, made cheap without reading anything else.

- :func:`retrieval_lib.stores.scan.payload_selector`: qdrant-client's local mode is asked for whole payloads where
  that costs less than selecting keys (few keys beyond those read); a server, qdrant-edge and a team payload with
  many keys or a large value are asked for the keys. Either way the chunks read are the same.
- :func:`~retrieval_lib.stores.scan.collector_paused`: the cyclic collector is paused for a whole pass and resumed
  as it was, also when the pass fails.
- :meth:`PayloadRoles.column`: its loops in C give the values (and the counts of bad values) :meth:`value` gives.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
from fakes.qdrant_rest import QdrantRestFake
from qdrant_client import models

from retrieval_lib import VectorStore
from retrieval_lib.book import read_chunks
from retrieval_lib.collection import CollectionView, PayloadRoles
from retrieval_lib.collection.roles import MAX_TEXT_CHARS, ReadStats
from retrieval_lib.config import load_settings
from retrieval_lib.stores import open_store
from retrieval_lib.stores import scan as scanning

pytestmark = [pytest.mark.usefixtures("no_proxies"), pytest.mark.timeout(60)]

COLL = "team"
#: A team's payload the way a LangChain-style pipeline writes it, and one with many keys beside those read.
SMALL = {"text": "a chunk of text", "url": "https://site.test/docs/a/b", "title": "B", "chunk_index": 2}
MANY = {**SMALL, **{f"extra_{k}": f"value {k}" for k in range(12)}, "entities": [f"e{k}" for k in range(30)]}
KEYS = ["text", "url", "chunk_index"]


class _Kind:
    def __init__(self, kind: str) -> None:
        self.kind = kind


@pytest.mark.parametrize("kind, sample, expected", [
    ("embedded", [SMALL] * 3, True),           # one key (and its value) beyond those read: the whole payload
    ("memory", [SMALL], True),
    ("embedded", [MANY] * 3, KEYS),            # many keys beside them: the keys
    ("embedded", [{**SMALL, "tags": ["a", "b", "c", "d", "e"]}], KEYS),  # a list beside them: its items count
    ("embedded", [{"page_content": "t", "metadata": {"source": "a.md", "page": 1}}], True),  # all of it is read
    ("embedded", [], KEYS),                    # nothing known about the payloads: the keys
    ("embedded", [{**SMALL, "vector_copy": list(range(200_000))}] * 1_000, KEYS),  # not walked whole
    ("server", [SMALL] * 3, KEYS),             # a server filters payloads before they travel
    ("edge", [SMALL] * 3, KEYS),               # qdrant-edge selects them in its engine
])
def test_the_payload_asked_for_is_the_cheaper_one_for_the_engine(kind, sample, expected):
    keys = ["page_content", "metadata"] if "metadata" in (sample[0] if sample else {}) else KEYS
    got = scanning.payload_selector(_Kind(kind), keys, sample)
    assert got == (keys if expected == KEYS else expected)


def test_no_key_asks_for_no_payload():
    assert scanning.payload_selector(_Kind("embedded"), [], [SMALL]) is False
    assert scanning.payload_selector(_Kind("server"), [], [SMALL]) is False


def test_the_collector_is_paused_for_a_pass_and_resumed_as_it_was():
    assert gc.isenabled()
    with scanning.collector_paused():
        assert not gc.isenabled()
        with scanning.collector_paused():  # nested: the inner one leaves it to the outer
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), scanning.collector_paused():
        raise RuntimeError("the pass failed")
    assert gc.isenabled()
    gc.disable()
    try:
        with scanning.collector_paused():
            pass
        assert not gc.isenabled()  # a caller that paused it keeps it paused
    finally:
        gc.enable()


# --------------------------------------------------------------------------- the same chunks either way
def _fill(store: VectorStore, payloads: list[dict[str, Any]]) -> None:
    store.create_collection(COLL, 4)
    store.upsert(COLL, [models.PointStruct(id=i + 1, vector=[1.0, 0.0, 0.0, float(i % 3)], payload=p)
                        for i, p in enumerate(payloads)])


def _team_payloads(base: dict[str, Any], n: int = 40) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        p = {**base, "text": f"chunk {i} of page {i % 7} " * 3, "url": f"https://site.test/docs/p{i % 7}",
             "chunk_index": i // 7}
        if i == 5:
            p["chunk_index"] = "3"       # a number as text: read as 3
        if i == 6:
            p["text"] = ""               # empty: no content
        if i == 7:
            del p["url"]                 # no source
        out.append(p)
    return out


def _asked(store: VectorStore) -> list[Any]:
    asked: list[Any] = []
    scroll = store.scroll

    def recorded(collection: str, **kwargs: Any) -> Any:
        asked.append(kwargs.get("with_payload"))
        return scroll(collection, **kwargs)

    store.scroll = recorded  # type: ignore[method-assign]
    return asked


def _as_tuples(chunks: Any) -> list[tuple[Any, ...]]:
    return sorted(zip(chunks.ids, chunks.source_file, chunks.source_url, chunks.content, chunks.sequence))


@pytest.mark.parametrize("base", [SMALL, MANY], ids=["few keys", "many keys"])
def test_local_mode_reads_the_same_chunks_whatever_it_asks_for(base, monkeypatch):
    store = VectorStore.in_memory()
    try:
        _fill(store, _team_payloads(base))
        asked = _asked(store)
        chosen = read_chunks(CollectionView(store), COLL)
        monkeypatch.setattr(scanning, "SELECT_COST_OBJECTS", -1)  # always the keys
        by_keys = read_chunks(CollectionView(store), COLL)
    finally:
        store.close()
    # asked: the sample (whole payloads) and the pass, twice
    def keys(asked_for: Any) -> Any:
        return asked_for if asked_for is True else sorted(asked_for)

    assert keys(asked[1]) == (True if base is SMALL else sorted(KEYS)) and keys(asked[3]) == sorted(KEYS)
    assert _as_tuples(chosen) == _as_tuples(by_keys)
    assert len(chosen) == 40 and chosen.sequence[5] == 3 and chosen.content[6] is None and chosen.source_url[7] is None


def test_over_http_the_keys_are_asked_for_and_the_chunks_are_those_of_local_mode(tmp_path, monkeypatch):
    """A server filters payloads server-side: the pass asks for the keys read, never the whole payload, and reads
    the chunks local mode reads from the same points."""
    folder = tmp_path / "served"
    local = VectorStore.at_path(folder)
    try:
        _fill(local, _team_payloads(MANY))
        expected = _as_tuples(read_chunks(CollectionView(local), COLL))
    finally:
        local.close()
    bodies: list[Any] = []
    scroll = QdrantRestFake._ROUTES[("POST", "points/scroll")]

    def recorded(fake: QdrantRestFake, name: str, body: Any) -> Any:
        bodies.append(body)
        return scroll(fake, name, body)

    monkeypatch.setitem(QdrantRestFake._ROUTES, ("POST", "points/scroll"), recorded)
    with QdrantRestFake(path=folder) as fake:
        store = open_store(load_settings(env={"QDRANT_URL": fake.url}))
        try:
            got = read_chunks(CollectionView(store), COLL)
        finally:
            store.close()
    assert _as_tuples(got) == expected
    passes = [b for b in bodies if b.get("with_payload") is not True]  # the sample asks for whole payloads
    assert passes and all(sorted(b["with_payload"]) == sorted(KEYS) for b in passes)


# --------------------------------------------------------------------------- columns read in C, values of value()
ROLES = PayloadRoles({"content": ("text",), "chunk_sequence": ("n",), "title": ("title",)}, origin="profile")


@pytest.mark.parametrize("payloads", [
    [{"text": "a", "n": 1, "title": "t"}, {"text": "b", "n": 2, "title": "u"}],        # every value as it is
    [{"text": "a", "n": 1}, {}, {"text": None, "n": None}],                              # missing and None
    [{"text": "", "n": True, "title": ["x", "y"]}, {"text": 5, "n": 2.0, "title": 7}],  # coerced or left out
    [{"text": "x" * (MAX_TEXT_CHARS + 1), "n": "4"}, {"text": "ok", "n": 1}],           # cut for length
    [None, {"text": "a", "n": 1}],                                                      # a point without payload
])
def test_a_column_read_in_c_gives_the_values_and_the_counts_of_value(payloads):
    fast, slow = ReadStats(), ReadStats()
    for role in ("content", "chunk_sequence", "title"):
        assert ROLES.column(role, payloads, fast) == [ROLES.value(p, role, slow) for p in payloads]
    assert (fast.wrong_type, fast.truncated) == (slow.wrong_type, slow.truncated)


def test_the_pass_runs_with_the_collector_paused_and_resumes_it():
    store = VectorStore.in_memory()
    seen: list[bool] = []
    scroll = store.scroll

    def watched(collection: str, **kwargs: Any) -> Any:
        for point in scroll(collection, **kwargs):
            seen.append(gc.isenabled())
            yield point

    try:
        _fill(store, _team_payloads(SMALL))
        view = CollectionView(store)
        view.roles_for(COLL)  # the sample is read before the pass, collector on
        store.scroll = watched  # type: ignore[method-assign]
        chunks = read_chunks(view, COLL)
    finally:
        store.close()
    assert len(chunks) == len(seen) == 40 and not any(seen) and gc.isenabled()
