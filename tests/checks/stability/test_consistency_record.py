"""Notebook 04's phases, tables, figure, gates, findings and metrics (checks.stability.consistency), passing and
failing."""

from __future__ import annotations

import pytest
from responses import answer, hit

from retrieval_lib.checks.stability import consistency
from retrieval_lib.errors import ValidationError
from retrieval_lib.workbook.report import NotebookReport

QUERIES = ["q1", "q2"]


def ranked(query, *scores, ids="abcde"):
    return answer(query, [hit(s, f"m/{i}.md", point_id=i) for s, i in zip(scores, ids)])


def runs(*, swap_fresh: bool = False, nudge_batch: float = 0.0):
    """q1 ranks a (0.9), b (0.8), c (0.75); q2 ranks a (0.6), b (0.5). Optionally q2's fresh run swaps a and b,
    and q1's batched run moves a score by ``nudge_batch``."""
    repeated = {"q1": [ranked("q1", 0.9, 0.8, 0.75) for _ in range(3)], "q2": [ranked("q2", 0.6, 0.5)] * 3}
    fresh = {"q1": [ranked("q1", 0.9, 0.8, 0.75)],
             "q2": [ranked("q2", 0.6, 0.5, ids="ba") if swap_fresh else ranked("q2", 0.6, 0.5)]}
    batched = [ranked("q1", 0.9 + nudge_batch, 0.8, 0.75), ranked("q2", 0.6, 0.5)]
    return consistency.phase_runs(repeated, fresh=fresh, batched=batched)


def record(reference, phases, tmp_path, *, tolerance=1e-6):
    result = consistency.Consistency(list(reference), 3, 5, tolerance, reference, phases)
    report = NotebookReport("04_consistency", "t", tmp_path)
    result.record(report, show=False)
    return report, {g.name: g for g in report.gates}, result.failures, result.detail, result.per_query


def test_phase_runs_take_the_first_repeat_as_reference():
    reference, phases = runs()
    assert list(reference) == QUERIES and list(phases) == ["repeat", "fresh client", "search_many"]
    assert [len(v) for v in phases["repeat"].values()] == [2, 2]
    assert [len(v) for v in phases["search_many"].values()] == [1, 1]
    only_repeats = consistency.phase_runs({"q1": [ranked("q1", 0.9)]})[1]
    assert only_repeats == {"repeat": {"q1": []}}


def test_identical_runs_pass_every_gate_with_findings_and_metrics(tmp_path):
    report, gates, failures, frame, per_query = record(*runs(), tmp_path)
    assert report.passed and list(gates) == ["identical across 3 repeats", "identical through a fresh client",
                                             "search_many agrees with search"]
    assert failures == {"repeat": [], "fresh client": [], "search_many": []}
    repeat = gates["identical across 3 repeats"]
    assert (repeat.value, repeat.threshold, repeat.rule) == (0, 0, "==")
    assert repeat.detail == "4 runs of 2 queries: ids, order and scores within 1e-06 of the first run"
    assert list(per_query["min_adjacent_gap"]) == [0.05, 0.1]
    assert report.findings[0] == ("8 of 8 runs identical to their query's first run (2 queries, 3 repeats, a fresh "
                                  "client, one search_many pass)")
    assert report.findings[2].startswith("closest neighbouring scores in any ranking differ by 0.05000 ('q1'), "
                                         "50,000 x score_tolerance: score noise within the tolerance cannot")
    assert report.metrics["identical_runs"] == 8 and report.metrics["min_rbo"] == 1.0


def test_a_swapped_ranking_fails_its_phase_gate_and_is_named(tmp_path):
    report, gates, failures, frame, _ = record(*runs(swap_fresh=True), tmp_path)
    fresh = gates["identical through a fresh client"]
    assert not fresh.passed and fresh.value == 1 and fresh.detail == "differs: 'q2'"
    assert gates["identical across 3 repeats"].passed and gates["search_many agrees with search"].passed
    assert failures["fresh client"] == ["q2"]
    assert not report.passed and "score_tolerance" in fresh.hint
    assert report.findings[0].startswith("7 of 8 runs identical")


def test_a_score_moved_beyond_the_tolerance_fails_but_within_it_passes(tmp_path):
    _, gates, *_ = record(*runs(nudge_batch=1e-4), tmp_path)
    assert not gates["search_many agrees with search"].passed
    _, gates, *_ = record(*runs(nudge_batch=1e-4), tmp_path, tolerance=1e-3)
    assert gates["search_many agrees with search"].passed
    reference, phases = runs(nudge_batch=1e-4)
    diffs = consistency.exact_score_diffs(reference, phases)
    assert diffs["repeat"] == 0.0 and diffs["search_many"] == pytest.approx(1e-4)


def test_a_gap_below_the_tolerance_warns_that_noise_could_reorder(tmp_path):
    reference, phases = consistency.phase_runs({"q": [ranked("q", 0.9, 0.9), ranked("q", 0.9, 0.9)]})
    report, *_ = record(reference, phases, tmp_path)
    assert report.findings[2].endswith("noise within the tolerance could reorder this list")


def test_argument_checks_are_validation_errors_naming_the_field():
    with pytest.raises(ValidationError) as err:
        consistency.rbo("a", "a", p=1.0)
    assert err.value.field == "p"
    with pytest.raises(ValidationError) as err:
        consistency.repeat_search(None, QUERIES, 0, 5)
    assert err.value.field == "repeats"


def test_rbo_figure_marks_identical_cells_and_leaves_missing_ones_empty():
    import matplotlib.pyplot as plt

    reference, phases = runs(swap_fresh=True)
    frame = consistency.consistency_frame(reference, phases)
    fig = consistency.rbo_figure(frame, QUERIES + ["never asked"])
    texts = [t.get_text() for t in fig.axes[0].texts]
    columns = ["repeat 2", "repeat 3", "fresh client", "search_many"]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == columns
    assert texts[:4] == ["="] * 4                      # q1: identical everywhere
    assert texts[4:8] == ["=", "=", f"{consistency.rbo('ab', 'ba'):.2f}", "="]
    assert texts[8:] == [""] * 4                       # no run for that query
    plt.close(fig)


def test_the_result_records_its_tables_and_figure_and_prints_its_counts(tmp_path):
    reference, phases = runs(swap_fresh=True)
    result = consistency.Consistency(QUERIES, 3, 5, 1e-6, reference, phases)
    report = NotebookReport("04_consistency", "t", tmp_path)
    result.record(report, show=False)
    assert str(result).splitlines() == ["2 queries x 3 repeats + 1 search_many pass, top 5",
                                        "fresh client: 2 queries re-run",
                                        "1 of 8 runs differ from their query's first run"]
    tables = result.tables()
    assert list(tables) == ["first_runs", "comparisons", "per_query", "differing"]  # no language part given
    assert list(tables["differing"]["query"]) == ["q2"]
    assert report.tables == ["tables/04_consistency_comparisons.csv", "tables/04_consistency_per_query.csv"]
    assert (tmp_path / "figures" / "04_consistency_rbo_matrix.png").is_file()
    assert "search_many: max |score difference| = 0" in result.score_noise()


@pytest.mark.parametrize("name", ["consistency", "golden_set", "latency", "judgments"])
def test_the_check_takes_its_notebooks_parameters_by_name(name):
    """Notebooks 04, 05, 06 and 13: the check's ``run`` takes the ctx and exactly the notebook's parameters."""
    import importlib
    import inspect

    from retrieval_lib.workbook.registry import notebook_spec

    spec = notebook_spec(name)
    params = list(inspect.signature(importlib.import_module(spec.module).run).parameters)
    assert params[0] == "ctx" and sorted(params[1:]) == sorted(p for p in spec.params if p != "run_dir")
