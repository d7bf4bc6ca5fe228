"""Why re-embedded chunks no longer match their stored vectors: the diagnosis behind the contract gate.

:func:`diagnose` takes the probe's rows (see :mod:`retrieval_lib.checks.collection.embedding_contract`) and tells
four causes apart, each from evidence the rows carry:

======================================= ========================================================================
``text changed since ingest``           the point's ``content_hash`` is not the SHA-256 of its ``content``: the
                                        payload text was edited after the vector was made
``swapped input type``                  the text embedded under another input type (each one the provider has:
                                        Cohere's ``search_query``, ``classification``, ``clustering``, Gemini's
                                        task types, a model's prompts) matches the stored vector better than the
                                        text embedded as a document (median gain > :data:`SWAP_MARGIN`): the
                                        mistake is named, e.g. "documents embedded as queries", with the median
                                        cosine under every type
``truncation past the token limit``     the low cosines are (almost) all chunks longer than the model reads, and
                                        the sampled chunks within the limit match: the stored vectors were
                                        made from another cut of the long texts
``different model``                     low cosine whatever the input type: another model made the vectors
                                        (the same dimension and ``model_version`` notwithstanding)
======================================= ========================================================================

The cause named is the one that explains the most failing points; the others found are listed in the evidence.
:attr:`Diagnosis.mistake` says the input-type mistake in words, and :attr:`Diagnosis.type_cosines` holds the median
cosine of the failing points under each input type.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Diagnosis", "diagnose", "CAUSES", "SWAP_MARGIN", "TRUNCATION_SHARE", "mistake_of"]

#: Median cosine gain (query embedding over document embedding) that points at a swapped input type. The same
#: text embedded both ways differs by ~0.001 in cosine with the same type stored (Cohere v3; the loopback fake's
#: default too), and by far more than 0.02 with the type swapped.
SWAP_MARGIN = 0.02
#: Share of the failing points that must be longer than the model's token limit to blame truncation.
TRUNCATION_SHARE = 0.8

CAUSES = ("text changed since ingest", "swapped input type", "truncation past the token limit", "different model",
          "unexplained")

#: What to do about each cause (a swapped input type's hint names the types: :func:`_type_hint`).
_HINTS = {
    "text changed since ingest": "the payload text was edited after it was embedded: re-ingest the changed files "
                                 "(`python -m retrieval_lib ingest`) so vectors and text agree again",
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
    mistake: str = ""  # the input-type mistake in words ("documents embedded as queries"); "" for other causes
    type_cosines: dict[str, float] = field(default_factory=dict)  # input type -> median cosine of the failing points
    best_type: str | None = None  # the input type the stored vectors match best


#: Input types by what they stand for, across providers (the names a person knows them by).
_QUERY_TYPES = {"search_query", "RETRIEVAL_QUERY", "query", "QUESTION_ANSWERING", "CODE_RETRIEVAL_QUERY"}
_DOCUMENT_TYPES = {"search_document", "RETRIEVAL_DOCUMENT", "document", "passage"}


def mistake_of(best: str, document_type: str) -> str:
    """The input-type mistake, in words, when documents match ``best`` rather than ``document_type``."""
    if best in _QUERY_TYPES:
        return "documents embedded as queries"
    if best in _DOCUMENT_TYPES:
        return f"documents embedded as {best} rather than {document_type}"
    return f"documents embedded as {best.lower()} (not as {document_type})"


def _type_hint(best: str, document_type: str, query_type: str | None) -> str:
    return (f"the documents were embedded with input type {best}, the workbook embeds them as {document_type} "
            f"(and queries as {query_type or document_type}): rebuild the collection with documents as "
            f"{document_type} (`python -m retrieval_lib ingest --recreate`), or fix the team's ingest so "
            f"documents are {document_type} and queries {query_type or document_type}")


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    from scipy.stats import spearmanr

    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return float(spearmanr(xs, ys).statistic)


def diagnose(rows: Sequence[Any], *, min_cosine: float, token_limit: int | None,
             input_types: Sequence[str] = ("document", "query")) -> Diagnosis | None:
    """Name the likely cause of the rows whose ``cosine`` is below ``min_cosine`` (None when there is none).

    Each row needs ``cosine``, ``query_cosine`` (the text embedded as a query; may be None), ``hash_ok``
    (None when the point has no ``content_hash``), ``tokens``, ``over_limit`` and ``type_cosines`` (input type ->
    cosine, the document type included: every input type of ``input_types``, the document type first, competes).
    """
    low = [r for r in rows if r.cosine < min_cosine]
    if not low:
        return None
    points: dict[str, int] = {}
    mistake, best_type = "", None
    medians: dict[str, float] = {}
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
        medians = _type_medians(rest, input_types)
        best = max(medians, key=lambda t: medians[t]) if medians else None
        if best is not None and best != input_types[0] and medians[best] - doc > SWAP_MARGIN:
            points["swapped input type"] = len(rest)
            mistake, best_type = mistake_of(best, input_types[0]), best
            shown = ", ".join(f"{t} {c:.3f}" for t, c in sorted(medians.items(), key=lambda kv: -kv[1]))
            evidence.append(f"{mistake[0].upper()}{mistake[1:]}: re-embedded under each input type, their text "
                            f"matches the stored vectors best as {best} (median cosine {medians[best]:.3f}) "
                            f"against {doc:.3f} as {input_types[0]} (every type: {shown}).")
        elif (token_limit and len(over) >= TRUNCATION_SHARE * len(rest)
              and all(r.cosine >= min_cosine for r in within_ok)):
            points["truncation past the token limit"] = len(rest)
            evidence.append(f"{len(over)} of the {len(rest)} are longer than the {token_limit} tokens the model "
                            f"reads, while every sampled chunk within the limit matches"
                            + (f" (Spearman rho of cosine and tokens {rho:.2f})." if rho is not None else "."))
        elif max([doc, query if as_query else doc, *medians.values()]) < min_cosine:
            points["different model"] = len(rest)
            evidence.append(f"Their cosine is low whatever the input type (median as a document {doc:.3f}"
                            + (f", as a query {query:.3f}" if as_query else "") + "): another model made the vectors.")
        else:
            points["unexplained"] = len(rest)
            evidence.append(f"{len(rest)} low points fit no known cause (median cosine {doc:.3f}).")
    cause = max(points, key=lambda c: (points[c], -CAUSES.index(c)))
    if best_type and cause == "swapped input type":
        query_type = input_types[1] if len(input_types) > 1 else None
        return Diagnosis(cause=cause, evidence=evidence, hint=_type_hint(best_type, input_types[0], query_type),
                         points=points, mistake=mistake, type_cosines={t: round(c, 4) for t, c in medians.items()},
                         best_type=best_type)
    return Diagnosis(cause=cause, evidence=evidence, hint=_HINTS[cause], points=points)


def _type_medians(rows: Sequence[Any], input_types: Sequence[str]) -> dict[str, float]:
    """The median cosine of ``rows`` under each input type they were embedded under (empty: none recorded)."""
    out: dict[str, float] = {}
    for kind in input_types:
        values = [r.type_cosines[kind] for r in rows if kind in r.type_cosines]
        if values:
            out[kind] = _median(values)
    return out if len(out) > 1 else {}
