"""Which collections are ours: the id scheme and payload our own ``ingest`` writes, and the advice that follows.

Our ingest gives every chunk the id ``uuid5(namespace, "<source_file>#<chunk_sequence>")`` and writes every
role under its own name. A collection whose sampled points all carry such ids is ours (we built it, and
``ingest --recreate`` may rebuild it); any other is a team's own, which the workbook only reads: no write, no
payload index, and no hint that says ``--recreate``.
"""

from __future__ import annotations

import statistics
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from retrieval_lib.embedding.base import SPECIAL_TOKENS

__all__ = ["ID_NAMESPACE", "point_id_for", "written_by_us", "rebuild_advice", "embedded_text", "EmbeddedForm",
           "embedded_form", "row_cosines", "tokens_read"]

ID_NAMESPACE = uuid.UUID("6f0d7c59-3a1e-4f55-9d7e-1c5b2a9e8f10")


def point_id_for(source_file: str, sequence: int) -> str:
    """Our ingest's deterministic point id (a UUID, as Qdrant wants) for a chunk position."""
    return str(uuid.uuid5(ID_NAMESPACE, f"{source_file}#{sequence}"))


def written_by_us(points: Iterable[tuple[Any, Any]]) -> bool | None:
    """Whether every sampled point is one our ingest wrote: (point id, raw payload) pairs in.

    Returns:
        True when every point's id is our id of its own ``source_file`` and ``chunk_sequence``; False when any
        is not; None for no points (an empty collection is nobody's yet).
    """
    seen = False
    for point_id, payload in points:
        seen = True
        if not isinstance(payload, dict):
            return False
        source, sequence = payload.get("source_file"), payload.get("chunk_sequence")
        if not isinstance(source, str) or not isinstance(sequence, int) or isinstance(sequence, bool):
            return False
        if str(point_id) != point_id_for(source, sequence):
            return False
    return True if seen else None


def rebuild_advice(owned: bool) -> str:
    """What to do about vectors that do not fit, in words that never tell a team to drop its own collection."""
    if owned:
        return "rebuild it with this model (`python -m retrieval_lib ingest --recreate`)"
    return ("re-embed it with your own pipeline (the workbook never rewrites a collection it did not build), or "
            "set EMBEDDING_PROVIDER/EMBEDDING_MODEL to the model that built it")


def embedded_text(record: dict[str, Any]) -> str:
    """The text our ingest embeds for a chunk: its document title, a newline, then its ``content``.

    Mirrors ``retrieval_lib.ingest.pipeline.prepare_documents`` (``embed_text``);
    ``tests/checks/collection/test_contract.py`` checks the two agree on the sample book. A chunk without a title is
    embedded as its content alone (as most teams' pipelines embed every chunk).
    """
    content = str(record.get("content") or "")
    title = record.get("title")
    return f"{title}\n{content}" if isinstance(title, str) and title else content


def tokens_read(record: dict[str, Any], count_tokens: Callable[[str], int], *, ours: bool) -> int:
    """The tokens a model reads of a chunk: the text its pipeline embedded (ours: title and content,
    :func:`embedded_text`; a team's: the content alone, as most pipelines embed it) in the model's own counter,
    plus its special tokens (:data:`~retrieval_lib.embedding.base.SPECIAL_TOKENS`). Compared with the model's
    ``max_tokens``; ``inspect`` and notebook 12 count by this one rule."""
    return count_tokens(embedded_text(record) if ours else str(record.get("content") or "")) + SPECIAL_TOKENS


def row_cosines(a: Sequence[Any] | np.ndarray, b: Sequence[Any] | np.ndarray) -> list[float]:
    """Row-wise ``cos(a_i, b_i) = a_i·b_i / (|a_i| |b_i|)`` (0 for a zero vector)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    norms = np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)
    dots = (x * y).sum(axis=1)
    return [float(d / n) if n else 0.0 for d, n in zip(dots, norms)]


@dataclass(frozen=True)
class EmbeddedForm:
    """The form of the text a pipeline embedded, its fresh re-embeddings and their cosines with the stored ones."""

    name: str  # "title and content" or "content"
    texts: list[str]
    vectors: np.ndarray
    cosines: list[float]


def embedded_form(records: Sequence[dict[str, Any]], stored: Sequence[Any] | np.ndarray,
                  embed_documents: Callable[[list[str]], Any], *, ours_first: bool,
                  accept: Callable[[list[float]], bool]) -> EmbeddedForm:
    """The one rule for *which text* a pipeline embedded: our ingest embeds the title, a newline, then the content
    (:func:`embedded_text`); most teams' pipelines embed the content alone.

    The likely form (ours when ``ours_first``) is embedded first; when ``accept`` refuses its cosines and the
    other form differs, the other is embedded too, and the one whose re-embeddings agree better with the stored
    vectors (by median cosine) is returned. A collection is never failed for the form of its text, and a sound one
    costs one embedding pass.
    """
    forms = [("title and content", [embedded_text(r) for r in records]),
             ("content", [str(r.get("content") or "") for r in records])]
    if not ours_first:
        forms.reverse()
    (name, texts), (other_name, other) = forms
    vectors = np.asarray(embed_documents(texts), dtype=float)
    first = EmbeddedForm(name, texts, vectors, row_cosines(vectors, stored))
    if other == texts or accept(first.cosines):
        return first
    other_vectors = np.asarray(embed_documents(other), dtype=float)
    second = EmbeddedForm(other_name, other, other_vectors, row_cosines(other_vectors, stored))
    return second if statistics.median(second.cosines) > statistics.median(first.cosines) else first
