"""Notebook 02's check (checks.retrieval.score_distributions): its study, tables, figures, gates, findings and
metrics, each gate passing and failing."""

from __future__ import annotations

import math

import pytest
from responses import answer, hit

from retrieval_lib.checks.retrieval import _thresholds
from retrieval_lib.checks.retrieval import score_distributions as scores
from retrieval_lib.errors import ValidationError
from retrieval_lib.workbook.report import NotebookReport

SEPARATE = "in-domain and out-of-domain separate by score"
IN_RANGE = "similarity scores within [0, 1]"


def study(in_domain=None, ood=None, top_k=2) -> scores.ScoreStudy:
    """In-domain top-1s 0.9 and 0.6 (one top-2 score of 0.3), OOD top-1 0.2 (one raw score negative)."""
    in_domain = in_domain or [answer("a", [hit(0.9), hit(0.5, "m/b.md")]), answer("b", [hit(0.6), hit(0.3, "m/c.md")])]
    ood = ood or [answer("x", [hit(0.2, "m/x.md"), hit(-0.1, "m/y.md")])]
    return scores.ScoreStudy(in_domain=in_domain, out_of_domain=ood, top_k=top_k)


def record(s, tmp_path, *, candidate_threshold=0.4, min_separation=0.1):
    report = NotebookReport("02_score_distributions", "t", tmp_path)
    result = scores.ScoreDistributions.of(s, candidate_threshold=candidate_threshold, min_separation=min_separation,
                                          resamples=50)
    result.record(report, show=False)
    return report, {g.name: g for g in report.gates}, result.verdict


def test_separated_sets_pass_every_gate_with_findings_and_metrics(tmp_path):
    report, gates, verdict = record(study(), tmp_path)
    assert report.passed and len(gates) == 3 and verdict.passed
    clip = gates[IN_RANGE]
    assert (clip.value, clip.threshold) == (0, 0)
    assert clip.detail.startswith("6 scores, 0 outside [0, 1]; 1 raw cosine scores were negative")
    sep = gates[SEPARATE]
    assert sep.value == pytest.approx(0.4) and sep.threshold == 0.1 and sep.parameter == "min_separation"
    assert sep.detail == "min in-domain top-1 0.600 - max OOD top-1 0.200 = 0.400"
    assert gates["threshold 0.4 keeps every in-domain query and rejects every OOD query"].detail == (
        "in-domain queries losing every result: none; OOD queries still answered: none")
    assert report.findings[0].startswith("with 2 in-domain and 1 out-of-domain queries the recommended threshold 0.400")
    assert report.findings[1].startswith("ROC AUC of top-1 scores 1.000")
    assert report.findings[2:] == [
        "in-domain top-1 scores run from 0.600 to 0.900 (median 0.750); out-of-domain top-1 scores reach at most 0.200",
        "at candidate_threshold 0.4, 2/2 in-domain and 0/1 out-of-domain queries keep at least one result",
        "recommended threshold 0.400 (midpoint of the 0.400-wide gap)",
        "1 of 4 in-domain top-2 results score below 0.4: at that threshold those queries keep fewer than 2 chunks",
        "1 of 6 raw cosine scores were negative (clipped to 0)",
    ]
    assert report.metrics["separation"] == pytest.approx(0.4)
    assert report.metrics["recommended_threshold"] == pytest.approx(0.4)
    assert (report.metrics["negative_raw_scores"], report.metrics["scores_checked"]) == (1, 6)


def test_too_small_a_gap_fails_the_separation_gate(tmp_path):
    report, gates, _ = record(study(), tmp_path, min_separation=0.5)
    assert not gates[SEPARATE].passed and not report.passed


def test_overlapping_sets_fail_separation_and_get_no_recommendation(tmp_path):
    overlap = study(ood=[answer("x", [hit(0.7, "m/x.md")])])
    report, gates, _ = record(overlap, tmp_path)
    assert not gates[SEPARATE].passed and gates[SEPARATE].value == pytest.approx(-0.1)
    assert "no threshold separates the sets: they overlap by 0.100" in report.findings
    assert overlap.gap.describe().startswith("no gap: the highest OOD top-1 (0.700)")


def test_a_retriever_that_rejects_every_ood_question_itself_gets_no_midpoint_with_a_made_up_zero(tmp_path):
    # a chatbot's retriever with a cut of its own (similarity >= 0.45) answers out-of-domain questions with nothing:
    # their top-1 is unknown, so "the midpoint of 0 and 0.6" (0.300, below the retriever's own cut) is no advice
    own_cut = study(ood=[answer("x", []), answer("y", [])])
    report, gates, verdict = record(own_cut, tmp_path)
    assert gates[SEPARATE].passed and verdict.passed
    assert gates[SEPARATE].detail == ("no out-of-domain query got a result (the retriever's own cut rejected all 2); "
                                      "min in-domain top-1 0.600")
    assert report.metrics["recommended_threshold"] is None
    assert ("no threshold to recommend: the retriever's own cut already rejects every out-of-domain query (none got "
            "a result); any threshold up to 0.600 (lowest in-domain top-1) keeps every in-domain query"
            in report.findings)
    assert not any("0.300" in f or "at most 0.000" in f for f in report.findings)
    # some answered, some not: the highest answered one bounds the gap, and the rest are counted
    mixed = study(ood=[answer("x", [hit(0.2, "m/x.md")]), answer("y", [])])
    report, gates, _ = record(mixed, tmp_path / "mixed")
    assert report.metrics["recommended_threshold"] == pytest.approx(0.4)
    assert any(f.endswith("out-of-domain top-1 scores reach at most 0.200 (1 of 2 got no result: the retriever's "
                          "own cut rejected them)") for f in report.findings)


def test_a_threshold_that_loses_or_admits_queries_fails_and_hints_at_the_gap(tmp_path):
    _, gates, verdict = record(study(), tmp_path, candidate_threshold=0.65)
    lost = gates["threshold 0.65 keeps every in-domain query and rejects every OOD query"]
    assert not lost.passed and verdict.in_domain_lost == ["b"] and "losing every result: 'b'" in lost.detail
    assert lost.hint.startswith("set `candidate_threshold` to 0.400") and lost.parameter == "candidate_threshold"
    _, gates, verdict = record(study(), tmp_path, candidate_threshold=0.1)
    assert not gates["threshold 0.1 keeps every in-domain query and rejects every OOD query"].passed
    assert verdict.ood_admitted == ["x"]


def test_a_score_outside_0_1_or_no_score_at_all_fails_the_range_gate(tmp_path):
    broken = hit(0.9).model_copy(update={"similarity_score": 1.5})  # as if clipping had been bypassed
    _, gates, _ = record(study(in_domain=[answer("a", [broken])]), tmp_path)
    assert not gates[IN_RANGE].passed and gates[IN_RANGE].value == 1
    report, gates, _ = record(study(in_domain=[answer("a", [])], ood=[answer("x", [])]), tmp_path)
    assert not gates[IN_RANGE].passed and gates[IN_RANGE].detail.startswith("0 scores")
    assert report.findings[0] == "no interval for the recommended threshold: a query set has no query with a result"
    assert "figures/02_score_distributions_roc.png" not in report.figures


def test_per_query_frame_rounds_and_orders_best_first_within_each_set():
    frame = scores.per_query_frame(study(in_domain=[answer("b", [hit(0.61234)]), answer("a", [hit(0.9)]),
                                                    answer("none", [])]))
    assert list(frame["query"]) == ["a", "b", "none", "x"]
    assert list(frame["top1"])[:2] == [0.9, 0.612] and math.isnan(frame["top1"][2])
    assert list(frame["top1_source"])[0] == "module-01-ros2/01-ros2-overview.md"


class CannedRetriever:
    """Answers each query with the canned response of that text; records what it was asked."""

    def __init__(self, canned):
        self.canned, self.asked = canned, []

    def search_many(self, queries, top_k):
        self.asked.append((list(queries), top_k))
        return [self.canned[q] for q in queries]


def test_measure_runs_both_sets_and_refuses_an_empty_one():
    canned = {r.query_text: r for r in study().in_domain + study().out_of_domain}
    retriever = CannedRetriever(canned)
    measured = scores.measure(retriever, ["a", "b"], ["x"], top_k=2)
    assert retriever.asked == [(["a", "b"], 2), (["x"], 2)]
    assert measured.in_top1 == [0.9, 0.6] and measured.ood_top1 == [0.2] and measured.gap.recommended is not None
    assert len(measured.frame()) == 6
    with pytest.raises(ValidationError) as err:
        scores.measure(retriever, ["a"], [], top_k=2)
    assert err.value.field == "out_of_domain"


def test_argument_checks_are_validation_errors_naming_the_field():
    with pytest.raises(ValidationError) as err:
        _thresholds.recommend_threshold([], [0.1])
    assert err.value.field == "in_top1"
    with pytest.raises(ValidationError) as err:
        _thresholds.recommend_threshold([0.1], [])
    assert err.value.field == "ood_top1"


def test_figures_mark_the_threshold_and_the_gap():
    import matplotlib.pyplot as plt

    s = study()
    hist = scores.histogram_figure(s, 0.4)
    assert [ax.get_title() for ax in hist.axes] == ["top-1 score per query", "all top-2 scores"]
    assert all("candidate_threshold = 0.4" in [t.get_text() for t in ax.get_legend().get_texts()] for ax in hist.axes)
    curves = scores.tradeoff_figure(s, 0.4)
    labels = [t.get_text() for t in curves.axes[0].get_legend().get_texts()]
    assert "gap between the sets" in labels and "recommended = 0.400" in labels
    plt.close(hist)
    plt.close(curves)


def test_run_asks_both_sets_with_no_threshold_and_gives_the_tables_and_the_interval(tmp_path):
    sets = tmp_path / "sets.yaml"
    sets.write_text("in_domain: [a, b]\nout_of_domain: [x]\n", encoding="utf-8")
    canned = {r.query_text: r for r in study().in_domain + study().out_of_domain}
    retriever = CannedRetriever(canned)

    class Ctx:
        pass

    ctx = Ctx()
    ctx.retriever = retriever
    result = scores.run(ctx, query_sets=str(sets), top_k=2, candidate_threshold=0.4, min_separation=0.1)
    assert retriever.asked == [(["a", "b"], 2), (["x"], 2)]
    assert result.uncertainty is not None and result.verdict.passed
    lines = str(result).splitlines()
    assert lines[0] == "2 in-domain and 1 out-of-domain queries, top 2: 6 scores"
    assert lines[1].startswith("gap from 0.200 (highest OOD top-1) to 0.600")
    assert lines[2].startswith("with 2 in-domain")
    tables = result.tables()
    assert list(tables) == ["scores", "top1_per_query", "top1_summary", "tradeoff"]
    assert list(tables["top1_summary"]["set"]) == ["in_domain", "out_of_domain"]
    report = NotebookReport("02_score_distributions", "t", tmp_path)
    result.record(report, show=False)
    assert [f.split("/")[1].removeprefix("02_score_distributions_") for f in report.figures] == [
        "histograms.png", "tradeoff.png", "roc.png"]
    assert [g.id for g in report.gates] == ["scores.range", "scores.separation", "scores.threshold"]
