"""The pieces of a side-by-side comparison (notebook 15): one result of either side, one question through both,
a named cause, and the whole comparison. :mod:`retrieval_lib.checks.retrieval.side_by_side` builds them,
:mod:`retrieval_lib.checks.retrieval._causes` names the causes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from retrieval_lib.models import SearchResponse
from retrieval_lib.retrievers import Answer

__all__ = ["norm_id", "Row", "Side", "QueryPair", "Cause", "SideBySide", "team_side", "collection_side",
           "same_chunk", "ALPHA"]

#: The paired test's significance (ranx's paired t-test, as ``compare`` uses it).
ALPHA = 0.05


def norm_id(value: Any) -> str:
    """A chunk or point id in one spelling: text, lower case, a UUID's dashes dropped (``md5`` hex and the UUID
    Qdrant makes of it are the same id)."""
    text = str(value).strip().lower()
    bare = text.replace("-", "")
    return bare if len(bare) == 32 and all(c in "0123456789abcdef" for c in bare) else text


def _text_key(content: str | None) -> str:
    return " ".join((content or "").split())[:300]


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
        return _text_key(self.content)


@dataclass
class Side:
    """One side's answer to one question: its rows in rank order, or the error that replaced them."""

    rows: list[Row]
    error: str | None = None
    error_kind: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None or self.error_kind is not None


def _as_url(source_url: str | None, source_file: str | None) -> tuple[str | None, str | None]:
    """A source given as a file that is a URL is the URL (a team's ``source``/``source_document`` often holds one)."""
    if not source_url and source_file and "://" in source_file:
        return source_file, None
    return source_url, source_file


def team_side(answer: Answer) -> Side:
    """The team's answer as rows (in rank order)."""
    rows = []
    for i, h in enumerate(sorted(answer.hits, key=lambda h: h.rank), 1):
        url, file = _as_url(h.source_url, h.source_file)
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


@dataclass
class Cause:
    """One named cause of a difference, with its evidence.

    Attributes:
        key: its short name (``errors``, ``cut``, ``missing``, ``embedding``, ``order``, ``filter``).
        title: what it is, in words.
        found: True when the evidence shows it, False when it does not, None when it cannot be judged.
        fault: a fault of the retriever (it then has a gate) rather than a design (a reranker).
        summary: one sentence with the figures.
        evidence: rows of its table.
        gate_id: its gate, when it has one.
        verdict: the gate's state: True passed, False failed, None not applicable (``summary`` says why).
    """

    key: str
    title: str
    found: bool | None
    fault: bool
    summary: str
    evidence: list[dict[str, Any]] = field(default_factory=list)
    gate_id: str = ""

    @property
    def verdict(self) -> bool | None:
        return None if self.found is None else not self.found


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
