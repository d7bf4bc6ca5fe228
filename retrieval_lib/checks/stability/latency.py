"""Latency and concurrency of retrieval (seed 000 SC-002, seed 001 performance, seed 003 SC-008).

:func:`time_searches` times queries one by one (the library's own split and the whole call, ``call_ms``),
:func:`run_concurrent` submits many at once to a bounded thread pool and checks every answer against the ranking
the query got alone. :func:`run` is the check (notebook 06 and ``check latency``); its :class:`Latency` records the
gates, findings, metrics, tables and figure.

When the profile names a team's retriever, the questions go to it: its own embedding and search are one call, so
the findings name it as what answered and show no embedding/search split.

Timings depend on the machine and the backend: qdrant-client's local mode
searches exactly (no HNSW index) in the same process, so a Qdrant server adds a
network round trip and answers from its index (:func:`backend_note` says which).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.gates import LATENCY_ERRORS, LATENCY_P95, LATENCY_RANKINGS
from retrieval_lib.errors import ValidationError
from retrieval_lib.percentile import percentile
from retrieval_lib.search import SCORE_TOLERANCE, Retriever, same_ranking
from retrieval_lib.stores import ReadableStore
from retrieval_lib.validation import number_in, whole_number
from retrieval_lib.workbook.plots import plain_figure
from retrieval_lib.workbook.report import NotebookReport

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookRun

__all__ = ["run", "Latency", "time_searches", "reference_rankings", "unstable_queries", "run_concurrent"]

#: The per-call timings :func:`time_searches` records, in milliseconds.
TIMING_FIELDS: tuple[str, ...] = ("embed_ms", "search_ms", "execution_time_ms", "call_ms")

Ranking = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class TimedSearch:
    """One timed call of :meth:`Retriever.search`.

    ``embed_ms``, ``search_ms`` and ``execution_time_ms`` (their sum) are the
    response's own figures; ``call_ms`` is the wall-clock time around the call.
    """

    query: str
    round: int
    embed_ms: float
    search_ms: float
    execution_time_ms: float
    call_ms: float
    ranking: Ranking


def time_searches(retriever: Retriever, queries: Sequence[str], rounds: int = 1, *,
                  top_k: int = 5) -> list[TimedSearch]:
    """Search each query ``rounds`` (>= 1) times, one call at a time, and time every call: ``len(queries) *
    rounds`` records in run order (round 1 for all queries, then round 2, ...). Warm the retriever up first (one
    search) so the first call does not carry the one-off collection check.

    Raises:
        ValidationError: no queries or ``rounds`` < 1 (and whatever
            :meth:`Retriever.search` raises: a failing call is not swallowed).
    """
    if not queries:
        raise ValidationError("time_searches needs at least one query", field="queries")
    whole_number(rounds, "rounds", low=1)
    out: list[TimedSearch] = []
    for round_no in range(1, rounds + 1):
        for query in queries:
            t0 = time.perf_counter()
            response = retriever.search(query, top_k=top_k)
            call_ms = (time.perf_counter() - t0) * 1000
            out.append(TimedSearch(query=query, round=round_no, embed_ms=response.embed_ms,
                                   search_ms=response.search_ms, execution_time_ms=response.execution_time_ms,
                                   call_ms=call_ms, ranking=tuple(response.ranking())))
    return out


def latency_percentiles(samples: Sequence[TimedSearch],
                        fields: Sequence[str] = TIMING_FIELDS) -> dict[str, dict[str, float]]:
    """Percentiles of each timing field (:func:`percentile`, linear interpolation):
    ``{field: {"p50": ..., "p95": ..., "p99": ...}}``.

    Raises:
        ValidationError: no samples, or an unknown field.
    """
    if not samples:
        raise ValidationError("latency_percentiles needs at least one timed search", field="samples")
    unknown = [f for f in fields if f not in TIMING_FIELDS]
    if unknown:
        raise ValidationError(f"unknown timing field(s) {unknown}; known: {list(TIMING_FIELDS)}", field="fields")
    return {f: {f"p{q}": percentile([getattr(s, f) for s in samples], q) for q in (50, 95, 99)} for f in fields}


def reference_rankings(samples: Sequence[TimedSearch]) -> dict[str, Ranking]:
    """Each query's ranking from the first time it ran (what concurrent answers are compared to)."""
    return {s.query: s.ranking for s in reversed(samples)}  # reversed: a query's first run is written last, and wins


def unstable_queries(samples: Sequence[TimedSearch], *, score_tol: float = SCORE_TOLERANCE) -> list[str]:
    """Queries whose ranking differed between rounds of :func:`time_searches` (seed 000 SC-004), sorted."""
    ref = reference_rankings(samples)
    return sorted({s.query for s in samples if not same_ranking(s.ranking, ref[s.query], score_tol=score_tol)})


@dataclass
class ConcurrentRun:
    """What :func:`run_concurrent` saw.

    ``completed`` counts calls that returned; ``errors`` those that raised
    (by exception type in ``error_types``); ``timed_out`` those still pending
    or running at the deadline. ``mismatched`` lists the queries (once each)
    whose answer differed from the reference ranking.
    """

    submitted: int
    concurrency: int
    completed: int
    errors: int
    timed_out: int
    compared: int
    mismatched: list[str]
    wall_s: float
    timeout_s: float
    call_ms: list[float] = field(default_factory=list)
    error_types: dict[str, int] = field(default_factory=dict)
    score_tol: float = SCORE_TOLERANCE

    @property
    def throughput_qps(self) -> float:
        """Completed searches per second of wall-clock time (0 when nothing completed)."""
        return self.completed / self.wall_s if self.wall_s > 0 and self.completed else 0.0

    @property
    def rankings_identical(self) -> bool:
        """Every completed answer was compared, and none differed from its reference."""
        return self.compared == self.completed and not self.mismatched

    def call_percentiles(self) -> dict[str, float]:
        """p50, p95, p99 (:func:`percentile`) and max of the completed calls' ms; empty when none completed."""
        calls = self.call_ms
        return ({f"p{q}": percentile(calls, q) for q in (50, 95, 99)} | {"max": max(calls)}) if calls else {}

    def describe(self) -> str:
        """What happened, in counts only (no timings: the text is the same on any machine that passes)."""
        lines = [f"{self.submitted} searches submitted to {self.concurrency} threads: {self.completed} completed, "
                 f"{self.errors} errors, {self.timed_out} timed out",
                 f"{self.compared} answers compared with the sequential ranking; rankings identical: "
                 f"{self.rankings_identical}"]
        lines += [f"errors by type: {self.error_types}"] if self.error_types else []
        lines += [f"queries whose ranking differed: {self.mismatched}"] if self.mismatched else []
        return "\n".join(lines)


def run_concurrent(retriever: Retriever, queries: Sequence[str], n: int, concurrency: int, *,
                   reference: Mapping[str, Sequence[tuple[str, float]]] | None = None,
                   timeout_s: float = 60.0, top_k: int = 5, score_tol: float = SCORE_TOLERANCE) -> ConcurrentRun:
    """Submit ``n`` searches at once to a pool of ``concurrency`` threads and judge the answers.

    Search i is ``queries[i % len(queries)]``. The run is bounded: it waits at
    most ``timeout_s`` seconds of wall-clock time for all futures; whatever is
    not done then is counted as timed out, and work not yet started is
    cancelled (a call already running cannot be interrupted and finishes in
    the background). A call that raises is counted as an error, never re-raised.

    ``retriever`` is open and warmed up (all threads share it). ``reference``: query -> ranking from a sequential
    run; when given, every query must be in it and each completed answer is compared with :func:`same_ranking`
    (within ``score_tol``).

    Raises:
        ValidationError: no queries, ``n`` or ``concurrency`` < 1,
            ``timeout_s`` <= 0, or a query missing from ``reference``.
    """
    if not queries:
        raise ValidationError("run_concurrent needs at least one query", field="queries")
    whole_number(n, "n", low=1)
    whole_number(concurrency, "concurrency", low=1)
    number_in(timeout_s, "timeout_s", 0, above=True)
    if reference is not None:
        missing = sorted(set(queries) - set(reference))
        if missing:
            raise ValidationError(f"no reference ranking for {len(missing)} query(ies), e.g. {missing[0]!r}",
                                  field="reference")

    def one(query: str) -> tuple[list[tuple[str, float]], float]:
        t0 = time.perf_counter()
        response = retriever.search(query, top_k=top_k)
        return response.ranking(), (time.perf_counter() - t0) * 1000

    jobs = [queries[i % len(queries)] for i in range(n)]
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="latency")
    t0 = time.perf_counter()
    try:
        futures = [(q, pool.submit(one, q)) for q in jobs]
        done, _ = wait([f for _, f in futures], timeout=timeout_s)
        wall_s = time.perf_counter() - t0
    finally:
        pool.shutdown(wait=False, cancel_futures=True)

    completed = errors = compared = timed_out = 0
    errors_by_type: Counter[str] = Counter()
    mismatched: list[str] = []
    call_ms: list[float] = []
    for query, future in futures:
        if future not in done:
            timed_out += 1
            continue
        err = future.exception()
        if err is not None:
            errors += 1
            errors_by_type[type(err).__name__] += 1
            continue
        ranking, ms = future.result()
        completed += 1
        call_ms.append(ms)
        if reference is not None:
            compared += 1
            if not same_ranking(ranking, reference[query], score_tol=score_tol) and query not in mismatched:
                mismatched.append(query)
    return ConcurrentRun(submitted=n, concurrency=concurrency, completed=completed, errors=errors,
                         timed_out=timed_out, compared=compared, mismatched=mismatched, wall_s=wall_s,
                         timeout_s=float(timeout_s), call_ms=call_ms, error_types=dict(errors_by_type),
                         score_tol=score_tol)


# --------------------------------------------------------------------------- notebook 06
@dataclass(frozen=True)
class Warmup:
    """One-off costs kept out of the figures: ``setup_ms`` opening store and model, ``warmup_ms`` the first search."""

    setup_ms: float
    warmup_ms: float


def warm_up(run: Any, query: str, *, top_k: int = 5) -> Warmup:
    """Open ``run.retriever`` (a :class:`~retrieval_lib.workbook.NotebookRun` opens it on first use) and search once.

    The first search also checks the collection against the embedder; ``setup_ms`` is ~0 if already open.
    """
    t0 = time.perf_counter()
    retriever = run.retriever
    t1 = time.perf_counter()
    retriever.search(query, top_k=top_k)
    return Warmup(setup_ms=(t1 - t0) * 1000, warmup_ms=(time.perf_counter() - t1) * 1000)


def backend_note(store: ReadableStore, collection: str) -> str:
    """What the timings measured, by backend: a Qdrant server, or qdrant-client's in-process local mode."""
    if store.kind == "server":
        return "timed against a Qdrant server: figures include the network round trip and its HNSW index"
    if store.kind == "edge":
        return (f"the store is qdrant-edge (Qdrant's engine in this process) over {store.count(collection)} points: "
                "no network; a collection below its indexing threshold is searched exactly, so a Qdrant server's "
                "timings differ (network round trip, server load)")
    return (f"the store is qdrant-client local mode ({store.kind}): it searches exactly over all "
            f"{store.count(collection)} points in this process (no HNSW index, no network), so a Qdrant server's "
            "timings differ (network round trip, approximate index, server load)")


@plain_figure
def figure(samples: Sequence[TimedSearch], concurrent: ConcurrentRun, p95_target_ms: float, *,
           split: bool = True):
    """Per-call embedding, search and whole-call ms (and under concurrency), and whole-call percentiles vs target.

    ``split`` False (a team's retriever: one call, no embedding/search split): the whole-call times only."""
    from retrieval_lib.workbook.plots import latency_boxes

    series = {"embed_ms": [s.embed_ms for s in samples], "search_ms": [s.search_ms for s in samples]} if split else {}
    series |= {"call_ms\n(one at a time)": [s.call_ms for s in samples],
               f"call_ms\n({concurrent.concurrency} threads)": list(concurrent.call_ms)}
    return latency_boxes(series, latency_percentiles(samples, ["call_ms"])["call_ms"], target=p95_target_ms,
                         target_label="p95 target",
                         title=f"latency per call ({len(samples)} sequential calls, {concurrent.completed} concurrent)")


def run(ctx: NotebookRun, *, query_sets: str, latency_rounds: int, latency_p95_target_ms: float,
        concurrent_queries: int, concurrency: int, concurrent_timeout_s: float, top_k: int,
        score_tolerance: float) -> Latency:
    """Notebook 06's check: warm up, time every in-domain and out-of-domain query of ``query_sets``
    ``latency_rounds`` times one at a time, then ``concurrent_queries`` at once on ``concurrency`` threads.

    The questions go to ``ctx.retriever``: the team's retriever when the profile names one (then named as what
    answered), else the collection with the configured embedder.
    """
    from retrieval_lib.params import load_query_sets

    sets = load_query_sets(query_sets, required=("in_domain",))
    queries = sets["in_domain"] + sets.get("out_of_domain", [])
    warmup = warm_up(ctx, queries[0], top_k=top_k)
    samples = time_searches(ctx.retriever, queries, latency_rounds, top_k=top_k)
    concurrent = run_concurrent(ctx.retriever, queries, concurrent_queries, concurrency,
                                reference=reference_rankings(samples), timeout_s=concurrent_timeout_s, top_k=top_k,
                                score_tol=score_tolerance)
    if ctx.retriever_spec.kind != "collection":
        answered_by: str | None = ctx.asker.describe()
        note = (f"timed through {answered_by}: each figure is the whole question, its embedding, search and "
                "transport included")
    else:
        answered_by, note = None, backend_note(ctx.store, ctx.collection)
    return Latency(queries, len(sets["in_domain"]), latency_rounds, samples, concurrent, warmup,
                   p95_target_ms=latency_p95_target_ms, note=note, answered_by=answered_by)


@dataclass
class Latency:
    """Notebook 06's result: the timed searches one at a time and at once, the one-off costs, the target."""

    queries: list[str]
    in_domain: int
    rounds: int
    samples: list[TimedSearch]
    concurrent: ConcurrentRun
    warmup: Warmup
    p95_target_ms: float
    note: str
    answered_by: str | None = None

    def __str__(self) -> str:
        """Counts and verdicts only (no timing: the text is the same on any machine that passes)."""
        unstable = unstable_queries(self.samples, score_tol=self.concurrent.score_tol)
        return (f"{len(self.queries)} queries ({self.in_domain} in-domain, {len(self.queries) - self.in_domain} "
                f"out-of-domain)\n"
                f"{len(self.samples)} timed searches ({len(self.queries)} queries x {self.rounds} rounds); rankings "
                f"identical across rounds (ids, order, scores within {self.concurrent.score_tol:g}): {not unstable}\n"
                + self.concurrent.describe())

    def timings(self) -> str:
        """The one-off costs and the concurrent run's wall clock (they vary from run to run)."""
        w, c = self.warmup, self.concurrent
        return (f"setup (store open + model load): {w.setup_ms:.0f} ms; first search (warm-up): {w.warmup_ms:.0f} ms"
                if self.answered_by is None else
                f"setup (opening {self.answered_by}): {w.setup_ms:.0f} ms; first answer: {w.warmup_ms:.0f} ms") + \
            f"\nconcurrent run: {c.wall_s:.2f} s wall clock, throughput {c.throughput_qps:.1f} queries/s"

    def tables(self) -> dict[str, Any]:
        """``percentiles_sequential`` (p50, p95, p99 and max per timing field) and ``percentiles_concurrent``
        (whole calls), in ms."""
        import pandas as pd

        sequential = [{"timing": f, **v, "max": max(getattr(s, f) for s in self.samples)}
                      for f, v in latency_percentiles(self.samples).items()]
        return {"percentiles_sequential": pd.DataFrame(sequential).round(3),
                "percentiles_concurrent": pd.DataFrame([{"timing": "concurrent call_ms",
                                                         **self.concurrent.call_percentiles()}]).round(3)}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """The gates, findings and metrics, then the tables and the figure.

        Gates: sequential whole-call p95 (``call_ms``) <= ``p95_target_ms``; the concurrent run completed
        everything without errors or timeouts; every concurrent answer matched its sequential ranking (within the
        run's ``score_tol``). The findings carry throughputs and shares that vary by machine; the gates' lines hold
        no figure but counts, ms and s. ``answered_by`` (a team's retriever) is named in the findings in place of
        the embedding/search split and the model load.

        Raises:
            ValidationError: no samples, or ``p95_target_ms`` not > 0 (before anything is recorded).
        """
        samples, warmup, p95_target_ms, answered_by = self.samples, self.warmup, self.p95_target_ms, self.answered_by
        number_in(p95_target_ms, "p95_target_ms", 0, above=True)
        c, n, pcts = self.concurrent, len(samples), latency_percentiles(samples)
        p = pcts["call_ms"]
        p95_ok = p["p95"] <= p95_target_ms
        unstable = unstable_queries(samples, score_tol=c.score_tol)
        seq_qps = n * 1000 / sum(s.call_ms for s in samples)
        under_2s = 100.0 * sum(s.call_ms < 2000 for s in samples) / n
        embed_share = 100.0 * sum(s.embed_ms for s in samples) / (sum(s.execution_time_ms for s in samples) or 1.0)
        report.finding(f"one at a time ({n} calls): call_ms p50 {p['p50']:.1f} ms, p95 {p['p95']:.1f} ms, "
                       f"p99 {p['p99']:.1f} ms; p95 {'within' if p95_ok else 'ABOVE'} the {p95_target_ms} ms target "
                       f"(seed 001); {under_2s:.1f}% of calls under 2 s (seed 000 SC-002 asks 95%)")
        if answered_by is None:
            report.finding(f"embedding takes {embed_share:.0f}% of embed+search time (embed p50 "
                           f"{pcts['embed_ms']['p50']:.1f} ms, search p50 {pcts['search_ms']['p50']:.1f} ms)")
        else:
            report.finding(f"the questions were answered by {answered_by}: its own embedding and search in one call "
                           f"(answer p50 {pcts['search_ms']['p50']:.1f} ms), not split")
        report.finding(f"{c.submitted} searches on {c.concurrency} threads: {c.completed} completed, {c.errors} "
                       f"errors, {c.timed_out} timed out in {c.wall_s:.2f} s ({c.throughput_qps:.1f} queries/s vs "
                       f"{seq_qps:.1f} one at a time); rankings identical to sequential: {c.rankings_identical}")
        report.finding(f"excluded one-off costs: store open {warmup.setup_ms:.0f} ms, "
                       f"first search (loads the model on first use) {warmup.warmup_ms:.0f} ms" if answered_by is None
                       else f"excluded one-off costs: opening {answered_by} {warmup.setup_ms:.0f} ms, "
                            f"its first answer {warmup.warmup_ms:.0f} ms")
        report.finding(self.note)
        LATENCY_P95.record(report, p95_ok, fill={"latency_p95_target_ms": p95_target_ms}, value=p["p95"],
                           threshold=p95_target_ms, rule="<=", unit="ms",
                           detail=f"whole-call p95 {p['p95']:.1f} ms over {n} sequential calls")
        LATENCY_ERRORS.record(
            report, c.errors == c.timed_out == 0 and c.completed == c.submitted, value=c.errors + c.timed_out,
            threshold=0, rule="==", unit="calls",
            hint="see the errors by type above; calls that only timed out may need concurrent_timeout_s raised",
            detail=f"{c.completed}/{c.submitted} completed, {c.errors} errors, {c.timed_out} timed out "
                   f"({c.concurrency} threads, limit {c.timeout_s:g} s)")
        LATENCY_RANKINGS.record(
            report, c.rankings_identical, value=len(c.mismatched), threshold=0, rule="==", unit="queries",
            hint="answers changed under load: a store or embedder that is not thread-safe, or scores that move "
                 "by more than score_tolerance",
            detail=f"{c.compared} answers compared (ids, order, scores within {c.score_tol:g}); "
                   f"differing: {', '.join(c.mismatched) or 'none'}")
        metrics = {"setup_ms": warmup.setup_ms, "warmup_ms": warmup.warmup_ms, "sequential_calls": n,
                   "sequential_throughput_qps": seq_qps, "under_2s_pct": under_2s, "concurrent_wall_s": c.wall_s,
                   "concurrent_throughput_qps": c.throughput_qps,
                   **{f"{f}_{q}": v for f, values in pcts.items() for q, v in values.items()},
                   **{f"concurrent_call_ms_{q}": v for q, v in c.call_percentiles().items()},
                   "p95_target_ms": p95_target_ms, "concurrent_submitted": c.submitted,
                   "concurrent_completed": c.completed, "concurrent_errors": c.errors,
                   "concurrent_timed_out": c.timed_out,
                   "concurrency": c.concurrency, "rankings_identical": c.rankings_identical,
                   "rankings_stable_across_rounds": not unstable}
        for name, value in metrics.items():
            report.metric(name, value)
        for name, frame in self.tables().items():
            report.table(frame, name)
        report.figure(figure(self.samples, self.concurrent, self.p95_target_ms, split=self.answered_by is None),
                      "latency", show=show)
