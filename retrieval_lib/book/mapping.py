"""The mapping from a collection's sources to the book's pages.

A collection names where each chunk came from through its payload roles: ``source_file`` (a path, relative or
absolute, with or without the docs folder in front) and/or ``source_url`` (the page's URL on the site). Each page of
the book answers to a few *keys* relative to the docs folder and the route base: its file path (``a/01-b.md``), that
path without its extension (``a/01-b``, what a team's ingest that builds URLs from file names writes) and its route
under the route base (``a/b``, what the site serves). A source matches a page when the end of its path is one of
the page's keys:

- a **file path** may have anything in front (``/home/me/site/docs/``, ``docs/``);
- a **URL** must have the site's route base path in front: the one given (``book_base_url`` + ``book_route_base``)
  or, when none is given, the one most of the collection's URLs share (*inferred*, and said so). A URL whose end
  names a page under another base path is not matched; it is listed with that page as a hint.

A source that matches no page is listed (:attr:`BookMap.unmatched`), never dropped. Nothing here reads or writes the
collection: :func:`read_chunks` reads it once, through :class:`~retrieval_lib.collection.CollectionView`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import unquote, urlsplit

from retrieval_lib.book.pages import Book
from retrieval_lib.book.routes import PAGE_SUFFIXES, docusaurus_route, strip_number_prefix
from retrieval_lib.errors import ConfigurationError, ValidationError
from retrieval_lib.stores.scan import collector_paused

__all__ = ["BookChunks", "SourceMatch", "BookMap", "read_chunks", "map_sources", "FIELDS", "URL_FROM_FILE",
           "BookRoutes", "routes_of", "book_routes"]

#: The roles the book check reads, in one scroll.
FIELDS = ("source_file", "source_url", "content", "chunk_sequence")
_PAGE_SUFFIXES = (".html", ".htm")


@dataclass
class BookChunks:
    """The collection's chunks as the book check reads them: one list per role, ``[i]`` is one chunk."""

    ids: list[str]
    source_file: list[str | None]
    source_url: list[str | None]
    content: list[str | None]
    sequence: list[int | None]

    def __len__(self) -> int:
        return len(self.ids)

    def source(self, i: int) -> str | None:
        """How the collection names chunk ``i``'s source: its file when it has one, else its URL."""
        return self.source_file[i] or self.source_url[i]


def read_chunks(view: Any, collection: str, *, progress: bool = False, texts: bool = True) -> BookChunks:
    """One scroll of :data:`FIELDS` through a :class:`~retrieval_lib.collection.CollectionView` (never written).
    ``texts=False``: the sources alone (``content`` and ``chunk_sequence`` left as None), all the mapping reads."""
    roles = view.roles_for(collection)
    # a file read off the URL is not the team's own name for the source, the URL is: where the roles derive the
    # file from the URL, only a key of the team's own can name a file (for a point without a URL)
    own_file = bool(roles.keys_of("source_file"))
    wanted = FIELDS if texts else ("source_file", "source_url")
    fields = [f for f in wanted if (roles.has(f) if f != "source_file" else own_file or not roles.derive_source_file)]
    # whole: every text is kept, so an in-process engine is read in one page (stores.scan.page_size)
    cols = view.read_columns(collection, fields, progress=progress, whole=True)
    n = len(cols.ids)

    def col(name: str) -> list[Any]:
        return cols.values[name] if name in cols.values else [None] * n

    files, urls = col("source_file"), col("source_url")
    if roles.derive_source_file and "source_file" in cols.values:
        files = [None if u else f for f, u in zip(files, urls)]
    return BookChunks(cols.ids, files, urls, col("content"), col("chunk_sequence"))


@dataclass
class SourceMatch:
    """One source of the collection and the page it maps to (None: no page)."""

    source: str
    chunks: int
    page: str | None
    how: str
    hint: str = ""
    file: str | None = None
    url: str | None = None


@dataclass
class BookMap:
    """How the collection's sources map onto the book.

    Attributes:
        sources: every distinct source, matched or not, by chunk count.
        page_chunks: page path -> indexes (into :class:`BookChunks`) of its chunks.
        base_path: the URL route base path URLs were read under ("" for none), and ``base_origin``: how it was
            known (``"given"``, ``"inferred from N of M URLs"``).
        problem: one line when the mapping cannot be trusted (a base URL that matches no source); the findings
            that need the mapping are then not applicable.
    """

    sources: list[SourceMatch]
    page_chunks: dict[str, list[int]]
    base_path: str = ""
    base_origin: str = ""
    problem: str | None = None
    no_source: int = 0
    chunk_page: list[str | None] = field(default_factory=list, repr=False)

    @property
    def unmatched(self) -> list[SourceMatch]:
        return [s for s in self.sources if s.page is None]

    def counts(self) -> dict[str, int]:
        """Sources per way of matching (``file path``, ``URL route`` ..., ``no page``)."""
        return dict(Counter(s.how for s in self.sources))

    def how_matched(self) -> str:
        """How the sources were matched to the book's pages, with counts, and the URL base path where URLs were
        read: "24 by URL route, 6 match no page; URL base path /docs (given)"."""
        if not self.sources:
            return f"none: no chunk names a source file or URL ({self.no_source} chunks without one)"
        counts = ", ".join(f"{n} {'matches' if n == 1 else 'match'} no page" if how == "no page" else f"{n} by {how}"
                           for how, n in sorted(self.counts().items()))
        if self.base_origin == "no URL source":
            return counts
        return f"{counts}; URL base path {self.base_path or '/'} ({self.base_origin})"


#: How a URL source that names its page by the page's file (number prefixes kept, or front matter ``id``/``slug``
#: ignored) is matched: the page is found, but the site does not serve that URL.
URL_FROM_FILE = "URL from the file path"


class _Hit(NamedTuple):
    """A source's page: the page, the path before the part that matched, whether the source is a URL, whether its
    number prefixes were dropped to match, and whether the site serves that URL (a file path: True)."""

    page: str
    prefix: str
    url: bool
    stripped: bool
    served: bool


def _tail(route: str, base: str) -> str:
    """``route`` (no leading or trailing slash) less the route base path ``base`` it starts with."""
    return route[len(base):].strip("/") if base and (route == base or route.startswith(base + "/")) else route


def _page_keys(book: Book) -> dict[str, str]:
    keys: dict[str, str] = {}
    base = book.route_base.strip("/")
    for page in book.pages:
        stem = page.path.rsplit(".", 1)[0] if page.path.endswith(PAGE_SUFFIXES) else page.path.strip("/")
        for key in (page.path.strip("/"), stem, _tail(page.route.strip("/"), base)):
            keys.setdefault(key, page.path)
            keys.setdefault(key.lower(), page.path)
    return keys


def _moved_keys(book: Book) -> dict[str, str]:
    """Route tail -> page, for the Docusaurus pages whose front matter (``id``, ``slug``) gives them another route
    than their file path would: a team that builds its URLs from file paths links there, where the site serves
    nothing. So does one that puts the page's route name under its folders (an absolute ``slug: /glossary`` read as
    a relative one: ``appendices/glossary``)."""
    if book.kind != "docusaurus":
        return {}
    base = book.route_base.strip("/")
    keys: dict[str, str] = {}
    for page in book.pages:
        try:
            own = docusaurus_route(page.path, {}, book.route_base).strip("/")
        except ValidationError:
            continue
        route = page.route.strip("/")
        folders = "/".join(strip_number_prefix(d) for d in page.path.split("/")[:-1])
        under_folders = f"{base}/{folders}/{route.rsplit('/', 1)[-1]}".strip("/") if folders else route
        for wrong in (own, under_folders):
            if wrong != route:
                keys.setdefault(_tail(wrong, base), page.path)
                keys.setdefault(_tail(wrong, base).lower(), page.path)
    return keys


#: A value of the URL role with no scheme that ends in a source file's extension is a file path, not a route.
_FILE_SUFFIXES = (".md", ".mdx", ".markdown", ".rst", ".txt", ".ipynb")


def _site_relative(value: str) -> bool:
    """Whether a value of the URL role is a route on the site without its address (``/module-01/01-intro``, what
    a chatbot links as a relative URL), not a file path."""
    return value.startswith("/") and not value.startswith("//") and not value.lower().endswith(_FILE_SUFFIXES)


def _segments(value: str, *, route: bool = False) -> tuple[list[str], bool]:
    """(path segments, is a URL) of a source value; ``.html`` and ``index.html`` read as the page they serve.
    ``route``: a value without a scheme is a URL too (:func:`_site_relative`)."""
    is_url = "://" in value or route
    path = unquote(urlsplit(value).path if is_url else value.split("?")[0].split("#")[0])
    segs = [s for s in path.replace("\\", "/").split("/") if s and s != "."]
    if is_url and segs and segs[-1].lower() in ("index.html", "index.htm"):
        segs = segs[:-1]
    elif is_url and segs and segs[-1].lower().endswith(_PAGE_SUFFIXES):
        segs[-1] = segs[-1].rsplit(".", 1)[0]
    return segs, is_url


def _tail_match(segs: list[str], keys: dict[str, str]) -> tuple[str, str, str] | None:
    """(page, prefix, the end matched) for the longest end of ``segs`` that is a page key (non-empty), else None."""
    for i in range(len(segs)):
        tail = "/".join(segs[i:])
        page = keys.get(tail) or keys.get(tail.lower())
        if page is not None:
            return page, "/".join(segs[:i]), tail
    return None


def map_sources(book: Book, chunks: BookChunks, *, base_url: str | None = None,
                route_base: str | None = None) -> BookMap:
    """Map every chunk's source onto a page of ``book``.

    Args:
        book: the pages (:func:`~retrieval_lib.book.pages.read_docs` or ``read_sitemap``).
        chunks: the collection's chunks (:func:`read_chunks`).
        base_url: the site's address (``https://example.org``); URLs that do not start with it match no page.
        route_base: the route base path URLs carry before the page's route (``/docs``); inferred when None.

    Returns:
        The :class:`BookMap`; a ``base_url`` that no source starts with sets :attr:`BookMap.problem`.
    """
    with collector_paused():  # a list or two a source, none in a cycle (stores.scan.collector_paused)
        return _map_sources(book, chunks, base_url, route_base)


def _map_sources(book: Book, chunks: BookChunks, base_url: str | None, route_base: str | None) -> BookMap:
    keys = _page_keys(book)
    given_base = None if route_base is None else route_base.strip("/")
    site = (base_url or "").rstrip("/")
    # each chunk's source (chunks.source(i), for all of them at once), and the chunks of each
    labels = [f or u for f, u in zip(chunks.source_file, chunks.source_url)]
    groups: dict[str | None, list[int]] = {}
    for i, label in enumerate(labels):
        group = groups.get(label)
        if group is None:
            groups[label] = [i]
        else:
            group.append(i)
    no_source = len(groups.pop(None, []))
    by_source: dict[str, list[int]] = {label: idx for label, idx in groups.items() if label is not None}

    url_sources = [s for s in by_source if "://" in s]
    problem = None
    if site and url_sources and not any(s.startswith(site) for s in url_sources):
        problem = (f"book_base_url {site} matches none of the collection's {len(url_sources)} source URLs (they "
                   f"look like {url_sources[0]}); set it to the address they start with, or leave it empty")

    # a page's route under the route base: what a URL that the site serves ends with
    book_base = book.route_base.strip("/")
    served_tail = {page.path: _tail(page.route.strip("/"), book_base).lower() for page in book.pages}
    moved_keys = _moved_keys(book)
    raw: dict[str, _Hit | None] = {}
    # a URL source's page under a route its file path or folders give (read once the base path is known)
    moved: dict[str, _Hit] = {}
    site_segs = _segments(site)[0] if site else []
    for label, idx in by_source.items():
        found: _Hit | None = None
        for role, value in (("file", chunks.source_file[idx[0]]), ("url", chunks.source_url[idx[0]])):
            if not value or (site and "://" in value and not value.startswith(site)):
                continue
            segs, is_url = _segments(value, route=role == "url" and _site_relative(value))
            if is_url and site and ("://" in value or segs[:len(site_segs)] == site_segs):
                segs = segs[len(site_segs):]
            hit, stripped = _tail_match(segs, keys), False
            if hit is None and is_url:
                # a team that built its URLs from file names (01-intro) against a book read as routes (a sitemap)
                hit, stripped = _tail_match([strip_number_prefix(s) for s in segs], keys), True
            if is_url and (at := _tail_match(segs, moved_keys)) is not None:
                # ... or from file paths as Docusaurus reads them, but without the front matter that moves the page
                moved.setdefault(label, _Hit(at[0], at[1], True, False, False))
                if hit is None:
                    hit, stripped = at, False
            if hit is None:
                continue
            this = _Hit(hit[0], hit[1], is_url, stripped, not is_url or hit[2].lower() == served_tail[hit[0]])
            if found is None:
                found = this
            elif this.url and not this.served and this.page == found.page:
                # the file names the page, but the URL the chatbot cites is not where the site serves it
                found = this
        raw[label] = found

    prefixes = Counter(hit.prefix for hit in raw.values() if hit is not None and hit.url)
    if given_base is not None:
        base, origin = given_base, "given"
    elif prefixes:
        base, n = prefixes.most_common(1)[0]
        origin = f"inferred from {n} of {sum(prefixes.values())} matched URL sources"
    else:
        base, origin = "", "no URL source"

    root_page = keys.get("")
    routes = {page.path: page.route for page in book.pages}
    sources: list[SourceMatch] = []
    page_chunks: dict[str, list[int]] = {}
    page_of: dict[str | None, str] = {}
    for label, idx in by_source.items():
        got = raw[label]
        if got is not None and got.url and got.prefix != base and label in moved and moved[label].prefix == base:
            got = moved[label]  # its route name under its own folders: the page, moved by its front matter
        page, how, hint = None, "no page", ""
        if got is not None and (not got.url or got.prefix == base):
            page = got.page
            if not got.url:
                how = "file path" if not got.prefix else "file path under a prefix"
            elif got.stripped:
                how = "URL route, number prefixes dropped"
            elif got.served:
                how = "URL route"
            else:  # the URL names the page by its file, at a route the site does not serve
                how, hint = URL_FROM_FILE, f"served at {routes[page]}"
        elif got is not None:
            hint = f"names {got.page} under /{got.prefix}, not the base path /{base}"
        elif root_page is not None and "://" in label and "/".join(_segments(label)[0]) == base:
            page, how = root_page, "URL route"
        if page is not None:
            page_chunks.setdefault(page, []).extend(idx)
            page_of[label] = page
        sources.append(SourceMatch(label, len(idx), page, how, hint, chunks.source_file[idx[0]],
                                   chunks.source_url[idx[0]]))
    sources.sort(key=lambda s: (-s.chunks, s.source))
    chunk_page = list(map(page_of.get, labels))
    return BookMap(sources, page_chunks, "/" + base if base else "", origin, problem, no_source, chunk_page)


@dataclass(frozen=True)
class BookRoutes:
    """The route of each of the collection's sources in the book: its page's route, for a golden pattern written
    with the site's routes where the collection names its pages by file path.

    Attributes:
        of: a source's label, file or URL (as a result or a page of :func:`collection_pages` names it) -> the route
            of the page it maps to (``/docs/module-01-ros2/kinematics-and-inverse-kinematics``); sources that map to
            no page are absent.
        base: the book's route base as path segments (``("docs",)``), so that a pattern with or without it matches,
            as :func:`url_matches` reads a site's base path.
        book: the book in a few words (``docusaurus book .../docs: 31 pages``).
    """

    of: dict[str, str]
    base: tuple[str, ...]
    book: str

    def route(self, *values: str | None) -> str | None:
        """The route of the first of ``values`` (a source's URL, file...) that maps to a page, else None."""
        for value in values:
            if value and (route := self.of.get(value)) is not None:
                return route
        return None


def routes_of(book: Book, bmap: BookMap) -> BookRoutes:
    """:class:`BookRoutes` from the book's pages and the mapping of the collection's sources onto them
    (:func:`retrieval_lib.book.map_sources`, the book check's own)."""
    page_route = {page.path: page.route for page in book.pages}
    of: dict[str, str] = {}
    for src in bmap.sources:
        if src.page is not None:
            for value in (src.source, src.file, src.url):
                if value:
                    of.setdefault(value, page_route[src.page])
    return BookRoutes(of, tuple(s for s in book.route_base.split("/") if s),
                      f"{book.kind} book {book.source}: {len(book.pages)} pages")


def book_routes(view: Any, collection: str, *, docs: str | None, sitemap: str | None, base_url: str | None = None,
                route_base: str | None = None) -> BookRoutes:
    """Read the book (``docs``, a folder, or ``sitemap``; exactly one) and map the collection's sources onto its
    pages (one scroll of the collection through ``view``, never written).

    Raises:
        ConfigurationError: no book, both, or the book cannot be read; or a ``base_url`` that no source URL starts
            with (the mapping cannot be trusted).
        DocumentError: a page of the book cannot be read.
    """
    from retrieval_lib.book.pages import read_book

    book = read_book(docs, sitemap, route_base=route_base)
    # the sources alone: the routes need no text (a collection's texts are most of what a scroll reads)
    bmap = map_sources(book, read_chunks(view, collection, texts=False), base_url=base_url or None,
                       route_base=route_base or None)
    if bmap.problem:
        raise ConfigurationError(bmap.problem, option="book_base_url")
    return routes_of(book, bmap)
