"""Does the collection hold the book as it is now (issue 33, notebook 16)?

The book (a docs folder or a sitemap) is the source of truth; :mod:`retrieval_lib.book` reads it, maps the
collection's sources onto its pages and compares texts. This module adds the near-duplicate chunks and turns it all
into five findings, each a table with a gate:

- ``book.missing``: pages never ingested (stock pages and stubs listed apart, not counted);
- ``book.gone``: sources whose page no longer exists (renamed or deleted), with their chunks;
- ``book.changed``: pages whose chunks' text is no longer in the page, share above ``changed_max_share``;
- ``book.thin``: pages whose chunks cover less than ``thin_min_coverage`` of their shingles;
- ``book.near_duplicates``: pairs of chunks with cosine >= ``near_duplicate_cosine`` from different pages, or from
  one page at least two chunks apart, and the share of top-k places they take.

**Near duplicates** come from notebook 10's neighbour lists (:func:`retrieval_lib.checks.reachability.neighbour_lists`,
each chunk's ``k`` nearest other chunks through the store's batched queries): given a
:class:`~retrieval_lib.checks.reachability.ReachStudy` they are read from it, with no extra query; else they are
computed the same way (every chunk up to ``max_full`` points, a seeded sample above). For each listed place
(chunk ``a``, neighbour ``b``): cosine ``a·b / |a||b|`` of the stored vectors; the share of top-k places taken by
near duplicates = near-duplicate places / all places.

A finding that cannot judge is not applicable with the reason (no book given, the book unreadable, a base URL that
matches no source, a sitemap's pages without text); the others still stand. Nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval_lib import book as bk
from retrieval_lib.errors import ConfigurationError, DocumentError, ValidationError

if TYPE_CHECKING:
    from retrieval_lib.checks.reachability import ReachStudy
    from retrieval_lib.workbook.report import NotebookReport

__all__ = ["BookStudy", "NearDuplicates", "read_book", "study", "near_duplicates", "record", "as_json", "LISTS"]

#: The five lists, in the order the report shows them.
LISTS = ("missing", "gone", "changed", "thin", "near_duplicates")
#: Chunks of one page this far apart in sequence or more are "far apart" (neighbours overlap by design).
FAR_APART = 2


@dataclass
class NearDuplicates:
    """Near-duplicate pairs found in the neighbour lists."""

    pairs: list[dict[str, Any]]
    places: int
    duplicate_places: int
    query_chunks: int
    points: int
    method: str

    @property
    def share(self) -> float:
        return self.duplicate_places / self.places if self.places else 0.0


@dataclass
class BookStudy:
    """Everything notebook 16 judges, and why a finding cannot judge (``problems[list name]``)."""

    book: bk.Book | None
    chunks: bk.BookChunks
    bmap: bk.BookMap | None
    comparisons: list[bk.PageComparison]
    near: NearDuplicates | None
    problems: dict[str, str] = field(default_factory=dict)
    golden: Callable[[bk.SourceMatch], bool] | None = None

    def describe(self) -> str:
        """What was read and how it mapped, and why a finding cannot judge, as a person reads it."""
        out = []
        if self.book is not None:
            out.append(f"{self.book.kind} book: {len(self.book.pages)} pages, route base {self.book.route_base}")
        if self.bmap is not None:
            counts = _how_matched(self.bmap)
            out.append(f"{len(self.chunks)} chunks from {len(self.bmap.sources)} sources: {counts}")
        out += [f"{name}: not applicable: {reason}" for name, reason in self.problems.items()]
        return "\n".join(out)


def read_book(docs: str | None, sitemap: str | None, *, route_base: str | None = None) -> bk.Book:
    """The book from ``docs`` (a folder) or ``sitemap`` (a file or URL); exactly one of them.

    Raises:
        ConfigurationError: neither or both given, or the book cannot be read (one line: what and what to do).
    """
    if bool(docs) == bool(sitemap):
        raise ConfigurationError("name the book once: book_docs (a docs folder) or book_sitemap (a sitemap.xml "
                                 "file or URL)" + (", not both" if docs else ""), option="book")
    if docs:
        return bk.read_docs(docs, route_base=route_base or None)
    return bk.read_sitemap(str(sitemap))


def _golden_expects(golden_set: str | None) -> Callable[[bk.SourceMatch], bool] | None:
    from retrieval_lib.checks.golden import load_golden_set, url_matches

    gs = load_golden_set(golden_set)
    patterns = [p for q in (*gs.queries, *gs.extra_queries) for p in q.expected_url_patterns]
    if not patterns:
        return None

    def expects(source: bk.SourceMatch) -> bool:
        return any(url_matches(v, p) for v in (source.url, source.file) if v for p in patterns)

    return expects


def near_duplicates(view: Any, collection: str, chunks: bk.BookChunks, bmap: bk.BookMap | None, *,
                    cosine: float, top_k: int, max_full: int, sample_size: int, seed: int,
                    reach: ReachStudy | None = None) -> NearDuplicates:
    """Near-duplicate pairs in the neighbour lists (module docstring); ``reach`` reuses notebook 10's lists."""
    from retrieval_lib.checks.reachability import neighbour_lists, read_chunks

    if reach is not None:
        table, rows, lists = reach.table, reach.query_rows, reach.lists
        method = f"notebook 10's neighbour lists (top {reach.top_k}, {len(rows)} of {len(table)} chunks)"
    else:
        table = read_chunks(view, collection)
        n = len(table)
        if n <= top_k:
            raise ValidationError(f"collection {collection!r} holds {n} points: near duplicates need more than "
                                  f"near_duplicate_top_k = {top_k}", field="near_duplicate_top_k")
        rows = np.arange(n) if n <= max_full else np.sort(
            np.random.default_rng(seed).choice(n, size=min(sample_size, n), replace=False))
        lists = neighbour_lists(view, collection, table, rows, width=top_k)
        method = (f"the neighbour lists of notebook 10, computed here: top {top_k} of "
                  + (f"every chunk ({n})" if n <= max_full else f"a seeded sample of {len(rows)} of {n} chunks"))
    index = {cid: i for i, cid in enumerate(chunks.ids)}
    vectors = np.asarray(table.vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    pairs: dict[tuple[int, int], dict[str, Any]] = {}
    places = duplicate_places = 0
    for row, neighbours in zip(rows, lists):
        for other in neighbours:
            if other < 0:
                continue
            places += 1
            cos = float(vectors[row] @ vectors[other] / (norms[row] * norms[other]))
            if cos < cosine:
                continue
            a, b = index.get(table.ids[row]), index.get(table.ids[other])
            if a is None or b is None:
                continue
            page_a = (bmap.chunk_page[a] if bmap else None) or chunks.source(a) or table.ids[row]
            page_b = (bmap.chunk_page[b] if bmap else None) or chunks.source(b) or table.ids[other]
            seq_a, seq_b = chunks.sequence[a], chunks.sequence[b]
            if page_a == page_b and (seq_a is None or seq_b is None or abs(seq_a - seq_b) < FAR_APART):
                continue
            duplicate_places += 1
            key = (min(a, b), max(a, b))
            if key not in pairs:
                pairs[key] = {"page": page_a, "chunk": chunks.ids[a], "sequence": seq_a, "other_page": page_b,
                              "other_chunk": chunks.ids[b], "other_sequence": seq_b, "cosine": round(cos, 4),
                              "same_page": page_a == page_b}
    ordered = sorted(pairs.values(), key=lambda r: (-r["cosine"], r["page"], r["other_page"]))
    return NearDuplicates(ordered, places, duplicate_places, len(rows), len(table), method)


def study(view: Any, collection: str, *, docs: str | None = None, sitemap: str | None = None,
          base_url: str | None = None, route_base: str | None = None, golden_set: str | None = None,
          near_duplicate_cosine: float = 0.98, near_duplicate_top_k: int = 10, max_full: int = 5_000,
          sample_size: int = 1_000, seed: int = 0, reach: ReachStudy | None = None,
          book: bk.Book | None = None) -> BookStudy:
    """Read the book and the collection (one scroll of :data:`retrieval_lib.book.FIELDS`), map, compare, and
    find near duplicates. A book that cannot be read makes the four book findings not applicable, with the reason.

    Raises:
        ValidationError: a threshold out of range.
    """
    if not 0 < near_duplicate_cosine <= 1:
        raise ValidationError(f"near_duplicate_cosine must be in (0, 1], got {near_duplicate_cosine}",
                              field="near_duplicate_cosine")
    problems: dict[str, str] = {}
    if book is None:
        try:
            book = read_book(docs, sitemap, route_base=route_base)
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
                               reach=reach)
    except ValidationError as exc:
        problems["near_duplicates"] = str(exc)
    return BookStudy(book, chunks, bmap, comparisons, near, problems, _golden_expects(golden_set))


def _lists(s: BookStudy, changed_max_share: float, thin_min_coverage: float) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in LISTS}
    if s.book is not None and s.bmap is not None and "missing" not in s.problems:
        out["missing"] = bk.missing_pages(s.book, s.bmap)
        out["gone"] = bk.gone_sources(s.bmap, s.golden)
    if "changed" not in s.problems:
        out["changed"] = bk.changed_pages(s.comparisons, changed_max_share)
        out["thin"] = bk.thin_pages(s.comparisons, thin_min_coverage, changed_max_share)
    if s.near is not None:
        out["near_duplicates"] = s.near.pairs
    return out


def as_json(s: BookStudy, *, changed_max_share: float, thin_min_coverage: float) -> dict[str, Any]:
    """The five lists, the mapping's counts and the reasons a finding could not judge (``book --json``)."""
    lists = _lists(s, changed_max_share, thin_min_coverage)
    mapping = None
    if s.bmap is not None:
        mapping = {"counts": s.bmap.counts(), "base_path": s.bmap.base_path, "base_origin": s.bmap.base_origin,
                   "unmatched": len(s.bmap.unmatched), "chunks_without_source": s.bmap.no_source}
    book = None if s.book is None else {"source": s.book.source, "kind": s.book.kind, "pages": len(s.book.pages),
                                        "route_base": s.book.route_base, "problems": s.book.problems}
    return {"book": book, "mapping": mapping, "not_applicable": s.problems, **lists,
            "near_duplicate_share": None if s.near is None else round(s.near.share, 4)}


def record(report: NotebookReport, s: BookStudy, *, changed_max_share: float, thin_min_coverage: float,
           max_missing_pages: int, max_gone_sources: int, max_near_duplicate_share: float,
           near_duplicate_cosine: float = 0.98) -> dict[str, list[dict[str, Any]]]:
    """Notebook 16's five gates (ids ``book.*``), metrics, findings and tables; returns the five lists."""
    import pandas as pd

    lists = _lists(s, changed_max_share, thin_min_coverage)
    if s.book is not None:
        report.metric("book_pages", len(s.book.pages), "pages")
        for line in s.book.problems:
            report.finding(f"unreadable page: {line}")
    report.metric("chunks", len(s.chunks), "chunks")
    if s.bmap is not None:
        counts = _how_matched(s.bmap)
        report.finding(f"{len(s.bmap.sources)} sources mapped onto the book: {counts}; URL base path "
                       f"{s.bmap.base_path or '(none)'} ({s.bmap.base_origin}).")

    def na(name: str, title: str) -> bool:
        if name in s.problems:
            report.not_applicable(title, s.problems[name], gate_id=f"book.{name}")
            return True
        return False

    if not na("missing", "pages never ingested"):
        own = [r for r in lists["missing"] if r["stock"] is None]
        stock = len(lists["missing"]) - len(own)
        report.metric("pages_missing", len(own), "pages")
        top = f"; the largest: {own[0]['page']} ({own[0]['words']} words)" if own else ""
        report.gate("pages never ingested", len(own) <= max_missing_pages, value=len(own),
                    threshold=max_missing_pages, rule="<=", unit="pages", parameter="max_missing_pages",
                    detail=f"{len(own)} of {len(s.book.pages) if s.book else 0} pages have no chunk{top}; "
                           f"{stock} stock pages or stubs listed apart", gate_id="book.missing",
                    hint="the ingest skipped them: check its glob (.mdx?), the folders it walks and its parse errors")
    if not na("gone", "sources gone from the book"):
        gone = lists["gone"]
        chunks_gone = sum(r["chunks"] for r in gone)
        expected = sum(bool(r["golden"]) for r in gone)
        report.metric("sources_gone", len(gone), "sources")
        report.gate("sources gone from the book", len(gone) <= max_gone_sources, value=len(gone),
                    threshold=max_gone_sources, rule="<=", unit="sources", parameter="max_gone_sources",
                    detail=f"{len(gone)} sources ({chunks_gone} chunks) name no page of the book"
                           + (f"; a golden query expects {expected} of them" if expected else ""),
                    gate_id="book.gone", hint="re-ingest: the pages were renamed or deleted, their chunks still answer")
    if not na("changed", "pages changed since the ingest"):
        changed = [r for r in lists["changed"] if r["changed"]]
        report.metric("pages_changed", len(changed), "pages")
        report.gate("pages changed since the ingest", not changed, value=len(changed), threshold=0, rule="<=",
                    unit="pages", parameter="changed_max_share",
                    detail=f"{len(changed)} of {len(s.comparisons)} ingested pages have more than "
                           f"{changed_max_share:.0%} of their chunks no longer in the page", gate_id="book.changed",
                    hint="re-ingest the changed pages: their chunks answer with the old text")
    if not na("thin", "thin ingest"):
        thin = [r for r in lists["thin"] if r["thin"]]
        report.metric("pages_thin", len(thin), "pages")
        report.gate("thin ingest", not thin, value=len(thin), threshold=0, rule="<=", unit="pages",
                    parameter="thin_min_coverage",
                    detail=f"{len(thin)} of {len(s.comparisons)} ingested pages have less than "
                           f"{thin_min_coverage:.0%} of their text in their chunks", gate_id="book.thin",
                    hint="the ingest cut these pages short: check its size limits and its parser on them")
    if not na("near_duplicates", "near-duplicate chunks") and s.near is not None:
        near = s.near
        report.metric("near_duplicate_pairs", len(near.pairs), "pairs")
        report.metric("near_duplicate_share", round(near.share, 4), "share")
        report.gate("near-duplicate chunks' share of top-k places", near.share <= max_near_duplicate_share,
                    value=round(near.share, 4), threshold=max_near_duplicate_share, rule="<=", unit="share",
                    parameter="max_near_duplicate_share",
                    detail=f"{len(near.pairs)} pairs at cosine >= {near_duplicate_cosine} from different pages or "
                           f"far apart in one; they take {near.duplicate_places} of {near.places} top-k places "
                           f"({near.method})", gate_id="book.near_duplicates",
                    hint="the same text under two pages or URLs: drop one copy, or de-duplicate at ingest")
    for name in LISTS:
        report.table(pd.DataFrame(lists[name]), f"book_{name}")
    return lists


def _how_matched(bmap: Any) -> str:
    """How the collection's sources were matched to the book's pages, with counts: "24 by URL route, 6 match no
    page"."""
    return ", ".join(f"{n} match no page" if how == "no page" else f"{n} by {how}"
                     for how, n in sorted(bmap.counts().items()))
