"""Does the collection hold the book as it is now (issue 33, notebook 16)?

The book (a docs folder or a sitemap) is the source of truth; :mod:`retrieval_lib.book` reads it, maps the
collection's sources onto its pages and compares texts. This check adds the near-duplicate chunks
(:mod:`._near_duplicates`) and whether a question still retrieves a gone source, and turns it all into five
findings, each a table with a gate (:mod:`retrieval_lib.checks.gates`, ``book.*``):

- ``book.missing``: pages never ingested (stock pages and stubs listed apart, not counted);
- ``book.gone``: sources whose page no longer exists (renamed or deleted), with their chunks, the golden queries
  that expect them and the golden or drafted queries whose top-k still holds one of their chunks;
- ``book.changed``: pages whose chunks' text is no longer in the page: more than ``changed_max_share`` of their
  chunks, or more than :data:`~retrieval_lib.book.CHANGED_MAX_UNFOUND` of their chunks' words;
- ``book.thin``: pages whose chunks cover less than ``thin_min_coverage`` of their shingles;
- ``book.near_duplicates``: pairs of chunks with cosine >= ``near_duplicate_cosine`` from different pages, or from
  one page at least two chunks apart, and the share of top-k places they take.

**Still retrieved.** When a source is gone, the golden set's questions (its golden and extra queries, drafted or
reviewed) are asked of ``ctx.retriever`` at the set's ``top_k`` (the team's retriever where the profile names one;
notebook 05 asks the same questions, so the run's query cache answers them). A gone source is retrieved by a
question when a result of its top-k is one of the source's chunks (by point id) or names the source's URL or file.
A question the retriever failed on is counted apart, never read as "not retrieved".

A finding that cannot judge is not applicable with the reason (no book given, the book unreadable, a base URL that
matches no source, a sitemap's pages without text); the others still stand. Nothing is written.

:func:`run` is the check (notebook 16 and ``book``, ``check book``); its :class:`BookResult` records the gates
and gives the tables.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from retrieval_lib import book as bk
from retrieval_lib.checks.collection._near_duplicates import NearDuplicates, near_duplicates
from retrieval_lib.checks.gates import BOOK_CHANGED, BOOK_GONE, BOOK_MISSING, BOOK_NEAR_DUPLICATES, BOOK_THIN
from retrieval_lib.errors import ConfigurationError, DocumentError, ValidationError
from retrieval_lib.workbook.check import NotApplicable

if TYPE_CHECKING:
    from retrieval_lib.params import GoldenSet
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "BookResult", "BookStudy", "StillRetrieved", "study",
           "still_retrieved", "near_duplicates", "book_lists", "LISTS", "GATES", "COLUMNS"]

#: The five lists, in the order the report shows them.
LISTS = ("missing", "gone", "changed", "thin", "near_duplicates")
#: The check's gates, one per list.
GATES = (BOOK_MISSING, BOOK_GONE, BOOK_CHANGED, BOOK_THIN, BOOK_NEAR_DUPLICATES)
_GATE = dict(zip(LISTS, GATES))
#: Rows a finding names at most.
_NAMED = 5
#: Each table's columns (an empty table still shows them).
COLUMNS = {
    "missing": ("page", "route", "title", "words", "stock", "problem"),
    "gone": ("source", "chunks", "hint", "expected_by", "retrieved_by"),
    "changed": ("page", "chunks", "judged", "stale", "changed_share", "unfound_share", "changed"),
    "thin": ("page", "words", "chunks", "chunks_per_1000_words", "z", "coverage", "changed", "thin"),
    "near_duplicates": ("page", "chunk", "sequence", "other_page", "other_chunk", "other_sequence", "cosine",
                        "same_page"),
    "mapping": ("source", "chunks", "page", "how", "hint"),
}


@dataclass
class StillRetrieved:
    """The questions asked for the gone sources and what they retrieved.

    Attributes:
        asked: the questions asked (golden and extra queries), with their origin (``drafted``/``reviewed``).
        top_k: the depth each was asked at.
        by_source: gone source -> the questions whose top-k holds one of its chunks.
        failed: questions the retriever failed on (their answer says nothing either way).
        retriever: what answered them.
    """

    asked: dict[str, str]
    top_k: int
    by_source: dict[str, list[str]]
    failed: list[str]
    retriever: str


@dataclass
class BookStudy:
    """Everything notebook 16 judges, and why a finding cannot judge (``problems[list name]``)."""

    book: bk.Book | None
    chunks: bk.BookChunks
    bmap: bk.BookMap | None
    comparisons: list[bk.PageComparison]
    near: NearDuplicates | None
    problems: dict[str, str] = field(default_factory=dict)
    golden: GoldenSet | None = None
    retrieved: StillRetrieved | None = None

    def describe(self) -> str:
        """What was read and how it mapped, and why a finding cannot judge, as a person reads it."""
        out = []
        if self.book is not None:
            out.append(f"{self.book.kind} book: {len(self.book.pages)} pages, route base {self.book.route_base}")
        if self.bmap is not None:
            out.append(f"{len(self.chunks)} chunks from {len(self.bmap.sources)} sources: {self.bmap.how_matched()}")
        if self.retrieved is not None:
            r = self.retrieved
            out.append(f"{len(r.asked)} golden and extra questions asked of {r.retriever} (top {r.top_k}) for the "
                       f"gone sources" + (f"; {len(r.failed)} failed" if r.failed else ""))
        out += [f"{name}: not applicable: {reason}" for name, reason in self.problems.items()]
        return "\n".join(out)


def _expected_by(golden: GoldenSet | None, source: bk.SourceMatch, base: Sequence[str] = (),
                 routes: bk.BookRoutes | None = None) -> list[str] | None:
    """The golden and extra queries whose expected patterns name ``source`` (None without a golden set); ``base``:
    the site's base path segments, as notebook 05 reads patterns (``golden_set.site_base``); ``routes``: the book's
    routes of the sources (:func:`_routes`), so that a pattern written with the site's routes names a source by its
    page's route, by notebook 05's rule (``golden_set.route_names``)."""
    from retrieval_lib.checks.retrieval.golden_set import route_names, url_matches

    if golden is None:
        return None
    values = (source.url, source.file)
    return [q.query for q in (*golden.queries, *golden.extra_queries)
            if any(any(url_matches(v, p, base) for v in values if v) or route_names(routes, (source.source, *values), p)
                   for p in q.expected_url_patterns)]


def _routes(book: bk.Book | None, bmap: bk.BookMap | None) -> bk.BookRoutes | None:
    """The book's route of each mapped source (``book.routes_of``), None without a trusted mapping."""
    return bk.routes_of(book, bmap) if book is not None and bmap is not None and not bmap.problem else None


def _site_base(bmap: bk.BookMap) -> tuple[str, ...]:
    from retrieval_lib.checks.retrieval.golden_set import site_base

    return site_base([s.url for s in bmap.sources if s.url])


def still_retrieved(search: Any, golden: GoldenSet, chunks: bk.BookChunks, gone: list[bk.SourceMatch]) -> \
        StillRetrieved:
    """Ask the golden set's golden and extra questions of ``search`` (its ``search_many``, at the set's ``top_k``)
    and name, per gone source, the questions whose top-k holds one of its chunks (module docstring)."""
    questions = {q.query: q.origin for q in (*golden.queries, *golden.extra_queries)}
    labels = {s.source for s in gone}
    by_id: dict[str, str] = {}
    for i, cid in enumerate(chunks.ids):
        label = chunks.source(i)
        if label in labels:
            by_id[cid] = label
    by_value = {v: s.source for s in gone for v in (s.url, s.file, s.source) if v}
    found: dict[str, list[str]] = {s.source: [] for s in gone}
    failed: list[str] = []
    responses = search.search_many(list(questions), top_k=golden.top_k) if questions else []
    for text, response in zip(questions, responses):
        if response.error:
            failed.append(text)
            continue
        hit = {by_id.get(r.point_id) or by_id.get(r.chunk_id or "") or by_value.get(r.source_url or "")
               or by_value.get(r.source_file or "") for r in response.results}
        for label in hit - {None}:
            found[str(label)].append(text)
    describe = getattr(search, "describe", None)
    return StillRetrieved(questions, golden.top_k, found, failed,
                          describe() if callable(describe) else "the collection's own search")


def study(view: Any, collection: str, *, docs: str | None = None, sitemap: str | None = None,
          base_url: str | None = None, route_base: str | None = None, golden_set: str | None = None,
          near_duplicate_cosine: float = 0.98, near_duplicate_top_k: int = 10, max_full: int = 5_000,
          sample_size: int = 1_000, seed: int = 0, search: Any = None,
          run_dir: str | os.PathLike[str] | None = None) -> BookStudy:
    """Read the book and the collection (one scroll of :data:`retrieval_lib.book.FIELDS`), map, compare, find near
    duplicates, and, when ``search`` is given and a source is gone, ask the golden questions
    (:func:`still_retrieved`). A book that cannot be read makes the four book findings not applicable, with the
    reason.

    Raises:
        ValidationError: a threshold out of range.
    """
    from retrieval_lib.params import load_golden_set

    if not 0 < near_duplicate_cosine <= 1:
        raise ValidationError(f"near_duplicate_cosine must be in (0, 1], got {near_duplicate_cosine}",
                              field="near_duplicate_cosine")
    problems: dict[str, str] = {}
    book: bk.Book | None = None
    try:
        book = bk.read_book(docs, sitemap, route_base=route_base)
    except (ConfigurationError, DocumentError) as exc:
        for name in LISTS[:4]:
            problems[name] = str(exc)
    chunks = bk.read_chunks(view, collection)
    bmap = None
    comparisons: list[bk.PageComparison] = []
    if book is not None:
        bmap = bk.map_sources(book, chunks, base_url=base_url or None, route_base=route_base or None)
        if bmap.problem:
            for name in LISTS[:4]:
                problems[name] = bmap.problem
        elif not bmap.sources:
            for name in LISTS[:4]:  # a finding on no mapping would call every page missing, and pass the others
                problems[name] = ("no payload key of this collection names its chunks' source file or URL, so they "
                                  "cannot be put on the book's pages: map one in the profile's payload_fields "
                                  "(source_file or source_url; `inspect` lists the keys)")
        elif not book.has_text:
            for name in ("changed", "thin"):
                problems[name] = ("a sitemap gives routes, not texts: point book_docs at the docs folder to compare "
                                  "texts")
        else:
            comparisons = bk.compare_pages(book, bmap, chunks)
    near = None
    try:
        near = near_duplicates(view, collection, chunks, bmap, cosine=near_duplicate_cosine,
                               top_k=near_duplicate_top_k, max_full=max_full, sample_size=sample_size, seed=seed,
                               run_dir=run_dir)
    except ValidationError as exc:
        problems["near_duplicates"] = str(exc)
    golden = load_golden_set(golden_set) if golden_set else None
    base, routes = (_site_base(bmap) if bmap is not None else ()), _routes(book, bmap)
    if golden is not None and bmap is not None and not any(_expected_by(golden, src, base, routes)
                                                           for src in bmap.sources):
        # its questions expect no page of this collection: another book's (the demo's, where no profile was given)
        problems["golden_set"] = (f"the golden set {golden.path.name if golden.path else golden.name} expects no "
                                  "page of this collection (it describes another book, or its expected_url_patterns "
                                  "are wrong): its questions were not asked")
        golden = None
    retrieved = None
    if search is not None and golden is not None and bmap is not None and bmap.unmatched and "gone" not in problems:
        retrieved = still_retrieved(search, golden, chunks, bmap.unmatched)
    return BookStudy(book, chunks, bmap, comparisons, near, problems, golden, retrieved)


def book_lists(s: BookStudy, changed_max_share: float, thin_min_coverage: float) -> dict[str, list[dict[str, Any]]]:
    """The five lists (:data:`LISTS`) as rows; a list whose finding cannot judge is empty."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in LISTS}
    if s.book is not None and s.bmap is not None and "missing" not in s.problems:
        out["missing"] = bk.missing_pages(s.book, s.bmap)
        base, routes = _site_base(s.bmap), _routes(s.book, s.bmap)
        out["gone"] = [{**row, "expected_by": _expected_by(s.golden, src, base, routes),
                        "retrieved_by": None if s.retrieved is None else s.retrieved.by_source[src.source]}
                       for row, src in zip(bk.gone_sources(s.bmap), s.bmap.unmatched)]
    if "changed" not in s.problems:
        out["changed"] = bk.changed_pages(s.comparisons, changed_max_share)
        out["thin"] = bk.thin_pages(s.comparisons, thin_min_coverage, changed_max_share)
    if s.near is not None:
        out["near_duplicates"] = s.near.pairs
    return out


def run(ctx: NotebookRun, *, book_docs: str, book_sitemap: str, book_base_url: str, book_route_base: str,
        golden_set: str | None, changed_max_share: float, thin_min_coverage: float, max_missing_pages: int,
        max_gone_sources: int, near_duplicate_cosine: float, near_duplicate_top_k: int,
        max_near_duplicate_share: float) -> BookResult | NotApplicable:
    """Notebook 16's check: the book (``book_docs``: a folder, ``"sample_book"`` the one in the package; or
    ``book_sitemap``) against the collection, and the golden questions asked of ``ctx.retriever`` for the sources
    gone from the book."""
    if reason := ctx.collection_absent():
        return NotApplicable(reason, GATES)
    s = study(ctx.store, ctx.collection, docs=bk.resolve_docs(book_docs), sitemap=book_sitemap or None,
              base_url=book_base_url or None, route_base=book_route_base or None, golden_set=golden_set or None,
              near_duplicate_cosine=near_duplicate_cosine, near_duplicate_top_k=near_duplicate_top_k,
              search=ctx.retriever, run_dir=ctx.shared_dir)
    return BookResult(s, changed_max_share=changed_max_share, thin_min_coverage=thin_min_coverage,
                      max_missing_pages=max_missing_pages, max_gone_sources=max_gone_sources,
                      max_near_duplicate_share=max_near_duplicate_share, near_duplicate_cosine=near_duplicate_cosine)


def _by_route_alone(book: Any, lists: dict[str, list[dict[str, Any]]]) -> str:
    """What the missing and gone gates' details add where a sitemap's routes left both a page without a chunk and a
    source without a page: they may be one page under two names (its route set by a ``slug``, the collection naming
    it by its file); "" otherwise."""
    if book is None or book.has_text or not lists.get("gone") or not any(
            r["stock"] is None for r in lists.get("missing", [])):
        return ""
    return ("; a sitemap matches pages by route alone: a page whose route its front matter sets (`slug`) and that the "
            "collection names by its file shows as never ingested, and its source as gone (a URL the site does not "
            "serve); give book_docs to match them by file")


@dataclass
class BookResult:
    """Notebook 16's result: the study and the bars."""

    study: BookStudy
    changed_max_share: float
    thin_min_coverage: float
    max_missing_pages: int
    max_gone_sources: int
    max_near_duplicate_share: float
    near_duplicate_cosine: float

    def __str__(self) -> str:
        return self.study.describe()

    @property
    def lists(self) -> dict[str, list[dict[str, Any]]]:
        """The five lists as rows (what ``book --json`` prints)."""
        return book_lists(self.study, self.changed_max_share, self.thin_min_coverage)

    def tables(self) -> dict[str, Any]:
        """The five lists as tables (None kept as None), and ``mapping``: every source, the page it maps to and
        how."""
        import pandas as pd

        bmap = self.study.bmap
        rows = {**self.lists, "mapping": [{"source": m.source, "chunks": m.chunks, "page": m.page, "how": m.how,
                                           "hint": m.hint} for m in (bmap.sources if bmap else [])]}
        return {name: pd.DataFrame(table, columns=list(COLUMNS[name]), dtype=object) for name, table in rows.items()}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """The five gates (not applicable where the finding cannot judge), metrics, findings and tables."""
        s, rows = self.study, self.lists
        if s.book is not None:
            report.metric("book_pages", len(s.book.pages), "pages")
            for line in s.book.problems:
                report.finding(f"unreadable page: {line}")
        report.metric("chunks", len(s.chunks), "chunks")
        if s.bmap is not None:
            report.finding(f"{len(s.bmap.sources)} sources mapped onto the book: {s.bmap.how_matched()}.")
            unserved = [m for m in s.bmap.sources if m.how == bk.URL_FROM_FILE]
            if unserved:  # each one's hint says where the site serves its page
                report.finding(f"{len(unserved)} source URLs name their page by its file, at a route the site does "
                               "not serve (a chatbot citing them links to nothing): " + _named(
                                   f"{m.url or m.source} ({m.hint})" for m in unserved))
        caveat = _by_route_alone(s.book, rows)
        for name in LISTS:
            if name in s.problems:
                _GATE[name].not_applicable(report, s.problems[name])
            elif name in ("missing", "gone"):
                getattr(self, f"_{name}")(report, rows[name], caveat)
            else:
                getattr(self, f"_{name}")(report, rows[name])
        for name, frame in self.tables().items():
            report.table(frame, f"book_{name}")

    def _missing(self, report: NotebookReport, rows: list[dict[str, Any]], caveat: str) -> None:
        own = [r for r in rows if r["stock"] is None]
        book = self.study.book
        pages = len(book.pages) if book else 0
        report.metric("pages_missing", len(own), "pages")
        top = f"; the largest: {own[0]['page']} ({own[0]['words']} words)" if own and own[0]["words"] else ""
        apart = (f"{len(rows) - len(own)} stock pages or stubs listed apart" if book is None or book.has_text else
                 "a sitemap gives no text, so stock pages and stubs cannot be told apart (give book_docs for that)")
        BOOK_MISSING.record(report, len(own) <= self.max_missing_pages, value=len(own),
                            threshold=self.max_missing_pages, rule="<=", unit="pages",
                            detail=f"{len(own)} of {pages} pages have no chunk{top}; {apart}{caveat}",
                            hint="the ingest skipped them: check its glob (.mdx?), the folders it walks and its "
                                 "parse errors")
        if own:
            report.finding("Pages never ingested, most words first: " + _named(
                f"{r['page']} ({'text unknown' if r['words'] is None else str(r['words']) + ' words'})"
                for r in own))

    def _gone(self, report: NotebookReport, rows: list[dict[str, Any]], caveat: str) -> None:
        chunks_gone = sum(r["chunks"] for r in rows)
        report.metric("sources_gone", len(rows), "sources")
        r = self.study.retrieved
        retrieved = [row for row in rows if row["retrieved_by"]]
        golden = self.study.golden
        if r is None:
            unasked = self.study.problems.get("golden_set", "no golden set to ask")
            asked = (f"; {unasked}" if golden is None else "") if rows else ""
        else:
            origins = sorted(set(r.asked.values()))
            source = f" from {golden.path.name}" if golden is not None and golden.path else ""
            asked = (f"; {len(retrieved)} of them still in the top {r.top_k} of a golden or extra question "
                     f"({len(r.asked)} asked{source}, {' and '.join(origins)})" + (f", {len(r.failed)} unanswered"
                                                                                    if r.failed else ""))
        BOOK_GONE.record(report, len(rows) <= self.max_gone_sources, value=len(rows),
                         threshold=self.max_gone_sources, rule="<=", unit="sources",
                         detail=f"{len(rows)} sources ({chunks_gone} chunks) name no page of the book{asked}"
                                f"{caveat}",
                         hint="re-ingest, deleting the old pages' chunks: the pages were renamed or deleted, their "
                              "chunks still answer",
                         # the questions asked carry their origins (drafted, reviewed) into the gate's data column
                         provenance=golden.provenance if r is not None and golden is not None else None)
        if rows:
            report.finding("Sources gone from the book: " + _named(
                f"{row['source']} ({row['chunks']} chunks" + (f"; retrieved by {len(row['retrieved_by'])} "
                                                               f"question{'s' if len(row['retrieved_by']) > 1 else ''}"
                                                               f", e.g. {row['retrieved_by'][0]!r}"
                                                               if row["retrieved_by"] else "")
                + (f"; {row['hint']}" if row["hint"] else "") + ")"
                for row in rows))

    def _changed(self, report: NotebookReport, rows: list[dict[str, Any]]) -> None:
        changed = [r for r in rows if r["changed"]]
        report.metric("pages_changed", len(changed), "pages")
        BOOK_CHANGED.record(report, not changed, value=len(changed), threshold=0, rule="<=", unit="pages",
                            detail=f"{len(changed)} of {len(self.study.comparisons)} ingested pages have more than "
                                   f"{self.changed_max_share:.0%} of their chunks, or more than "
                                   f"{bk.CHANGED_MAX_UNFOUND:.0%} of their chunks' text, no longer in the page",
                            hint="re-ingest the changed pages: their chunks answer with the old text")
        if changed:
            report.finding("Pages changed since the ingest: " + _named(
                f"{r['page']} ({r['stale']} of {r['judged']} chunks no longer in it; {r['unfound_share']:.0%} of "
                f"their text not found)" for r in changed))

    def _thin(self, report: NotebookReport, rows: list[dict[str, Any]]) -> None:
        thin = [r for r in rows if r["thin"]]
        report.metric("pages_thin", len(thin), "pages")
        BOOK_THIN.record(report, not thin, value=len(thin), threshold=0, rule="<=", unit="pages",
                         detail=f"{len(thin)} of {len(self.study.comparisons)} ingested pages have less than "
                                f"{self.thin_min_coverage:.0%} of their text in their chunks",
                         hint="the ingest cut these pages short: check its size limits and its parser on them")
        if thin:
            report.finding("Pages ingested thin: " + _named(
                f"{r['page']} (coverage {r['coverage']:.0%}, {r['chunks_per_1000_words']} chunks per 1,000 words)"
                for r in thin))

    def _near_duplicates(self, report: NotebookReport, rows: list[dict[str, Any]]) -> None:
        near = self.study.near
        if near is None:  # the finding could not judge: recorded not applicable above
            return
        report.metric("near_duplicate_pairs", len(near.pairs), "pairs")
        report.metric("near_duplicate_share", round(near.share, 4), "share")
        BOOK_NEAR_DUPLICATES.record(
            report, near.share <= self.max_near_duplicate_share, value=round(near.share, 4),
            threshold=self.max_near_duplicate_share, rule="<=", unit="share",
            detail=f"{len(near.pairs)} pairs at cosine >= {self.near_duplicate_cosine} from different pages or far "
                   f"apart in one; they take {near.duplicate_places} of {near.places} top-k places ({near.method})",
            hint="the same text under two pages or URLs: drop one copy, or de-duplicate at ingest")


def _named(items: Any) -> str:
    """The first :data:`_NAMED` of ``items``, and how many more."""
    items = list(items)
    more = f"; and {len(items) - _NAMED} more (table)" if len(items) > _NAMED else ""
    return "; ".join(items[:_NAMED]) + more + "."
