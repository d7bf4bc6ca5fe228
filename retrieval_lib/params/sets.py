"""Golden sets, query sets and topics files: the questions a notebook asks, drafted or hand-written."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator

from retrieval_lib.errors import ParamsError
from retrieval_lib.params._schema import (
    Count,
    Entry,
    Model,
    Patterns,
    Provenance,
    Share,
    Text,
    TopK,
    carries_origins,
    read_yaml,
    validate,
)

__all__ = ["GoldenQuery", "NegativeQuery", "GoldenSet", "QuerySets", "Topic", "TopicSet", "load_golden_set",
           "load_query_sets", "load_topics", "NO_GOLDEN_SET"]


# --------------------------------------------------------------------------- golden sets

@dataclass(frozen=True)
class GoldenQuery:
    """A known question and the page patterns a right answer matches."""

    query: str
    expected_url_patterns: tuple[str, ...]
    min_score: float
    origin: str = "reviewed"
    draft_id: str | None = None


@dataclass(frozen=True)
class NegativeQuery:
    """An out-of-domain question: every result must score below ``max_score``."""

    query: str
    max_score: float
    origin: str = "reviewed"
    draft_id: str | None = None


class _GoldenEntry(Entry):
    query: Text
    expected_url_patterns: Patterns
    min_score: Share | None = None  # None: the file's
    drafted_from: dict[str, Any] | None = None  # what ``draft`` read it from (the review shows it)


class _NegativeEntry(Entry):
    query: Text
    max_score: Share = 0.5


class _GoldenFile(Model):
    """A golden-set file (seed 004; docs/drafting.md for the drafted one)."""

    name: str | None = None  # None: the file's stem
    description: str | None = None
    top_k: TopK = 5
    min_score: Share = 0.6
    required_passes: Count | None = None  # None: every query
    queries: list[_GoldenEntry] | None = None
    extra_queries: list[_GoldenEntry] | None = None
    negatives: list[_NegativeEntry] | None = None


@dataclass(frozen=True)
class GoldenSet:
    """A validated golden set (seed 004)."""

    name: str
    top_k: int
    min_score: float
    required_passes: int
    queries: tuple[GoldenQuery, ...]
    extra_queries: tuple[GoldenQuery, ...] = ()
    negatives: tuple[NegativeQuery, ...] = ()
    path: Path | None = None
    #: the file carries origins (drafted or reviewed entries, docs/drafting.md)
    marked: bool = False

    @property
    def provenance(self) -> Provenance:
        """Drafted and reviewed golden queries (``queries`` only: what the golden gate counts)."""
        return Provenance.of(self.queries, marked=self.marked)

    @property
    def negatives_provenance(self) -> Provenance:
        """Drafted and reviewed negatives."""
        return Provenance.of(self.negatives, marked=self.marked)

    @property
    def absent(self) -> bool:
        """True for :data:`NO_GOLDEN_SET`: the profile names none for this book (its gates are not applicable)."""
        return self.path is None and not (self.queries or self.extra_queries or self.negatives)


#: No golden set for this book (``golden_set: ""`` in a profile); its top_k and min_score are a file's defaults.
NO_GOLDEN_SET = GoldenSet(name="", top_k=_GoldenFile.model_fields["top_k"].default,
                          min_score=_GoldenFile.model_fields["min_score"].default, required_passes=0, queries=())
_GOLDEN_HINT = "see docs/drafting.md, 'The file format'"


def _golden(entries: list[_GoldenEntry] | None, default_min: float) -> tuple[GoldenQuery, ...]:
    return tuple(GoldenQuery(e.query, e.expected_url_patterns, default_min if e.min_score is None else e.min_score,
                             origin=e.origin, draft_id=e.draft_id) for e in entries or () if not e.skipped)


def load_golden_set(path: str | os.PathLike[str] | None) -> GoldenSet:
    """Read and check a golden-set file (see :mod:`retrieval_lib.checks.retrieval.golden_set` for its layout).

    An empty ``path`` means the book has none yet: :data:`NO_GOLDEN_SET`, whose gates are not applicable.

    Raises:
        ParamsError: a key is unknown, missing or out of range (the message names it).
    """
    if path is None or not str(path).strip():
        return NO_GOLDEN_SET
    data, p = read_yaml(path, what="golden set")
    f: _GoldenFile = validate(_GoldenFile, data, p, hint=_GOLDEN_HINT)
    queries = _golden(f.queries, f.min_score)
    if not queries:
        raise ParamsError(f"{p.name}: a golden set needs at least one entry under 'queries' that is not rejected",
                          path=str(p), key="queries")
    required = len(queries) if f.required_passes is None else f.required_passes
    if required > len(queries):
        if not carries_origins(data.get("queries")):
            raise ParamsError(f"{p.name}: required_passes must be a whole number from 0 to {len(queries)}",
                              path=str(p), key="required_passes")
        # a review rejected drafted queries after the count was written: the bar cannot exceed what is left
        required = len(queries)
    negatives = tuple(NegativeQuery(n.query, n.max_score, origin=n.origin, draft_id=n.draft_id)
                      for n in f.negatives or () if not (n.skipped or n.answerable))
    marked = any(carries_origins(data.get(k)) for k in ("queries", "extra_queries", "negatives"))
    return GoldenSet(name=str(f.name or p.stem), top_k=f.top_k, min_score=f.min_score, required_passes=required,
                     queries=queries, extra_queries=_golden(f.extra_queries, f.min_score), negatives=negatives,
                     path=p, marked=marked)


# --------------------------------------------------------------------------- query sets

class QuerySets(dict[str, list[str]]):
    """Named lists of query strings (a plain ``dict``), with what each set's entries are.

    Attributes:
        provenance: per set, its drafted and reviewed queries (:class:`Provenance`).
        sources: per set, query -> the expected source a drafted entry names (``source``), where it names one.
    """

    def __init__(self, sets: Mapping[str, list[str]], provenance: Mapping[str, Provenance],
                 sources: Mapping[str, Mapping[str, str]]) -> None:
        super().__init__(sets)
        self.provenance = dict(provenance)
        self.sources = {k: dict(v) for k, v in sources.items()}

    def provenance_of(self, *names: str) -> Provenance:
        """The sets ``names`` together."""
        return sum((self.provenance.get(name, Provenance()) for name in names), Provenance())


def _plain(item: Any) -> Any:
    """A hand-written query (a string) as the mapping a drafted one is."""
    if isinstance(item, (str, int, float)) and not isinstance(item, bool):
        return {"query": item}
    if not isinstance(item, dict):
        raise ValueError("must be a query (text) or a mapping with a non-empty 'query'")
    return item


class _QueryEntry(Entry):
    query: Text
    source: str | None = None  # the page a drafted query should find


_QUERY_SETS = dict[str, list[Annotated[_QueryEntry, BeforeValidator(_plain)]]]


def load_query_sets(path: str | os.PathLike[str], *, required: Iterable[str] = ()) -> QuerySets:
    """Read a query-set file: named lists of non-empty query strings.

    An item is a string (hand-written) or a mapping ``{query, origin, draft_id, source, status, answerable}`` (a
    drafted file, docs/drafting.md); ``status: rejected`` items are skipped, and so are ``out_of_domain`` items
    marked ``answerable: true``.

    Args:
        required: names that must be present and non-empty (e.g. ``("in_domain", "out_of_domain")``).

    Raises:
        ParamsError: a set that is not a list of non-empty strings or query mappings, an unknown key, a bad origin
            or status, or a required set missing.
    """
    data, p = read_yaml(path, what="query-set file")
    parsed: dict[str, list[_QueryEntry]] = validate(_QUERY_SETS, data, p, hint=_GOLDEN_HINT)
    sets: dict[str, list[str]] = {}
    provenance: dict[str, Provenance] = {}
    sources: dict[str, dict[str, str]] = {}
    for name, items in parsed.items():
        kept = [e for e in items if not (e.skipped or (e.answerable and name == "out_of_domain"))]
        sets[name] = [e.query for e in kept]
        provenance[name] = Provenance.of(kept, marked=carries_origins(data[name]))
        sources[name] = {e.query: e.source for e in kept if e.source}
    for name in required:
        if not sets.get(name):
            raise ParamsError(f"{p.name}: needs a non-empty list {name!r} (sets there: {', '.join(sets) or 'none'})",
                              path=str(p), key=name)
    return QuerySets(sets, provenance, sources)


# --------------------------------------------------------------------------- topics

@dataclass(frozen=True)
class Topic:
    """A topic phrase and the source prefix its results should come from (notebook 03's module gate)."""

    topic: str
    expected_prefix: str
    origin: str = "reviewed"
    draft_id: str | None = None


@dataclass(frozen=True)
class TopicSet:
    """The topics 03 asks, and whether they came from a file (``path``) or the profile's one ``primary_query``."""

    topics: tuple[Topic, ...]
    path: Path | None = None
    marked: bool = False

    @property
    def provenance(self) -> Provenance:
        return Provenance.of(self.topics, marked=self.marked)


class _TopicEntry(Entry):
    topic: Text
    expected_prefix: Text


class _TopicsFile(Model):
    topics: list[_TopicEntry]


def load_topics(path: str | os.PathLike[str] | None, *, primary_query: str | None = None,
                primary_prefix: str | None = None) -> TopicSet:
    """Read a topics file (``topics: [{topic, expected_prefix, origin, draft_id, status}]``, written by ``draft``).

    With no ``path`` (empty), the profile's one ``primary_query`` / ``primary_prefix`` is the only topic, as
    hand-written (reviewed).

    Raises:
        ParamsError: the file is missing or malformed, or it leaves no topic (every one rejected), or neither a
            file nor a primary query is given.
    """
    if path is None or not str(path).strip():
        if not (primary_query or "").strip() or primary_prefix is None:
            raise ParamsError("no topics: give a topics file, or primary_query and primary_prefix", path="",
                              key="topics")
        return TopicSet((Topic(str(primary_query).strip(), str(primary_prefix)),))
    data, p = read_yaml(path, what="topics file")
    f: _TopicsFile = validate(_TopicsFile, data, p, hint="a list 'topics' of {topic, expected_prefix} entries")
    out = tuple(Topic(t.topic, t.expected_prefix, t.origin, t.draft_id) for t in f.topics if not t.skipped)
    if not out:
        raise ParamsError(f"{p.name}: every topic is rejected; draft again or write one", path=str(p), key="topics")
    return TopicSet(out, path=p, marked=carries_origins(data["topics"]))
