"""Notebook 00: what does this collection hold? ``inspect``'s facts as tables, a figure and findings.

It judges nothing (no gate): it tells an analyst which payload key holds which field the workbook reads, whether
the configured model made the stored vectors, how long the chunks are against the model's window, and what the
other notebooks can and cannot check on this collection.
"""

from __future__ import annotations

from typing import Any

from retrieval_lib.collection.inspect import Inspection, inspect_collection, mapping_rows
from retrieval_lib.embedding import LocalEmbedder
from retrieval_lib.stores.metadata import metadata_configured
from retrieval_lib.workbook import plots
from retrieval_lib.workbook.plots import plain_figure
from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["measure", "mapping_frame", "keys_frame", "checkable_frame", "lengths_figure", "record"]


def measure(run: NotebookRun) -> Inspection:
    """Inspect the run's collection with its embedder (the bundled MiniLM is tried too when it does not match)."""
    metadata_db = metadata_configured(run.settings, run.store.owned(run.collection))
    return inspect_collection(run.store, run.collection, run.retriever.embedder, alternatives=[LocalEmbedder],
                              metadata_db=metadata_db)


def mapping_frame(found: Inspection) -> Any:
    """One row per field the workbook reads: the payload key it comes from, and why."""
    import pandas as pd

    return pd.DataFrame(mapping_rows(found))


def keys_frame(found: Inspection) -> Any:
    """Every payload key of the sample: fill rate (%), type, distinct values, an example (cut to 50 characters)."""
    import pandas as pd

    return pd.DataFrame([{"key": k["key"], "filled %": round(100 * k["filled"], 1), "type": k["type"],
                          "distinct": k["distinct"],
                          "example": "" if k["example"] is None else str(k["example"])[:50]} for k in found.keys])


def checkable_frame(found: Inspection) -> Any:
    """What the notebooks can and cannot check on this collection, each with its reason."""
    import pandas as pd

    return pd.DataFrame([{"check": c["check"], "can": "yes" if c["can"] else "no", "why": c["why"]}
                         for c in found.checkable])


@plain_figure
def lengths_figure(found: Inspection) -> Any:
    """Chunk lengths in the model's tokens, with its window: what lies right of the line the model never reads."""
    return plots.count_histogram(found.tokens, marks={"model window": float(found.lengths["window"])},
                                 xlabel="chunk length (tokens of the configured model)",
                                 title=f"{found.lengths['sample']} chunks: lengths against the model's window")


def record(report: NotebookReport, found: Inspection) -> None:
    """Findings and metrics: no gate (the notebooks after this one judge)."""
    roles = found.roles
    mapped = [r for r in mapping_rows(found) if r["payload key"] != "-"]
    report.finding(f"{found.points} points; {len(found.keys)} payload keys; {len(mapped)} of 12 fields mapped "
                   f"({roles.origin} mapping); ids: "
                   + ", ".join(f"{form} ({n})" for form, n in sorted(found.ids.items(), key=lambda kv: -kv[1])))
    report.finding(f"embedding model: {found.model.get('verdict')}")
    ln = found.lengths
    if ln.get("sample"):
        report.finding(f"chunk lengths: median {ln['tokens_p50']:.0f} tokens, longest {ln['tokens_max']}; "
                       f"{ln['over_window']} of {ln['sample']} chunks exceed the {ln['window']}-token window")
    report.finding(f"duplicate texts: {found.duplicates['points_with_a_duplicate_text']} points repeat another's")
    cannot = [c["check"] for c in found.checkable if not c["can"]]
    if cannot:
        report.finding("not checkable here: " + "; ".join(cannot))
    report.metric("points", found.points, "points")
    report.metric("fields_mapped", len(mapped), "fields")
    report.metric("chunks_over_window", ln.get("over_window"), "chunks")
    report.metric("duplicate_text_points", found.duplicates["points_with_a_duplicate_text"], "points")
    report.metric("model_matched", bool(found.model.get("matched")))
