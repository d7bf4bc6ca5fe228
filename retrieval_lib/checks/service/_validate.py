"""Does a retrieval API behave as seed 003 says? Checked over HTTP, for ANY seed-003 service by URL.

:func:`validate_service` sends the requests (health, the golden queries, the ``top_k``
rules, six invalid inputs, repeats, 10 and 100 concurrent requests, timed rounds) and
keeps the answers; :func:`record` turns them into gates, metrics and findings on a
:class:`~retrieval_lib.workbook.report.NotebookReport`. Given the library's own retriever over
the same collection (when the service is ours), the golden rankings must match it and
the HTTP latency is set against the in-process latency: that difference is the
service's overhead.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from retrieval_lib.checks.gates import (
    API_CONCURRENT,
    API_FIELDS,
    API_GOLDEN,
    API_HEALTH,
    API_INVALID,
    API_OVERHEAD,
    API_REPEATS,
    API_TOP_K,
)
from retrieval_lib.checks.service._client import (
    Answer,
    ApiClient,
    error_view,
    health_dependencies,
    ranking_of,
    results_of,
)
from retrieval_lib.models import SEED003_FIELDS
from retrieval_lib.percentile import percentile
from retrieval_lib.search import Retriever, same_ranking
from retrieval_lib.workbook.report import MARKS, NotebookReport, gate_state

__all__ = ["ApiValidation", "validate_service", "record", "cases_frame", "latency_frame", "verdicts"]

#: What probes a service whose book has no golden set.
PROBE_QUERIES: tuple[str, ...] = ("What is this book about?",)

#: Invalid requests that must each get 400 with an error type and message: (name, JSON body, raw bytes).
ERROR_CASES: tuple[tuple[str, Any, bytes | None], ...] = (
    ("empty query", {"query": ""}, None),
    ("whitespace query", {"query": "   \t"}, None),
    ("over-long query (501 characters)", {"query": "a" * 501}, None),
    ("top_k 0", {"query": "What is ROS2?", "top_k": 0}, None),
    ("malformed JSON", None, b'{"query": "What is'),
    ("wrong types", {"query": 42, "top_k": "five"}, None),
)
_DEFAULT_TOP_K = 5
#: The results each ``top_k`` probe must bring (seed 003 FR-012): 5 by default, as many as asked, capped at 20.
_TOP_K_EXPECTED = {"default": _DEFAULT_TOP_K, "3": 3, "50": 20}


def _p50_p95(values: Sequence[float]) -> tuple[float, float]:
    # the workbook's one percentile; NaN (not an error) when no request succeeded, so the gate reports it
    return (percentile(values, 50), percentile(values, 95)) if values else (float("nan"), float("nan"))


@dataclass
class Concurrent:
    """``n`` requests at once: transport or HTTP errors, answers that differ from the serial ones, wall time."""

    n: int
    errors: int
    mismatched: int
    seconds: float

    @property
    def throughput(self) -> float:
        return self.n / self.seconds if self.seconds > 0 else float("nan")


@dataclass
class ApiValidation:
    """Everything :func:`validate_service` observed (answers kept whole, for the report's tables)."""

    url: str
    health: Answer
    dependencies: dict[str, bool | None]
    answers: dict[str, Answer]
    library: dict[str, list[tuple[str, float]]] | None
    top_k: dict[str, Answer]
    errors: dict[str, Answer]
    unstable: list[str]
    concurrent: list[Concurrent]
    http_ms: list[float] = field(default_factory=list)
    library_ms: list[float] = field(default_factory=list)
    #: whether the queries were a golden set's (False: the book has none, and a generic question probed it)
    golden: bool = True
    #: seed-003 fields the collection cannot give (none of the payload roles they come from), with why: not judged
    unheld: dict[str, str] = field(default_factory=dict)

    def missing_fields(self) -> list[str]:
        """``query: field`` for every seed-003 field a result lacks (or holds empty), and answers with no results;
        a field in :attr:`unheld` is not judged (the collection never wrote what it comes from)."""
        out = []
        judged = [f for f in SEED003_FIELDS if f not in self.unheld]
        for query, answer in self.answers.items():
            results = results_of(answer.body)
            if not answer.ok or not results:
                out.append(f"{query}: no results (HTTP {answer.status})")
                continue
            for r in results:
                out += [f"{query}: {f}" for f in judged if r.get(f) in (None, "")]
        return sorted(set(out))

    def ranking_mismatches(self) -> list[str]:
        """Golden queries whose HTTP ranking differs from the library's (empty when no library was given)."""
        if self.library is None:
            return []
        return [q for q, a in self.answers.items() if not same_ranking(ranking_of(a.body), self.library[q])]


#: The payload roles each seed-003 field is made from (any one suffices; chunk_id and score always exist).
_FIELD_ROLES: dict[str, tuple[str, ...]] = {
    "snippet": ("content",), "source_path": ("source_file",), "slug": ("source_url", "source_file"),
    "title": ("title",)}


def unheld_fields(held: Sequence[str]) -> dict[str, str]:
    """The seed-003 fields a collection holding the payload roles ``held`` cannot give, each with the reason."""
    return {name: f"the collection holds no {' and no '.join(roles)} to make it from"
            for name, roles in _FIELD_ROLES.items() if not set(roles) & set(held)}


def unmade_slug(results: Sequence[Any]) -> str | None:
    """Why no slug can be made for the library's ``results`` (:class:`~retrieval_lib.models.SearchResult` s), or
    None when one of them gives one: a seed-003 slug is a page's route, from the chunk's URL or from a Markdown file
    path (as the service makes it), and a collection whose sources are neither (team #3's ``appendices/a-glossary``)
    never wrote anything to make it from."""
    from retrieval_lib.book.routes import route_of_stored_path
    from retrieval_lib.stores.metadata import slug_of

    if not results or any(slug_of(r.source_url) or route_of_stored_path(r.source_file) for r in results):
        return None
    files = list(dict.fromkeys(r.source_file for r in results if r.source_file))
    shown = ", ".join(repr(f) for f in files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return ("the collection holds no source URL, and its source files "
            + (f"({shown}) are no Markdown file paths a page's route comes from" if files else "are empty"))


def _library_ranking(results: Sequence[Any]) -> list[tuple[str, float]]:
    return [(r.chunk_id or r.point_id, r.similarity_score) for r in results]


def validate_service(client: ApiClient, queries: Sequence[str], *, library: Retriever | None = None, repeats: int = 3,
                     concurrency: Sequence[int] = (10, 100), latency_rounds: int = 3) -> ApiValidation:
    """Probe the service behind ``client`` with the seed-003 contract: ``queries`` are known questions (the golden
    set's; the first also drives the ``top_k`` checks), each sent ``repeats`` more times (SC-005), then at once at
    each level of ``concurrency`` (SC-008 asks for 10), then timed over ``latency_rounds`` passes. ``library``: the
    library's retriever over the same collection when the service is ours (the reference rankings and latency).
    """
    golden = bool(queries)
    # a book without a golden set is still probed (fields, top_k, errors, repeats, concurrency), by one question
    # any book answers; only the ranking comparison needs known questions
    queries = list(queries) or list(PROBE_QUERIES)
    health = client.health()
    answers = {q: client.search({"query": q}) for q in queries}
    serial = {q: ranking_of(a.body) for q, a in answers.items()}
    first = queries[0]
    top_k = {"default": answers[first], "3": client.search({"query": first, "top_k": 3}),
             "50": client.search({"query": first, "top_k": 50})}
    errors = {name: client.search(body, raw=raw) for name, body, raw in ERROR_CASES}
    unstable = [q for q in queries for _ in range(repeats)
                if not answers[q].ok or not _same(client.search({"query": q}), serial[q])]
    concurrent = [_concurrent(client, queries, serial, n) for n in concurrency]
    http_ms: list[float] = []
    library_ms: list[float] = []
    # The library is timed in a worker thread, as the service runs it: on a busy machine torch's intra-op
    # threads make a call from the main thread many times slower, which is no cost of HTTP.
    with ThreadPoolExecutor(1) as worker:
        for _ in range(latency_rounds):
            for q in queries:
                http_ms.append(client.search({"query": q}).ms)
                if library is not None:
                    library_ms.append(worker.submit(_timed_search, library, q).result())
    unheld: dict[str, str] = {}
    ranked: dict[str, list[tuple[str, float]]] | None = None
    if library is not None:
        results = {q: library.search(q, top_k=_DEFAULT_TOP_K).results for q in queries}
        ranked = {q: _library_ranking(rs) for q, rs in results.items()}
        unheld = unheld_fields(library.held_fields())
        if "slug" not in unheld and (why := unmade_slug([r for rs in results.values() for r in rs])):
            unheld["slug"] = why
    return ApiValidation(
        url=client.url, health=health, dependencies=health_dependencies(health.body), answers=answers,
        library=ranked, top_k=top_k, errors=errors, unstable=sorted(set(unstable)), concurrent=concurrent,
        http_ms=http_ms, library_ms=library_ms, golden=golden, unheld=unheld,
    )


def _timed_search(library: Retriever, query: str) -> float:
    t0 = time.perf_counter()
    library.search(query, top_k=_DEFAULT_TOP_K)
    return (time.perf_counter() - t0) * 1000


def _same(answer: Answer, ranking: list[tuple[str, float]]) -> bool:
    return answer.ok and same_ranking(ranking_of(answer.body), ranking)


def _concurrent(client: ApiClient, queries: list[str], serial: dict[str, list[tuple[str, float]]],
                n: int) -> Concurrent:
    def one(i: int) -> tuple[bool, bool]:
        q = queries[i % len(queries)]
        answer = client.search({"query": q})
        return answer.ok, _same(answer, serial[q])

    t0 = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:
        outcomes = list(pool.map(one, range(n)))
    seconds = time.perf_counter() - t0
    return Concurrent(n, sum(1 for ok, _ in outcomes if not ok), sum(1 for ok, same in outcomes if ok and not same),
                      seconds)


def _error_ok(answer: Answer) -> bool:
    view = error_view(answer.body)
    return answer.status == 400 and view is not None and view["status"] in (None, 400)


def cases_frame(v: ApiValidation) -> Any:
    """One row per probe of the contract: what was sent, the status, whether it met the specification."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for q, a in v.answers.items():
        rows.append({"probe": f"search {q!r}", "status": a.status, "results": len(results_of(a.body) or []),
                     "as specified": a.ok and bool(results_of(a.body))})
    for name, expect in _TOP_K_EXPECTED.items():
        a = v.top_k[name]
        n = len(results_of(a.body) or [])
        rows.append({"probe": f"top_k {name}", "status": a.status, "results": n, "as specified": a.ok and n == expect})
    for name, a in v.errors.items():
        view = error_view(a.body) or {}
        rows.append({"probe": name, "status": a.status, "results": None, "error type": view.get("type"),
                     "as specified": _error_ok(a)})
    frame = pd.DataFrame(rows)
    frame["results"] = frame["results"].astype("Int64")  # whole numbers, blank where an error answered
    return frame


def record(report: NotebookReport, v: ApiValidation, *, max_overhead_ms: float,
           startup_seconds: float | None = None) -> None:
    """Record the seed-003 gates, the latency metrics and the findings of ``v`` on ``report``.

    Args:
        max_overhead_ms: the largest HTTP p50 minus in-process p50 accepted (only gated with a library).
        startup_seconds: launch to the first ``/health`` 200 of a service started for the check (SC-001).
    """
    if startup_seconds is not None:
        report.metric("startup_seconds", startup_seconds)
        report.finding(f"our own service answered /health 200 {startup_seconds:.1f} s after launch, model loaded "
                       "(seed 003 SC-001 asks for 10 s)")
    deps = v.dependencies
    down = [name for name, up in deps.items() if up is False]
    named = ", ".join(f"{k} {'up' if up else 'down' if up is False else 'unreported'}" for k, up in deps.items())
    API_HEALTH.record(report, v.health.status == 200 and len(deps) >= 2 and not down, value=v.health.status,
                      threshold=200, rule="==", detail=f"HTTP {v.health.status}; dependencies: {named or 'none named'}",
                      hint="a seed-003 health check names the vector store and the database and says whether each "
                           "is up")

    missing = v.missing_fields()
    API_FIELDS.record(report, not missing, value=len(missing), threshold=0, rule="==",
                      detail=("all of " + ", ".join(f for f in SEED003_FIELDS if f not in v.unheld)
                              + f" in every result of {len(v.answers)} queries"
                              + (f" ({', '.join(v.unheld)} not judged: see the findings)" if v.unheld else ""))
                      if not missing else "missing: " + "; ".join(missing[:5]))
    for name, why in v.unheld.items():
        report.finding(f"seed-003 field {name!r} not judged: {why}")
    if v.library is not None and not v.golden:
        API_GOLDEN.not_applicable(report, "no golden set for this book: the service was probed with a generic question")
    elif v.library is not None:
        wrong = v.ranking_mismatches()
        API_GOLDEN.record(report, not wrong, value=len(v.answers) - len(wrong), threshold=len(v.answers), rule="==",
                          unit="queries",
                          detail=f"{len(v.answers) - len(wrong)} of {len(v.answers)} give the library's chunk ids in "
                                 "its order" + (f"; differ: {', '.join(map(repr, wrong[:3]))}" if wrong else ""))

    counts = {k: len(results_of(a.body) or []) for k, a in v.top_k.items()}
    top_ok = all(a.ok and counts[name] == _TOP_K_EXPECTED[name] for name, a in v.top_k.items())
    API_TOP_K.record(report, top_ok, detail=f"default gave {counts['default']}, top_k 3 gave {counts['3']}, "
                                            f"top_k 50 gave {counts['50']}")

    bad = [name for name, a in v.errors.items() if not _error_ok(a)]
    API_INVALID.record(report, not bad, value=len(v.errors) - len(bad), threshold=len(v.errors), rule="==",
                       unit="cases", detail=f"{len(v.errors) - len(bad)} of {len(v.errors)} cases" + (
                           "; wrong: " + ", ".join(f"{n} (HTTP {v.errors[n].status})" for n in bad) if bad else ""))

    API_REPEATS.record(report, not v.unstable, value=len(v.unstable), threshold=0, rule="==", unit="queries",
                       detail=(f"{len(v.answers)} queries repeated, every answer identical"
                               if not v.unstable else "differ: " + ", ".join(v.unstable[:3])))
    for c in v.concurrent:
        API_CONCURRENT.record(report, c.errors == 0 and c.mismatched == 0, fill={"n": c.n}, item=c.n,
                              value=c.errors + c.mismatched, threshold=0, rule="==", unit="requests",
                              detail=f"{c.errors} errors, {c.mismatched} answers unlike the serial ones")
        report.metric(f"concurrent_{c.n}_throughput_qps", c.throughput)

    http, lib = _p50_p95(v.http_ms), _p50_p95(v.library_ms)
    overhead = http[0] - lib[0]
    metrics = {"http_p50_ms": http[0], "http_p95_ms": http[1]}
    if v.library_ms:
        metrics |= {"library_p50_ms": lib[0], "library_p95_ms": lib[1], "overhead_p50_ms": overhead}
    for name, value in metrics.items():
        report.metric(name, value)
    if v.library_ms:
        API_OVERHEAD.record(report, overhead <= max_overhead_ms, value=overhead, threshold=max_overhead_ms, rule="<=",
                            unit="ms", detail=f"p50 {http[0]:.1f} ms over HTTP against {lib[0]:.1f} ms in-process; "
                                              f"p95 {http[1]:.1f} ms against {lib[1]:.1f} ms")
    sent = len(v.answers) + len(v.errors) + 2
    report.finding(f"{sent} probes of the contract, {sum(c.n for c in v.concurrent)} concurrent and "
                   f"{len(v.http_ms)} timed searches were sent over HTTP; {len(report.gates)} gates judged them")


def latency_frame(v: ApiValidation, *, decimals: int = 1) -> Any:
    """p50 and p95 in ms over HTTP and (when measured) in-process, and their difference."""
    import pandas as pd

    http, lib = _p50_p95(v.http_ms), _p50_p95(v.library_ms)
    rows: list[dict[str, Any]] = [{"path": "HTTP /search", "p50_ms": http[0], "p95_ms": http[1],
                                   "calls": len(v.http_ms)}]
    if v.library_ms:
        rows.append({"path": "library in-process", "p50_ms": lib[0], "p95_ms": lib[1], "calls": len(v.library_ms)})
        rows.append({"path": "overhead (HTTP - library)", "p50_ms": http[0] - lib[0], "p95_ms": http[1] - lib[1],
                     "calls": None})
    return pd.DataFrame(rows).round(decimals)


def verdicts(report: NotebookReport) -> str:
    """``PASS``/``FAIL`` and the gate's name, one per line: the part of the result that is the same on every run."""
    return "\n".join(f"{MARKS[gate_state(g)]}  {g.name}" for g in report.gates)

