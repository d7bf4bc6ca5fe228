"""A gate computed on drafted data says so, and the report shows drafted and reviewed entries apart."""

from __future__ import annotations

import json

from retrieval_lib.params import Provenance
from retrieval_lib.workbook.index_page import render_index
from retrieval_lib.workbook.report import NotebookReport
from retrieval_lib.workbook.summary import data_text, terminal_lines


def _summary(tmp_path, provenance):
    report = NotebookReport("05_golden_set", "golden", tmp_path)
    report.gate("at least 52 golden queries pass", True, value=60, threshold=52, rule=">=",
                detail="60/64 found their page", provenance=provenance)
    report.gate("metadata completeness", True, detail="all fields")
    data = json.loads(report.save().read_text())
    gates = [{"notebook": "05_golden_set", **g} for g in data["gates"]]
    return {"status": "complete", "notebooks": ["05_golden_set"], "outcomes": [], "gates": gates}, gates


def test_a_gate_on_drafted_data_says_how_many_entries_are_drafted(tmp_path):
    summary, gates = _summary(tmp_path, Provenance(64, 0, marked=True))
    assert gates[0]["detail"] == "60/64 found their page (on 64 drafted, 0 reviewed queries)"
    assert gates[0]["provenance"] == {"drafted": 64, "reviewed": 0} and "provenance" not in gates[1]
    page = render_index(summary)
    assert "<th>data</th>" in page and "64 drafted · 0 reviewed" in page and "hand-written or none" in page
    assert "Validation data" in page
    assert any(line.startswith("  data: 1 of 1 gates") for line in terminal_lines(summary))


def test_hand_written_data_leaves_the_gate_and_the_report_as_they_were(tmp_path):
    summary, gates = _summary(tmp_path, Provenance(0, 5, marked=False))
    assert gates[0]["detail"] == "60/64 found their page" and "provenance" not in gates[0]
    assert "<th>data</th>" not in render_index(summary) and data_text(summary) == ""


def test_reviewed_entries_are_counted_apart(tmp_path):
    summary, gates = _summary(tmp_path, Provenance(40, 24, marked=True))
    assert gates[0]["detail"].endswith("(on 40 drafted, 24 reviewed queries)")
    assert "40 drafted · 24 reviewed" in render_index(summary)
