"""Collections the workbook did not build: read through payload roles, searched, never written.

Each shape in :mod:`shapes` is a public team's ingest, written by hand (shared/REAL_COLLECTIONS.md).
"""

from __future__ import annotations

import pytest
from corpus import DOCS, SAMPLE_COLLECTION
from hypothesis import given, settings
from hypothesis import strategies as st
from shapes import EXPECTED_SOURCE, SHAPES, build

from retrieval_lib.collection import CollectionView, PayloadRoles, infer_roles
from retrieval_lib.collection.roles import MAX_TEXT_CHARS, ROLES, ReadStats, lookup, source_file_from_url
from retrieval_lib.errors import ReadOnlyError, ValidationError
from retrieval_lib.search import Retriever
from retrieval_lib.stores import VectorStore, iter_points, read_columns


@pytest.fixture(scope="module")
def doc_vectors(embedder):
    return embedder.embed_documents([d["content"] for d in DOCS])


@pytest.fixture(scope="module")
def shaped(doc_vectors):
    """One in-memory store holding one collection per shape."""
    store = VectorStore.in_memory()
    for i, shape in enumerate(SHAPES.values()):
        build(store, f"shape{i}", shape, doc_vectors)
    yield store
    store.close()


@pytest.mark.parametrize("i, name", list(enumerate(SHAPES)), ids=list(SHAPES))
def test_search_shows_each_results_text_and_source(shaped, embedder, i, name):
    retriever = Retriever(shaped, embedder, f"shape{i}")
    response = retriever.search("What is ROS 2?", top_k=3)
    top = response.results[0]
    assert top.content and top.content.startswith("ROS 2, the Robot Operating System")
    assert top.source_file and top.source_file.startswith(EXPECTED_SOURCE[name])
    assert "01-ros2-overview" in top.source_file or "module-01-ros2" in top.source_file
    assert "content" not in top.missing_fields and "source_file" not in top.missing_fields


@pytest.mark.parametrize("i, name", list(enumerate(SHAPES)), ids=list(SHAPES))
def test_a_whole_collection_scan_reads_every_text_and_source(shaped, embedder, i, name):
    view = CollectionView(shaped)
    rows = list(iter_points(view, f"shape{i}", ["content", "source_file"]))
    assert len(rows) == len(DOCS)
    assert all(r.payload["content"] for r in rows)
    assert all(r.payload["source_file"] for r in rows)
    assert view.owned(f"shape{i}") is False


def test_a_source_prefix_filter_works_on_a_collection_with_urls_only(shaped, embedder):
    i = list(SHAPES).index("md5 ids, text/url/title/chunk_index (#13)")
    retriever = Retriever(shaped, embedder, f"shape{i}")
    response = retriever.search("robot simulation", top_k=5, source_prefix="docs/module-02-simulation/")
    assert response.results and all("module-02-simulation" in r.source_file for r in response.results)


def test_two_schemas_in_one_collection_both_read(shaped, embedder):
    i = list(SHAPES).index("two schemas in one collection (#4)")
    view = CollectionView(shaped)
    sources = [p.payload["source_file"] for p in iter_points(view, f"shape{i}", ["source_file"])]
    assert any(s.endswith(".md") for s in sources) and any(not s.endswith(".md") for s in sources)
    roles = view.roles_for(f"shape{i}")
    assert roles.keys_of("source_file") == ("file_path",) and roles.derive_source_file


@pytest.mark.parametrize("i, name", list(enumerate(SHAPES)), ids=list(SHAPES))
def test_each_chunk_has_an_id_of_its_own(shaped, i, name):
    # judgments, rankings and neighbour lists are keyed by chunk id: two chunks must never share one
    view = CollectionView(shaped)
    ids = [p.payload["chunk_id"] for p in iter_points(view, f"shape{i}", ["content", "chunk_id"])]
    assert len(ids) == len(set(ids)) == len(DOCS)


def test_a_chunk_id_that_repeats_per_page_is_the_chunks_position_not_its_id():
    # team #1 writes chunk_id = the index within its page: 0, 1, 2 ... on every page
    payloads = [{"text": f"chunk {i} " * 20, "url": f"https://x.example/docs/p{i // 4}", "chunk_id": i % 4}
                for i in range(40)]
    roles = infer_roles(payloads)
    assert roles.keys_of("chunk_sequence") == ("chunk_id",) and not roles.has("chunk_id")
    strings = [dict(p, chunk_id=f"c{p['chunk_id']}") for p in payloads]  # the same, written as text
    roles = infer_roles(strings)
    assert not roles.has("chunk_id") and "repeats its values" in roles.evidence["chunk_id"]
    unique = [dict(p, chunk_id=f"p{i}") for i, p in enumerate(payloads)]
    assert infer_roles(unique).keys_of("chunk_id") == ("chunk_id",)


def test_a_constant_source_tag_is_never_the_source():
    payloads = [{"text": f"chunk {i} " * 20, "path": f"docs/p{i % 5}.md", "source": "docs"} for i in range(30)]
    roles = infer_roles(payloads)
    assert roles.keys_of("source_file") == ("path",)
    assert "one constant value" in roles.evidence["_rejected"]


def test_a_low_cardinality_origin_tag_is_not_a_source_either():
    payloads = [{"content": f"chunk {i} " * 20, "url": f"https://x.example/docs/p{i}",
                 "source": "web" if i % 2 else "local"} for i in range(40)]
    roles = infer_roles(payloads)
    assert "source" not in roles.keys_of("source_file")
    assert roles.derive_source_file


def test_the_mapping_is_applied_per_point_with_nested_paths_and_fallbacks():
    roles = PayloadRoles.from_profile({"content": ["text", "metadata.body"], "source_file": "url:link"})
    a = roles.read({"text": "alpha", "link": "https://s.example/docs/a/b/"}, point_id=1)
    b = roles.read({"metadata": {"body": "beta"}, "link": "/docs/c"}, point_id="x")
    assert (a["content"], a["source_file"], a["chunk_id"]) == ("alpha", "docs/a/b", "1")
    assert (b["content"], b["source_file"]) == ("beta", "docs/c")
    assert lookup({"a": {"b": {"c": 3}}}, "a.b.c") == 3 and lookup({"a.b": 1}, "a.b") == 1
    assert source_file_from_url("https://x/docs/p?q=1#h") == "docs/p"


@pytest.mark.parametrize("i, name", list(enumerate(SHAPES)), ids=list(SHAPES))
def test_a_column_scan_reads_what_the_records_say(shaped, i, name):
    """read_columns through the view (team keys read a column at a time) equals the view's own records."""
    view = CollectionView(shaped)
    fields = ["content", "source_file", "source_url", "title", "chunk_sequence", "chunk_id"]
    cols = read_columns(view, f"shape{i}", fields, batch_size=7)  # several pages
    records = {str(p.id): p.payload for p in view.scroll(f"shape{i}", with_payload=fields, batch_size=7)}
    assert len(cols) == len(records) == len(DOCS)
    for j, point_id in enumerate(cols.ids):
        assert {f: cols[f][j] for f in fields} == {f: records[point_id][f] for f in fields}
    with pytest.raises(ValidationError, match="batch_size must be a whole number >= 1"):
        read_columns(view, f"shape{i}", fields, batch_size=0)  # refused as for a bare store, not taken as "default"


_VALUE = st.one_of(st.none(), st.text(max_size=8), st.integers(-5, 5), st.floats(allow_nan=False, width=16),
                   st.booleans(), st.lists(st.one_of(st.text(max_size=4), st.integers(0, 3)), max_size=3),
                   st.just("x" * (MAX_TEXT_CHARS + 1)), st.just("  "), st.just("12"))
_PAYLOAD = st.one_of(st.none(), st.dictionaries(st.sampled_from(["text", "url", "title", "n", "meta", "id"]),
                                                st.one_of(_VALUE, st.fixed_dictionaries({"body": _VALUE})),
                                                max_size=6))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(payloads=st.lists(_PAYLOAD, max_size=12))
def test_reading_a_column_is_reading_each_point(payloads):
    """The column fast path (one plain key) and the general rule (fallbacks, nested keys, URLs) give what
    ``read`` gives point by point, and count the same bad values."""
    for roles in (PayloadRoles.from_profile({"content": "text", "source_url": "url", "title": "title",
                                             "chunk_sequence": "n", "chunk_id": "id"}),
                  PayloadRoles.from_profile({"content": ["text", "meta.body"], "source_file": "url:url",
                                             "title": "meta.body", "chunk_sequence": ["n", "meta.body"]})):
        by_point, by_column = ReadStats(), ReadStats()
        records = [roles.read(p, point_id=k, stats=by_point) for k, p in enumerate(payloads)]
        wanted = [r for r in ROLES if roles.has(r) or r == "chunk_id"]
        cols = roles.columns(payloads, list(range(len(payloads))), wanted, by_column)
        assert [{r: cols[r][k] for r in wanted} for k in range(len(payloads))] == \
            [{r: rec[r] for r in wanted} for rec in records]
        assert (by_column.wrong_type, by_column.truncated) == (by_point.wrong_type, by_point.truncated)


def test_a_profile_naming_an_unknown_role_is_refused():
    with pytest.raises(ValueError, match="unknown role 'body'"):
        PayloadRoles.from_profile({"body": "text"})


def test_bad_values_are_counted_not_fatal(embedder):
    store = VectorStore.in_memory()
    from qdrant_client import models

    store.client.create_collection("bad", vectors_config=models.VectorParams(size=embedder.dimension,
                                                                               distance=models.Distance.COSINE))
    huge = "x" * 1_000_000
    payloads = [{"text": "A ROS 2 node publishes messages on topics.", "url": "https://b.example/docs/a"},
                {"text": None, "url": "https://b.example/docs/b"},
                {"text": "", "url": 42},
                {"text": ["a", "list", "where", "text", "was", "expected"], "url": "https://b.example/docs/c"},
                {"text": huge, "url": "https://b.example/docs/d", "chunk_index": "not a number"},
                {"text": {"nested": "object"}, "url": None},
                {}]
    vectors = embedder.embed_documents(["ros 2 node topics"] * len(payloads))
    store.client.upsert("bad", points=[models.PointStruct(id=i, vector=v, payload=p)
                                       for i, (p, v) in enumerate(zip(payloads, vectors))], wait=True)
    roles = PayloadRoles.from_profile({"content": "text", "source_url": "url", "source_file": "url:url",
                                       "chunk_sequence": "chunk_index"})
    view = CollectionView(store, roles)
    retriever = Retriever(view, embedder, "bad")
    response = retriever.search("ROS 2 topics", top_k=7)
    assert response.total_results == len(payloads)
    records = {r.point_id: r for r in response.results}
    assert records["0"].content.startswith("A ROS 2 node")
    assert records["4"].content is not None and len(records["4"].content) == MAX_TEXT_CHARS
    assert records["3"].content is None and "content" in records["3"].missing_fields
    assert view.read_stats.wrong_type["content"] >= 2  # the list and the object
    assert view.read_stats.truncated["content"] == 1
    assert view.read_stats.wrong_type["chunk_sequence"] == 1
    store.close()


def test_the_view_never_writes(shaped):
    view = CollectionView(shaped)
    for write in (lambda: view.upsert("shape0", []), lambda: view.delete("shape0", [1]),
                  lambda: view.create_collection("shape0", 384, recreate=True),
                  lambda: view.ensure_payload_indexes("shape0")):
        with pytest.raises(ReadOnlyError, match="never"):
            write()


def test_our_own_collection_reads_with_the_default_mapping(book):
    view = CollectionView(book.store)
    assert view.owned(SAMPLE_COLLECTION) is True
    assert view.roles_for(SAMPLE_COLLECTION).origin == "default"


def test_the_service_answers_a_collection_without_a_metadata_database_from_its_payload(shaped, embedder, tmp_path):
    from fastapi.testclient import TestClient

    from retrieval_lib.config import load_settings
    from retrieval_lib.service import create_app

    i = list(SHAPES).index("md5 ids, text/url/title/chunk_index (#13)")
    settings = load_settings({"QDRANT_PATH": str(tmp_path / "nowhere"), "QDRANT_COLLECTION_NAME": f"shape{i}"},
                             dotenv_path=tmp_path / "no.env")
    retriever = Retriever(CollectionView(shaped), embedder, f"shape{i}")
    with TestClient(create_app(settings, retriever=retriever)) as client:
        health = client.get("/health")
        assert health.status_code == 200
        database = health.json()["dependencies"]["database"]
        assert database["configured"] is False and "not configured" in database["detail"]
        answer = client.post("/search", json={"query": "What is ROS 2?", "top_k": 3}).json()
    top = answer["results"][0]
    assert top["snippet"].startswith("ROS 2, the Robot Operating System") and top["source_path"].startswith("docs/")
    assert not any("metadata row" in w for w in answer["warnings"])
    assert not (tmp_path / "nowhere").exists()  # nothing was created beside a store it only reads


def test_a_collection_with_several_named_vectors_is_read_by_the_one_qdrant_vector_name_picks(doc_vectors, embedder,
                                                                                              tmp_path):
    """Two named vectors per point (the real one, and its reversal as another model's stand-in): with no choice the
    workbook says which setting picks one; with QDRANT_VECTOR_NAME every read and search uses that vector."""
    from qdrant_client import models

    from retrieval_lib.checks.collection import embedding_contract as contract
    from retrieval_lib.config import load_settings
    from retrieval_lib.errors import ConfigurationError
    from retrieval_lib.stores import open_store

    folder = tmp_path / "store"
    with VectorStore.at_path(folder) as store:
        store.client.create_collection("two", vectors_config={
            "other": models.VectorParams(size=len(doc_vectors[0]), distance=models.Distance.COSINE),
            "text": models.VectorParams(size=len(doc_vectors[0]), distance=models.Distance.COSINE)})
        store.client.upsert("two", points=[models.PointStruct(
            id=i, vector={"text": list(v), "other": list(v)[::-1]},
            payload={"text": d["content"], "url": f"https://book.example/docs/{d['route']}"})
            for i, (d, v) in enumerate(zip(DOCS, doc_vectors))])
    env = {"QDRANT_PATH": str(folder), "QDRANT_COLLECTION_NAME": "two", "EMBEDDING_PROVIDER": "local"}
    with open_store(load_settings(env=env)) as store, pytest.raises(ConfigurationError) as err:
        Retriever(CollectionView(store), embedder, "two").search("What is ROS 2?")
    assert "QDRANT_VECTOR_NAME" in str(err.value) and "other, text" in str(err.value)
    with open_store(load_settings(env={**env, "QDRANT_VECTOR_NAME": "text"})) as store:
        view = CollectionView(store)
        top = Retriever(view, embedder, "two").search("What is ROS 2?", top_k=3).results[0]
        assert top.content.startswith("ROS 2, the Robot Operating System")
        result = contract.probe(view, "two", embedder, sample=4, top_k=2)
        assert result.lowest_cosine > 0.999  # the "text" vectors were read, not the reversed ones
    with open_store(load_settings(env={**env, "QDRANT_VECTOR_NAME": "nope"})) as store, \
            pytest.raises(ConfigurationError, match="no vector named 'nope'"):
        Retriever(CollectionView(store), embedder, "two").search("What is ROS 2?")
