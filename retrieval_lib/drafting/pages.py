"""The book as drafting reads it: one scroll of the roles it needs, grouped into pages of ordered chunks.

Everything comes from the collection through payload roles (:class:`~retrieval_lib.collection.CollectionView`):
no file is read from disk, and nothing is written. One pass reads ``content``, ``source_file``, ``source_url``,
``title``, ``section_title``, ``chunk_sequence`` and ``chunk_id`` (those the collection holds) in large pages
(:func:`~retrieval_lib.stores.scan.read_columns`), so drafting over 100k points costs about one scroll.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any
from urllib.parse import urlsplit

from retrieval_lib.collection import held_fields
from retrieval_lib.collection.boilerplate import HEADING, WORD
from retrieval_lib.drafting.language import normalise_heading
from retrieval_lib.stores.scan import read_columns

__all__ = ["Chunk", "Page", "read_pages"]

#: The roles drafting reads (those a collection holds), in one scroll.
READ_ROLES = ("content", "source_file", "source_url", "title", "section_title", "chunk_sequence", "chunk_id")
_FENCE = re.compile(r"^\s*(```|~~~)", re.M)


@dataclass(slots=True)
class Chunk:
    """One point: its id, text, order within its page and the section heading its payload names."""

    chunk_id: str
    content: str
    sequence: int | None
    section_title: str | None
    _spans: list[tuple[int, str, int]] | None = field(default=None, repr=False)

    def spans(self) -> list[tuple[int, str, int]]:
        """:func:`heading_spans` of the text, computed once (drafting asks for them several times)."""
        if self._spans is None:
            self._spans = heading_spans(self.content)
        return self._spans

    @property
    def digest(self) -> int:
        """A hash of the text: equal for the same text re-ingested (it is compared within one process only, so
        Python's own string hash serves, at a fraction of a digest's cost)."""
        return hash(self.content)


@dataclass
class Page:
    """A source file (or URL) and its chunks in reading order.

    Attributes:
        key: what a result names the page by (its ``source_file``, else its URL's path).
        expected: the pattern a golden entry expects: the page's URL path when the collection has URLs (what
            notebook 05's page-level metrics count), else its source file.
        title: the page title (the ``title`` role, else the first ``#`` heading of its first chunk).
    """

    key: str
    expected: str
    title: str | None
    chunks: list[Chunk] = field(default_factory=list)

    def text(self, limit: int = 20_000) -> str:
        """The page's text in reading order, cut at ``limit`` characters (for page-level boilerplate rules)."""
        out, size = [], 0
        for c in self.chunks:
            out.append(c.content)
            size += len(c.content)
            if size >= limit:
                break
        return "\n".join(out)[:limit]


def heading_spans(text: str) -> list[tuple[int, str, int]]:
    """Markdown headings in ``text`` outside code fences: (level, heading, words of body after it up to the
    next heading)."""
    if "#" not in text:  # most chunks of a large book: no regex pass at all
        return []
    fenced = [m.start() for m in _FENCE.finditer(text)]

    def in_fence(pos: int) -> bool:
        return sum(f < pos for f in fenced) % 2 == 1

    found = [m for m in HEADING.finditer(text) if not in_fence(m.start())]
    out = []
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(text)
        out.append((len(m.group(1)), m.group(2), len(WORD.findall(text[m.end():end]))))
    return out


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def read_pages(store: Any, collection: str) -> tuple[list[Page], list[str]]:
    """Every page of ``collection`` with its chunks, and the roles read.

    Pages come in the order of their keys; chunks in ``chunk_sequence`` order (the scroll's order where a
    collection has none). A point with neither a source file nor a URL belongs to no page and is skipped.
    """
    held = set(held_fields(store, collection))
    roles = [r for r in READ_ROLES if r in held or r == "content"]
    mapping = store.roles_for(collection) if hasattr(store, "roles_for") else None
    # a source file derived from the URL is derived here, once per distinct URL, not once per point
    derived = mapping is not None and not mapping.keys_of("source_file") and "source_url" in held
    # drafting keeps every chunk's text, so the pass reads in one page where the engine allows (page_size)
    cols = read_columns(store, collection, [r for r in roles if not (derived and r == "source_file")], whole=True)
    nothing = [None] * len(cols)
    get = {r: (cols[r] if r in cols.values else nothing) for r in READ_ROLES}
    urls = get["source_url"]
    path_of: dict[str, str | None] = {url: urlsplit(url).path.strip("/") or None
                                      for url in set(urls) if _text(url) is not None}
    keys = [_text(f) or (path_of.get(u) if u is not None else None) for f, u in zip(get["source_file"], urls)]
    pages: dict[str, Page] = {}
    chunk_ids, contents, sequences, sections = get["chunk_id"], get["content"], get["chunk_sequence"], \
        get["section_title"]
    for i, key in enumerate(keys):
        if key is None:
            continue
        page = pages.get(key)
        if page is None:
            url = _text(urls[i])
            expected = urlsplit(url).path.rstrip("/") or url if url and "source_url" in held else key
            page = pages[key] = Page(key=key, expected=str(expected), title=_text(get["title"][i]))
        elif page.title is None:
            page.title = _text(get["title"][i])
        seq, section = sequences[i], sections[i]
        page.chunks.append(Chunk(str(chunk_ids[i] or cols.ids[i]), contents[i] or "",
                                 seq if seq.__class__ is int else None,
                                 section if section and not section.isspace() else None))
    if suffix := _site_suffix(pages.values()):
        for page in pages.values():
            if page.title and page.title.endswith(suffix):
                page.title = page.title[:-len(suffix)].rstrip() or page.title
    for page in pages.values():
        ordered = all(c.sequence is not None for c in page.chunks)
        page.chunks.sort(key=_SEQUENCE if ordered else _reading_order)
        if page.title is None or _SLUG.fullmatch(page.title):  # the first level-1 heading of the first chunk
            first = next(((lv, h) for lv, h, _ in page.chunks[0].spans() if lv == 1), None)
            page.title = normalise_heading(first[1]) if first else page.title
    return [pages[k] for k in sorted(pages)], roles


_SEQUENCE = attrgetter("sequence")
#: A title that is a file's or a route's name ("03-urdf", team #3's `page`), not words a reader asks in: the page's
#: own first heading is its title where it has one.
_SLUG = re.compile(r"[\w.]+(?:-[\w.]+)+")
#: A separator and a site's name at the end of a title, as HTML titles carry it ("Page | Site", "Page - Site").
_SITE_SUFFIX = re.compile(r"\s[|·–—-]\s[^|·–—]+$")


def _site_suffix(pages: Iterable[Page]) -> str | None:
    """The suffix (separator and site name) that ends at least 80% of the titled pages' titles, three or more: the
    site's name a team's scraper kept from each page's HTML title ("The NVIDIA Isaac Platform | Physical AI &
    Humanoid Robotics", team #12). A question drafted from a title does not carry it; None when titles share none."""
    titles = [p.title for p in pages if p.title]
    ends = Counter(m.group(0) for t in titles if (m := _SITE_SUFFIX.search(t)))
    if not ends:
        return None
    suffix, n = ends.most_common(1)[0]
    return suffix if n >= 3 and n >= 0.8 * len(titles) else None


def _reading_order(chunk: Chunk) -> tuple[bool, int]:
    return chunk.sequence is None, chunk.sequence or 0


def sample_texts(pages: Sequence[Page], limit: int = 400) -> list[str]:
    """Up to ``limit`` chunk texts spread over the pages (for the language guess)."""
    out: list[str] = []
    for page in pages:
        out.extend(c.content for c in page.chunks[:3])
        if len(out) >= limit:
            break
    return out[:limit]
