"""What the book says about the collection: pages never ingested, sources gone, pages changed, thin ingest.

Each finding is a list of rows (plain dicts, one per page or source, named by ``page``: its path under the docs
folder, or ``source``: how the collection names it), computed from a :class:`~retrieval_lib.book.pages.Book`, a
:class:`~retrieval_lib.book.mapping.BookMap` and the chunks' texts. Definitions (shingles: :mod:`.text`):

- **missing**: a page with no chunk; ranked by words, so a missing chapter ranks above a missing stub; stock pages
  and placeholder stubs are rows with ``stock`` set and do not count against the gate;
- **gone**: a source that maps to no page (renamed or deleted since the ingest), with its chunks (which questions
  still retrieve them is the check's to ask: :mod:`retrieval_lib.checks.collection.book`);
- **changed**: per ingested page, two figures over its *judged* chunks (those with at least one full shingle):
  ``stale / judged``, where a chunk is *stale* when fewer than :data:`FOUND_SHARE` of its shingles are in the page,
  and the *unfound share*, the share of the judged chunks' words (summed over the page's chunks) that no shingle
  found in the page covers (word ``i`` of a chunk is in its shingles ``i - 3 .. i``, those the chunk has).
  A page is changed when ``stale / judged`` is above the threshold given, or its unfound share is above
  :data:`CHANGED_MAX_UNFOUND` (:meth:`PageComparison.changed`). The first names a page most of whose chunks were
  rewritten; the second does not depend on the chunk size: a fifth of a page rewritten leaves big chunks (700
  words) each mostly found, so none is stale, but a fifth of their words unfound. Words, not shingles: where a
  chunker dropped a block between two it kept (a crawl without the code blocks), the shingles across the seam are
  in no page, but each word beside it is also in a shingle wholly on one side, found; a rewritten paragraph leaves
  every one of its words unfound. A chunk's text is read without the front matter it starts with, as the page's
  is (:func:`~retrieval_lib.book.text.drop_front_matter`: a chunker that cut the raw file), so a chunk of front
  matter alone is not judged, and an edited front matter is no change;
- **thin**: per ingested page, ``chunks per 1,000 words`` and the share of the page's shingles its chunks cover;
  ``z`` is the modified z-score of the chunks per 1,000 words across pages,
  ``0.6745 (x - median) / MAD`` (0 when MAD is 0); a page is thin when its coverage is below the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, cast

import numpy as np

from retrieval_lib.book.mapping import BookChunks, BookMap
from retrieval_lib.book.pages import Book, Page
from retrieval_lib.book.text import (
    SHINGLE,
    clean_all,
    distinct,
    found_in,
    head_shingles,
    keyed,
    position_shingles,
    shingles_of,
    sort_order,
    words,
)

__all__ = ["FOUND_SHARE", "CHANGED_MAX_UNFOUND", "PageComparison", "compare_pages", "missing_pages", "gone_sources",
           "changed_pages", "thin_pages"]

#: A chunk whose shingles are found in its page at least this much is the page's text as it is now.
FOUND_SHARE = 0.5
#: A page whose judged chunks' words are not found in it more than this much has changed, however big its chunks.
#: Measured on twelve collections of the sample book cut by teams' chunkers (269 to 769 words, 1,000 characters of
#: the raw file, headings; overlap, Markdown stripped or not, crawled): untouched pages up to 0.039 (a crawler that
#: drops code blocks and reads inline code its own way; the shingle share was 0.103 there), 0.029 for every other;
#: pages with every other paragraph rewritten 0.175-0.438. The whole sample book edited that way under four
#: chunkers: every page rewritten by 16% of its words or more at 0.155 or above (docs/book.md, "How texts are
#: compared").
CHANGED_MAX_UNFOUND = 0.10


@dataclass
class PageComparison:
    """One ingested page against its chunks."""

    page: str
    words: int
    chunks: int
    judged: int
    stale: int
    coverage: float
    #: the judged chunks' words (summed over the chunks) and those no shingle found in the page covers
    chunk_words: int
    unfound_words: int

    @property
    def changed_share(self) -> float:
        return self.stale / self.judged if self.judged else 0.0

    @property
    def unfound_share(self) -> float:
        return self.unfound_words / self.chunk_words if self.chunk_words else 0.0

    def changed(self, max_share: float) -> bool:
        """The page changed since the ingest: more than ``max_share`` of its judged chunks stale, or more than
        :data:`CHANGED_MAX_UNFOUND` of their words not found in it (the one rule: ``changed`` and ``thin``)."""
        return self.changed_share > max_share or self.unfound_share > CHANGED_MAX_UNFOUND

    @property
    def per_1000_words(self) -> float:
        return 1000.0 * self.chunks / self.words if self.words else 0.0


#: Words (pages' and chunks') compared in one batch of pages: arrays of about a megabyte, which stay in the CPU's
#: cache (one batch of the whole book streams every array through memory; a batch a page pays numpy's call cost
#: some forty times a page).
BATCH_WORDS = 1 << 17
#: Bytes of a chunk's cleaned text its first shingle is read from (:func:`_found_whole`): room for some ten words.
HEAD_BYTES = 64
_SPACE = 32


def compare_pages(book: Book, bmap: BookMap, chunks: BookChunks) -> list[PageComparison]:
    """Each ingested page with readable text against its chunks' texts (pages without text are left out).

    A chunk that is its page's cleaned text from a word on, bytes for bytes (its first shingle looked up among the
    page's, then its bytes compared: :func:`_found_whole`), has every shingle in the page, at those positions, so
    every word found: it is judged found without its words being hashed or shingled. Only the other chunks are
    shingled and their shingles looked up; the figures are those of the definitions above either way
    (``tests/book/test_book_compare.py`` computes them the slow way). Pages are compared a batch at a time
    (:data:`BATCH_WORDS`), each shingle keyed by its page (:func:`~retrieval_lib.book.text.keyed`).
    """
    pages = {p.path: p for p in book.pages}
    content = chunks.content
    # a chunk's words, about (for the batch's size only): the collection's characters a chunk, over six
    words_a_chunk = sum(map(len, filter(None, content))) / max(1, len(content)) / 6
    out: list[PageComparison] = []
    batch = _Batch()
    size = 0
    for path, indexes in bmap.page_chunks.items():
        page = pages[path]
        if not page.has_text:
            continue
        batch.pages.append(page)
        batch.chunks.append(len(indexes))
        batch.contents.extend(map(content.__getitem__, indexes))
        size += page.words + int(len(indexes) * words_a_chunk)
        if size >= BATCH_WORDS:
            out += _compare(batch)
            batch, size = _Batch(), 0
    if batch.pages:
        out += _compare(batch)
    return out


@dataclass
class _Batch:
    """Pages compared at once: the pages, each one's chunk count, and their chunks' texts, page after page."""

    pages: list[Page] = field(default_factory=list)
    chunks: list[int] = field(default_factory=list)
    contents: list[str | None] = field(default_factory=list)


def _compare(batch: _Batch) -> list[PageComparison]:
    """Several pages against their chunks at once (``g`` indexes a page of the batch)."""
    g = len(batch.pages)
    n = np.array([page.hashes.size for page in batch.pages], dtype=np.int64)
    word0 = np.cumsum(n) - n
    page_words = np.concatenate([page.hashes for page in batch.pages]) if g else np.empty(0, dtype=np.uint64)
    # the pages' shingles, one a word position (a page shorter than a shingle: one of all its words)
    per = np.where(n >= SHINGLE, n - SHINGLE + 1, np.minimum(n, 1))
    sh0 = np.cumsum(per) - per
    owner = np.repeat(np.arange(g), per)
    if (n >= SHINGLE).all():  # the common case: no page shorter than a shingle
        # a shingle at every word but a page's last SHINGLE - 1 (those would run into the next page)
        across = ((word0 + n)[:, None] - np.arange(1, SHINGLE)).ravel()
        at = np.delete(position_shingles(page_words), across[across < page_words.size - SHINGLE + 1])
    else:
        pos = np.repeat(word0 - sh0, per) + np.arange(int(per.sum()))  # each shingle's first word in page_words
        at = np.empty(pos.size, dtype=np.uint64)
        full = n[owner] >= SHINGLE
        if full.any():
            at[full] = position_shingles(page_words)[pos[full]]
        for short in np.flatnonzero((n > 0) & (n < SHINGLE)):
            at[sh0[short]] = position_shingles(batch.pages[short].hashes)[0]
    key = keyed(at, owner)
    order, ordered = sort_order(key)
    # the sorted places that repeat the key before them: a shingle a page holds more than once (few)
    again = np.flatnonzero(ordered[1:] == ordered[:-1]) + 1

    chunk_page = np.repeat(np.arange(g), batch.chunks)
    data, lengths = clean_all(batch.contents, strip_front_matter=True)
    ends = np.cumsum(lengths + 1) - 1
    # each chunk's cleaned text without the spaces around it (the same words)
    pieces = list(map(bytes.strip, map(data.__getitem__, map(slice, (ends - lengths).tolist(), ends.tolist()))))
    exact, begin, span = _found_whole(batch.pages, pieces, chunk_page, n, at, sh0, owner, order, ordered)
    mask = np.zeros(at.size, dtype=bool)
    if begin.size:  # an exact chunk's shingles are the page's from ``begin`` on, one a word
        spans = np.bincount(begin, minlength=at.size + 1)
        spans -= np.bincount(begin + span - SHINGLE + 1, minlength=at.size + 1)
        mask = np.cumsum(spans[:-1]) > 0
    judged_n = np.bincount(chunk_page[exact], minlength=g)
    # an exact chunk's words: ``span`` of them, every one found
    words_n, unfound_n = np.zeros(g), np.zeros(g)
    words_n += np.bincount(chunk_page[exact], weights=span, minlength=g)
    stale = np.zeros(g, dtype=np.int64)
    rest = np.flatnonzero(~exact)
    rest_words = words([pieces[i] for i in rest.tolist()], cleaned=True)
    judged = np.flatnonzero(rest_words.count >= SHINGLE)  # the others hold no shingle: nothing to judge or cover
    if judged.size:
        length, jpage = rest_words.count[judged], chunk_page[rest[judged]]
        judged_n += np.bincount(jpage, minlength=g)
        page_sh = np.delete(ordered, again)  # the distinct (page, shingle) keys
        h, of = shingles_of(rest_words.hashes, rest_words.first[judged], length)
        h = keyed(h, jpage[of])
        hit = found_in(h, page_sh)
        found = np.bincount(of, weights=hit, minlength=judged.size)
        positions = length - SHINGLE + 1
        stale = np.bincount(jpage[found / positions < FOUND_SHARE], minlength=g)
        words_n += np.bincount(jpage, weights=length, minlength=g)
        unfound_n += np.bincount(jpage, weights=_unfound_words(hit, positions), minlength=g)
        mask |= found_in(key, distinct(h))
    # per page, its distinct (page, shingle) keys, and those covered (a key is covered when any of its positions
    # is): positions, less the repeats; masked positions, less a repeated key's masked positions past its first
    distinct_n = per - np.bincount(owner[order[again]], minlength=g)
    covered_n = np.zeros(g, dtype=np.int64)
    if mask.size:  # masked positions per page: a sum over each page's run of positions (pages without one: 0)
        some = per > 0
        covered_n[some] = np.add.reduceat(mask, sh0[some], dtype=np.int64)
    if again.size:
        group = np.ones(again.size, dtype=bool)  # consecutive repeats are one key's
        np.not_equal(again[1:], again[:-1] + 1, out=group[1:])
        heads = again[group] - 1  # each repeated key's first sorted place
        masked = np.bincount(np.cumsum(group) - 1, weights=mask[order[again]], minlength=heads.size)
        masked += mask[order[heads]]
        covered_n -= np.bincount(owner[order[heads]], weights=np.maximum(masked - 1, 0),
                                 minlength=g).astype(np.int64)
    return [PageComparison(page.path, page.words, chunks, int(judged_n[i]), int(stale[i]),
                           float(covered_n[i] / distinct_n[i]) if distinct_n[i] else 1.0, int(words_n[i]),
                           int(unfound_n[i]))
            for i, (page, chunks) in enumerate(zip(batch.pages, batch.chunks))]


def _unfound_words(hit: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Per chunk, how many of its words no found shingle covers. ``hit`` flags the chunks' shingles, chunk after
    chunk (``positions[c]`` of chunk ``c``: its words less :data:`~retrieval_lib.book.text.SHINGLE` - 1); word ``i``
    of a chunk is covered by its shingles ``max(0, i - 3) .. min(i, positions - 1)``.

    The flags are laid out with :data:`SHINGLE` - 1 unfound places before each chunk's and after the last: a
    chunk's words are then, in order, the windows of :data:`SHINGLE` places from its first padding place on (its
    ``positions + SHINGLE - 1`` words, one a window), each window holding exactly the shingles that cover its word,
    and the next chunk's windows follow on. A word is unfound when its window holds no found shingle: the flags'
    running total is the same at both ends of the window. No loop a chunk.
    """
    pad = SHINGLE - 1
    chunk_words = positions + pad
    first = np.cumsum(chunk_words) - chunk_words  # each chunk's first padding place: its first word's window
    own = np.ones(int(chunk_words.sum()) + pad, dtype=bool)  # the places that hold a chunk's shingle
    own[(first[:, None] + np.arange(pad)).ravel()] = False
    own[-pad:] = False
    flags = np.zeros(own.size, dtype=bool)
    flags[own] = hit
    running = np.zeros(own.size + 1, dtype=np.int64)
    np.cumsum(flags, out=running[1:])
    unfound = running[SHINGLE:] == running[:-SHINGLE]  # one a word, chunk after chunk
    return np.add.reduceat(unfound, first, dtype=np.int64)


def _found_whole(pages: list[Page], pieces: list[bytes], chunk_page: np.ndarray, n: np.ndarray, at: np.ndarray,
                 sh0: np.ndarray, owner: np.ndarray, order: np.ndarray,
                 ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which chunks (``pieces``: cleaned texts, stripped) are their page's cleaned text from a word on, bytes for
    bytes: (a mask over the chunks; for those found, the page shingle each starts at and its words).

    A chunk's first :data:`~retrieval_lib.book.text.SHINGLE` words (hashed from its first :data:`HEAD_BYTES`
    bytes) are looked up among its page's shingles (``ordered`` keys, ``order`` their places in ``at``, each of
    page ``owner``, from its word ``place - sh0[owner]``); where the page holds them, its bytes from that word on are
    compared with the chunk's, which must end where a word of the page ends. Equal bytes are equal words: every
    shingle of the chunk is the page's, at those places. A chunk cut otherwise (its own spacing, its own marks) is
    not found here and is shingled (:func:`_compare`), with the same figures.
    """
    m = len(pieces)
    exact = np.zeros(m, dtype=bool)
    none = np.empty(0, dtype=np.int64)
    texts = [page.text_bytes for page in pages]
    readable = np.array([t is not None and page.word_starts is not None for t, page in zip(texts, pages)],
                        dtype=bool)
    if not m or not readable.any() or not ordered.size:
        return exact, none, none
    heads = words(list(map(itemgetter(slice(0, HEAD_BYTES)), pieces)), cleaned=True)
    size = np.fromiter(map(len, pieces), dtype=np.int64, count=m)
    # its first SHINGLE words are whole in the head: another word follows them, or the head is the whole chunk
    complete = (heads.count > SHINGLE) | ((heads.count == SHINGLE) & (size <= HEAD_BYTES))
    look = np.flatnonzero(complete & readable[chunk_page] & (n >= SHINGLE)[chunk_page])
    if not look.size:
        return exact, none, none
    jpage = chunk_page[look]
    head = head_shingles(heads.hashes, heads.first[look])
    k = np.minimum(np.searchsorted(ordered, keyed(head, jpage)), ordered.size - 1)
    at_k = order[k]  # where the page first holds the chunk's first shingle
    same = (owner[at_k] == jpage) & (at[at_k] == head)
    cand, at_k, jpage = look[same], at_k[same], jpage[same]
    local = at_k - sh0[jpage]  # the word of its page the chunk would start at
    # page by page (the chunks are laid out page after page): where that word starts in the page's text, where the
    # chunk would end, and the page's words that start before that (the chunk's words, if it is found)
    start, span = np.empty(cand.size, dtype=np.int64), np.empty(cand.size, dtype=np.int64)
    bounds = np.searchsorted(jpage, np.arange(len(pages) + 1))
    for p in np.flatnonzero(bounds[1:] > bounds[:-1]).tolist():
        at_p, ws = slice(bounds[p], bounds[p + 1]), pages[p].word_starts
        start[at_p] = ws[local[at_p]]  # type: ignore[index]
        span[at_p] = np.searchsorted(ws, start[at_p] + size[cand[at_p]]) - local[at_p]  # type: ignore[arg-type]
    stop = start + size[cand]
    # the bytes: the page's from that word on are the chunk's (C-level calls, no slice copied) ...
    page_texts = cast(list[bytes], list(map(texts.__getitem__, jpage.tolist())))
    startswith: Any = bytes.startswith
    hit = np.fromiter(map(startswith, page_texts, map(pieces.__getitem__, cand.tolist()), start.tolist()),
                      dtype=np.bool_, count=cand.size)
    # ... and end where a word of the page ends: at the page's end (its text is followed by a space or by nothing),
    # or before a space within it
    end = np.array([pages[p].text_span[1] for p in range(len(pages))], dtype=np.int64)[jpage]
    inside = np.flatnonzero(hit & (stop < end))
    hit = hit & (stop <= end)
    byte_at: Any = bytes.__getitem__
    hit[inside] = np.fromiter(map(byte_at, map(page_texts.__getitem__, inside.tolist()),
                                  stop[inside].tolist()), dtype=np.int64, count=inside.size) == _SPACE
    exact[cand[hit]] = True
    return exact, at_k[hit], span[hit]


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
    """Ingested pages with a stale chunk or changed, changed ones first, then by unfound and stale share;
    ``changed`` by :meth:`PageComparison.changed` (its stale share above ``max_share``, or its unfound share above
    :data:`CHANGED_MAX_UNFOUND`)."""
    rows = [{"page": c.page, "chunks": c.chunks, "judged": c.judged, "stale": c.stale,
             "changed_share": round(c.changed_share, 4), "unfound_share": round(c.unfound_share, 4),
             "changed": c.changed(max_share)}
            for c in comparisons if c.stale or c.changed(max_share)]
    return sorted(rows, key=lambda r: (not r["changed"], -r["unfound_share"], -r["changed_share"], r["page"]))


def thin_pages(comparisons: list[PageComparison], min_coverage: float,
               changed_max_share: float = 1.0) -> list[dict[str, Any]]:
    """Every ingested page's chunks per 1,000 words, its robust z and its coverage, least covered first;
    ``thin`` when coverage is below ``min_coverage`` and the page has not changed (:meth:`PageComparison.changed`:
    a rewritten page's old chunks cover none of its new text: that is the changed finding, not a thin ingest)."""
    rates = np.array([c.per_1000_words for c in comparisons], dtype=float)
    median = float(np.median(rates)) if rates.size else 0.0
    mad = float(np.median(np.abs(rates - median))) if rates.size else 0.0
    rows = []
    for c, rate in zip(comparisons, rates):
        z = 0.6745 * (rate - median) / mad if mad else 0.0
        changed = c.changed(changed_max_share)
        rows.append({"page": c.page, "words": c.words, "chunks": c.chunks,
                     "chunks_per_1000_words": round(float(rate), 2), "z": round(float(z), 2),
                     "coverage": round(c.coverage, 4), "changed": changed,
                     "thin": c.coverage < min_coverage and not changed})
    return sorted(rows, key=lambda r: (r["coverage"], r["page"]))
