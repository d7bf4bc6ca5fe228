"""Both embedded engines give the same answers: qdrant-client local mode and qdrant-edge (QDRANT_ENGINE=edge).

The same ingest (the shipped sample book, a hashed bag-of-words embedder) goes into
each engine; searches (exact on both), filters (source prefix, section), scrolls,
facets, statistics and errors are compared: the same ids in the same order, scores
within ``SCORE_TOLERANCE``, the same typed errors.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from fakes.embedders import FakeEmbedder, hashed_bag_of_words
from qdrant_client import models

from retrieval_lib.config import load_settings
from retrieval_lib.errors import CollectionNotFoundError, ConfigurationError, StoreLockedError, ValidationError
from retrieval_lib.ingest.pipeline import SAMPLE_BOOK, ingest
from retrieval_lib.search import SCORE_TOLERANCE, Retriever, same_ranking
from retrieval_lib.stores import VectorStore, collection_stats, open_store
from retrieval_lib.stores.edge import EdgeStore, edge_filter

pytest.importorskip("qdrant_edge")

COLLECTION = "book"
QUERIES = ["What is ROS 2?", "How do I launch several nodes?", "Gazebo physics engines", "reward shaping",
           "Isaac ROS perception pipeline", "URDF links and joints", "humanoid walking", "LLM action goals"]


def _embedder() -> FakeEmbedder:
    return FakeEmbedder(hashed_bag_of_words(64), dimension=64, model="bow-64")


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    """{"local": VectorStore, "edge": EdgeStore}, each holding the sample book ingested the same way."""
    root = tmp_path_factory.mktemp("congruence")
    stores = {"local": VectorStore.at_path(root / "local" / ".qdrant"),
              "edge": EdgeStore.at_path(root / "edge" / ".qdrant")}
    for store in stores.values():
        ingest(store, _embedder(), COLLECTION, SAMPLE_BOOK, progress=False)
    yield stores
    for store in stores.values():
        store.close()


def _retrievers(engines):
    return {name: Retriever(store, _embedder(), COLLECTION) for name, store in engines.items()}


def test_the_same_ingest_gives_the_same_points_and_payloads(engines):
    local, edge = (
        {str(p.id): {k: v for k, v in p.payload.items() if k != "processing_timestamp"}  # the ingest's clock
         for p in engines[name].scroll(COLLECTION, with_payload=True, batch_size=97)}
        for name in ("local", "edge"))
    assert len(local) > 100 and local == edge
    assert engines["local"].count(COLLECTION) == engines["edge"].count(COLLECTION) == len(local)


def test_search_gives_the_same_ids_order_and_scores(engines):
    retrievers = _retrievers(engines)
    for query in QUERIES:
        a, b = (retrievers[n].search(query, top_k=10) for n in ("local", "edge"))
        assert a.ranking() and same_ranking(a.ranking(), b.ranking()), query
    many = {n: r.search_many(QUERIES, top_k=5) for n, r in retrievers.items()}
    assert all(same_ranking(x.ranking(), y.ranking()) for x, y in zip(many["local"], many["edge"]))


def test_filters_by_source_prefix_and_section_agree(engines):
    retrievers = _retrievers(engines)
    files = sorted(engines["local"].distinct_values(COLLECTION, "source_file"))
    prefix = files[0].split("/")[0] + "/"
    section = engines["local"].scroll(COLLECTION, with_payload=["section_title"], batch_size=1)
    section_title = next(section).payload["section_title"]
    for kwargs in ({"source_prefix": prefix}, {"section": section_title},
                   {"source_prefix": prefix, "section": section_title}, {"source_prefix": "no-such-folder/"}):
        a, b = (retrievers[n].search("robot", top_k=10, **kwargs) for n in ("local", "edge"))
        assert same_ranking(a.ranking(), b.ranking()), kwargs
        assert all(r.source_file.startswith(kwargs.get("source_prefix", "")) for r in b.results)
    assert retrievers["edge"].search("robot", top_k=10, source_prefix=prefix).results


def test_exact_store_queries_agree_point_by_point(engines):
    vectors = [p.vector for p in engines["local"].scroll(COLLECTION, with_payload=False, with_vectors=True,
                                                         batch_size=50)][:40]
    only = models.Filter(must=[models.FieldCondition(key="source_file", match=models.MatchAny(
        any=sorted(engines["local"].distinct_values(COLLECTION, "source_file"))[:5]))])
    for query_filter in (None, only):
        a, b = (engines[n].query_batch(COLLECTION, vectors, limit=7, exact=True, query_filter=query_filter)
                for n in ("local", "edge"))
        assert len(a) == len(b) == len(vectors)
        for x, y in zip(a, b):
            _same_points(x, y)
    _same_points(engines["edge"].query(COLLECTION, vectors[0], limit=3, exact=True),
                 engines["local"].query(COLLECTION, vectors[0], limit=3))


def _same_points(x, y):
    """Same scores rank by rank; the same ids in the same order, ties (equal bag-of-words scores) ordered by id."""
    assert len(x) == len(y) > 0
    assert all(abs(p.score - q.score) <= SCORE_TOLERANCE for p, q in zip(x, y))
    cutoff = x[-1].score + 1e-5  # a tie at the last place may be cut differently: compare above it

    def key(p):
        return (-round(p.score, 5), str(p.id))

    assert ([p.id for p in sorted(x, key=key) if p.score > cutoff]
            == [p.id for p in sorted(y, key=key) if p.score > cutoff])


def test_facets_and_stats_agree(engines):
    for key in ("source_file", "model_version", "section_title"):
        assert engines["local"].distinct_values(COLLECTION, key) == engines["edge"].distinct_values(COLLECTION, key)
    local, edge = (collection_stats(engines[n], COLLECTION) for n in ("local", "edge"))
    same = ("vector_count", "points_count", "dimensions", "distance", "source_files", "models",
            "points_per_source_file")
    assert {f: getattr(local, f) for f in same} == {f: getattr(edge, f) for f in same}
    assert edge.disk_data_size_bytes and edge.indexed_fields == sorted(edge.indexed_fields)
    assert any("searches this collection exactly" in w for w in edge.warnings)  # too small for an HNSW index
    assert engines["local"].vector_params(COLLECTION) == engines["edge"].vector_params(COLLECTION)


def test_errors_are_the_same_types(engines):
    for store in engines.values():
        with pytest.raises(CollectionNotFoundError) as missing:
            store.count("nope")
        assert missing.value.available == [COLLECTION]
        with pytest.raises(CollectionNotFoundError):
            store.query("nope", [0.1] * 64, limit=3)
        with pytest.raises(ValidationError):  # a vector of the wrong size
            store.query(COLLECTION, [0.1, 0.2], limit=3)
    with pytest.raises(ValidationError):
        edge_filter(models.Filter(must=[models.FieldCondition(key="x", geo_radius=models.GeoRadius(
            center=models.GeoPoint(lon=0, lat=0), radius=1.0))]))


def test_writes_and_deletes_agree(tmp_path):
    points = [models.PointStruct(id=i + 1, vector=[1.0, float(i % 3), float(i), 0.5],
                                 payload={"source_file": f"f{i % 4}.md", "n": i}) for i in range(30)]
    with VectorStore.at_path(tmp_path / "l") as local, EdgeStore.at_path(tmp_path / "e") as edge:
        for store in (local, edge):
            store.create_collection("c", 4)
            store.upsert("c", points)
            store.delete("c", [3, 4, 5])
            store.create_collection("c", 4)  # idempotent
        assert local.count("c") == edge.count("c") == 27
        assert sorted(p.id for p in local.scroll("c")) == sorted(p.id for p in edge.scroll("c"))
        assert [p.id for p in local.retrieve("c", [7, 1, 99])] == [p.id for p in edge.retrieve("c", [7, 1, 99])]
        edge.create_collection("c", 4, recreate=True)
        assert edge.count("c") == 0 and edge.list_collections() == ["c"]


def test_edge_store_reopens_with_its_data_and_built_index(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(300, 8))
    with EdgeStore.at_path(tmp_path / "e", hnsw={"full_scan_threshold": 1}, indexing_threshold_kb=1) as store:
        store.create_collection("c", 8)
        store.upsert("c", [models.PointStruct(id=i, vector=v.tolist(), payload={}) for i, v in enumerate(vectors)])
        assert store.index_info("c").searches_exactly  # nothing indexed before the optimizer runs
    with EdgeStore.at_path(tmp_path / "e") as store:  # closing optimized it
        info = store.index_info("c")
        assert (info.points_count, info.indexed_vectors_count, info.searches_exactly) == (300, 300, False)
        assert info.hnsw is not None and info.hnsw["full_scan_threshold"] == 1


def test_edge_keeps_every_keyword_index_on_disk_so_opening_the_store_stays_small(tmp_path):
    # in RAM, the five keyword indexes (content_hash has one value per chunk) cost every kernel that opens the
    # store about 60 MB at 100k points; the faceted field indexed on first use must follow the same placement
    import qdrant_edge as qe

    with EdgeStore.at_path(tmp_path / "e") as store:
        store.create_collection("c", 4)
        store.upsert("c", [models.PointStruct(id=1, vector=[1, 0, 0, 0], payload={"source_file": "a.md", "x": "v"})])
        assert store.distinct_values("c", "x") == {"v": 1}
        schema = store.info("c").payload_schema
    assert set(schema) >= {"source_file", "content_hash", "x"}
    assert {name: index.params.memory for name, index in schema.items()} == dict.fromkeys(schema, qe.Memory.Cold)


def test_a_second_process_is_told_the_edge_folder_is_locked(tmp_path):
    folder = tmp_path / ".qdrant"
    with EdgeStore.at_path(folder) as store:
        store.create_collection("c", 4)
        code = ("import sys\nfrom retrieval_lib.stores.edge import EdgeStore\nfrom retrieval_lib.errors import "
                "StoreLockedError\ntry:\n    EdgeStore.at_path(sys.argv[1])\nexcept StoreLockedError as e:\n"
                "    print('LOCKED', e)\n")
        out = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("LOCKED") and "another process" in out.stdout, out.stderr
    assert StoreLockedError  # the type the CLI maps to its exit code


def test_qdrant_engine_setting_selects_edge_and_refuses_bad_values(tmp_path):
    settings = load_settings({"QDRANT_ENGINE": "Edge", "QDRANT_PATH": str(tmp_path / ".qdrant")}, dotenv_path=None)
    assert settings.qdrant_engine == "edge"
    with pytest.raises(ConfigurationError, match="does not exist"):  # reading never makes the folder it names
        open_store(settings)
    assert not (tmp_path / ".qdrant").exists()
    with open_store(settings, create=True) as store:
        assert isinstance(store, EdgeStore) and store.kind == "edge"
        with pytest.raises(CollectionNotFoundError, match="QDRANT_ENGINE=edge"):
            store.count("physicalai")
    assert load_settings({}, dotenv_path=None).qdrant_engine == "local"
    with pytest.raises(ConfigurationError, match="QDRANT_ENGINE must be one of local, edge") as bad:
        load_settings({"QDRANT_ENGINE": "rocksdb"}, dotenv_path=None)
    assert bad.value.variable == "QDRANT_ENGINE"
    with pytest.raises(ConfigurationError, match="unset one of them"):
        load_settings({"QDRANT_ENGINE": "edge", "QDRANT_URL": "http://127.0.0.1:6333"}, dotenv_path=None)
