"""The retrieval API: does a seed-003 service (ours, or a team's by ``api_url``) behave as its specification says?

:func:`run` is the check (notebook 08 and ``check api``): it opens the service under test (ours, started on a
free loopback port over a copy of the collection by :func:`own_service`, when ``api_url`` is empty), probes it over
HTTP (:mod:`~retrieval_lib.checks.service._validate`), compares the metadata rows with the vector points
(:mod:`~retrieval_lib.checks.service._consistency`), and stops the service it started. Its :class:`Api` records the
gates, findings, metrics and tables. A team's service is judged by what the seed asks (fields, statuses, an error
type and message, the dependencies named), not by this project's envelopes.

The HTTP client and the service runner are published here for benchmarks and tests: :class:`ApiClient`,
:func:`own_service`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.gates import (
    API_CONCURRENT,
    API_FIELDS,
    API_GOLDEN,
    API_HEALTH,
    API_INVALID,
    API_METADATA,
    API_OVERHEAD,
    API_REPEATS,
    API_TOP_K,
)
from retrieval_lib.checks.service import _consistency, _validate
from retrieval_lib.checks.service._client import ApiClient
from retrieval_lib.checks.service._consistency import MetadataConsistency
from retrieval_lib.checks.service._target import own_service
from retrieval_lib.checks.service._validate import ApiValidation, verdicts
from retrieval_lib.workbook.check import NotApplicable

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "Api", "verdicts", "ApiClient", "own_service"]

#: Said when the profile names a team's retriever: it is not the service this notebook validates.
CHATBOT_NOT_VALIDATED = ("the profile's `retriever:` (the chatbot) is not validated here: notebook 15 (side by side) "
                         "compares it with the collection; this notebook validates a seed-003 service (ours over the "
                         "same collection when api_url is empty, against the library's own in-process search)")

#: The gates this check records.
GATES = (API_HEALTH, API_FIELDS, API_GOLDEN, API_TOP_K, API_INVALID, API_REPEATS, API_CONCURRENT, API_OVERHEAD,
         API_METADATA)


def run(ctx: NotebookRun, *, api_url: str, golden_set: str, api_repeats: int, api_concurrency: Sequence[int],
        api_latency_rounds: int, api_max_overhead_ms: float, metadata_table: str) -> Api | NotApplicable:
    """Notebook 08's check: the service at ``api_url`` (empty: ours, started for the check and stopped after it)
    probed with the golden set's queries, and the metadata rows (``metadata_table``) against the vector points.

    Our service's reference is the library's own in-process search over the same collection
    (``ctx.collection_retriever``), whatever the profile's ``retriever:`` names: a team's chatbot is not a seed-003
    service (notebook 15 compares it with the collection); a finding says so when one is configured.

    Raises:
        ConfigurationError: ``api_url`` is not an http(s) URL, or our own service did not start.
        ValidationError: ``metadata_table`` is not one of ``chunks``, ``documents``.
    """
    from retrieval_lib.params import load_golden_set

    if reason := ctx.collection_absent():
        return NotApplicable(reason, GATES)
    queries = [q.query for q in load_golden_set(golden_set).queries]
    with ExitStack() as stack:  # our own service is stopped on the way out
        svc = stack.enter_context(own_service(ctx.settings)) if not api_url else None
        client = stack.enter_context(ApiClient(svc.url if svc else api_url))
        # the reference when the service is ours: the library's own search over the same collection. Never
        # ctx.retriever: with a team's `retriever:` in the profile that is their chatbot (notebook 15 compares it
        # with the collection); 08 asks whether OUR seed-003 service serves this collection as the library does
        library = ctx.collection_retriever if svc else None
        validation = _validate.validate_service(client, queries, library=library, repeats=api_repeats,
                                                concurrency=api_concurrency, latency_rounds=api_latency_rounds)
        meta = _consistency.check(ctx.settings, ctx.store, ctx.collection, table=metadata_table)
    # no port or path: the line is the same on every run
    target = ("this project's own service, started on a free loopback port for this notebook" if svc
              else "the service at the given api_url")
    chatbot = ctx.retriever_spec.kind != "collection"
    return Api(target, len(queries), validation, meta, max_overhead_ms=api_max_overhead_ms,
               startup_seconds=svc.startup_seconds if svc else None,
               note=CHATBOT_NOT_VALIDATED if chatbot else "")


@dataclass
class Api:
    """Notebook 08's result: what the service answered, the metadata comparison, and the overhead bar."""

    target: str
    queries: int
    validation: ApiValidation
    metadata: MetadataConsistency
    max_overhead_ms: float
    startup_seconds: float | None = None
    #: a finding about what was not validated (the profile's chatbot), or empty
    note: str = ""

    def __str__(self) -> str:
        meta = self.metadata
        if meta.not_applicable:  # nothing was compared: no counts of 0 that read as "no rows"
            return (f"validated {self.target} with {self.queries} golden queries\n"
                    f"metadata rows not compared: {meta.not_applicable}")
        return (f"validated {self.target} with {self.queries} golden queries\n"
                f"{meta.points} points, {meta.rows} rows; points without a row: {meta.points_without_row}, "
                f"rows without a point: {meta.rows_without_point}, differing fields: "
                f"{meta.differing_fields or 'none'}")

    def tables(self) -> dict[str, Any]:
        """``contract``: each probe, its HTTP status and whether it met the specification; ``latency``: p50 and
        p95 over HTTP and in-process (timings: they vary from run to run)."""
        return {"contract": _validate.cases_frame(self.validation),
                "latency": _validate.latency_frame(self.validation)}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        for name, frame in self.tables().items():
            report.table(frame, name)
        _validate.record(report, self.validation, max_overhead_ms=self.max_overhead_ms,
                         startup_seconds=self.startup_seconds)
        _consistency.record(report, self.metadata)
        if self.note:
            report.finding(self.note)
