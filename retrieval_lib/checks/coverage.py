"""Source coverage: can every source file be reached by a query (seed 000 SC-003, SC-007)?

A file is *reachable* when some chunk of it appears in the top ``k`` of a real,
unfiltered search for some query. A filter (``source_prefix``) would make any
file "reachable" by construction, so coverage never uses one.

The queries come from the collection itself, so nothing has to be written by
hand per book:

1. :func:`scan_sources` reads EVERY point (paged scroll, not a sample) and
   lists each source file with its chunk count, title and distinct section
   titles in ``chunk_sequence`` order;
2. :func:`heading_queries` takes up to ``n`` of a file's own headings
   (skipping the ones that merely repeat the document title);
3. golden-set queries are added by the caller;
4. :func:`measure_coverage` judges the top-k of every query per file:

   - ``heading_hit_rate`` = |own heading queries whose top-k holds a chunk of the file| / |own heading queries|
   - ``reachable`` = some chunk of the file is in the top-k of ANY query

:func:`prefix_share` measures whether a query lands in the right module
(share of its results whose ``source_file`` starts with a prefix).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..models import SearchResponse
from ..store import VectorStore

__all__ = ["SourceFile", "CoverageQuery", "FileCoverage", "scan_sources", "heading_queries",
           "build_queries", "measure_coverage", "coverage_frame", "missed_heading_queries", "prefix_share",
           "SCAN_FIELDS"]

#: Payload fields the scan needs (nothing else is read).
SCAN_FIELDS: list[str] = ["source_file", "section_title", "title", "chunk_sequence"]


@dataclass(frozen=True)
class SourceFile:
    """One source file as the collection holds it.

    Attributes:
        path: the ``source_file`` payload value.
        title: the document title (of its first chunk).
        chunks: number of points carrying this ``source_file``.
        headings: distinct ``section_title`` values in ``chunk_sequence`` order.
    """

    path: str
    title: str
    chunks: int
    headings: tuple[str, ...]


def _sequence(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 1 << 30  # chunks without a sequence go last, in scroll (id) order


def scan_sources(store: VectorStore, collection: str, *, batch_size: int = 256) -> list[SourceFile]:
    """Every source file of the collection, from a paged scroll over ALL its points.

    Points without a ``source_file`` are grouped under ``"<missing source_file>"``
    so they are counted, not silently dropped.

    Returns:
        The files sorted by path.

    Raises:
        CollectionNotFoundError, VectorStoreError: from the store.
    """
    grouped: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
    for order, point in enumerate(store.scroll(collection, with_payload=SCAN_FIELDS, batch_size=batch_size)):
        payload = point.payload or {}
        path = str(payload.get("source_file") or "<missing source_file>")
        grouped.setdefault(path, []).append((_sequence(payload.get("chunk_sequence")), order, payload))
    files = []
    for path in sorted(grouped):
        chunks = sorted(grouped[path], key=lambda item: (item[0], item[1]))
        headings: list[str] = []
        for _, _, payload in chunks:
            heading = str(payload.get("section_title") or "").strip()
            if heading and heading not in headings:
                headings.append(heading)
        title = next((str(p.get("title")).strip() for _, _, p in chunks if p.get("title")), "")
        files.append(SourceFile(path=path, title=title, chunks=len(chunks), headings=tuple(headings)))
    return files


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def heading_queries(source: SourceFile, limit: int) -> list[str]:
    """Up to ``limit`` of the file's own headings, as queries, deterministically.

    Headings are taken in ``chunk_sequence`` order; a heading equal to the
    document title (case and spacing aside) is skipped, since the title is
    usually the first section's heading too. A file whose only heading is its
    title gets the title as its one query, so every file is asked for.

    Raises:
        ValueError: ``limit`` below 1.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    title = _norm(source.title)
    chosen = [h for h in source.headings if _norm(h) != title][:limit]
    if not chosen:
        fallback = source.title or (source.headings[0] if source.headings else "")
        chosen = [fallback] if fallback else []
    return chosen


@dataclass(frozen=True)
class CoverageQuery:
    """A query run for coverage: its text, where it came from, and the file it was derived from (if any)."""

    text: str
    origin: str  # "heading", "golden" or "extra"
    owner: str | None = None


def build_queries(sources: Sequence[SourceFile], per_file: int,
                  extra: Sequence[tuple[str, str]] = ()) -> list[CoverageQuery]:
    """Heading queries of every file (in path order), then ``extra`` as (text, origin) pairs."""
    queries = [CoverageQuery(text, "heading", s.path) for s in sources for text in heading_queries(s, per_file)]
    queries += [CoverageQuery(text, origin) for text, origin in extra]
    return queries


@dataclass
class FileCoverage:
    """How one file fared.

    Attributes:
        path, chunks: the file and its chunk count.
        heading_queries: its own heading queries.
        heading_hits: those whose top-k held a chunk of the file.
        reached_by: every query (any origin) whose top-k held a chunk of the file, in run order.
    """

    path: str
    chunks: int
    heading_queries: list[str] = field(default_factory=list)
    heading_hits: list[str] = field(default_factory=list)
    reached_by: list[str] = field(default_factory=list)

    @property
    def heading_hit_rate(self) -> float:
        """|heading hits| / |heading queries| (0.0 when the file has no heading query)."""
        return len(self.heading_hits) / len(self.heading_queries) if self.heading_queries else 0.0

    @property
    def reachable(self) -> bool:
        return bool(self.reached_by)

    @property
    def reached_by_others(self) -> list[str]:
        """Reaching queries that are not the file's own heading queries (independent evidence)."""
        own = set(self.heading_queries)
        return [q for q in self.reached_by if q not in own]


def measure_coverage(sources: Sequence[SourceFile], queries: Sequence[CoverageQuery],
                     responses: Sequence[SearchResponse]) -> list[FileCoverage]:
    """Judge coverage per file from each query's (unfiltered) top-k.

    ``responses[i]`` must answer ``queries[i]``; the same text asked twice (a
    heading shared by two files) counts for each owner.

    Raises:
        ValueError: the two lists differ in length, or a response was filtered
            (a filtered search cannot show reachability).
    """
    if len(queries) != len(responses):
        raise ValueError(f"{len(queries)} queries but {len(responses)} responses")
    filtered = [r.query_text for r in responses if r.filters]
    if filtered:
        raise ValueError(f"coverage needs unfiltered searches; filtered: {filtered[:3]}")
    table = {s.path: FileCoverage(path=s.path, chunks=s.chunks) for s in sources}
    for query, response in zip(queries, responses):
        found = {r.source_file for r in response.results}
        for path in found:
            if path in table and query.text not in table[path].reached_by:
                table[path].reached_by.append(query.text)
        if query.origin == "heading" and query.owner in table:
            own = table[query.owner]
            own.heading_queries.append(query.text)
            if query.owner in found:
                own.heading_hits.append(query.text)
    return [table[s.path] for s in sources]


def coverage_frame(coverage: Sequence[FileCoverage], *, decimals: int = 3, list_queries: bool = False):
    """One row per file: chunks, heading queries, hits, hit rate, reachable, reached-by count (and list).

    Args:
        list_queries: add a ``reached_by`` column joining every reaching query with `` | ``.
    """
    import pandas as pd

    rows = []
    for c in coverage:
        row = {"source_file": c.path, "chunks": c.chunks, "heading_queries": len(c.heading_queries),
               "heading_hits": len(c.heading_hits), "heading_hit_rate": round(c.heading_hit_rate, decimals),
               "reachable": c.reachable, "queries_reaching": len(c.reached_by),
               "other_queries_reaching": len(c.reached_by_others)}
        if list_queries:
            row["reached_by"] = " | ".join(c.reached_by)
        rows.append(row)
    return pd.DataFrame(rows)


def missed_heading_queries(queries: Sequence[CoverageQuery], responses: Sequence[SearchResponse], *,
                           decimals: int = 3):
    """The heading queries whose top-k misses their own file, and where their top-1 went instead.

    Returns:
        A DataFrame with columns ``source_file, heading_query, top1_file,
        top1_section, top1_score`` (empty, with the columns, when none missed).
    """
    import pandas as pd

    rows = []
    for query, response in zip(queries, responses):
        if query.origin != "heading" or any(r.source_file == query.owner for r in response.results):
            continue
        top = response.results[0] if response.results else None
        rows.append({"source_file": query.owner, "heading_query": query.text,
                     "top1_file": top.source_file if top else None,
                     "top1_section": top.section_title if top else None,
                     "top1_score": round(top.similarity_score, decimals) if top else None})
    return pd.DataFrame(rows, columns=["source_file", "heading_query", "top1_file", "top1_section", "top1_score"])


def prefix_share(response: SearchResponse, prefix: str) -> float:
    """Share of the response's results whose ``source_file``, or ``source_url`` path, starts with ``prefix``.

    0.0 when the response is empty.
    """
    if not response.results:
        return 0.0
    hits = sum((r.source_file or "").startswith(prefix) or urlsplit(r.source_url or "").path.startswith(prefix)
               for r in response.results)
    return hits / len(response.results)
