"""Why re-embedded chunks no longer match their stored vectors: the diagnosis behind the contract gate.

:func:`diagnose` takes the probe's rows (see :mod:`retrieval_lib.checks.contract`) and tells four causes apart,
each from evidence the rows carry:

======================================= ========================================================================
``text changed since ingest``           the point's ``content_hash`` is not the SHA-256 of its ``content``: the
                                        payload text was edited after the vector was made
``swapped input type``                  the text embedded *as a query* matches the stored vector better than
                                        the text embedded as a document (median gain > :data:`SWAP_MARGIN`):
                                        the documents were stored with ``search_query`` (or the embedder swaps)
``truncation past the token limit``     the low cosines are (almost) all chunks longer than the model reads, and
                                        the sampled chunks within the limit match: the stored vectors were
                                        made from another cut of the long texts
``different model``                     low cosine whatever the input type: another model made the vectors
                                        (the same dimension and ``model_version`` notwithstanding)
======================================= ========================================================================

The cause named is the one that explains the most failing points; the others found are listed in the evidence.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Diagnosis", "diagnose", "CAUSES", "SWAP_MARGIN", "TRUNCATION_SHARE"]

#: Median cosine gain (query embedding over document embedding) that points at a swapped input type. The same
#: text embedded both ways differs by ~0.001 in cosine with the same type stored (Cohere v3; the loopback fake's
#: default too), and by far more than 0.02 with the type swapped.
SWAP_MARGIN = 0.02
#: Share of the failing points that must be longer than the model's token limit to blame truncation.
TRUNCATION_SHARE = 0.8

CAUSES = ("text changed since ingest", "swapped input type", "truncation past the token limit", "different model",
          "unexplained")

_HINTS = {
    "text changed since ingest": "the payload text was edited after it was embedded: re-ingest the changed files "
                                 "(`python -m retrieval_lib ingest`) so vectors and text agree again",
    "swapped input type": "the documents were embedded with input_type search_query (or queries with "
                          "search_document): rebuild the collection with documents as search_document "
                          "(`python -m retrieval_lib ingest --recreate`), and embed queries as search_query",
    "truncation past the token limit": "long chunks were embedded from another cut of their text than this model "
                                       "reads: make chunks fit the model's token limit (smaller chunk size) and "
                                       "re-ingest",
    "different model": "the vectors come from another model than the configured one, though dimension and "
                       "model_version agree: set EMBEDDING_PROVIDER/EMBEDDING_MODEL to the model that built the "
                       "collection, or rebuild it (`python -m retrieval_lib ingest --recreate`)",
    "unexplained": "read the sampled points table: compare the low-cosine points' text with their source files",
}


@dataclass
class Diagnosis:
    """The likely cause of a contract failure, the sentences that show it, and what to do."""

    cause: str
    evidence: list[str] = field(default_factory=list)
    hint: str = ""
    points: dict[str, int] = field(default_factory=dict)  # cause -> failing points it explains


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    from scipy.stats import spearmanr

    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return float(spearmanr(xs, ys).statistic)


def diagnose(rows: Sequence[Any], *, min_cosine: float, token_limit: int | None) -> Diagnosis | None:
    """Name the likely cause of the rows whose ``cosine`` is below ``min_cosine`` (None when there is none).

    Each row needs ``cosine``, ``query_cosine`` (the text embedded as a query; may be None), ``hash_ok``
    (None when the point has no ``content_hash``), ``tokens`` and ``over_limit``.
    """
    low = [r for r in rows if r.cosine < min_cosine]
    if not low:
        return None
    points: dict[str, int] = {}
    evidence: list[str] = [f"{len(low)} of {len(rows)} sampled points have a cosine below {min_cosine:g}."]
    changed = [r for r in low if r.hash_ok is False]
    if changed:
        points["text changed since ingest"] = len(changed)
        evidence.append(f"{len(changed)} of them carry a content_hash that is not the SHA-256 of their content.")
    rest = [r for r in low if r.hash_ok is not False]
    if rest:
        doc = _median([r.cosine for r in rest])
        as_query = [r.query_cosine for r in rest if r.query_cosine is not None]
        query = _median(as_query)
        over = [r for r in rest if r.over_limit]
        within_ok = [r for r in rows if not r.over_limit and r.hash_ok is not False]
        rho = _spearman([r.tokens for r in rows], [r.cosine for r in rows])
        if as_query and query - doc > SWAP_MARGIN:
            points["swapped input type"] = len(rest)
            evidence.append(f"Embedded as a query their text matches the stored vectors better (median cosine "
                            f"{query:.3f}) than embedded as a document ({doc:.3f}).")
        elif (token_limit and len(over) >= TRUNCATION_SHARE * len(rest)
              and all(r.cosine >= min_cosine for r in within_ok)):
            points["truncation past the token limit"] = len(rest)
            evidence.append(f"{len(over)} of the {len(rest)} are longer than the {token_limit} tokens the model "
                            f"reads, while every sampled chunk within the limit matches"
                            + (f" (Spearman rho of cosine and tokens {rho:.2f})." if rho is not None else "."))
        elif max(doc, query if as_query else doc) < min_cosine:
            points["different model"] = len(rest)
            evidence.append(f"Their cosine is low whatever the input type (median as a document {doc:.3f}"
                            + (f", as a query {query:.3f}" if as_query else "") + "): another model made the vectors.")
        else:
            points["unexplained"] = len(rest)
            evidence.append(f"{len(rest)} low points fit no known cause (median cosine {doc:.3f}).")
    cause = max(points, key=lambda c: (points[c], -CAUSES.index(c)))
    return Diagnosis(cause=cause, evidence=evidence, hint=_HINTS[cause], points=points)
