"""ANN against exact on a real HNSW engine (qdrant-edge): the check reports a recall drop and passes a sound index.

The collections are built so that the HNSW index exists and is used (a low
indexing threshold and full-scan threshold), so ANN *can* differ from exact: a
deliberately tiny graph (m 2, ef_construct 4) searched with hnsw_ef 1 loses
recall and fails the gates; Qdrant's default graph passes them.
"""

from __future__ import annotations

import numpy as np
import pytest
from qdrant_client import models

from retrieval_lib import VectorStore
from retrieval_lib.checks import ann
from retrieval_lib.errors import ValidationError
from retrieval_lib.stores.edge import EdgeStore
from retrieval_lib.workbook.report import NotebookReport

pytest.importorskip("qdrant_edge")

N, DIM, CLUSTERS = 3000, 32, 40


def _points() -> list[models.PointStruct]:
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(CLUSTERS, DIM))
    cluster = rng.integers(0, CLUSTERS, N)
    vectors = centres[cluster] + 0.8 * rng.normal(size=(N, DIM))
    return [models.PointStruct(id=i, vector=vectors[i].tolist(),
                               payload={"source_file": f"module-{cluster[i] % 4}/f{cluster[i]}.md"})
            for i in range(N)]


def _indexed(folder, **hnsw) -> EdgeStore:
    store = EdgeStore.at_path(folder, hnsw={**hnsw, "full_scan_threshold": 1}, indexing_threshold_kb=1)
    store.create_collection("c", DIM)
    store.upsert("c", _points())
    store.optimize("c")
    return store


def _report(tmp_path, study, **gates) -> NotebookReport:
    report = NotebookReport("11_ann_recall", "Does the index return what exact search would?", run_dir=tmp_path)
    ann.record(report, study, **gates)
    return report


def test_a_tiny_hnsw_graph_loses_recall_and_fails_the_gates(tmp_path):
    with _indexed(tmp_path / "s", m=2, ef_construct=4) as store:
        study = ann.measure(store, "c", top_k=10, queries=200, slice_queries=50, hnsw_ef=1)
    assert study.index.indexed_vectors_count == N and not study.index.searches_exactly
    overall = study.overall
    assert overall is not None and len(overall.recalls) == 200
    assert overall.mean is not None and overall.mean < 0.9
    assert {s.name for s in study.slices} == {"whole collection", "module-0/", "module-1/", "module-2/", "module-3/"}
    report = _report(tmp_path, study)
    failed = [g.name for g in report.gates if not g.passed]
    assert "ANN mean recall@10 >= 0.95" in failed and any("filtered slice" in g for g in failed)
    assert report.metrics["ann_mean_recall_at_10"] == pytest.approx(overall.mean)


def test_the_default_hnsw_graph_passes(tmp_path):
    with _indexed(tmp_path / "s") as store:
        study = ann.measure(store, "c", top_k=10, queries=200, slice_queries=50)
    report = _report(tmp_path, study)
    assert len(report.gates) == 3 and all(g.passed for g in report.gates), [str(g) for g in report.gates]
    assert study.overall is not None and study.overall.mean is not None and study.overall.mean >= 0.95
    frame = ann.slices_frame(study)
    assert list(frame["search"]) == ["HNSW"] * 5 and frame["queries"].tolist() == [200, 50, 50, 50, 50]


def test_a_collection_without_an_index_is_reported_as_proving_nothing(tmp_path):
    with EdgeStore.at_path(tmp_path / "s") as store:  # Qdrant's thresholds: 3000 x 32 floats stay unindexed
        store.create_collection("c", DIM)
        store.upsert("c", _points())
        store.optimize("c")
        study = ann.measure(store, "c", queries=50, slice_queries=10)
    assert study.index.searches_exactly and study.overall is not None and study.overall.mean == 1.0
    report = _report(tmp_path, study)
    assert report.gates == [] and any("proves nothing" in f for f in report.findings)


def test_local_mode_is_not_applicable_and_fails_no_gate(tmp_path):
    with VectorStore.at_path(tmp_path / "l") as store:
        store.create_collection("c", DIM)
        store.upsert("c", _points()[:100])
        study = ann.measure(store, "c")
    report = _report(tmp_path, study)
    assert not study.applicable and study.slices == [] and report.gates == []
    assert any("not applicable: local mode searches exactly" in f for f in report.findings)


def test_bad_arguments_are_refused(tmp_path):
    with VectorStore.in_memory() as store:
        with pytest.raises(ValidationError) as bad:
            ann.measure(store, "c", top_k=0)
        assert bad.value.field == "top_k"
    with pytest.raises(ValidationError):
        ann.record(NotebookReport("x", "y", run_dir=tmp_path), ann.AnnStudy("c", None, 10, None, 0),  # type: ignore
                   min_recall=1.5)
