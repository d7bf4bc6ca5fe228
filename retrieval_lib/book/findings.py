"""What the book says about the collection: pages never ingested, sources gone, pages changed, thin ingest.

Each finding is a list of rows (plain dicts, one per page or source, named by ``page``: its path under the docs
folder, or ``source``: how the collection names it), computed from a :class:`~retrieval_lib.book.pages.Book`, a
:class:`~retrieval_lib.book.mapping.BookMap` and the chunks' texts. Definitions (shingles: :mod:`.text`):

- **missing**: a page with no chunk; ranked by words, so a missing chapter ranks above a missing stub; stock pages
  and placeholder stubs are rows with ``stock`` set and do not count against the gate;
- **gone**: a source that maps to no page (renamed or deleted since the ingest), with its chunks (which questions
  still retrieve them is the check's to ask: :mod:`retrieval_lib.checks.collection.book`);
- **changed**: per ingested page, ``stale / judged``, where a chunk is *stale* when fewer than
  :data:`FOUND_SHARE` of its shingles are in the page, and *judged* when it has at least one full shingle;
- **thin**: per ingested page, ``chunks per 1,000 words`` and the share of the page's shingles its chunks cover;
  ``z`` is the modified z-score of the chunks per 1,000 words across pages,
  ``0.6745 (x - median) / MAD`` (0 when MAD is 0); a page is thin when its coverage is below the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from retrieval_lib.book.mapping import BookChunks, BookMap
from retrieval_lib.book.pages import Book, Page
from retrieval_lib.book.text import SHINGLE, distinct, found_in, position_shingles, run_hashes, shingles_of, words

__all__ = ["FOUND_SHARE", "PageComparison", "compare_pages", "missing_pages", "gone_sources", "changed_pages",
           "thin_pages"]

#: A chunk whose shingles are found in its page at least this much is the page's text as it is now.
FOUND_SHARE = 0.5


@dataclass
class PageComparison:
    """One ingested page against its chunks."""

    page: str
    words: int
    chunks: int
    judged: int
    stale: int
    coverage: float

    @property
    def changed_share(self) -> float:
        return self.stale / self.judged if self.judged else 0.0

    @property
    def per_1000_words(self) -> float:
        return 1000.0 * self.chunks / self.words if self.words else 0.0


def compare_pages(book: Book, bmap: BookMap, chunks: BookChunks) -> list[PageComparison]:
    """Each ingested page with readable text against its chunks' texts (pages without text are left out).

    A chunk whose words are, in order, a run of its page's words (its first shingle looked up among the page's,
    the run's hash compared) has every shingle in the page, at those positions: it is judged found without being
    shingled. Only the other chunks' shingles are looked up; the figures are those of the definitions above either
    way (``tests/test_book_findings.py``).
    """
    pages = {p.path: p for p in book.pages}
    out = []
    for path, indexes in bmap.page_chunks.items():
        page = pages[path]
        if page.has_text:
            out.append(_compare(page, [chunks.content[i] for i in indexes]))
    return out


def _compare(page: Page, contents: list[str | None]) -> PageComparison:
    at = position_shingles(page.hashes)  # the page's shingle at each word position
    order = np.argsort(at)
    page_sh = distinct(at[order], ordered=True)
    chunk_words = words(contents)
    judged = np.flatnonzero(chunk_words.count >= SHINGLE)  # the others hold no shingle: nothing to judge or cover
    first, length = chunk_words.first[judged], chunk_words.count[judged]
    exact = np.zeros(judged.size, dtype=bool)
    mask = np.zeros(at.size, dtype=bool)
    if judged.size and page.hashes.size >= SHINGLE:
        head = position_shingles(chunk_words.hashes)[first]
        k = np.minimum(np.searchsorted(at[order], head), at.size - 1)
        start = order[k]  # a position where the page holds the chunk's first shingle (if the run is not there, the
        # chunk is shingled below, which gives the same figures for a chunk found whole elsewhere in the page)
        exact = (at[start] == head) & (start + length <= page.hashes.size)
        exact[exact] = (run_hashes(chunk_words.hashes, first[exact], length[exact])
                        == run_hashes(page.hashes, start[exact], length[exact]))
        spans = np.bincount(start[exact], minlength=at.size + 1)
        spans -= np.bincount(start[exact] + length[exact] - SHINGLE + 1, minlength=at.size + 1)
        mask = np.cumsum(spans[:-1]) > 0
    stale = 0
    if not exact.all():
        h, owner = shingles_of(chunk_words.hashes, first[~exact], length[~exact])
        found = np.bincount(owner, weights=found_in(h, page_sh), minlength=int((~exact).sum()))
        stale = int((found / (length[~exact] - SHINGLE + 1) < FOUND_SHARE).sum())
        mask |= found_in(at, distinct(h))
    coverage = distinct(at[mask]).size / page_sh.size if page_sh.size else 1.0
    return PageComparison(page.path, page.words, len(contents), int(judged.size), stale, float(coverage))


def missing_pages(book: Book, bmap: BookMap) -> list[dict[str, Any]]:
    """Pages with no chunk, most words first (stock pages and stubs carry ``stock``; ``words`` is None where the
    page's text is unknown: a sitemap's page, an unreadable file)."""
    rows = [{"page": p.path, "route": p.route, "title": p.title, "words": p.words if p.has_text else None,
             "stock": p.stock, "problem": p.problem} for p in book.pages if p.path not in bmap.page_chunks]
    return sorted(rows, key=lambda r: (r["stock"] is not None, -(r["words"] or 0), r["page"]))


def gone_sources(bmap: BookMap) -> list[dict[str, Any]]:
    """Sources that map to no page, most chunks first (``hint``: a page the source names under another base
    path)."""
    return [{"source": s.source, "chunks": s.chunks, "hint": s.hint} for s in bmap.unmatched]


def changed_pages(comparisons: list[PageComparison], max_share: float) -> list[dict[str, Any]]:
    """Ingested pages with a stale chunk, most changed first; ``changed`` when the share is above ``max_share``."""
    rows = [{"page": c.page, "chunks": c.chunks, "judged": c.judged, "stale": c.stale,
             "changed_share": round(c.changed_share, 4), "changed": c.changed_share > max_share}
            for c in comparisons if c.stale]
    return sorted(rows, key=lambda r: (-r["changed_share"], r["page"]))


def thin_pages(comparisons: list[PageComparison], min_coverage: float,
               changed_max_share: float = 1.0) -> list[dict[str, Any]]:
    """Every ingested page's chunks per 1,000 words, its robust z and its coverage, least covered first;
    ``thin`` when coverage is below ``min_coverage`` and the page has not changed (a rewritten page's old chunks
    cover none of its new text: that is the changed finding, not a thin ingest)."""
    rates = np.array([c.per_1000_words for c in comparisons], dtype=float)
    median = float(np.median(rates)) if rates.size else 0.0
    mad = float(np.median(np.abs(rates - median))) if rates.size else 0.0
    rows = []
    for c, rate in zip(comparisons, rates):
        z = 0.6745 * (rate - median) / mad if mad else 0.0
        changed = c.changed_share > changed_max_share
        rows.append({"page": c.page, "words": c.words, "chunks": c.chunks,
                     "chunks_per_1000_words": round(float(rate), 2), "z": round(float(z), 2),
                     "coverage": round(c.coverage, 4), "changed": changed,
                     "thin": c.coverage < min_coverage and not changed})
    return sorted(rows, key=lambda r: (r["coverage"], r["page"]))
