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
from retrieval_lib.checks.collection import ann_recall as ann
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


#: params/demo.yaml's minimums ("11 ann recall").
BARS = {"min_recall": 0.95, "min_recall_p5": 0.8}


def _report(tmp_path, study, **gates) -> NotebookReport:
    report = NotebookReport("11_ann_recall", "Does the index return what exact search would?", run_dir=tmp_path)
    ann.AnnRecall(study, **{**BARS, **gates}).record(report, show=False)
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
    frame = ann.AnnRecall(study, **BARS).tables()["slices"]
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
        ann.AnnRecall(ann.AnnStudy("c", None, 10, None, 0), min_recall=1.5,  # type: ignore[arg-type]
                      min_recall_p5=0.8).record(NotebookReport("x", "y", run_dir=tmp_path), show=False)


def test_the_check_is_not_applicable_when_only_a_teams_retriever_is_configured(tmp_path):
    class OnlyRetriever:  # what a NotebookRun says when the profile names a retriever and no collection opens
        def collection_absent(self):
            return "only the chatbot's retriever is configured"

    result = ann.run(OnlyRetriever(), ann_top_k=10, ann_queries=200, ann_slice_queries=50, ann_hnsw_ef=None,
                     ann_seed=0, ann_min_recall=0.95, ann_min_recall_p5=0.8)
    report = NotebookReport("11_ann_recall", "t", run_dir=tmp_path)
    result.record(report, show=False)
    # the labels name their figures even when nothing is measured
    assert [(g.id, g.name, g.passed) for g in report.gates] == [
        ("ann.recall_mean", "ANN mean recall@10 >= 0.95", None), ("ann.recall_p5", "ANN P5 recall@10 >= 0.8", None),
        ("ann.slices", "every filtered slice's mean recall@10 >= 0.95", None)]


def test_the_check_runs_through_a_notebooks_context_and_its_command(tmp_path, monkeypatch, capsys):
    import json

    from retrieval_lib.cli.main import main
    from retrieval_lib.config import load_settings
    from retrieval_lib.workbook.report import NotebookRun

    with VectorStore.at_path(tmp_path / "l") as store:
        store.create_collection("c", DIM)
        store.upsert("c", _points()[:100])
    env = {"QDRANT_PATH": str(tmp_path / "l"), "QDRANT_COLLECTION_NAME": "c", "QDRANT_URL": "", "QDRANT_API_KEY": "",
           "QDRANT_ENGINE": ""}
    ctx = NotebookRun("11_ann_recall", "t", tmp_path / "run", settings=load_settings(env=env))
    try:
        result = ann.run(ctx, ann_top_k=10, ann_queries=20, ann_slice_queries=5, ann_hnsw_ef=None, ann_seed=0,
                         ann_min_recall=0.95, ann_min_recall_p5=0.8)
    finally:
        ctx.close()
    assert isinstance(result, ann.AnnRecall) and not result.study.applicable
    assert "engine local: 100 points" in str(result) and result.tables()["slices"].empty
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["ann", "--json", "--top-k", "5", "--queries", "20"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["applicable"] is False and out["slices"] == [] and out["gates"] == [] and out["passed"]
    assert out["index"]["engine"] == "local" and any("local mode searches exactly" in f for f in out["findings"])


def test_the_check_needs_no_embedding_key(tmp_path, monkeypatch, capsys):
    """The queries are stored vectors: no embedder is built, so a model that cannot be loaded here (a hosted
    provider out of reach, a model folder on another machine) does not stop the check."""
    import json

    from retrieval_lib.cli.main import main

    with VectorStore.at_path(tmp_path / "l") as store:
        store.create_collection("c", DIM)
        store.upsert("c", _points()[:100])
    for name, value in {"QDRANT_PATH": str(tmp_path / "l"), "QDRANT_COLLECTION_NAME": "c", "QDRANT_URL": "",
                        "QDRANT_API_KEY": "", "QDRANT_ENGINE": "", "EMBEDDING_PROVIDER": "sentence-transformers",
                        "EMBEDDING_MODEL": str(tmp_path / "no-such-model")}.items():
        monkeypatch.setenv(name, value)
    assert main(["ann", "--json", "--queries", "20"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["index"]["engine"] == "local" and out["index"]["points_count"] == 100
    assert out["metrics"]["embed_calls"] == 0
