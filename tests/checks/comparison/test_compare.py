"""Run-to-run comparison: statistics agree with ranx/scipy; exit 0 / 1 / 2 on small known run folders."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import corpus
import pytest

from retrieval_lib.checks import statistics as st
from retrieval_lib.checks.comparison import compare
from retrieval_lib.checks.comparison.compare import compare_runs, find_baseline
from retrieval_lib.cli.main import main
from retrieval_lib.errors import RunsNotComparableError, ValidationError
from retrieval_lib.params import DEFAULT_PROFILE, load_profile
from retrieval_lib.workbook.runfiles import FORMAT, query_id

QUERIES = [f"question {i}" for i in range(10)]
# ranx's first evaluation compiles numba functions in the process (about 10 s of CPU) and this module is most of the
# suite's in-process ranx: on one worker it is paid once, not by every worker that got one of its tests
pytestmark = pytest.mark.xdist_group("test_compare")


def write_run_folder(folder: Path, ranks: dict[str, list[str]], *, status: str = "complete",
                     gate_passed: bool = True, gates: list[dict] | None = None) -> Path:
    """A run folder with a 05 run file: each query's pages in rank order; page ``good`` is relevant."""
    (folder / "runs").mkdir(parents=True)
    (folder / "metrics").mkdir()
    run = {query_id(q): {f"{q}-{i}": 1.0 - i / 10 for i in range(len(pages))} for q, pages in ranks.items()}
    chunks = {f"{q}-{i}": [f"{p}.md", f"/docs/{p}"] for q, pages in ranks.items() for i, p in enumerate(pages)}
    doc = {"format": FORMAT, "notebook": "05_golden_set", "query_set": "fixed", "qrels_level": "source_url",
           "settings": {"collection": "c", "model": "m", "top_k": 5},
           "queries": {query_id(q): {"text": q, "kind": "golden"} for q in ranks}, "run": run, "chunks": chunks,
           "qrels": {query_id(q): {"/docs/good": 1} for q in ranks}}
    (folder / "runs" / "05_golden_set.json").write_text(json.dumps(doc))
    (folder / "metrics" / "05_golden_set.json").write_text(json.dumps(
        {"notebook": "05_golden_set", "gates": gates or [{"name": "golden passes", "passed": gate_passed}]}))
    (folder / "summary.json").write_text(json.dumps({"status": status, "profile": "demo"}))
    return folder


GOOD = {q: ["good", "x", "y"] for q in QUERIES}
# the relevant page drops out of the top for 8 of 10 queries
BAD = {q: (["x", "y", "z"] if i < 8 else ["good", "x", "y"]) for i, q in enumerate(QUERIES)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("outputs")
    return {"base": write_run_folder(root / "20260101T000000Z-demo", GOOD),
            "same": write_run_folder(root / "20260102T000000Z-demo", GOOD),
            "worse": write_run_folder(root / "20260103T000000Z-demo", BAD, gate_passed=False),
            "other": write_run_folder(root / "20260104T000000Z-demo", {**GOOD, "a new question": ["good"]},
                                      status="incomplete")}


def test_same_runs_exit_0_and_nothing_changes(runs, capsys):
    assert main(["compare", str(runs["base"]), str(runs["same"]), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["exit_code"] == 0 and all(m["delta"] == 0 for m in out["metrics"])
    demo = load_profile(DEFAULT_PROFILE).values  # no --alpha, no --min-effect: the default profile's values
    assert (out["alpha"], out["min_effect"]) == (demo["compare_alpha"], demo["compare_min_effect"])
    assert all(q["rbo"] == 1 and not q["top1_changed"] for q in out["queries"])


def test_degraded_run_exits_1_naming_the_metric_and_worst_queries(runs, capsys):
    assert main(["compare", str(runs["base"]), str(runs["worse"]), "--metric", "mrr"]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION: 05_golden_set mrr 1.000 -> 0.200" in out and "'question 0' (-1.000)" in out
    assert "gate changed: 05_golden_set 'golden passes': PASS -> FAIL" in out


def _p95(target: int, passed: bool) -> dict:
    return {"id": "latency.p95", "name": f"p95 latency <= {target} ms", "passed": passed, "threshold": target,
            "unit": "ms"}


def test_a_gate_that_became_not_applicable_reads_n_a_not_absent(tmp_path):
    golden = {"id": "golden.passes", "name": "at least 4 golden queries pass", "passed": True, "threshold": 4}
    base = write_run_folder(tmp_path / "a", GOOD, gates=[_p95(1500, True), golden])
    unjudged = write_run_folder(tmp_path / "b", GOOD, gates=[_p95(1500, True), {**golden, "passed": None}])
    gone = write_run_folder(tmp_path / "c", GOOD, gates=[_p95(1500, True)])
    (na,) = compare_runs(base, unjudged).gates
    assert na.line() == "gate changed: 05_golden_set golden.passes 'at least 4 golden queries pass': PASS -> N/A"
    (absent,) = compare_runs(base, gone).gates
    assert absent.line().endswith("PASS -> absent")
    assert compare_runs(unjudged, gone).gates[0].line().endswith("N/A -> absent")


def test_a_threshold_changed_between_runs_is_the_same_gate_with_a_new_threshold(tmp_path, capsys):
    golden = {"id": "golden.passes", "name": "at least 4 golden queries pass", "passed": True, "threshold": 4}
    base = write_run_folder(tmp_path / "a", GOOD, gates=[_p95(1500, True), golden])
    cand = write_run_folder(tmp_path / "b", GOOD, gates=[_p95(1000, False), golden])
    changed = compare_runs(base, cand).gates
    assert [(g.id, g.gate, g.baseline, g.candidate, g.baseline_threshold, g.candidate_threshold)
            for g in changed] == [("latency.p95", "p95 latency <= 1000 ms", True, False, 1500, 1000)]
    assert changed[0].line() == ("gate changed: 05_golden_set latency.p95 'p95 latency <= 1000 ms': PASS -> FAIL; "
                                 "threshold 1500 -> 1000 ms")
    # a new bar that the run still meets is a change too, reported as the same gate
    same_verdict = write_run_folder(tmp_path / "c", GOOD, gates=[_p95(1200, True), golden])
    (g,) = compare_runs(base, same_verdict).gates
    assert g.line().endswith("'p95 latency <= 1200 ms': PASS; threshold 1500 -> 1200 ms")
    assert main(["compare", str(base), str(cand), "--json"]) == 0
    (shown,) = json.loads(capsys.readouterr().out)["gates_changed"]
    assert (shown["id"], shown["baseline_threshold"], shown["candidate_threshold"]) == ("latency.p95", 1500, 1000)


def test_a_baseline_written_before_ids_is_matched_by_name(tmp_path):
    old = write_run_folder(tmp_path / "old", GOOD, gates=[{"name": "p95 latency <= 1500 ms", "passed": True}])
    new = write_run_folder(tmp_path / "new", GOOD, gates=[_p95(1500, True)])
    assert compare_runs(old, new).gates == []
    failed = write_run_folder(tmp_path / "failed", GOOD, gates=[_p95(1500, False)])
    assert [(g.gate, g.baseline, g.candidate) for g in compare_runs(old, failed).gates] == [
        ("p95 latency <= 1500 ms", True, False)]


def test_a_large_min_effect_turns_the_same_drop_into_no_regression(runs):
    assert compare_runs(runs["base"], runs["worse"], metrics=["mrr"], min_effect=0.9).exit_code == 0


def test_different_query_sets_exit_2_listing_the_queries(runs, capsys):
    assert main(["compare", str(runs["base"]), str(runs["other"])]) == 2
    assert "'a new question'" in capsys.readouterr().err
    with pytest.raises(RunsNotComparableError) as info:
        compare_runs(runs["base"], runs["other"])
    assert info.value.only_candidate == ["05_golden_set: 'a new question'"] and info.value.exit_code == 2


def test_bad_arguments_are_validation_errors(runs):
    with pytest.raises(ValidationError):
        compare_runs(runs["base"], runs["same"], alpha=1.5)
    with pytest.raises(ValidationError):
        compare_runs(runs["base"], runs["same"], test="wilcoxon")


def test_baseline_is_the_latest_complete_earlier_run_of_the_profile(runs):
    assert find_baseline(runs["worse"]) == runs["same"]
    assert find_baseline(runs["base"]) is None
    assert find_baseline(runs["other"]) == runs["worse"]  # "other" itself is incomplete, the rest are earlier


def test_p_value_agrees_with_scipy_paired_t_test_and_per_query_with_ranx():
    from scipy.stats import ttest_rel

    qrels = {"a": {"d1": 1}, "b": {"d2": 1}, "c": {"d3": 1}, "d": {"d4": 1}}
    base = {"a": {"d1": 3.0, "x": 2.0}, "b": {"d2": 2.0}, "c": {"x": 2.0, "d3": 1.0}, "d": {"d4": 1.0}}
    cand = {"a": {"x": 3.0, "d1": 2.0}, "b": {"y": 2.0}, "c": {"x": 2.0, "d3": 1.0}, "d": {"y": 2.0, "d4": 1.0}}
    per_b = st.evaluate_per_query(qrels, base, ["mrr"])["mrr"]
    per_c = st.evaluate_per_query(qrels, cand, ["mrr"])["mrr"]
    assert per_b == {"a": 1.0, "b": 1.0, "c": 0.5, "d": 1.0} and per_c == {"a": 0.5, "b": 0.0, "c": 0.5, "d": 0.5}
    p = st.paired_p_values(qrels, base, cand, ["mrr"])["mrr"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = ttest_rel([per_b[q] for q in qrels], [per_c[q] for q in qrels]).pvalue
    assert p == pytest.approx(expected, rel=1e-6)


def test_bootstrap_interval_agrees_with_scipy_and_covers_the_mean():
    import numpy as np
    from scipy.stats import bootstrap

    deltas = [0.0, -0.5, -1.0, 0.2, -0.3, 0.0, -0.1]
    low, high = st.bootstrap_interval(deltas, seed=7)
    ref = bootstrap((np.array(deltas),), np.mean, method="percentile", n_resamples=2000,
                    rng=np.random.default_rng(7)).confidence_interval
    assert (low, high) == pytest.approx((ref.low, ref.high))
    assert low < np.mean(deltas) < high
    assert st.bootstrap_interval([0.0, 0.0]) == (0.0, 0.0)


def test_detectable_effect_gives_80_percent_power_and_matches_the_normal_approximation():
    from scipy.stats import norm

    d = st.detectable_effect(200, 0.3)
    approx = (norm.ppf(0.975) + norm.ppf(0.8)) * 0.3 / math.sqrt(200)  # large n: z-test formula
    assert d == pytest.approx(approx, rel=0.02)
    assert st.detectable_effect(8, 0.3) > st.detectable_effect(30, 0.3)
    assert st.detectable_effect(1, 0.3) == math.inf
    n = st.queries_needed(0.05, 0.3)
    assert st.detectable_effect(n, 0.3) <= 0.05 < st.detectable_effect(n - 1, 0.3)


def test_ks_shift_is_scipys():
    from scipy.stats import ks_2samp

    a, b = [0.5, 0.6, 0.7, 0.65], [0.3, 0.35, 0.4, 0.45]
    s = st.ks_shift("in_domain", a, b)
    ref = ks_2samp(a, b)
    assert (s.statistic, s.p_value) == pytest.approx((ref.statistic, ref.pvalue))
    assert s.shifted(0.05) == bool(ref.pvalue < 0.05)


def test_committed_baseline_compares_with_itself():
    root = corpus.TESTS.parent / "params" / "baselines" / "sample_book"
    assert compare_runs(root, root, metrics=["ndcg@5"]).exit_code == 0


def test_notebook_call_records_a_gate_and_the_report_gains_a_compared_with_section(runs, tmp_path):
    from retrieval_lib.workbook.index_page import render_index
    from retrieval_lib.workbook.report import NotebookRun

    ctx = NotebookRun("14_compare", "t", tmp_path / "r")
    try:
        result = compare.run(ctx, baseline_run=str(runs["base"]), candidate_run=str(runs["worse"]),
                             compare_alpha=0.05, compare_min_effect=0.02)
        assert isinstance(result, compare.Comparison) and "REGRESSION" in str(result)
        result.record(ctx.report, show=False)
        report = ctx.report
        assert not report.gates[0].passed and report.gates[0].id == "compare.regression"
        assert report.metrics["baseline_run"] == runs["base"].name
        assert set(result.tables()) == {"metrics", "changed_queries"} and len(result.tables()["metrics"]) == 3
        outcome = {"notebook": "14_compare", "status": "failed", "metrics": report.metrics,
                   "findings": report.findings}
        assert f"Compared with {runs['base'].name}" in render_index({"outcomes": [outcome]})
    finally:
        ctx.close()
    ctx = NotebookRun("14_compare", "t", tmp_path / "n")
    try:
        nothing = compare.run(ctx, baseline_run="", candidate_run=str(runs["base"]), compare_alpha=0.05,
                              compare_min_effect=0.02)
        assert isinstance(nothing, compare.NothingToCompare) and nothing.error is None
        nothing.record(ctx.report, show=False)
        assert not ctx.report.gates and "nothing to compare with" in ctx.report.findings[0]
        assert "Compared with" not in render_index({"outcomes": [{"notebook": "14_compare", "status": "passed",
                                                                  "metrics": ctx.report.metrics, "findings": []}]})
    finally:
        ctx.close()


def test_runs_that_asked_other_questions_are_nothing_to_compare_in_a_notebook_not_an_error(runs, tmp_path):
    from retrieval_lib.workbook.report import NotebookRun

    ctx = NotebookRun("14_compare", "t", tmp_path / "r")
    try:
        result = compare.run(ctx, baseline_run=str(runs["base"]), candidate_run=str(runs["other"]),
                             compare_alpha=0.05, compare_min_effect=0.02)
    finally:
        ctx.close()
    assert isinstance(result, compare.NothingToCompare) and isinstance(result.error, RunsNotComparableError)
    assert "is not comparable" in str(result) and result.tables()["metrics"].empty
