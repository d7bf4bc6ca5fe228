"""Notebook 07's check (checks.collection.collection_health): duplicate share, the one warning list, the result's
gates/findings/metrics, tables, figures and lines."""

from __future__ import annotations

import pytest
from fakes.embedders import FakeEmbedder

from retrieval_lib import VectorStore
from retrieval_lib.checks.collection import collection_health as health
from retrieval_lib.checks.collection.collection_health import PayloadScan
from retrieval_lib.errors import ValidationError
from retrieval_lib.models import PAYLOAD_FIELDS, CollectionStats, UnreportedField
from retrieval_lib.stores.qdrant import size_warning
from retrieval_lib.workbook.report import NotebookReport

EMBEDDER = FakeEmbedder.fixed([1.0, 0.0, 0.0, 0.0])  # model "fixed-model", 4 dimensions
THRESHOLDS = {"min_points": 10, "max_duplicate_share": 0.0, "min_metadata_completeness": 100.0}


def scan_of(points: int = 12, *, complete: int | None = None, duplicates: dict[str, int] | None = None,
            versions: dict[str, int] | None = None, warnings: list[str] | None = None) -> PayloadScan:
    versions = {"fixed-model": points} if versions is None else versions
    complete = points if complete is None else complete
    present = dict.fromkeys(PAYLOAD_FIELDS, points) | {"section_title": complete}
    return PayloadScan(points=points, field_present=present, complete_points=complete,
                       duplicate_hashes=duplicates or {}, model_versions=versions,
                       foreign_model_points=sum(n for m, n in versions.items() if m != "fixed-model"),
                       points_per_file={"a.md": points - points // 3, "b.md": points // 3} if points else {},
                       warnings=list(warnings or []))


def stats_of(count: int = 12, *, dimensions: int = 4, warnings: list[str] | None = None,
             unreported: list[UnreportedField] | None = None) -> CollectionStats:
    return CollectionStats(collection="c", location=":memory:", vector_count=count, points_count=count,
                           dimensions=dimensions, distance="Cosine", index_status="green", segments_count=1,
                           disk_data_size_bytes=None, ram_data_size_bytes=None, warnings=list(warnings or []),
                           unreported=list(unreported or []))


def record(scan: PayloadScan, stats: CollectionStats, tmp_path, **thresholds) -> NotebookReport:
    report = NotebookReport("07_test", "t", tmp_path)
    health.CollectionHealth(stats, scan, EMBEDDER, **(THRESHOLDS | thresholds)).record(report, show=False)
    return report


def gate(report: NotebookReport, start: str):
    return next(g for g in report.gates if g.name.startswith(start))


# ---------------------------------------------------------------------- the duplicate share lives on the scan
def test_duplicate_share_counts_the_copies_beyond_the_first_of_each_group():
    scan = scan_of(20, duplicates={"h1": 3, "h2": 2})
    assert scan.extra_copies == 3 and scan.duplicate_share == pytest.approx(3 / 20)
    empty = scan_of(0)
    assert empty.extra_copies == 0 and empty.duplicate_share == 0.0


def test_a_real_scan_reports_its_duplicate_share_and_warns_once_per_extra_copy():
    from qdrant_client import models

    store = VectorStore.in_memory()
    store.create_collection("d", 4)
    payloads = [{"content_hash": h, "model_version": "fixed-model", "source_file": "a.md"} for h in "aaabbc"]
    store.upsert("d", [models.PointStruct(id=i + 1, vector=[1, 0, 0, 0], payload=p) for i, p in enumerate(payloads)])
    scan = health.scan_payloads(store, "d", expected_model="fixed-model")
    assert scan.duplicate_hashes == {"a": 3, "b": 2} and scan.extra_copies == 3
    assert scan.duplicate_share == pytest.approx(0.5)
    assert "3 points repeat the text of another" in scan.warnings
    store.close()


def test_scan_refuses_a_batch_size_below_one():
    store = VectorStore.in_memory()
    with pytest.raises(ValidationError) as err:
        health.scan_payloads(store, "x", batch_size=0)
    assert err.value.field == "batch_size"
    store.close()


# ---------------------------------------------------------------------- one warning list
def test_collection_warnings_show_the_shared_small_collection_warning_once():
    small = size_warning("c", 5)
    assert small is not None
    warnings = health.collection_warnings(stats_of(5, warnings=["local mode", small]), scan_of(5, warnings=[small]),
                                          min_points=3)
    assert warnings == ["local mode", small]


def test_collection_warnings_add_min_points_and_a_count_disagreement():
    warnings = health.collection_warnings(stats_of(13), scan_of(12), min_points=20)
    assert warnings == ["the collection holds 12 points, below min_points 20",
                        "Qdrant counts 13 points but the scan read 12"]
    assert health.collection_warnings(stats_of(12), scan_of(12), min_points=12) == []


# ---------------------------------------------------------------------- record: every gate passes and fails
def test_a_sound_collection_passes_every_gate(tmp_path):
    report = record(scan_of(12), stats_of(12, unreported=[UnreportedField(field="ram", reason="why")]), tmp_path)
    assert [(g.name, g.passed, g.value) for g in report.gates] == [
        ("at least 10 points", True, 12), ("metadata completeness >= 100%", True, 100.0),
        ("duplicate share <= 0", True, 0.0), ("every point embedded with the configured model", True, 0),
        ("collection dimension == embedder dimension", True, 4)]
    assert report.gates[3].detail == "configured fixed-model; found fixed-model (12)"
    assert report.findings[:4] == [
        "12 points from 2 source files (4-8 per file), 4-dimensional Cosine vectors, index status green, 1 segment(s)",
        "metadata completeness 100.00% (12/12 points); every field on every point",
        "0 duplicate content_hash groups (0 extra copies, share 0.0000)",
        "model_version: fixed-model on 12 points; configured embedder fixed-model (4 dims, collection 4)"]
    assert "unreported by this backend: ram (why)" in report.findings
    assert report.metrics["duplicate_share"] == 0.0 and report.metrics["source_files"] == 2 and report.passed


def test_too_few_points_fail_and_become_a_warning_finding(tmp_path):
    report = record(scan_of(12), stats_of(12), tmp_path, min_points=13)
    assert not gate(report, "at least 13 points").passed
    assert "warning: the collection holds 12 points, below min_points 13" in report.findings


def test_incomplete_metadata_fails_and_names_the_least_present_field(tmp_path):
    report = record(scan_of(12, complete=9), stats_of(12), tmp_path)
    g = gate(report, "metadata completeness")
    assert (g.passed, g.value, g.detail) == (False, 75.0, "9/12 points carry every payload field")
    assert any(f.endswith("least present field 'section_title' at 75%") for f in report.findings)
    assert record(scan_of(12, complete=9), stats_of(12), tmp_path, min_metadata_completeness=75.0).passed


def test_duplicates_above_the_share_fail_with_value_and_detail_from_the_scan(tmp_path):
    scan = scan_of(20, duplicates={"h1": 3, "h2": 2})
    g = gate(record(scan, stats_of(20), tmp_path), "duplicate share")
    assert (g.passed, g.value, g.detail) == (False, 0.15, "2 content_hash groups, 3 extra copies")
    assert gate(record(scan, stats_of(20), tmp_path, max_duplicate_share=0.15), "duplicate share").passed


def test_points_from_another_model_fail_the_model_gate(tmp_path):
    report = record(scan_of(12, versions={"fixed-model": 10, "old-model": 2}), stats_of(12), tmp_path)
    g = gate(report, "every point embedded")
    assert (g.passed, g.value) == (False, 2)
    assert g.detail == "configured fixed-model; found fixed-model (10), old-model (2)"
    assert report.findings[3].startswith("model_version: fixed-model on 10 points, old-model on 2 points;")


def test_an_empty_collection_fails_the_model_gate_and_warns_once(tmp_path):
    empty = size_warning("c", 0)
    report = record(scan_of(0, warnings=[empty]), stats_of(0, warnings=[empty]), tmp_path, min_points=0)
    assert not gate(report, "every point embedded").passed
    assert report.findings.count(f"warning: {empty}") == 1


def test_a_dimension_mismatch_fails(tmp_path):
    g = gate(record(scan_of(12), stats_of(12, dimensions=384), tmp_path), "collection dimension")
    assert (g.passed, g.value, g.threshold) == (False, 384, 4)


@pytest.mark.parametrize("field, value", [("min_points", -1), ("min_points", 2.5), ("max_duplicate_share", 1.5),
                                          ("min_metadata_completeness", 101.0), ("max_duplicate_share", True)])
def test_record_refuses_thresholds_out_of_range(tmp_path, field, value):
    with pytest.raises(ValidationError) as err:
        record(scan_of(12), stats_of(12), tmp_path, **{field: value})
    assert err.value.field == field


# ---------------------------------------------------------------------- tables and figures
def tables_of(scan: PayloadScan, stats: CollectionStats | None = None) -> dict:
    return health.CollectionHealth(stats or stats_of(scan.points), scan, EMBEDDER, **THRESHOLDS).tables()


def test_tables_show_what_the_scan_and_the_stats_hold():
    stats = stats_of(12, unreported=[UnreportedField(field="ram_data_size_bytes", reason="no accounting")])
    tables = tables_of(scan_of(12), stats)
    table = tables["collection_stats"].set_index("field")
    assert table.loc["vector_count", "value"] == "12"
    assert tuple(table.loc["ram_data_size_bytes"]) == ("unreported", "no accounting")
    assert list(tables["disk_size"]["field"]) == ["disk_data_size_bytes"]  # apart: it changes with every build
    scan = scan_of(3, complete=2, duplicates={"b" * 20: 2, "a" * 20: 2, "c" * 20: 3})
    completeness = tables_of(scan)["field_completeness"].set_index("field")
    assert completeness.loc["section_title", "percent"] == 66.67
    assert list(tables_of(scan)["duplicate_hashes"]["content_hash"]) == ["c" * 16, "a" * 16, "b" * 16]
    assert tables_of(scan)["points_per_file"].to_dict("list") == {"source_file": ["a.md", "b.md"], "points": [2, 1]}
    versions = tables_of(scan_of(3, versions={"fixed-model": 2, "x": 1}))["model_versions"]
    assert list(versions["matches_configured_model"]) == [True, False]


def test_the_result_prints_the_scan_and_its_warnings_and_records_tables_and_figures(tmp_path):
    result = health.CollectionHealth(stats_of(13), scan_of(12, duplicates={"h": 2}), EMBEDDER, **THRESHOLDS)
    assert str(result).splitlines() == [
        "12 points scanned; 12 complete: metadata completeness 100.00%",
        "2 source files; points per file: min 4, median 6, max 8",
        "1 groups, 1 extra copies: duplicate share 0.0833",
        "collection dimension 4 vs embedder dimension 4",
        "warnings:", "- Qdrant counts 13 points but the scan read 12"]
    report = NotebookReport("07_collection_health", "t", tmp_path)
    result.record(report, show=False)
    assert [g.id for g in report.gates] == ["health.min_points", "health.completeness", "health.duplicates",
                                            "health.model", "health.dimension"]
    assert {p.name for p in (tmp_path / "tables").iterdir()} == {
        f"07_collection_health_{n}.csv" for n in ("collection_stats", "field_completeness", "points_per_file",
                                                  "duplicate_hashes", "model_versions")}
    assert {p.name for p in (tmp_path / "figures").iterdir()} == {
        "07_collection_health_field_completeness.png", "07_collection_health_points_per_file.png"}


def test_figures_colour_fields_below_the_minimum_red():
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    fig = health.completeness_figure(scan_of(4, complete=3), 100.0)
    per_file = health.per_file_figure(scan_of(4))
    try:
        bars = dict(zip(PAYLOAD_FIELDS, fig.axes[0].patches))
        assert to_hex(bars["section_title"].get_facecolor()) == to_hex("tab:red")
        assert to_hex(bars["chunk_id"].get_facecolor()) == to_hex("tab:green")
        assert [p.get_width() for p in per_file.axes[0].patches] == [3, 1]
    finally:
        plt.close(fig)
        plt.close(per_file)


# ---------------------------------------------------------------------- run from the registry: 00 and 07
@pytest.mark.slow
def test_notebook_00_and_07_checks_run_alone_from_the_registry(book, tmp_path, monkeypatch, capsys):
    import json
    import shutil

    from corpus import SAMPLE_COLLECTION

    from retrieval_lib.cli.main import main

    folder = tmp_path / "store"
    shutil.copytree(book.folder, folder, ignore=shutil.ignore_patterns(".lock"))
    for name, value in {"QDRANT_PATH": str(folder), "QDRANT_URL": "", "QDRANT_COLLECTION_NAME": SAMPLE_COLLECTION,
                        "EMBEDDING_PROVIDER": "local", "EMBEDDING_MODEL": "", "COHERE_API_KEY": ""}.items():
        monkeypatch.setenv(name, value)
    assert main(["check", "collection_health", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [(g["id"], g["passed"]) for g in found["gates"]] == [
        ("health.min_points", True), ("health.completeness", True), ("health.duplicates", True),
        ("health.model", True), ("health.dimension", True)]
    assert sum(row["points"] for row in found["points_per_file"]) == len(book.points) == found["metrics"]["points"]
    assert found["duplicate_hashes"] == [] and found["model_versions"][0]["matches_configured_model"]
    # a bar the collection cannot meet fails the gate and the exit code
    assert main(["check", "collection_health", "--min-points", str(len(book.points) + 1)]) == 1
    assert f"[FAIL] at least {len(book.points) + 1} points" in capsys.readouterr().out

    assert main(["check", "collection", "--json"]) == 0  # 00 judges nothing: no gate, its tables and findings
    held = json.loads(capsys.readouterr().out)
    assert held["gates"] == [] and held["metrics"]["points"] == len(book.points)
    assert {row["role"] for row in held["mapping"]} >= {"content", "source_file"}
    assert any(f.startswith(f"{len(book.points)} points;") for f in held["findings"])


def test_the_collection_checks_are_not_applicable_when_only_a_teams_retriever_is_configured(tmp_path):
    from retrieval_lib.checks.collection import collection, embedding_contract
    from retrieval_lib.workbook.check import NotApplicable

    class OnlyARetriever:  # the context: the collection cannot be opened, and nothing else may be read
        def collection_absent(self, **_) -> str:
            return "only the chatbot's retriever is configured"

        def __getattr__(self, name):
            raise AssertionError(f"the check read ctx.{name} of a collection that is not there")

    ctx = OnlyARetriever()
    results = [collection.run(ctx), health.run(ctx, **THRESHOLDS),
               embedding_contract.run(ctx, contract_sample=8, contract_seed=0, top_k=5, contract_min_cosine=0.99,
                                      max_self_retrieval_drop=0.05)]
    assert all(isinstance(r, NotApplicable) for r in results)
    report = NotebookReport("07_collection_health", "t", tmp_path)
    results[1].record(report, show=False)
    assert [(g.id, g.passed) for g in report.gates] == [
        ("health.min_points", None), ("health.completeness", None), ("health.duplicates", None),
        ("health.model", None), ("health.dimension", None)]
    assert all("only the chatbot's retriever" in g.detail for g in report.gates)
    assert str(results[0]) == "not applicable: only the chatbot's retriever is configured"


# ---------------------------------------------------------------------- what a collection does not hold
def test_a_collection_whose_roles_map_no_field_is_judged_where_it_can_be(tmp_path):
    """Its payloads carry only a key no role maps: the scan counts the points (it used to stop on "fields must be a
    non-empty list"), completeness and duplicates are not applicable with their reason, no point is called foreign,
    and the point count and the dimension are still judged."""
    from qdrant_client import models

    from retrieval_lib.config import load_settings
    from retrieval_lib.workbook.report import NotebookRun

    with VectorStore.at_path(tmp_path / "store") as store:
        store.create_collection("c", 384)
        store.upsert("c", [models.PointStruct(id=i + 1, vector=[1.0] + [0.0] * 383, payload={"colour": "red"})
                           for i in range(12)])
    env = {"QDRANT_PATH": str(tmp_path / "store"), "QDRANT_COLLECTION_NAME": "c", "QDRANT_URL": "",
           "QDRANT_API_KEY": "", "QDRANT_ENGINE": "", "EMBEDDING_PROVIDER": "local", "EMBEDDING_MODEL": ""}
    ctx = NotebookRun("07_collection_health", "t", tmp_path / "run", settings=load_settings(env=env))
    try:
        assert ctx.shared_dir is not None  # the run's shared scan is asked for, and must not stop the check
        result = health.run(ctx, **THRESHOLDS)
        assert isinstance(result, health.CollectionHealth)
        result.record(ctx.report, show=False)
    finally:
        ctx.close()
    assert result.scan.held == [] and result.scan.points == 12 and result.scan.foreign_model_points == 0
    assert [(g.id, g.passed) for g in ctx.report.gates] == [
        ("health.min_points", True), ("health.completeness", None), ("health.duplicates", None),
        ("health.model", None), ("health.dimension", True)]
    details = {g.id: g.detail for g in ctx.report.gates}
    assert "holds none of the fields the workbook reads" in details["health.completeness"]
    assert "neither a content hash nor the chunk text" in details["health.duplicates"]
    assert not any("other than" in w for w in result.warnings)  # no model name is not another model
    assert any(f.startswith("metadata completeness not applicable:") for f in ctx.report.findings)
    assert any(f.startswith("duplicates not applicable:") for f in ctx.report.findings)
    assert str(result).splitlines()[0] == "12 points scanned; metadata completeness not applicable (no field held)"


def _context(tmp_path, points: list[dict]) -> object:
    """A NotebookRun on collection "c" of a store of its own, holding ``points`` (payloads) with one vector."""
    from qdrant_client import models

    from retrieval_lib.config import load_settings
    from retrieval_lib.workbook.report import NotebookRun

    with VectorStore.at_path(tmp_path / "store") as store:
        store.create_collection("c", 384)
        if points:
            store.upsert("c", [models.PointStruct(id=i + 1, vector=[1.0] + [0.0] * 383, payload=payload)
                               for i, payload in enumerate(points)])
    env = {"QDRANT_PATH": str(tmp_path / "store"), "QDRANT_COLLECTION_NAME": "c", "QDRANT_URL": "",
           "QDRANT_API_KEY": "", "QDRANT_ENGINE": "", "EMBEDDING_PROVIDER": "local", "EMBEDDING_MODEL": ""}
    return NotebookRun("07_collection_health", "t", tmp_path / "run", settings=load_settings(env=env))


CHUNK_PARAMS = {"golden_set": "", "headings_per_file": 1, "queries": ["What is ROS 2?"], "fragment_min_length": 40,
                "fragment_max_heading_share": 0.5, "max_unseen_share": 0.1, "max_fragment_share": 0.2,
                "max_fragment_win_rate": 0.1}
CONTRACT_PARAMS = {"contract_sample": 8, "contract_seed": 0, "top_k": 5, "contract_min_cosine": 0.99,
                   "max_self_retrieval_drop": 0.05}


def test_an_empty_collection_fails_its_point_count_and_nothing_else_passes(tmp_path):
    """0 points: notebook 07 fails min_points and judges nothing it has no data for (completeness and duplicates
    had passed on 0 of 0 points); the checks that read the points are not applicable, saying why."""
    from retrieval_lib.checks.collection import chunk_quality, collection, embedding_contract
    from retrieval_lib.workbook.check import NotApplicable

    ctx = _context(tmp_path, [])
    try:
        result = health.run(ctx, **THRESHOLDS)
        result.record(ctx.report, show=False)
        others = [collection.run(ctx), chunk_quality.run(ctx, **CHUNK_PARAMS),
                  embedding_contract.run(ctx, **CONTRACT_PARAMS)]
    finally:
        ctx.close()
    gates = {g.id: g for g in ctx.report.gates}
    assert gates["health.min_points"].passed is False
    assert gates["health.completeness"].passed is None and gates["health.duplicates"].passed is None
    assert "holds no points" in gates["health.completeness"].detail
    assert all(isinstance(r, NotApplicable) and "holds no points" in r.reason for r in others)


def test_a_collection_without_the_chunks_text_is_not_judged_on_its_text(tmp_path):
    """Payloads of ids and URLs only: re-embedding "" read as "another model made the vectors", and every chunk was
    a 0-token fragment; both checks are not applicable, naming what is missing."""
    from retrieval_lib.checks.collection import chunk_quality, embedding_contract
    from retrieval_lib.workbook.check import NotApplicable

    ctx = _context(tmp_path, [{"url": f"https://book.example/docs/p{i}", "chunk_index": i} for i in range(12)])
    try:
        results = [chunk_quality.run(ctx, **CHUNK_PARAMS), embedding_contract.run(ctx, **CONTRACT_PARAMS)]
        line = embedding_contract.cost_line(ctx, 8)
    finally:
        ctx.close()
    assert all(isinstance(r, NotApplicable) and "holds the chunk's text" in r.reason for r in results)
    assert line.startswith("nothing embedded:")


def test_duplicates_are_told_by_hash_else_by_text_else_not_judged(tmp_path):
    held = [f for f in PAYLOAD_FIELDS if f != "content_hash"]
    by_text = PayloadScan(**{**vars(scan_of(12, duplicates={"t": 2})), "held": held})
    assert (scan_of(12).duplicates_by, by_text.duplicates_by) == ("content_hash", "identical-text")
    g = gate(record(by_text, stats_of(12), tmp_path / "text"), "duplicate share")
    assert (g.passed, g.detail) == (False, "1 identical-text groups, 1 extra copies")
    no_text = PayloadScan(**{**vars(scan_of(12)), "held": ["source_file", "title"]})
    assert no_text.duplicates_by is None
    report = record(no_text, stats_of(12), tmp_path / "none")
    g = gate(report, "duplicate share")
    assert g.passed is None and "cannot be compared" in g.detail
    assert gate(report, "metadata completeness").passed is True  # the two fields it holds are still judged
