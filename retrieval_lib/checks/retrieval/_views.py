"""Notebook 15's tables and figures: the side-by-side comparison per question, the named causes, their evidence.

Question texts come from the team's data: every figure builder draws its text as written
(:func:`~retrieval_lib.workbook.plots.plain_figure`: a ``$`` never starts mathtext).
"""

from __future__ import annotations

import math
from typing import Any

from retrieval_lib.checks.retrieval._pairs import SideBySide
from retrieval_lib.workbook.plots import plain_figure

__all__ = ["queries_frame", "causes_frame", "evidence_frame", "hits_figure", "scores_figure", "short_label"]


def short_label(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters (a figure's row label)."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def queries_frame(study: SideBySide, *, decimals: int = 3):
    """One row per question: what each side returned, overlap@k, rank shifts, hit@k of each, and the error."""
    import pandas as pd

    k = study.top_k
    rows = []
    for p in study.pairs:
        rows.append({"kind": p.kind, "query": p.query,
                     "retriever_returned": None if p.team.failed else len(p.team.rows),
                     "collection_returned": len(p.collection.rows),
                     f"overlap@{k}": None if p.overlap is None else round(p.overlap, decimals),
                     "rank_shifts": " ".join(f"{s:+d}" for s in p.rank_shifts),
                     f"retriever_hit@{k}": p.team_hit, f"collection_hit@{k}": p.collection_hit,
                     "error": p.team.error_kind or ""})
    columns = ["kind", "query", "retriever_returned", "collection_returned", f"overlap@{k}", "rank_shifts",
               f"retriever_hit@{k}", f"collection_hit@{k}", "error"]
    return pd.DataFrame(rows, columns=columns).astype({"retriever_returned": "Int64", f"retriever_hit@{k}": "Int64"})


def causes_frame(study: SideBySide):
    """One row per named cause: found or not (or cannot judge), whether it is a fault, its gate, its summary."""
    import pandas as pd

    return pd.DataFrame([{"cause": c.title, "state": "cannot judge" if c.found is None else "FOUND" if c.found
                          else "not found", "fault": "yes" if c.fault else "no",
                          "gate": c.gate_id or "(finding)", "summary": c.summary}
                         for c in study.causes.values()], columns=["cause", "state", "fault", "gate", "summary"])


def evidence_frame(study: SideBySide, key: str):
    """The evidence table of one cause (empty when the cause was not found or has none)."""
    import pandas as pd

    cause = study.causes.get(key)
    return pd.DataFrame(cause.evidence if cause is not None else [])


@plain_figure
def hits_figure(study: SideBySide) -> Any:
    """Per question, hit@k through the collection and through the retriever (green hit, red miss, grey error)."""
    from retrieval_lib.workbook.plots import annotated_heatmap

    k = study.top_k
    values, texts = [], []
    for p in study.pairs:
        team = math.nan if p.team_hit is None else float(p.team_hit)
        values.append([float(p.collection_hit), team])
        texts.append(["hit" if p.collection_hit else "miss",
                      "error" if p.team_hit is None else "hit" if p.team_hit else "miss"])
    return annotated_heatmap(values or [[math.nan, math.nan]], [short_label(p.query) for p in study.pairs] or ["-"],
                             ["collection", "retriever"], texts=texts or [["", ""]],
                             title=f"hit@{k} of each side per question", colorbar_label=f"hit@{k}")


@plain_figure
def scores_figure(study: SideBySide) -> Any:
    """The retriever's score of each checked result against the cosine of the chunk's stored vector with the
    question embedded as a query (and as a document); on the diagonal: the same embedding."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    if study.scores:
        _, _, theirs, as_query, as_document = zip(*study.scores)
        ax.scatter(as_query, theirs, s=18, label="question embedded as a query")
        ax.scatter(as_document, theirs, s=18, marker="x", label="question embedded as a document")
        low = min([0.0, *theirs, *as_query, *as_document])
        high = max([1.0, *theirs])
        ax.plot([low, high], [low, high], color="black", linestyle="--", linewidth=1, label="same score")
        ax.legend(loc="upper left", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no result with a score and a chunk id of this collection", ha="center", va="center",
                transform=ax.transAxes)
    ax.set(xlabel="cosine of the chunk's stored vector and the question (configured embedder)",
           ylabel="the retriever's score", title="the retriever's scores against the collection's cosines")
    return fig
