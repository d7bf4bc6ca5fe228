"""What a person reads of a comparison (notebook 14): findings, tables, rankings side by side, the per-query delta
plot. :mod:`retrieval_lib.checks.comparison.compare` measures; its results record through :func:`record`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.gates import COMPARE_REGRESSION
from retrieval_lib.workbook.plots import plain_figure

if TYPE_CHECKING:
    from retrieval_lib.checks.comparison.compare import Comparison, MetricDelta
    from retrieval_lib.workbook.report import NotebookReport

__all__ = ["header", "tables", "worse_rankings", "text_report", "record"]


def header(cmp: Comparison) -> str:
    """Which runs, and what differs in their settings (collection, model, top_k)."""
    b, c = cmp.baseline, cmp.candidate
    line = f"baseline {b.name} against candidate {c.name}"
    if cmp.settings_changes:
        line += "; settings differ: " + ", ".join(f"{k} {v[0]!r} -> {v[1]!r}" for k, v in cmp.settings_changes.items())
    else:
        line += "; same collection, model and top_k"
    return line


def _sufficiencies(cmp: Comparison) -> list[str]:
    """The label-sufficiency statement of each notebook's first metric, said plainly."""
    out = []
    for m in cmp.headline:
        said = (f"label sufficiency, {m.notebook}: with {m.n} {m.kinds.replace('+', '/')} queries, a change in "
                f"{m.metric} smaller than {m.detectable:.3f} cannot be told from noise (80% power, alpha 0.05; "
                f"per-query spread {m.basis})")
        out.append(said + (f"; the min-effect {cmp.min_effect:g} is detectable" if m.detectable <= cmp.min_effect
                           else f"; detecting a change of {cmp.min_effect:g} needs about {m.needed} judged queries"))
    return out


def _metric_line(m: MetricDelta) -> str:
    return (f"{m.notebook} {m.metric} over {m.n} judged queries: {m.baseline:.3f} -> {m.candidate:.3f}, delta "
            f"{m.delta:+.3f} (95% bootstrap interval {m.low:+.3f} to {m.high:+.3f}), paired p {m.p_value:.3g}"
            + (" REGRESSION" if m.regression else ""))


def _record_findings(report: NotebookReport, cmp: Comparison) -> None:
    """Findings and metrics of a comparison (the gate is :func:`record`'s)."""
    report.finding(f"compared with {cmp.baseline.name}: " + header(cmp))
    report.finding(cmp.verdict())
    for line in [_metric_line(m) for m in cmp.metrics] + _sufficiencies(cmp):
        report.finding(line)
    q = cmp.queries
    if q:
        top1, files = sum(x.top1_changed for x in q), sum(x.top1_file_changed for x in q)
        report.finding(f"{top1} of {len(q)} shared queries changed their top-1 chunk ({files} their top-1 source "
                       f"file); mean RBO {sum(x.rbo for x in q) / len(q):.3f}, mean Jaccard@k "
                       f"{sum(x.jaccard for x in q) / len(q):.3f}")
    for g in cmp.gates:
        report.finding(g.line())
    for s in cmp.shifts:
        report.finding(f"{s.kind} top-1 scores: median {s.baseline_median:.3f} -> {s.candidate_median:.3f}, KS "
                       f"statistic {s.statistic:.3f}, p {s.p_value:.3g}"
                       + (" (the distribution shifted: a changed model or collection)" if s.shifted(cmp.alpha)
                          else ""))
    for note in cmp.notes:
        report.finding(note)
    report.metric("baseline_run", cmp.baseline.name)
    report.metric("regressions", len(cmp.regressions), "metrics")
    report.metric("shared_queries", len(q), "queries")
    report.metric("top1_changed", sum(x.top1_changed for x in q), "queries")
    report.metric("mean_rbo", sum(x.rbo for x in q) / len(q) if q else math.nan)
    for m in cmp.metrics:
        report.metric(f"delta {m.notebook[:2]} {m.metric}", m.delta)


def tables(cmp: Comparison | None, *, decimals: int = 3) -> dict[str, Any]:
    """``metrics``: one row per (notebook, metric): n, baseline, candidate, delta, its 95% interval, p, smallest
    detectable; ``changed_queries``: the shared queries whose ranking or metrics changed (per-metric deltas, RBO,
    Jaccard, top-1 changed). Both empty without a comparison."""
    import pandas as pd

    if cmp is None:
        return {"metrics": pd.DataFrame(), "changed_queries": pd.DataFrame()}
    rows: list[dict[str, Any]] = [
        {"notebook": m.notebook, "metric": m.metric, "judged queries": m.n, "baseline": m.baseline,
         "candidate": m.candidate, "delta": m.delta, "ci95 low": m.low, "ci95 high": m.high,
         "p": float(f"{m.p_value:.3g}"), "detectable at 80% power": m.detectable,
         "verdict": "REGRESSION" if m.regression else "worse" if m.delta < 0 else "better" if m.delta > 0
         else "same"} for m in cmp.metrics]
    metrics = pd.DataFrame(rows).round(decimals)
    deltas: dict[tuple[str, str], dict[str, float]] = {}
    for m in cmp.metrics:
        for q, (b, c) in m.per_query.items():
            deltas.setdefault((m.notebook, q), {})[f"delta {m.metric}"] = c - b
    rows = []
    for x in cmp.queries:
        d = deltas.get((x.notebook, x.qid), {})
        if x.rbo < 1 or x.top1_changed or any(v != 0 for v in d.values()):
            rows.append({"notebook": x.notebook, "query": x.text, "kind": x.kind, **d, "rbo": x.rbo,
                         "jaccard": x.jaccard, "top-1 changed": x.top1_changed,
                         "top-1 file changed": x.top1_file_changed})
    columns = ["notebook", "query", "kind", *sorted({k for v in deltas.values() for k in v}), "rbo", "jaccard",
               "top-1 changed", "top-1 file changed"]
    return {"metrics": metrics, "changed_queries": pd.DataFrame(rows, columns=columns).round(decimals)}


def _side_by_side(cmp: Comparison, notebook: str, qid: str, *, decimals: int = 3):
    """One query's baseline and candidate rankings in adjacent columns (source file and score per rank)."""
    import pandas as pd

    a = cmp.baseline.runs[notebook].results.get(qid, [])
    b = cmp.candidate.runs[notebook].results.get(qid, [])
    rows = []
    for i in range(max(len(a), len(b))):
        ra, rb = (a[i] if i < len(a) else None), (b[i] if i < len(b) else None)
        rows.append({"rank": i + 1, "baseline file": ra[2] if ra else "", "baseline score":
                     round(ra[1], decimals) if ra else None, "candidate file": rb[2] if rb else "",
                     "candidate score": round(rb[1], decimals) if rb else None,
                     "same chunk": bool(ra and rb and ra[0] == rb[0])})
    return pd.DataFrame(rows, columns=["rank", "baseline file", "baseline score", "candidate file",
                                       "candidate score", "same chunk"])


def worse_rankings(cmp: Comparison) -> dict[str, Any]:
    """For the queries that lost most on each notebook's first metric: their rankings side by side, by title."""
    out: dict[str, Any] = {}
    for m in cmp.headline:
        for q, d in m.worst():
            title = f"{m.notebook} {cmp.query_text(m.notebook, q)!r} ({m.metric} {d:+.3f})"
            out[title] = _side_by_side(cmp, m.notebook, q)
    return out


@plain_figure
def _delta_figure(cmp: Comparison | None):
    """Per-query deltas of the first metric per notebook, with the mean and its 95% interval."""
    import matplotlib.pyplot as plt

    chosen = cmp.headline if cmp else []
    fig, axes = plt.subplots(1, max(1, len(chosen)), figsize=(6.5 * max(1, len(chosen)), 0.3 * max(
        [len(m.per_query) for m in chosen] or [4]) + 1.8), squeeze=False)
    for ax, m in zip(axes[0], chosen):
        assert cmp is not None  # for mypy: chosen is empty without a comparison
        items = sorted(((c - b, cmp.query_text(m.notebook, q)) for q, (b, c) in m.per_query.items()), reverse=True)
        labels = [t if len(t) <= 42 else t[:40] + "..." for _, t in items]
        values = [d for d, _ in items]
        ax.barh(range(len(values)), values, color=["tab:red" if v < 0 else "tab:green" for v in values])
        ax.set_yticks(range(len(values)), labels, fontsize=7 if len(values) > 20 else 8)
        ax.invert_yaxis()
        ax.axvspan(m.low, m.high, color="tab:blue", alpha=0.15, label="95% interval of the mean delta")
        ax.axvline(m.delta, color="tab:blue", label=f"mean delta {m.delta:+.3f} (p {m.p_value:.2g})")
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_title(f"{m.notebook}: {m.metric} per query (candidate - baseline)", fontsize=10)
        ax.legend(fontsize=7, loc="lower right")
    if not chosen:
        axes[0][0].text(0.5, 0.5, "nothing compared: no judged queries in both runs", ha="center", va="center")
        axes[0][0].set_axis_off()
    fig.tight_layout()
    return fig


def text_report(cmp: Comparison) -> str:
    """The comparison as plain text: what the command prints without ``--json``."""
    lines = [header(cmp), cmp.verdict(), ""]
    lines += [_metric_line(m) for m in cmp.metrics] + [""] + _sufficiencies(cmp)
    for title, frame in worse_rankings(cmp).items():
        lines += ["", f"worse: {title}", frame.to_string(index=False)]
    if cmp.queries:
        q = cmp.queries
        lines += ["", f"{sum(x.top1_changed for x in q)} of {len(q)} shared queries changed their top-1 chunk; "
                      f"mean RBO {sum(x.rbo for x in q) / len(q):.3f}"]
    lines += [g.line() for g in cmp.gates]
    lines += [f"{s.kind} top-1 scores: KS statistic {s.statistic:.3f}, p {s.p_value:.3g}" for s in cmp.shifts]
    lines += cmp.notes
    return "\n".join(lines)


def record(report: NotebookReport, cmp: Comparison | None, *, reason: str = "", show: bool = True) -> None:
    """Record notebook 14's gate (no significant regression), findings, metrics, tables and figure; without a
    comparison, that there was nothing to compare with and why (``reason``; not an error): one finding, no gate."""
    if cmp is None:
        report.finding(f"nothing to compare with: {reason}")
        report.metric("baseline_run", None)
    else:
        worst = [f"{cmp.query_text(m.notebook, q)!r}" for m in cmp.regressions for q, _ in m.worst()]
        COMPARE_REGRESSION.record(
            report, not cmp.regressions, value=len(cmp.regressions), threshold=0, rule="==", unit="metrics",
            hint=(f"retrieval got worse than {cmp.baseline.name} on {', '.join(dict.fromkeys(worst))}: read "
                  "their rankings side by side in the changed-queries table; if the change is intended, make "
                  "this run the new baseline"),
            detail=cmp.verdict())
        _record_findings(report, cmp)
    frames = tables(cmp)
    report.table(frames["metrics"], "metrics")
    report.figure(_delta_figure(cmp), "per_query_deltas", show=show)
    report.table(frames["changed_queries"], "changed_queries")
