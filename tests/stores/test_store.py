"""VectorStore statistics (seed 004 CollectionStats) and paged reads."""

from __future__ import annotations

from qdrant_client import models

from retrieval_lib.stores import VectorStore, collection_stats


def fill(store: VectorStore, n: int, files: int) -> None:
    store.create_collection("c", 4)
    if n:
        store.upsert("c", [models.PointStruct(id=i + 1, vector=[1.0, 0.0, 0.0, float(i)],
                                              payload={"source_file": f"f{i % files}.md"}) for i in range(n)])


def test_stats_count_points_files_and_dimensions_and_say_what_is_unreported(tmp_path):
    with VectorStore.at_path(tmp_path / "s") as store:
        fill(store, 25, files=7)
        stats = collection_stats(store, "c")
    assert (stats.vector_count, stats.points_count, stats.source_files) == (25, 25, 7)
    assert (stats.dimensions, stats.distance) == (4, "Cosine")
    assert stats.disk_data_size_bytes and stats.disk_data_size_bytes > 0  # the folder on disk
    assert stats.ram_data_size_bytes is None
    assert [u.field for u in stats.unreported] == ["ram_data_size_bytes"] and stats.unreported[0].reason


def test_stats_warn_about_empty_and_tiny_collections():
    with VectorStore.in_memory() as store:
        fill(store, 0, files=1)
        empty = collection_stats(store, "c")
        store.upsert("c", [models.PointStruct(id=1, vector=[1, 0, 0, 0], payload={"source_file": "a.md"})])
        tiny = collection_stats(store, "c")
    assert empty.vector_count == 0 and empty.source_files == 0
    assert any("empty" in w for w in empty.warnings)
    assert tiny.vector_count == 1 and any("only 1 points" in w for w in tiny.warnings)
    assert {u.field for u in empty.unreported} == {"disk_data_size_bytes", "ram_data_size_bytes"}


def test_scroll_reads_every_point_across_pages():
    with VectorStore.in_memory() as store:
        fill(store, 1000, files=3)
        ids = [p.id for p in store.scroll("c", with_payload=False, batch_size=64)]
    assert len(ids) == 1000 and len(set(ids)) == 1000
