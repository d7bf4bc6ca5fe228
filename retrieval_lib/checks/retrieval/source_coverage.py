"""Source coverage: can every source file be reached by a query (seed 000 SC-003, SC-007)?

A file is *reachable* when some chunk of it appears in the top ``k`` of a real,
unfiltered search for some query. A filter (``source_prefix``) would make any
file "reachable" by construction, so coverage never uses one.

The queries come from the collection itself, so nothing has to be written by
hand per book:

1. :func:`scan_sources` reads EVERY point (one scroll of four fields in large
   pages, not a sample) and lists each source file with its chunk count, title and distinct section
   titles in ``chunk_sequence`` order;
2. :func:`heading_queries` takes up to ``n`` of a file's own headings
   (skipping the ones that merely repeat the document title);
3. golden-set queries are added by the caller;
4. :func:`measure_coverage` judges the top-k of every query per file:

   - ``heading_hit_rate`` = |own heading queries whose top-k holds a chunk of the file| / |own heading queries|
   - ``reachable`` = some chunk of the file is in the top-k of ANY query

:func:`measure` runs it all (notebook 10 and ``plan`` use its pieces too); the check adds whether each topic query
lands in its module (:mod:`._topics`, seed 000 SC-007).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from retrieval_lib.book.routes import strip_number_prefix
from retrieval_lib.checks.gates import COVERAGE_REACHABLE, COVERAGE_TOPIC, COVERAGE_TOPICS
from retrieval_lib.checks.retrieval import _topics
from retrieval_lib.errors import ValidationError
from retrieval_lib.models import SearchResponse
from retrieval_lib.params import GoldenSet
from retrieval_lib.retrievers.as_search import rank_stand_in
from retrieval_lib.stores import ReadableStore
from retrieval_lib.stores.scan import Columns, read_columns
from retrieval_lib.workbook.check import NotApplicable
from retrieval_lib.workbook.plots import plain_figure
from retrieval_lib.workbook.runfiles import write_run

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "SourceCoverage", "scan_sources", "tally_sources", "build_queries", "CoverageStudy", "measure",
           "SCAN_FIELDS"]

#: The gates this check records (the topic gate is one per topic, or one for a topics file).
GATES = (COVERAGE_REACHABLE, COVERAGE_TOPIC, COVERAGE_TOPICS)

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


def scan_sources(store: ReadableStore, collection: str, *, batch_size: int | None = None) -> list[SourceFile]:
    """Every source file of the collection, from one pass over ALL its points reading only :data:`SCAN_FIELDS`.

    Points without a ``source_file`` are grouped under ``"<missing source_file>"`` so they are counted, not
    silently dropped. ``batch_size`` (points per page) defaults to large pages (:mod:`retrieval_lib.stores.scan`).
    Returns the files sorted by path (:func:`tally_sources`).

    Raises:
        CollectionNotFoundError, VectorStoreError: from the store.
    """
    return tally_sources(read_columns(store, collection, SCAN_FIELDS, batch_size=batch_size))


def tally_sources(columns: Columns) -> list[SourceFile]:
    """:func:`scan_sources`'s files from the scan's columns (rows in scroll order break ``chunk_sequence`` ties)."""
    titles, sections = columns["title"], columns["section_title"]
    sequences = [_sequence(v) for v in columns["chunk_sequence"]]
    grouped: dict[str, list[int]] = {}
    for row, source in enumerate(columns["source_file"]):
        grouped.setdefault(str(source or "<missing source_file>"), []).append(row)
    files = []
    for path in sorted(grouped):
        rows = sorted(grouped[path], key=lambda row: (sequences[row], row))
        headings = dict.fromkeys(h for h in (str(sections[r] or "").strip() for r in rows) if h)
        title = next((str(titles[r]).strip() for r in rows if titles[r]), "")
        files.append(SourceFile(path=path, title=title, chunks=len(rows), headings=tuple(headings)))
    return files


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def heading_queries(source: SourceFile, limit: int) -> list[str]:
    """Up to ``limit`` of the file's own headings, as queries, deterministically.

    Headings are taken in ``chunk_sequence`` order; a heading equal to the
    document title (case and spacing aside) is skipped, since the title is
    usually the first section's heading too. A file whose only heading is its
    title gets the title as its one query, and a file with neither (a
    collection that stores no title or heading) its name, so every file is
    asked for: ``docs/01-ros2/02-nodes-and-topics.md`` asks "nodes and topics".

    Raises:
        ValidationError: ``limit`` below 1.
    """
    if limit < 1:
        raise ValidationError(f"limit must be at least 1 (got {limit})", field="limit")
    title = _norm(source.title)
    chosen = [h for h in source.headings if _norm(h) != title][:limit]
    if not chosen:
        fallback = source.title or (source.headings[0] if source.headings else "") or file_name_query(source.path)
        chosen = [fallback] if fallback else []
    return chosen


def file_name_query(path: str) -> str:
    """A file's name as a question: its path's last part, its number prefix and extension dropped, ``-`` and ``_``
    read as spaces (``docs/01-ros2/02-nodes-and-topics.md`` -> "nodes and topics"; a URL's path alike)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if name.lower().endswith((".md", ".mdx", ".html", ".htm", ".txt", ".rst")) else name
    return " ".join(strip_number_prefix(stem).replace("_", " ").replace("-", " ").split())


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
    def hits_of_queries(self) -> str:
        """``"hits/queries"`` of its own heading queries, e.g. ``"4/6"``."""
        return f"{len(self.heading_hits)}/{len(self.heading_queries)}"

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
        ValidationError: the two lists differ in length, or a response was filtered
            (a filtered search cannot show reachability).
    """
    if len(queries) != len(responses):
        raise ValidationError(f"{len(queries)} queries but {len(responses)} responses", field="responses")
    filtered = [r.query_text for r in responses if r.filters]
    if filtered:
        raise ValidationError(f"coverage needs unfiltered searches; filtered: {filtered[:3]}", field="responses")
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


def coverage_frame(coverage: Sequence[FileCoverage], *, decimals: int = 3):
    """One row per file: chunks, heading queries, hits, hit rate, reachable, how many queries reached it, and every
    one of them (``reached_by``, joined with `` | ``)."""
    import pandas as pd

    return pd.DataFrame([{"source_file": c.path, "chunks": c.chunks, "heading_queries": len(c.heading_queries),
                          "heading_hits": len(c.heading_hits), "heading_hit_rate": round(c.heading_hit_rate, decimals),
                          "reachable": c.reachable, "queries_reaching": len(c.reached_by),
                          "other_queries_reaching": len(c.reached_by_others), "reached_by": " | ".join(c.reached_by)}
                         for c in coverage])


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
        scored = top is not None and rank_stand_in([response]) is None  # 1/rank stand-ins are no score
        rows.append({"source_file": query.owner, "heading_query": query.text,
                     "top1_file": top.source_file if top else None,
                     "top1_section": top.section_title if top else None,
                     "top1_score": round(top.similarity_score, decimals) if top and scored else None})
    return pd.DataFrame(rows, columns=["source_file", "heading_query", "top1_file", "top1_section", "top1_score"])


@dataclass(frozen=True)
class CoverageStudy:
    """One coverage pass: the files, the queries asked, their unfiltered top-k, and the verdict per file.

    Attributes:
        sources: every source file of the collection (:func:`scan_sources`).
        queries, responses: what was asked and answered (``responses[i]`` for ``queries[i]``), top ``top_k``.
        files: :func:`measure_coverage` per file, in ``sources`` order.
    """

    sources: list[SourceFile]
    queries: list[CoverageQuery]
    responses: list[SearchResponse]
    files: list[FileCoverage]
    top_k: int

    @property
    def unreachable(self) -> list[str]:
        """Files no query reached, by path."""
        return [c.path for c in self.files if not c.reachable]

    @property
    def reachable_share(self) -> float:
        """Reachable files / files (0.0 for an empty collection)."""
        return 1 - len(self.unreachable) / len(self.files) if self.files else 0.0


def measure(retriever: Any, *, top_k: int, headings_per_file: int, golden: GoldenSet | None = None) -> CoverageStudy:
    """Scan every file of ``retriever``'s collection, ask up to ``headings_per_file`` of its headings
    (:func:`heading_queries`) and the ``golden`` set's ``queries`` (origin ``golden``) and ``extra_queries``
    (``extra``) without a filter, top ``top_k``, and judge each file.

    Raises:
        ValidationError: ``headings_per_file`` below 1. Anything the store or the search raises.
    """
    extra = [] if golden is None else ([(q.query, "golden") for q in golden.queries]
                                       + [(q.query, "extra") for q in golden.extra_queries])
    sources = scan_sources(retriever.store, retriever.collection)
    queries = build_queries(sources, headings_per_file, extra)
    responses = retriever.search_many([q.text for q in queries], top_k=top_k)
    return CoverageStudy(sources=sources, queries=queries, responses=responses,
                         files=measure_coverage(sources, queries, responses), top_k=top_k)


def inventory_frame(sources: Sequence[SourceFile]):
    """One row per source file: path, title, chunk count and number of distinct headings."""
    import pandas as pd

    return pd.DataFrame([{"source_file": s.path, "title": s.title, "chunks": s.chunks, "headings": len(s.headings)}
                         for s in sources], columns=["source_file", "title", "chunks", "headings"])


@plain_figure
def hit_rate_figure(study: CoverageStudy):
    """Each file's heading-query hit rate as a bar (best first; red: unreachable), with ``hits/queries``."""
    from retrieval_lib.workbook.plots import horizontal_bars

    order = sorted(study.files, key=lambda c: (-c.heading_hit_rate, c.path))
    return horizontal_bars(
        [c.path for c in order], [c.heading_hit_rate for c in order],
        colours=["tab:blue" if c.reachable else "tab:red" for c in order],
        notes=[c.hits_of_queries for c in order], xlim=(0, 1.12), label_size=7,
        xlabel=f"heading-query hit rate (own headings whose top-{study.top_k} holds the file)",
        title=f"Heading-query hit rate per file (red: unreachable by any of {len(study.queries)} queries)")


def run(ctx: NotebookRun, *, golden_set: str, coverage_top_k: int, min_reachable_share: float,
        headings_per_file: int, primary_query: str | None, primary_prefix: str | None, topics: str | None,
        min_primary_share: float) -> SourceCoverage | NotApplicable:
    """Notebook 03's check: every source file's headings and the golden set's queries asked of ``ctx.retriever``
    unfiltered, top ``coverage_top_k``; then the topics (the ``topics`` file, else ``primary_query`` with
    ``primary_prefix``), each with the share of its results under its prefix.

    Raises:
        ParamsError: the golden set or the topics file is missing or malformed, or no topic is given.
    """
    from retrieval_lib.params import load_golden_set, load_topics

    if reason := ctx.collection_absent():
        return NotApplicable(reason, GATES)
    study = measure(ctx.retriever, top_k=coverage_top_k, headings_per_file=headings_per_file,
                    golden=load_golden_set(golden_set))
    landing = _topics.measure(ctx.retriever, load_topics(topics, primary_query=primary_query,
                                                         primary_prefix=primary_prefix), top_k=coverage_top_k)
    return SourceCoverage(study, landing, ctx.store.count(ctx.collection), min_reachable_share=min_reachable_share,
                          min_primary_share=min_primary_share)


@dataclass
class SourceCoverage:
    """Notebook 03's result: the coverage pass, the topics' landing, the points the collection holds, the bars."""

    study: CoverageStudy
    topics: _topics.TopicStudy
    points: int
    min_reachable_share: float
    min_primary_share: float

    def __str__(self) -> str:
        s = self.study
        missed = missed_heading_queries(s.queries, s.responses)
        return "\n".join([
            f"{len(s.sources)} source files, {sum(f.chunks for f in s.sources)} chunks scanned of {self.points} "
            "points in the collection",
            f"{len(s.queries)} queries ({len({q.text for q in s.queries})} distinct), top {s.top_k} each, no filter; "
            f"by origin: {dict(Counter(q.origin for q in s.queries))}",
            f"{len(s.unreachable)} of {len(s.files)} files in no query's top {s.top_k}: "
            f"{', '.join(s.unreachable) or 'none'}",
            f"{len(missed)} heading queries in {missed['source_file'].nunique()} files missed their own file",
            self.topics.describe()])

    def tables(self) -> dict[str, Any]:
        """``inventory`` (every source file), ``coverage`` (per file, with every query that reached it),
        ``missed_heading_queries`` (and where their top-1 went) and ``topics`` (each topic's landing)."""
        s = self.study
        return {"inventory": inventory_frame(s.sources), "coverage": coverage_frame(s.files),
                "missed_heading_queries": missed_heading_queries(s.queries, s.responses),
                "topics": self.topics.frame()}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """Record the tables, the hit-rate figure (``show``: display it), the gates (seed 000 SC-003 reachability;
        SC-007 from the topics), findings, metrics and the run file."""
        tables, study = self.tables(), self.study
        for name, frame in tables.items():
            report.table(frame, name)
        report.figure(hit_rate_figure(study), "hit_rate", show=show)
        files, k, unreachable = study.files, study.top_k, study.unreachable
        reachable = len(files) - len(unreachable)
        COVERAGE_REACHABLE.record(
            report, study.reachable_share >= self.min_reachable_share, value=round(study.reachable_share, 4),
            threshold=self.min_reachable_share, rule=">=", unit="share",
            detail=(f"{reachable}/{len(files)} files in some query's top-{k}; "
                    + ("unreachable: " + ", ".join(unreachable) if unreachable else "none unreachable")))
        share = self.topics.record(report, min_primary_share=self.min_primary_share)
        mean_hit = sum(c.heading_hit_rate for c in files) / len(files) if files else 0.0
        weak = sum(c.heading_hit_rate < 1.0 for c in files)
        independent = sum(bool(c.reached_by_others) for c in files)
        listed = f"; unreachable: {', '.join(unreachable)}" if unreachable else ""
        report.finding(f"{len(files)} source files ({sum(c.chunks for c in files)} chunks); {reachable} reachable by "
                       f"unfiltered top-{k} retrieval{listed}")
        report.finding(f"heading queries find their own file in {sum(len(c.heading_hits) for c in files)} of "
                       f"{sum(len(c.heading_queries) for c in files)} cases (mean per-file hit rate {mean_hit:.2f}); "
                       f"{weak} files below 1.0")
        report.finding(f"{independent} of {len(files)} files are also reached by a query not taken from their own "
                       f"headings (another file's heading or a golden query)")
        if files:  # the file whose own headings most often miss it
            least = min(files, key=lambda c: (c.heading_hit_rate, c.path))
            report.finding(f"lowest heading hit rate: {least.path} ({least.hits_of_queries})")
        for name, value in (("source_files", len(files)), ("chunks", sum(c.chunks for c in files)),
                            ("queries", len(study.queries)), ("reachable_files", reachable),
                            ("reachable_share", study.reachable_share), ("unreachable_files", unreachable),
                            ("mean_heading_hit_rate", mean_hit), ("files_reached_by_other_queries", independent),
                            ("missed_heading_queries", len(tables["missed_heading_queries"])),
                            ("primary_share", share)):
            report.metric(name, value)
        write_run(report, study.responses, kinds=[q.origin for q in study.queries], top_k=k, query_set="derived",
                  qrels=[(q.text, q.owner) for q in study.queries if q.owner], qrels_level="source_file")
