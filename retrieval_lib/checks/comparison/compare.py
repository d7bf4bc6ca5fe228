"""Did retrieval get worse? Two runs compared query by query, with statistics (issue 14).

Each run folder keeps its notebooks' run files (:mod:`retrieval_lib.workbook.runfiles`) and ``metrics/*.json``.
:func:`compare_runs` lines two of them up, notebook by notebook:

- per metric (ranx names: ``ndcg@5``, ``mrr``, ``hit_rate@5`` ...) over the judged queries, judged with the
  BASELINE's qrels: baseline, candidate, delta = candidate - baseline, the 95% bootstrap interval of the delta,
  the paired test's p-value (ranx ``compare``), and the smallest change the judged queries can detect;
- per query: the metric deltas, and for every shared query (judged or not) RBO (p = 0.9) and Jaccard of the
  chunk ids, and whether the top-1 chunk (and its source file) changed;
- gates whose pass/fail status or threshold changed, matched by their stable id (``"latency.p95"``, see
  :mod:`retrieval_lib.workbook.gates`; by name for run folders written before ids existed), so a threshold changed
  between the runs shows as the same gate with a new threshold; a KS test of the in-domain and out-of-domain
  top-1 scores (02).

Verdict (:attr:`Comparison.exit_code`): 1 when some metric is worse with p < ``alpha`` AND |delta| >=
``min_effect``, else 0. Runs that asked different FIXED query sets (from params files) raise
:class:`~retrieval_lib.errors.RunsNotComparableError` (exit 2); DERIVED query sets (coverage's heading queries,
made from the collection) are compared on the queries both asked, and the difference is a note. A different
collection, model or top_k is allowed and shown in :attr:`Comparison.settings_changes`.

:func:`run` is the check (notebook 14, ``check compare`` and ``compare BASELINE CANDIDATE``): it resolves the two
runs and compares them; its :class:`Comparison` (or :class:`NothingToCompare`) records the gate, findings, tables and
figure. It reads run folders, never the collection.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import retrieval_lib.checks.statistics as st
from retrieval_lib.checks.comparison import _views as views
from retrieval_lib.checks.stability.consistency import jaccard, rbo
from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.errors import ConfigurationError, RunsNotComparableError, ValidationError
from retrieval_lib.workbook.registry import notebook_spec
from retrieval_lib.workbook.runfiles import RUNS_FOLDER, RunFile, read_runs

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "NothingToCompare", "DEFAULT_METRICS", "Comparison", "compare_runs", "find_baseline"]

DEFAULT_METRICS = ("ndcg@5", "mrr", "hit_rate@5")
#: This check's own notebook: its gates are never compared.
SELF = notebook_spec("compare").stem
#: The per-query standard deviation assumed when nothing varies yet: the largest a metric in [0, 1] can have.
_FALLBACK_SD = 0.5


@dataclass(frozen=True)
class RunGate:
    """One gate of a run folder's ``metrics/*.json``: its stable id ("" in a run written before ids), its label,
    whether it passed and the bar it was held to."""

    notebook: str
    id: str
    name: str
    passed: bool | None
    threshold: Any = None
    unit: str = ""


@dataclass
class RunInfo:
    """A run folder as a comparison reads it: its run files and its gates (notebook 14's own excepted)."""

    path: Path
    runs: dict[str, RunFile]
    gates: list[RunGate]

    @property
    def name(self) -> str:
        return self.path.name


def load_run(path: str | os.PathLike[str]) -> RunInfo:
    """Read a run folder (or a committed baseline folder holding ``runs/`` and ``metrics/``).

    Raises:
        ConfigurationError: no such folder, or an unreadable run file.
    """
    folder = next((f for f in (Path(path), PROJECT_ROOT / path, PROJECT_ROOT / "outputs" / path) if f.is_dir()), None)
    if folder is None:
        raise ConfigurationError(f"no run folder {str(path)!r} (looked as given, under the project and under "
                                 "outputs/); pass a run folder such as outputs/<timestamp>-demo", path=str(path))
    gates: list[RunGate] = []
    for m in sorted((folder / "metrics").glob("*.json")):
        data = json.loads(m.read_text(encoding="utf-8"))
        if data.get("notebook") != SELF:
            gates += [RunGate(data.get("notebook", m.stem), str(g.get("id") or ""), g["name"], g["passed"],
                              g.get("threshold"), g.get("unit") or "") for g in data.get("gates", [])]
    return RunInfo(path=folder, runs=read_runs(folder), gates=gates)


def find_baseline(candidate: str | os.PathLike[str]) -> Path | None:
    """The latest complete run before ``candidate`` with the same profile and run files, or None.

    Looks among the sibling folders of ``candidate``: names sort by their UTC timestamp.
    A candidate without ``summary.json`` (an interactive run) matches any profile.
    """
    cand = Path(candidate).resolve()
    parent = cand.parent
    profile = None
    if (cand / "summary.json").is_file():
        profile = json.loads((cand / "summary.json").read_text(encoding="utf-8")).get("profile")
    found = None
    for folder in sorted(p for p in parent.iterdir() if p.is_dir() and p.resolve() != cand):
        if (cand / "summary.json").is_file() and folder.name >= cand.name:
            continue
        s = folder / "summary.json"
        if not s.is_file() or not any((folder / RUNS_FOLDER).glob("*.json")):
            continue
        data = json.loads(s.read_text(encoding="utf-8"))
        if data.get("status") == "complete" and (profile is None or data.get("profile") == profile):
            found = folder
    return found


@dataclass
class MetricDelta:
    """One metric of one notebook, baseline against candidate, over ``n`` judged queries."""

    notebook: str
    metric: str
    n: int
    baseline: float
    candidate: float
    low: float
    high: float
    p_value: float
    regression: bool
    detectable: float
    basis: str
    needed: int
    per_query: dict[str, tuple[float, float]] = field(default_factory=dict)
    kinds: str = ""

    @property
    def delta(self) -> float:
        return self.candidate - self.baseline

    def worst(self, limit: int = 3) -> list[tuple[str, float]]:
        """The queries (ids) that lost most, worst first, with their delta (only those that lost)."""
        losses = sorted((c - b, q) for q, (b, c) in self.per_query.items() if c < b)
        return [(q, d) for d, q in losses[:limit]]


@dataclass
class QueryChange:
    """How one shared query's ranking moved."""

    notebook: str
    qid: str
    text: str
    kind: str
    rbo: float
    jaccard: float
    top1_changed: bool
    top1_file_changed: bool
    baseline_top1: float | None
    candidate_top1: float | None


@dataclass
class GateChange:
    """A gate whose status or threshold differs between the runs (None: not judged in that run: not applicable
    there, or absent from it, as ``baseline_present`` / ``candidate_present`` tell).

    ``gate`` is its label in the candidate (else the baseline), ``id`` its stable id ("" for a run written before
    ids existed: matched by name).
    """

    notebook: str
    gate: str
    baseline: bool | None
    candidate: bool | None
    id: str = ""
    baseline_threshold: Any = None
    candidate_threshold: Any = None
    unit: str = ""
    baseline_present: bool = True
    candidate_present: bool = True

    @property
    def threshold_changed(self) -> bool:
        """Both runs held the gate to a bar, and not the same one."""
        return None not in (self.baseline_threshold, self.candidate_threshold) and (
            self.baseline_threshold != self.candidate_threshold)

    def line(self) -> str:
        """``gate changed: 06_latency latency.p95 'p95 latency <= 1000 ms': PASS; threshold 1500 -> 1000 ms``."""
        before, after = _status(self.baseline, self.baseline_present), _status(self.candidate, self.candidate_present)
        status = f"{before} -> {after}" if before != after else after
        unit = f" {self.unit}" if self.unit else ""
        bar = (f"; threshold {self.baseline_threshold} -> {self.candidate_threshold}{unit}" if self.threshold_changed
               else "")
        return f"gate changed: {self.notebook} {self.id + ' ' if self.id else ''}{self.gate!r}: {status}{bar}"


def _status(passed: bool | None, present: bool = True) -> str:
    return "absent" if not present else "N/A" if passed is None else "PASS" if passed else "FAIL"


def _pair_gates(baseline: list[RunGate], candidate: list[RunGate]) -> list[tuple[RunGate | None, RunGate | None]]:
    """The two runs' gates side by side: the same notebook and id, or, where either run was written before ids
    existed, the same notebook and name. A gate of one run alone is paired with None."""
    pairs: list[tuple[RunGate | None, RunGate | None]] = []
    left = list(baseline)
    for c in candidate:
        match = next((b for b in left if b.notebook == c.notebook and b.id and b.id == c.id), None) or next(
            (b for b in left if b.notebook == c.notebook and (not b.id or not c.id) and b.name == c.name), None)
        if match is not None:
            left.remove(match)
        pairs.append((match, c))
    return pairs + [(b, None) for b in left]


def _gate_changes(b: RunInfo, c: RunInfo) -> list[GateChange]:
    out = []
    for gb, gc in _pair_gates(b.gates, c.gates):
        either = gc or gb
        assert either is not None  # a pair holds one gate at least
        change = GateChange(either.notebook, either.name, gb.passed if gb else None, gc.passed if gc else None,
                            id=either.id, baseline_threshold=gb.threshold if gb else None,
                            candidate_threshold=gc.threshold if gc else None, unit=either.unit,
                            baseline_present=gb is not None, candidate_present=gc is not None)
        if (change.baseline, change.baseline_present) != (change.candidate, change.candidate_present) \
                or change.threshold_changed:  # a gate of one run: when it was judged
            out.append(change)
    return sorted(out, key=lambda g: (g.notebook, g.id or g.gate))


@dataclass
class Comparison:
    """The whole comparison; :attr:`exit_code` is the verdict (see the module docstring)."""

    baseline: RunInfo
    candidate: RunInfo
    alpha: float
    min_effect: float
    test: str
    metrics: list[MetricDelta]
    queries: list[QueryChange]
    gates: list[GateChange]
    shifts: list[st.KsShift]
    settings_changes: dict[str, tuple[Any, Any]]
    notes: list[str]

    @property
    def regressions(self) -> list[MetricDelta]:
        return [m for m in self.metrics if m.regression]

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0

    @property
    def headline(self) -> list[MetricDelta]:
        """Each notebook's first metric: the one the sufficiency statement, the worse rankings and the figure show."""
        return [m for m in self.metrics if m.metric == self.metrics[0].metric]

    def query_text(self, notebook: str, qid: str) -> str:
        """The text of query ``qid`` of ``notebook`` (from the candidate run, else the baseline)."""
        rf = self.candidate.runs.get(notebook) or self.baseline.runs[notebook]
        return rf.text(qid) if qid in rf.queries else self.baseline.runs[notebook].text(qid)

    def verdict(self) -> str:
        """One sentence: what got worse (metric and worst queries), or that nothing did significantly."""
        if not self.regressions:
            changed = [m for m in self.metrics if m.delta != 0]
            return (f"no significant regression (alpha {self.alpha:g}, min-effect {self.min_effect:g}); "
                    f"{len(changed)} of {len(self.metrics)} metrics changed at all")
        parts = []
        for m in self.regressions:
            worst = ", ".join(f"{self.query_text(m.notebook, q)!r} ({d:+.3f})" for q, d in m.worst())
            parts.append(f"{m.notebook} {m.metric} {m.baseline:.3f} -> {m.candidate:.3f} ({m.delta:+.3f}, "
                         f"p {m.p_value:.3g}); worst queries: {worst}")
        return "REGRESSION: " + "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "baseline": str(self.baseline.path), "candidate": str(self.candidate.path), "exit_code": self.exit_code,
            "verdict": self.verdict(), "alpha": self.alpha, "min_effect": self.min_effect, "test": self.test,
            "settings_changes": {k: list(v) for k, v in self.settings_changes.items()}, "notes": self.notes,
            "metrics": [{**{k: getattr(m, k) for k in ("notebook", "metric", "n", "baseline", "candidate", "low",
                                                       "high", "p_value", "regression", "detectable", "needed")},
                         "delta": m.delta, "worst": [{"query": self.query_text(m.notebook, q), "delta": d}
                                                     for q, d in m.worst()]} for m in self.metrics],
            "queries": [vars(q) for q in self.queries],
            "gates_changed": [vars(g) for g in self.gates],
            "score_shift": [vars(s) for s in self.shifts],
        }

    # notebook 14's result (what ``run`` returns), through the views of ``_views``
    def __str__(self) -> str:
        return f"{views.header(self)}\n{self.verdict()}"

    def text(self) -> str:
        """The whole comparison as plain text (the ``compare`` command without ``--json``)."""
        return views.text_report(self)

    def tables(self) -> dict[str, Any]:
        return views.tables(self)

    def worse_rankings(self) -> dict[str, Any]:
        """The queries that lost most, both rankings side by side, by title."""
        return views.worse_rankings(self)

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        views.record(report, self, show=show)


def _check_comparable(b: RunInfo, c: RunInfo) -> tuple[list[str], list[str]]:
    common = sorted(set(b.runs) & set(c.runs))
    if not common:
        raise RunsNotComparableError(
            f"no notebook wrote run files in both runs ({b.name}: {sorted(b.runs) or 'none'}; {c.name}: "
            f"{sorted(c.runs) or 'none'}): run the notebooks that query (02, 03, 04, 05) in both")
    only_b: list[str] = []
    only_c: list[str] = []
    notes = [f"{nb} only in {run.name}: not compared" for run, other in ((b, c), (c, b))
             for nb in sorted(set(run.runs) - set(other.runs))]
    for nb in common:
        qb, qc = set(b.runs[nb].queries), set(c.runs[nb].queries)
        if qb == qc:
            continue
        if "derived" in (b.runs[nb].query_set, c.runs[nb].query_set):
            notes.append(f"{nb}: its queries are derived from the collection; compared on the {len(qb & qc)} both "
                         f"asked ({len(qb - qc)} only in the baseline, {len(qc - qb)} only in the candidate)")
            continue
        only_b += [f"{nb}: {b.runs[nb].text(q)!r}" for q in sorted(qb - qc)]
        only_c += [f"{nb}: {c.runs[nb].text(q)!r}" for q in sorted(qc - qb)]
    if only_b or only_c:
        raise RunsNotComparableError(
            "the runs asked different queries, so their metrics cannot be paired: only in the baseline "
            f"{only_b or 'none'}; only in the candidate {only_c or 'none'}. Compare runs made with the same golden "
            "set and query sets, or make a new baseline", only_baseline=only_b, only_candidate=only_c)
    return common, notes


def _page_run(results: Mapping[str, Sequence[Sequence[object]]], level: str | None) -> dict[str, dict[str, float]]:
    """A ranx run at ``level`` from a run file's ranked ``results``.

    At ``"source_url"`` or ``"source_file"`` a query's documents are its distinct pages (files) in rank order,
    scored ``n - rank`` so that rank order, not score ties, decides (as the golden notebook's trec_eval run does);
    at ``"chunk_id"`` or None the chunk ids with their scores.
    """
    column = {"source_file": 2, "source_url": 3}.get(level or "")
    run: dict[str, dict[str, float]] = {}
    for qid, rows in results.items():
        if column is None:
            run[qid] = {}
            for row in rows:
                run[qid].setdefault(str(row[0]), float(row[1]))  # type: ignore[arg-type]
            continue
        docs = list(dict.fromkeys(str(row[column] or row[0]) for row in rows))
        run[qid] = {doc: float(len(docs) - rank) for rank, doc in enumerate(docs)}
    return run


def _metric_deltas(nb: str, rb: RunFile, rc: RunFile, metrics: tuple[str, ...], *, alpha: float,
                   min_effect: float, test: str) -> list[MetricDelta]:
    shared = set(rb.queries) & set(rc.queries)
    qrels = {q: d for q, d in rb.qrels.items() if q in shared}
    if not qrels:
        return []
    run_b, run_c = _page_run(rb.results, rb.qrels_level), _page_run(rc.results, rb.qrels_level)
    per_b, per_c = st.evaluate_per_query(qrels, run_b, metrics), st.evaluate_per_query(qrels, run_c, metrics)
    p_values = st.paired_p_values(qrels, run_b, run_c, metrics, test=test)
    kinds = "+".join(dict.fromkeys(rb.queries[q]["kind"] for q in qrels))
    out = []
    for m in metrics:
        pairs = {q: (per_b[m][q], per_c[m][q]) for q in qrels}
        deltas = [c - b for b, c in pairs.values()]
        n = len(deltas)
        mean_b, mean_c = sum(b for b, _ in pairs.values()) / n, sum(c for _, c in pairs.values()) / n
        low, high = st.bootstrap_interval(deltas)
        sd, basis = _spread(deltas, [b for b, _ in pairs.values()])
        mde = st.detectable_effect(n, sd, alpha=alpha)
        regression = p_values[m] < alpha and mean_c - mean_b <= -min_effect
        out.append(MetricDelta(nb, m, n, mean_b, mean_c, low, high, p_values[m], regression, mde, basis,
                               st.queries_needed(min_effect, sd, alpha=alpha), pairs, kinds))
    return out


def _spread(deltas: list[float], base: list[float]) -> tuple[float, str]:
    """The per-query (sample) standard deviation a power calculation uses, and where it came from."""
    if (sd := statistics.stdev(deltas) if len(deltas) > 1 else 0.0) > 0:
        return sd, f"sd {sd:.3f} of the observed deltas"
    if (sd := statistics.stdev(base) if len(base) > 1 else 0.0) > 0:  # nothing changed yet: as queries differ
        return sd, f"sd {sd:.3f}, taken from the baseline's per-query values"
    return _FALLBACK_SD, f"unknown (no query varies), taken as the largest possible, {_FALLBACK_SD:g}"


def _query_changes(nb: str, rb: RunFile, rc: RunFile) -> list[QueryChange]:
    k = min(int(rb.settings.get("top_k") or 10**6), int(rc.settings.get("top_k") or 10**6))
    out = []
    for q in [q for q in rb.queries if q in rc.queries]:
        a, b = rb.results.get(q, []), rc.results.get(q, [])
        ids_a, ids_b = [r[0] for r in a], [r[0] for r in b]
        out.append(QueryChange(
            nb, q, rb.text(q), rb.queries[q].get("kind", ""), rbo(ids_a, ids_b), jaccard(ids_a[:k], ids_b[:k]),
            top1_changed=ids_a[:1] != ids_b[:1], top1_file_changed=[r[2] for r in a[:1]] != [r[2] for r in b[:1]],
            baseline_top1=rb.top1(q), candidate_top1=rc.top1(q)))
    return out


def compare_runs(baseline: str | os.PathLike[str], candidate: str | os.PathLike[str], *,
                 metrics: tuple[str, ...] | list[str] = DEFAULT_METRICS, alpha: float = 0.05,
                 min_effect: float = 0.02, test: str = "student") -> Comparison:
    """Compare two run folders (read by :func:`load_run`); see the module docstring.

    Raises:
        ValidationError: ``alpha`` outside (0, 1), ``min_effect`` negative, an unknown metric or test.
        RunsNotComparableError: different fixed query sets, or no notebook with run files in both.
        ConfigurationError: a run folder is missing or a run file unreadable.
    """
    if not 0 < alpha < 1:
        raise ValidationError(f"alpha must be within (0, 1) (got {alpha})", field="alpha")
    if min_effect < 0:
        raise ValidationError(f"min_effect must be >= 0 (got {min_effect})", field="min_effect")
    if test not in st.TESTS:
        raise ValidationError(f"test must be one of {st.TESTS} (got {test!r})", field="test")
    b, c = load_run(baseline), load_run(candidate)
    common, notes = _check_comparable(b, c)
    settings: dict[str, tuple[Any, Any]] = {}
    deltas: list[MetricDelta] = []
    changes: list[QueryChange] = []
    for nb in common:
        rb, rc = b.runs[nb], c.runs[nb]
        for key in sorted(set(rb.settings) | set(rc.settings)):
            if rb.settings.get(key) != rc.settings.get(key):
                settings[f"{nb} {key}" if key == "top_k" else key] = (rb.settings.get(key), rc.settings.get(key))
        deltas += _metric_deltas(nb, rb, rc, tuple(metrics), alpha=alpha, min_effect=min_effect, test=test)
        changes += _query_changes(nb, rb, rc)
    gates = _gate_changes(b, c)
    shifts = []
    scores_nb = notebook_spec("score_distributions").stem
    if scores_nb in common:
        for kind in ("in_domain", "out_of_domain"):
            top_b = [t for q in b.runs[scores_nb].of_kind(kind) if (t := b.runs[scores_nb].top1(q)) is not None]
            top_c = [t for q in c.runs[scores_nb].of_kind(kind) if (t := c.runs[scores_nb].top1(q)) is not None]
            shifts.append(st.ks_shift(kind, top_b, top_c))
    else:
        notes.append("no score-distribution run file (02) in both runs: no KS test of top-1 scores")
    return Comparison(b, c, alpha, min_effect, test, deltas, changes, gates, shifts, settings, notes)


# --------------------------------------------------------------------------- the check

def run(ctx: NotebookRun, *, baseline_run: str, candidate_run: str, compare_alpha: float, compare_min_effect: float,
        metrics: Sequence[str] = DEFAULT_METRICS, test: str = "student") -> Comparison | NothingToCompare:
    """Notebook 14's check: compare ``candidate_run`` (empty: this run, ``ctx.report.run_dir``) with
    ``baseline_run`` (empty: :func:`find_baseline`).

    Runs that asked different query sets give a :class:`NothingToCompare` that keeps the error (a grown golden set
    must not fail a run; the ``compare`` command raises it, exit 2).

    Raises:
        ValidationError: a bad ``compare_alpha``, ``compare_min_effect``, metric or test.
        ConfigurationError: a run folder is missing or a run file unreadable.
    """
    candidate = candidate_run or str(ctx.report.run_dir)
    baseline = baseline_run or find_baseline(candidate)
    if baseline is None:
        return NothingToCompare(f"no complete earlier run with run files beside {Path(candidate).name}")
    try:
        cmp = compare_runs(baseline, candidate, metrics=tuple(metrics), alpha=compare_alpha,
                           min_effect=compare_min_effect, test=test)
    except RunsNotComparableError as err:
        return NothingToCompare(f"{Path(baseline).name} is not comparable: {err.message}", error=err)
    return cmp


@dataclass
class NothingToCompare:
    """Notebook 14's result when there is no earlier run, or it asked other questions: a finding, no gate.

    ``error``: why the runs are not comparable, when that is the reason (the ``compare`` command raises it).
    """

    reason: str
    error: RunsNotComparableError | None = None
    exit_code: int = 0

    def __str__(self) -> str:
        return f"nothing to compare with: {self.reason}"

    def tables(self) -> dict[str, Any]:
        return views.tables(None)

    def worse_rankings(self) -> dict[str, Any]:
        return {}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        views.record(report, None, reason=self.reason, show=show)
