"""Notebook 00: what does this collection hold? ``inspect``'s facts as tables, a figure and findings.

It judges nothing (no gate): it tells an analyst which payload key holds which field the workbook reads, whether
the configured model made the stored vectors, how long the chunks are against the model's window, and what the
other notebooks can and cannot check on this collection.

:func:`run` is the check (notebook 00 and ``check collection``; the wider ``inspect`` command also writes
profiles and maps books); its :class:`Collection` records the findings, metrics, figure and tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from retrieval_lib.collection.inspect import Inspection, inspect_collection, mapping_rows
from retrieval_lib.embedding import LocalEmbedder
from retrieval_lib.stores.metadata import metadata_source
from retrieval_lib.workbook import plots
from retrieval_lib.workbook.check import NotApplicable
from retrieval_lib.workbook.plots import plain_figure

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "Collection"]

#: The gates this check records: none (the notebooks after this one judge).
GATES = ()


def run(ctx: NotebookRun) -> Collection | NotApplicable:
    """Notebook 00's check: inspect the run's collection with its embedder (the bundled MiniLM is tried too when it
    does not match)."""
    if reason := ctx.collection_absent():
        return NotApplicable(reason, GATES)
    metadata = metadata_source(ctx.settings, ctx.store.owned(ctx.collection))  # as `inspect`: its tables looked at
    found = inspect_collection(ctx.store, ctx.collection, ctx.collection_retriever.embedder,
                               alternatives=[LocalEmbedder], metadata_db=metadata.readable,
                               metadata_why=metadata.reason)
    return Collection(found, ctx.store.describe(ctx.collection))


@plain_figure
def lengths_figure(found: Inspection) -> Any:
    """Chunk lengths in the model's tokens, with its window: what lies right of the line the model never reads."""
    return plots.count_histogram(found.tokens, marks={"model window": float(found.lengths["window"])},
                                 xlabel="chunk length (tokens of the configured model)",
                                 title=f"{found.lengths['sample']} chunks: lengths against the model's window")


@dataclass
class Collection:
    """Notebook 00's result: what the inspection found, and the store's own description of the collection."""

    found: Inspection
    described: str

    def __str__(self) -> str:
        return self.described

    def tables(self) -> dict[str, Any]:
        """``mapping``: one row per field the workbook reads, the payload key it comes from and why;
        ``payload_keys``: every payload key of the sample, its fill rate (%), type, distinct values and an example
        (cut to 50 characters); ``checkable``: what the notebooks can and cannot check here, each with its reason."""
        import pandas as pd

        found = self.found
        return {"mapping": pd.DataFrame(mapping_rows(found)),
                "payload_keys": pd.DataFrame([{"key": k["key"], "filled %": round(100 * k["filled"], 1),
                                               "type": k["type"], "distinct": k["distinct"],
                                               "example": "" if k["example"] is None else str(k["example"])[:50]}
                                              for k in found.keys]),
                "checkable": pd.DataFrame([{"check": c["check"], "can": "yes" if c["can"] else "no", "why": c["why"]}
                                           for c in found.checkable])}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """Tables, the lengths figure, findings and metrics: no gate (the notebooks after this one judge)."""
        for name, frame in self.tables().items():
            report.table(frame, name)
        found = self.found
        report.figure(lengths_figure(found), "chunk_lengths", show=show)
        mapped = [r for r in mapping_rows(found) if r["payload key"] != "-"]
        report.finding(f"{found.points} points; {len(found.keys)} payload keys; {len(mapped)} of 12 fields mapped "
                       f"({found.roles.origin} mapping); ids: "
                       + ", ".join(f"{form} ({n})" for form, n in sorted(found.ids.items(), key=lambda kv: -kv[1])))
        report.finding(f"embedding model: {found.model.get('verdict')}")
        ln = found.lengths
        if ln.get("sample"):
            report.finding(f"chunk lengths: median {ln['tokens_p50']:.0f} tokens, longest {ln['tokens_max']}; "
                           f"{ln['over_window']} of {ln['sample']} chunks exceed the {ln['window']}-token window")
        repeated = found.duplicates["points_with_a_duplicate_text"]
        report.finding(f"duplicate texts: {repeated} points repeat another's")
        cannot = [c["check"] for c in found.checkable if not c["can"]]
        if cannot:
            report.finding("not checkable here: " + "; ".join(cannot))
        for name, value, unit in (("points", found.points, "points"), ("fields_mapped", len(mapped), "fields"),
                                  ("chunks_over_window", ln.get("over_window"), "chunks"),
                                  ("duplicate_text_points", repeated, "points"),
                                  ("model_matched", bool(found.model.get("matched")), "")):
            report.metric(name, value, unit)
