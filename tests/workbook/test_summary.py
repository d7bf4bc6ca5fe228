"""What a finished run tells a person: the verdict line, failed gates with hints, the report's header facts."""

from __future__ import annotations

import math

import pytest

from retrieval_lib.workbook.index_page import render_index
from retrieval_lib.workbook.summary import embedding_text, format_value, gate_hint, rule_text, terminal_lines, verdict


def gate(name, passed, value=None, threshold=None, *, notebook="02_score_distributions", **extra):
    return {"notebook": notebook, "name": name, "passed": passed, "value": value, "threshold": threshold,
            "detail": extra.pop("detail", ""), "rule": extra.pop("rule", ""), "unit": extra.pop("unit", ""),
            "parameter": extra.pop("parameter", None), "hint": extra.pop("hint", None)}


def summary(gates, outcomes=None, **extra):
    base = {
        "status": "complete", "profile": "demo", "params_file": "/p/params/demo.yaml",
        "started": "2026-11-23T07:00:00+00:00", "duration_s": 68.0,
        "notebooks": ["02_score_distributions", "05_golden_set"],
        "notebooks_available": ["01_query", "02_score_distributions", "05_golden_set"],
        "notebooks_not_run": ["01_query"], "version": "retrieval-lib 0.1.0 (git abc1234)",
        "validated": {"collection": "physicalai", "location": "/p/.qdrant", "store": "embedded",
                      "provider": "local", "model": "all-MiniLM-L6-v2", "dimension": 384},
        "gates": gates,
        "outcomes": outcomes if outcomes is not None else [
            {"notebook": "02_score_distributions", "status": "failed" if any(not g["passed"] for g in gates)
             else "passed", "seconds": 12.0, "title": "Where should the threshold sit?", "error": None,
             "metrics": {"top1_min": 0.41603, "rejected": [], "sizes": 2408448}, "units": {"sizes": "bytes"},
             "findings": ["a finding"],
             "figures": [], "tables": []},
            {"notebook": "05_golden_set", "status": "passed", "seconds": 9.0, "title": "Golden", "error": None,
             "metrics": {}, "findings": [], "figures": [], "tables": []},
        ],
    }
    base.update(extra)
    return base


FAILING = [
    gate("threshold 0.5 keeps every in-domain query", False, 0.416, 0.5, rule=">=", parameter="candidate_threshold",
         detail="3 in-domain queries fall below 0.5 (lowest 0.416)"),
    gate("at least 4 golden queries pass", False, 0, 4, rule=">=", unit="queries", notebook="05_golden_set",
         parameter="golden_set", detail="0 < 4"),
    gate("scores in [0, 1]", True, 1.0, 1.0, rule="=="),
]


def test_the_verdict_line_counts_failed_gates_and_says_what_was_validated():
    lines = terminal_lines(summary(FAILING))
    assert lines[0] == ("FAILED 2 of 3 gates failed · 2 notebooks · 1 min 08 s · "
                        "collection physicalai @ /p/.qdrant (all-MiniLM-L6-v2)")
    assert "  02 threshold 0.5 keeps every in-domain query: 3 in-domain queries fall below 0.5 (lowest 0.416)" in lines
    assert "  05 at least 4 golden queries pass: 0 < 4" in lines
    assert lines[-1] == "  not run: 01_query"
    assert terminal_lines(summary(FAILING), quiet=True) == lines[:1]


def test_the_run_says_which_embed_calls_it_made():
    run = summary(FAILING)
    run["embedding"] = {"calls": 54, "texts": 400, "cached": 250,
                        "prefetch": {"queries": 281, "calls": 3, "texts": 281},
                        "notebooks": {"01_query": {"calls": 0, "texts": 0, "cached": 4},
                                      "04_consistency": {"calls": 50, "texts": 86, "cached": 0},
                                      "09_embedding_contract": {"calls": 1, "texts": 64, "cached": 64}}}
    assert terminal_lines(run)[-1] == ("  embed calls: 54 calls for 400 texts · prefetch 3 for the run's 281 distinct "
                                       "queries · notebooks: 04 50, 09 1 · 250 queries answered from the run's cache")
    run["embedding"]["prefetch"] = {"queries": 281, "calls": 1, "texts": 0, "error": "EmbeddingServiceError: down"}
    assert "prefetch 1 for the run's 281 distinct queries (failed: EmbeddingServiceError: down)" in \
        terminal_lines(run)[-1]
    assert embedding_text(None) == "not recorded"
    assert embedding_text({"calls": 1, "texts": 1, "notebooks": {}}) == "1 call for 1 text · notebooks: none sent any"


def test_passing_errored_and_interrupted_runs_have_their_own_verdict():
    ok = summary([gate("g", True, 1, 1, rule=">=")])
    assert terminal_lines(ok)[0].startswith("PASSED all 1 gates · ") and verdict(ok).exit_code == 0
    outcomes = [{"notebook": "07_collection_health", "status": "error", "seconds": 1.0,
                 "error": "cell 3: StoreLockedError: the embedded Qdrant folder is in use"}]
    errored = summary([], outcomes)
    assert verdict(errored).word == "ERROR" and verdict(errored).exit_code == 2
    assert "  07_collection_health raised an error: cell 3: StoreLockedError: the embedded Qdrant folder is in use" \
        in terminal_lines(errored)
    interrupted = summary([], [], status="interrupted")
    assert verdict(interrupted).word == "INTERRUPTED" and "results are partial" in verdict(interrupted).sentence
    # the line counts the notebooks that finished, not those the run was asked for
    stopped = summary([gate("g", True, 1, 1, rule=">=")], [{"notebook": "02_score_distributions", "status": "passed",
                                                           "seconds": 3.0, "error": None}], status="interrupted")
    assert terminal_lines(stopped)[0].startswith("INTERRUPTED 0 of 1 gates failed · 1 of 2 notebooks finished · ")


def test_a_run_that_could_judge_no_gate_is_not_judged_and_fails_the_exit_code():
    # only the chatbot's retriever configured and the collection not there, or an empty collection: every gate
    # not applicable; "PASSED all 0 gates" had turned a CI job green on nothing validated
    none = summary([gate("g", None), gate("h", None, notebook="05_golden_set")])
    assert verdict(none).word == "NOT JUDGED" and verdict(none).exit_code == 1
    assert terminal_lines(none)[0].startswith("NOT JUDGED no gate could be judged · 2 not applicable · 2 notebooks")
    assert verdict(summary([])).word == "NOT JUDGED"
    some = summary([gate("g", None), gate("h", True, 1, 1, rule=">=")])
    assert verdict(some).word == "PASSED" and verdict(some).exit_code == 0


@pytest.mark.parametrize("g, expected", [
    (gate("p95 within target", False, 1800.0, 1500, rule="<=", unit="ms", parameter="latency_p95_target_ms"),
     "measured 1800 ms where `latency_p95_target_ms` asks for at most 1,500 ms: fix the collection (docs/gates.md, "
     "\"When a gate fails\"), or, if 1800 ms is acceptable, raise `latency_p95_target_ms` to 1800 in demo.yaml"),
    (gate("share reachable", False, 0.9667, 1.0, rule=">=", parameter="min_reachable_share"),
     "measured 0.9667 where `min_reachable_share` asks for at least 1: fix the collection (docs/gates.md, "
     "\"When a gate fails\"), or, if 0.9667 is acceptable, lower `min_reachable_share` to 0.9667 in demo.yaml"),
    (gate("dimension matches", False, 1024, 384, rule="==", parameter="expected_dimension"),
     "measured 1,024 where `expected_dimension` asks for exactly 384: fix the collection (docs/gates.md, "
     "\"When a gate fails\"), or, if 1,024 is acceptable, set `expected_dimension` to 1,024 in demo.yaml"),
    (gate("no duplicates", False, 3, 0, rule="<=", parameter=None),
     "see docs/gates.md, \"When a gate fails\", for what this gate means and what usually causes it"),
    (gate("golden min_score", False, 0, 4, rule=">=", parameter="golden_set",
          hint="min_score 0.95 is above every golden hit (highest 0.815): lower `min_score` in your golden set"),
     "min_score 0.95 is above every golden hit (highest 0.815): lower `min_score` in your golden set"),
])
def test_each_kind_of_failed_gate_gets_a_hint_that_says_what_to_change(g, expected):
    assert gate_hint(g, "demo.yaml") == expected


def test_figures_read_as_words_not_python():
    assert format_value(0.0001) == "0.0001" and format_value(0.41603) == "0.416"
    assert format_value(2408448, "bytes") == "2.3 MiB" and format_value([]) == "none" and format_value(None) == "none"
    assert format_value({"all-MiniLM-L6-v2": 462}) == "all-MiniLM-L6-v2: 462" and format_value(True) == "yes"
    assert format_value(12.5, "ms") == "12.5 ms" and format_value(math.nan) == "not measured"
    assert rule_text(gate("x", True, 14.2, 1500, rule="<=", unit="ms")) == "14.2 ms ≤ 1,500 ms"
    assert rule_text(gate("x", False, 0.9667, 1.0, rule=">=", unit="share")) == "96.67 % ≥ 100 %"


def test_the_report_header_names_what_was_validated_and_failures_come_first():
    page = render_index(summary(FAILING))
    for fact in ("/p/params/demo.yaml", "physicalai", "/p/.qdrant (embedded)",
                 "local / all-MiniLM-L6-v2 (384 dimensions)", "2 of 3: 02, 05", "not run:</b> 01_query",
                 "1 min 08 s", "git abc1234"):
        assert fact in page, fact
    assert "Needs attention (2)" in page
    assert page.index("Needs attention") < page.index("<h2>Gates</h2>")
    rows = page.split("<h2>Gates</h2>")[1]
    assert rows.index("at least 4 golden") < rows.index("scores in [0, 1]")  # failed rows before passed ones
    assert "lower `candidate_threshold` to 0.416" in page.replace("&#x27;", "'").replace("&quot;", '"')
    assert "2.3 MiB" in page and "{'" not in page and "True" not in page


def test_an_errored_notebook_is_said_in_the_header_and_its_card_has_a_title():
    outcomes = [{"notebook": "03_source_coverage", "status": "error", "seconds": 2.0, "title": "",
                 "error": "cell 2: ValueError: boom", "metrics": {}, "findings": [], "figures": [], "tables": []}]
    page = render_index(summary([], outcomes))
    assert "1 notebook(s) raised an error (03_source_coverage)" in page
    assert "03_source_coverage raised an error" in page and "stopped before saying what it checks" in page


def test_specification_codes_are_explained_once_in_a_glossary():
    from retrieval_lib.workbook.specs import GLOSSARY, explain

    s = summary([gate("g", True, 1, 1, rule=">=")])
    s["outcomes"][0]["specification"] = ["seed 000 SC-003", "seed 000 SC-007"]
    s["outcomes"][1]["specification"] = ["seed 000 SC-003", "seed 004"]
    page = render_index(s)
    assert "Specification: seed 000 SC-003, seed 000 SC-007" in page
    glossary = page.split("Specification glossary")[1]
    assert glossary.count("seed 000 SC-003") == 1 and GLOSSARY["seed 000 SC-007"].replace('"', "&quot;") in glossary
    assert "Data model of embedding retrieval" in glossary  # a whole seed is explained too
    assert "not in the glossary" in explain("seed 000 SC-099")


def test_metrics_carry_units_and_definitions_from_the_glossary():
    from retrieval_lib.workbook.glossary import definition_of, unit_of

    assert unit_of("call_ms_p95") == "ms" and "95 percentile" in definition_of("call_ms_p95").replace("p95", "95")
    assert unit_of("disk_data_size_bytes") == "bytes" and unit_of("reachable_share") == "share"
    assert unit_of("mystery") == "" and definition_of("mystery") == ""
    s = summary([gate("g", True, 1, 1, rule=">=")])
    s["outcomes"][0]["metrics"] = {"reachable_share": 0.9667, "disk_data_size_bytes": 2408448, "call_ms_p95": 14.2}
    page = render_index(s)
    assert "96.67 %" in page and "2.3 MiB" in page and "14.2 ms" in page
    assert 'title="reachable files / all files"' in page
