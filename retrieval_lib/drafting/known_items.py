"""Known-item queries: a book's headings are questions its authors already answered.

For each page, in this order, until ``per_file`` are kept:

1. its **title** (``title``): the page as a whole answers it;
2. its **section headings** in reading order (``heading``), from the ``section_title`` role and the markdown
   headings inside the chunk text;
3. where it has neither, the **lead sentence** of its first full chunk (``lead``).

Each query expects the page whose chunk carries it. A candidate is **dropped, with the reason**, when

- its page is boilerplate: a site generator's stock page (:func:`~retrieval_lib.collection.boilerplate.stock_page`),
  a placeholder ("Coming soon"), or a table of contents;
- its chunk is a **fragment**: fewer than :data:`MIN_BODY_WORDS` words under the heading (or in the chunk, for a
  lead sentence), in the best chunk that carries it;
- its chunk is a **duplicate**: the same text is stored under another page, so the expected page is ambiguous;
- it is a **generic heading** ("Introduction", "Summary", "Übungen" ...) or a heading several pages share, and
  the page has no title to qualify it with (with a title, it becomes "<title>: <heading>");
- it is a **title several pages share** (a pipeline that titles pages by file name calls every ``index.md``
  "Index"): it names none of them, so it is dropped for all of them, not kept for the first;
- it repeats a query already drafted for another page.

Nothing here looks at retrieval scores: a query is never dropped because retrieval fails on it (that would
make the drafted set pass by construction).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval_lib.collection.boilerplate import HEADING, WORD, is_placeholder, is_table_of_contents, stock_page
from retrieval_lib.drafting.language import is_generic_heading, normalise_heading
from retrieval_lib.drafting.pages import Chunk, Page

__all__ = ["KnownItem", "Dropped", "draft_known_items", "draft_id"]

#: A heading with fewer words than this under it in its chunk names a fragment, not an answer.
MIN_BODY_WORDS = 25
_LEAD_MIN, _LEAD_MAX = 6, 24
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-ZÁÉÍÓÚÑÄÖÜ¿¡\"'(])")


def draft_id(kind: str, chunk_id: str, text: str) -> str:
    """The entry's stable id (docs/drafting.md): sha1 of kind, chunk id and drafted text, 12 hex digits."""
    return hashlib.sha1(f"{kind}\x00{chunk_id}\x00{text}".encode()).hexdigest()[:12]


@dataclass(frozen=True)
class KnownItem:
    """A drafted query with the page that answers it."""

    query: str
    page: str  # the page key (source file or URL path)
    expected: str  # the pattern a golden entry expects
    kind: str  # title | heading | lead
    chunk_id: str
    source_text: str  # the heading, title or sentence it was drafted from

    @property
    def draft_id(self) -> str:
        return draft_id(self.kind, self.chunk_id, self.query)


@dataclass(frozen=True)
class Dropped:
    """A candidate left out, and why."""

    text: str
    page: str
    kind: str
    reason: str


def _words(text: str) -> int:
    return len(WORD.findall(text))


def _body_words(chunk: Chunk, heading: str) -> int:
    """Words under ``heading`` in ``chunk``: after its markdown line, or the whole chunk (headings aside) when
    the heading is the chunk's ``section_title`` and the text carries no such line."""
    want = normalise_heading(heading).lower()
    for _, h, body in chunk.spans():
        if normalise_heading(h).lower() == want:
            return body
    return _words(HEADING.sub("", chunk.content))


def _lead(chunk: Chunk) -> str | None:
    body = HEADING.sub("", chunk.content)
    body = re.sub(r"```.*?(```|$)", " ", body, flags=re.S)
    body = re.sub(r"[*_`>#|]+|\[([^\]]*)\]\([^)]*\)", r"\1", body)
    for para in (p.strip() for p in body.split("\n\n")):
        if not para or para.lstrip().startswith(("-", "1.", "*")):
            continue
        sentence = _SENTENCE.split(" ".join(para.split()))[0]
        words = sentence.split()
        if len(words) >= _LEAD_MIN:
            return " ".join(words[:_LEAD_MAX]).rstrip(",;:") if len(words) > _LEAD_MAX else sentence
    return None


def _page_boilerplate(page: Page) -> str | None:
    # the opening of a page is enough: stock pages say their sentences early, a placeholder has little text
    text = page.text(limit=3_000)
    stock = stock_page(page.title, text)
    if stock:
        return f"boilerplate: a {stock} stock page"
    if len(page.chunks) <= 2 and is_table_of_contents(text):
        return "boilerplate: a table of contents"
    if is_placeholder(text, min_words=MIN_BODY_WORDS):
        return "boilerplate: a placeholder page (\"Coming soon\", or almost no text)"
    return None


def _headings(page: Page) -> list[tuple[str, Chunk]]:
    """Every distinct heading of the page in reading order, each with its chunks (best body first later)."""
    seen: dict[str, tuple[str, Chunk]] = {}
    for chunk in page.chunks:
        if not chunk.section_title and "#" not in chunk.content:  # most chunks of a large book
            continue
        names = [chunk.section_title] if chunk.section_title else []
        names += [h for lv, h, _ in chunk.spans() if lv >= 2 or not page.title]
        for raw in names:
            h = normalise_heading(raw or "")
            if h and h.lower() not in seen:
                seen[h.lower()] = (h, chunk)
    return list(seen.values())


def _best_chunk(page: Page, heading: str) -> tuple[Chunk, int]:
    """The chunk that carries ``heading`` with the most words under it (overlapping chunks repeat headings)."""
    want = heading.lower()
    carriers = [c for c in page.chunks
                if (c.section_title and normalise_heading(c.section_title).lower() == want)
                or any(normalise_heading(h).lower() == want for _, h, _ in c.spans())]
    scored = [(c, _body_words(c, heading)) for c in carriers] or [(page.chunks[0], 0)]
    return max(scored, key=lambda cw: cw[1])


def _texts_on_several_pages(pages: Sequence[Page]) -> dict[int, set[str]]:
    """Digest -> the pages, for every chunk text stored under more than one page (a fragment's text, fewer than
    :data:`MIN_BODY_WORDS` spaces, may well repeat: it names no page and is left out)."""
    first: dict[int, str] = {}
    several: dict[int, set[str]] = {}
    for page in pages:
        key = page.key
        for c in page.chunks:
            text = c.content  # the words of a chunk's opening settle it for almost every chunk, at a tenth the cost
            if text.count(" ", 0, 400) >= MIN_BODY_WORDS or text.count(" ") >= MIN_BODY_WORDS:
                owner = first.setdefault(c.digest, key)
                if owner != key:
                    several.setdefault(c.digest, {owner}).add(key)
    return several


def draft_known_items(pages: Sequence[Page], *, per_file: int) -> tuple[list[KnownItem], list[Dropped]]:
    """Known-item queries for every page (module docstring); returns (kept, dropped)."""
    shared_text = _texts_on_several_pages(pages)
    headings_of = {page.key: _headings(page) for page in pages}
    shared = Counter(h.lower() for page in pages for h in {x.lower(): x for x, _ in headings_of[page.key]}.values())
    # a title several pages carry ("Index" for every index.md a pipeline titled by its file name) names none of them
    titles = Counter(page.title.lower() for page in pages if page.title and page.chunks)
    kept: list[KnownItem] = []
    dropped: list[Dropped] = []
    asked: dict[str, str] = {}

    def consider(page: Page, kind: str, text: str, chunk: Chunk, body: int) -> bool:
        def drop(reason: str) -> bool:
            dropped.append(Dropped(text, page.key, kind, reason))
            return False

        query = text
        if kind == "heading":
            many = shared[text.lower()] > 1
            if is_generic_heading(text) or many:
                why = "a generic heading" if is_generic_heading(text) else \
                    f"a heading {shared[text.lower()]} pages share"
                if not page.title:
                    return drop(f"{why}, and the page has no title to qualify it")
                query = f"{page.title}: {text}"
            elif page.title and text.lower() == page.title.lower():
                return False  # the title itself, asked as such
        if kind == "title" and is_generic_heading(text):
            return drop("a generic title (\"Introduction\" ...): it names no page")
        if kind == "title" and titles[text.lower()] > 1:
            return drop(f"a title {titles[text.lower()]} pages share: it names none of them")
        if _words(text) < 1 or len(text) < 3:
            return drop("too short to be a question")
        if body < MIN_BODY_WORDS:
            return drop(f"fragment: {body} words under it in its chunk (fewer than {MIN_BODY_WORDS})")
        if is_table_of_contents(chunk.content):
            return drop("boilerplate: its chunk is a table of contents")
        if is_placeholder(chunk.content, min_words=0):
            return drop("boilerplate: its chunk is a placeholder (\"Coming soon\")")
        others = shared_text.get(chunk.digest, set()) - {page.key}
        if others:
            return drop(f"duplicate: the same text is stored under {sorted(others)[0]}"
                        + (f" and {len(others) - 1} more" if len(others) > 1 else ""))
        if query.lower() in asked:
            return drop(f"duplicate: the same query was drafted for {asked[query.lower()]}")
        asked[query.lower()] = page.key
        kept.append(KnownItem(query, page.key, page.expected, kind, chunk.chunk_id, text))
        return True

    for page in pages:
        if not page.chunks:
            continue
        boiler = _page_boilerplate(page)
        if boiler:
            dropped.append(Dropped(page.title or page.key, page.key, "page", boiler))
            continue
        n = 0
        if page.title:  # a title covers its page: the words of the chunk count, under any of its headings
            chunk, body = max(((c, _words(HEADING.sub("", c.content))) for c in page.chunks[:3]),
                              key=lambda cw: cw[1])
            n += consider(page, "title", page.title, chunk, body)
        headings = headings_of[page.key]
        for heading, _ in headings:
            if n >= per_file:
                break
            chunk, body = _best_chunk(page, heading)
            n += consider(page, "heading", heading, chunk, body)
        if n == 0 and not headings:
            for chunk in page.chunks:
                lead = _lead(chunk)
                if lead:
                    n += consider(page, "lead", lead, chunk, _words(chunk.content))
                    break
        if n == 0 and not any(d.page == page.key for d in dropped):
            dropped.append(Dropped(page.title or page.key, page.key, "page", "no heading, title or sentence to ask"))
    return kept, dropped
