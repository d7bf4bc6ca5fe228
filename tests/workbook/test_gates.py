"""Gate definitions: one stable id per gate, recorded through the catalogue, and docs/gates.md generated from it."""

from __future__ import annotations

import ast
import json
import re

import pytest

from retrieval_lib.checks import gate_docs
from retrieval_lib.checks.gates import CONSISTENCY_PHASES, COVERAGE_TOPIC, GATES, GOLDEN_PASSES, LATENCY_P95, by_id
from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.errors import ValidationError
from retrieval_lib.params import load_profile
from retrieval_lib.workbook.gates import ID_PATTERN, GateDef, gate_key, slug
from retrieval_lib.workbook.index_page import render_index
from retrieval_lib.workbook.registry import notebook_spec
from retrieval_lib.workbook.report import NotebookReport
from retrieval_lib.workbook.summary import gate_hint, terminal_lines

CHECKS = PROJECT_ROOT / "retrieval_lib" / "checks"
#: Checks whose gates carry ids of their own but are not in the catalogue yet (none: every check's are).
NOT_CATALOGUED: tuple[str, ...] = ()
#: Modules outside checks/ that record a catalogued gate by a literal id and label (NotebookRun.finish records
#: ``retriever.answered``): the test below holds those literals to the catalogue.
RECORDED_BY_LITERAL_ID = (PROJECT_ROOT / "retrieval_lib" / "workbook" / "report.py",)


def test_every_gate_id_is_unique_a_dotted_slug_and_holds_no_threshold():
    ids = [g.id for g in GATES]
    assert len(ids) == len(set(ids)) and len(ids) >= 45
    assert all(ID_PATTERN.match(i) for i in ids)
    demo = load_profile(PROJECT_ROOT / "params" / "demo.yaml", secrets=set()).values
    bars = {str(v) for v in demo.values() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    for gid in ids:  # no part of an id is a number, least of all one of the profile's thresholds
        assert not [p for p in gid.split(".") if re.fullmatch(r"[\d_.]+", p) or p in bars], gid


def test_every_gate_names_registered_notebooks_and_a_real_parameter():
    demo = load_profile(PROJECT_ROOT / "params" / "demo.yaml", secrets=set()).values
    for g in GATES:
        assert all(notebook_spec(name) for name in g.notebooks)
        if g.parameter:  # the key a failed gate's hint tells the reader to change
            assert g.parameter in demo or g.parameter == "min_effect", (g.id, g.parameter)


def test_checks_record_their_gates_only_through_the_catalogue():
    direct = []
    for module in sorted(CHECKS.rglob("*.py")):
        if module.name.startswith(NOT_CATALOGUED):
            continue
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("gate", "not_applicable") and ast.unparse(node.func.value) == "report"):
                direct.append(f"{module.relative_to(CHECKS)}:{node.lineno}")
    assert not direct, f"record these through a GateDef of retrieval_lib/checks/gates.py: {direct}"


def _literal_gates(module) -> dict[str, str | None]:
    """The gate ids written as literals in ``report.gate(label, ..., gate_id="x.y")`` calls of ``module``, each with
    its literal label (None when the label is computed)."""
    found: dict[str, str | None] = {}
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "gate", "not_applicable"):
            gid = next((k.value.value for k in node.keywords if k.arg == "gate_id"
                        and isinstance(k.value, ast.Constant)), None)
            if gid:
                label = node.args[0] if node.args else None
                found[gid] = label.value if isinstance(label, ast.Constant) else None
    return found


def test_gates_recorded_by_a_literal_id_are_catalogued_under_the_same_id_and_label():
    found: dict[str, str | None] = {}
    for module in RECORDED_BY_LITERAL_ID:
        found |= _literal_gates(module)
    assert "retriever.answered" in found  # the gate a run records when its questions went to a team's retriever
    for gid, label in found.items():
        assert by_id(gid) is not None and by_id(gid).id == gid, f"{gid}: add its GateDef to checks/gates.py"
        assert label is None or by_id(gid).label == label, (gid, label, by_id(gid).label)
    # notebook 15 records its six through the catalogue
    from retrieval_lib.checks.retrieval.side_by_side import GATES as SIDE_BY_SIDE

    assert {g.id for g in SIDE_BY_SIDE} == {g.id for g in GATES if g.id.startswith("side_by_side.")}


def test_a_gate_keeps_its_id_when_its_threshold_and_label_change(tmp_path):
    report = NotebookReport("06_latency", "t", tmp_path)
    a = LATENCY_P95.record(report, True, fill={"latency_p95_target_ms": 1500}, value=900, threshold=1500, rule="<=")
    b = LATENCY_P95.record(report, False, fill={"latency_p95_target_ms": 800}, value=900, threshold=800, rule="<=")
    assert (a.name, b.name) == ("p95 latency <= 1500 ms", "p95 latency <= 800 ms")
    assert a.id == b.id == "latency.p95" and a.parameter == "latency_p95_target_ms"
    saved = json.loads(report.save().read_text(encoding="utf-8"))
    assert [g["id"] for g in saved["gates"]] == ["latency.p95", "latency.p95"]
    with pytest.raises(ValidationError, match="latency_p95_target_ms"):
        LATENCY_P95.record(report, True)  # the label needs its figure


def test_a_gate_per_item_ends_its_id_in_the_item_and_a_single_gate_takes_none(tmp_path):
    report = NotebookReport("03_source_coverage", "t", tmp_path)
    g = COVERAGE_TOPIC.record(report, True, fill={"topic": "'Gazebo simulation'", "prefix": "m2/"},
                              item="Gazebo simulation")
    assert g.id == "coverage.topic.gazebo_simulation" and g.name == "'Gazebo simulation' lands in m2/"
    assert by_id(g.id) is COVERAGE_TOPIC and by_id("golden.passes") is GOLDEN_PASSES and by_id("nothing.x") is None
    with pytest.raises(ValidationError, match="item="):
        COVERAGE_TOPIC.record(report, True, fill={"topic": "t", "prefix": "p"})
    with pytest.raises(ValidationError, match="no item"):
        GOLDEN_PASSES.record(report, True, fill={"required_passes": 4}, item="x")
    assert slug("Qué es ROS 2?") == "qu_es_ros_2" and slug(100) == "100"
    with pytest.raises(ValidationError):
        GateDef("Golden passes", "x", ("golden_set",), "m", "c")


def test_a_not_applicable_gate_without_its_figures_takes_its_unjudged_label(tmp_path):
    report = NotebookReport("05_golden_set", "t", tmp_path)
    g = GOLDEN_PASSES.not_applicable(report, "no golden set for this book")
    assert (g.name, g.id, g.passed, g.detail) == ("the golden queries pass", "golden.passes", None,
                                                  "not applicable: no golden set for this book")
    assert CONSISTENCY_PHASES["repeat"].name({"repeats": 3}) == "identical across 3 repeats"


def test_the_summary_and_the_page_know_a_gate_by_its_id_and_an_old_one_by_its_name():
    gates = [{"notebook": "06_latency", "id": "latency.p95", "name": "p95 latency <= 1500 ms", "passed": False,
              "value": 1800, "threshold": 1500, "rule": "<=", "unit": "ms", "parameter": "latency_p95_target_ms"},
             {"notebook": "05_golden_set", "name": "golden passes", "passed": False}]
    assert [gate_key(g) for g in gates] == ["latency.p95", "golden passes"]
    summary = {"status": "complete", "notebooks": ["05_golden_set", "06_latency"], "gates": gates, "outcomes": []}
    lines = terminal_lines(summary)
    assert "  06 p95 latency <= 1500 ms [latency.p95]: 1,800 ms ≤ 1,500 ms" in lines
    assert "  05 golden passes: none" in lines
    assert 'docs/gates.md, "When a gate fails", gate `latency.p95`' in gate_hint(gates[0])
    page = render_index(summary)
    assert '<tr data-gate="latency.p95"><td>06_latency</td><td>p95 latency &lt;= 1500 ms</td>' in page
    assert '<tr data-gate="golden passes"><td>05_golden_set</td>' in page
    assert '<li data-gate="latency.p95">' in page


def test_docs_gates_md_is_generated_from_the_definitions():
    page = (PROJECT_ROOT / "docs" / "gates.md").read_text(encoding="utf-8")
    assert page == gate_docs.render(), (
        "docs/gates.md is out of date: python -m retrieval_lib.checks.gate_docs > docs/gates.md")
    for g in GATES:  # every gate has its row, by id
        assert f"| `{g.id}" in page
    assert "| 05 / 07 · metadata completeness >= `min_metadata_completeness`% | `health.completeness` |" in page
