"""The pieces of a side-by-side comparison (notebook 15): one result of either side, one question through both,
a named cause, and the whole comparison. :mod:`retrieval_lib.checks.retrieval.side_by_side` builds them,
:mod:`retrieval_lib.checks.retrieval._causes` names the causes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from retrieval_lib.checks.gates import (
    SIDE_BY_SIDE_COMPLETE_ANSWERS,
    SIDE_BY_SIDE_ERRORS,
    SIDE_BY_SIDE_QUERY_EMBEDDING,
    SIDE_BY_SIDE_SOURCES,
    SIDE_BY_SIDE_TEXT_AND_SOURCE,
)
from retrieval_lib.models import SearchResponse
from retrieval_lib.retrievers import Answer
from retrieval_lib.workbook.gates import GateDef

__all__ = ["norm_id", "Row", "Side", "QueryPair", "CAUSES", "Cause", "SideBySide", "team_side", "collection_side",
           "same_chunk", "ALPHA"]

#: The paired test's significance (ranx's paired t-test, as ``compare`` uses it).
ALPHA = 0.05


def norm_id(value: Any) -> str:
    """A chunk or point id in one spelling: text, lower case, a UUID's dashes dropped (``md5`` hex and the UUID
    Qdrant makes of it are the same id)."""
    text = str(value).strip().lower()
    bare = text.replace("-", "")
    return bare if len(bare) == 32 and all(c in "0123456789abcdef" for c in bare) else text


@dataclass
class Row:
    """One result of either side, as the comparison reads it.

    ``ids``: every id it is known by (point id and chunk id, :func:`norm_id`); ``page``: its source URL, else its
    source file; ``point_id``: the collection's point id where known.
    """

    rank: int
    ids: frozenset[str]
    page: str | None
    content: str | None
    score: float | None
    source_url: str | None = None
    source_file: str | None = None
    point_id: str | None = None
    chunk_id: str | None = None

    @property
    def text_key(self) -> str:
        """Its text with whitespace normalised, cut to 300 characters (what "the same text" compares)."""
        return " ".join((self.content or "").split())[:300]


@dataclass
class Side:
    """One side's answer to one question: its rows in rank order, or the error that replaced them."""

    rows: list[Row]
    error: str | None = None
    error_kind: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None or self.error_kind is not None


def team_side(answer: Answer) -> Side:
    """The team's answer as rows (in rank order)."""
    rows = []
    for i, h in enumerate(sorted(answer.hits, key=lambda h: h.rank), 1):
        url, file = h.source_url, h.source_file
        if not url and "://" in (file or ""):  # a source file that is a URL (a team's source_document) is the URL
            url, file = file, None
        chunk = None if h.chunk_id in (None, "") else str(h.chunk_id)
        rows.append(Row(rank=i, ids=frozenset({norm_id(chunk)}) if chunk else frozenset(), page=url or file or None,
                        content=h.content, score=h.score, source_url=url, source_file=file, chunk_id=chunk))
    return Side(rows, answer.error, answer.error_kind)


def collection_side(response: SearchResponse) -> Side:
    """The collection's own answer as rows."""
    rows = [Row(rank=i, ids=frozenset(norm_id(x) for x in (r.point_id, r.chunk_id) if x),
                page=r.source_url or r.source_file, content=r.content, score=r.raw_score,
                source_url=r.source_url, source_file=r.source_file, point_id=r.point_id)
            for i, r in enumerate(response.results, 1)]
    return Side(rows)


def same_chunk(team: Row, ours: Row) -> bool:
    """The one rule for "the same chunk": a shared id where the team's result carries one, else the same text (and
    the same page where both name one)."""
    if team.ids:
        return bool(team.ids & ours.ids)
    if not team.text_key or team.text_key != ours.text_key:
        return False
    return team.page is None or ours.page is None or team.page == ours.page


@dataclass
class QueryPair:
    """One question through both sides.

    ``matched``: (team rank, collection rank) of each chunk both returned in their top k; ``overlap``:
    len(matched) / k; ``team_hit``/``collection_hit``: 1 when a golden page is in the side's top k (None for the
    team's side when it failed).
    """

    query: str
    kind: str
    patterns: tuple[str, ...]
    team: Side
    collection: Side
    k: int
    matched: list[tuple[int, int]] = field(default_factory=list)
    team_hit: int | None = None
    collection_hit: int = 0

    @property
    def overlap(self) -> float | None:
        return None if self.team.failed else len(self.matched) / self.k

    @property
    def rank_shifts(self) -> list[int]:
        return [t - c for t, c in self.matched]


#: Each cause's title, and the gate of those that are faults of the retriever (a cause without one is a design, e.g. a
#: reranker: a finding, not a gate).
CAUSES: dict[str, tuple[str, GateDef | None]] = {
    "errors": ("errors", SIDE_BY_SIDE_ERRORS),
    "cut": ("empty or cut answers", SIDE_BY_SIDE_COMPLETE_ANSWERS),
    "missing": ("results without text or source", SIDE_BY_SIDE_TEXT_AND_SOURCE),
    "embedding": ("another query embedding", SIDE_BY_SIDE_QUERY_EMBEDDING),
    "order": ("the same chunks in another order", None),
    "filter": ("results from a subset of sources", SIDE_BY_SIDE_SOURCES),
}


@dataclass
class Cause:
    """One named cause of a difference, with its evidence.

    Attributes:
        key: its short name, a key of :data:`CAUSES` (which gives its title and its gate).
        found: True when the evidence shows it, False when it does not, None when it cannot be judged.
        summary: one sentence with the figures.
        evidence: rows of its table.
        title: what it is, in words, when the evidence names it more closely than :data:`CAUSES` does.
    """

    key: str
    found: bool | None
    summary: str
    evidence: list[dict[str, Any]] = field(default_factory=list)
    title: str = ""

    def __post_init__(self) -> None:
        self.title = self.title or CAUSES[self.key][0]

    @property
    def gate(self) -> GateDef | None:
        """Its gate; None for a design rather than a fault (``order``)."""
        return CAUSES[self.key][1]

    @property
    def gate_id(self) -> str:
        return self.gate.id if self.gate is not None else ""

    @property
    def fault(self) -> bool:
        """A fault of the retriever (it has a gate) rather than a design (a reranker)."""
        return self.gate is not None


@dataclass
class SideBySide:
    """The comparison of one retriever with the collection over one set of questions.

    Attributes:
        retriever: the retriever, in one line (its ``describe()``).
        pairs: one :class:`QueryPair` per question.
        top_k: results asked of each side; hit@k is judged at this k.
        team_hit_rate, collection_hit_rate: mean hit@k over the questions the retriever answered.
        p_value: the paired t-test's two-sided p of hit@k (ranx ``compare``, as ``compare`` uses it); None when
            fewer than 2 questions were answered.
        causes: the named causes, by key.
        scores: per checked result, (query, rank, the retriever's score, cosine as query, cosine as document).
        provenance: drafted and reviewed questions (a drafted golden set's).
        absent: why nothing was compared, or None.
    """

    retriever: str
    pairs: list[QueryPair]
    top_k: int
    team_hit_rate: float = math.nan
    collection_hit_rate: float = math.nan
    p_value: float | None = None
    alpha: float = ALPHA
    causes: dict[str, Cause] = field(default_factory=dict)
    scores: list[tuple[str, int, float, float, float]] = field(default_factory=list)
    provenance: Any = None
    absent: str | None = None

    @property
    def answered(self) -> list[QueryPair]:
        return [p for p in self.pairs if not p.team.failed]

    @property
    def hit_rate_worse(self) -> bool:
        """The retriever's hit@k is significantly below the collection's (paired test at ``alpha``)."""
        return (self.p_value is not None and self.p_value < self.alpha
                and self.team_hit_rate < self.collection_hit_rate)
