"""The book as it is now: a docs folder (Docusaurus or MkDocs) or a sitemap, read into pages.

:func:`read_docs` walks a docs folder once (``*.md``/``*.mdx``; partials ``_x.md``, hidden entries and
``node_modules`` skipped, as the ingest does) and gives every file a :class:`Page`: its path under the folder, its
route (:mod:`retrieval_lib.book.routes`), title, word count, its words as the check compares them
(:func:`retrieval_lib.book.text.words`: one 64-bit hash a word) and whether it is a stock page (a site generator's
template page, from :func:`~retrieval_lib.collection.boilerplate.stock_page`) or a placeholder stub ("Coming soon").

:func:`read_sitemap` reads a ``sitemap.xml`` (a file, or a URL fetched once with a timeout): its pages have a route
and no text, so only the mapping and "never ingested" / "gone" can judge them.

A page that cannot be read (not UTF-8, front matter that does not parse) is still a page of the book: it keeps its
path and route and carries a one-line :attr:`Page.problem`; the findings that need its text skip it and say so.
Nothing here writes: the book folder is only read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast
from urllib.parse import unquote, urlsplit

import numpy as np

from retrieval_lib.book.routes import (
    PAGE_SUFFIXES,
    decode_utf8,
    docusaurus_route,
    join_route,
    mkdocs_route,
    not_a_page,
    split_front_matter,
    strip_number_prefix,
)
from retrieval_lib.book.text import clean_all, words_at
from retrieval_lib.collection.boilerplate import PLACEHOLDER_EXTRA_WORDS, is_placeholder, stock_page
from retrieval_lib.errors import ConfigurationError, DocumentError, ValidationError

__all__ = ["Page", "Book", "read_docs", "read_sitemap", "read_book", "parse_sitemap", "detect_generator",
           "STUB_MIN_WORDS", "SAMPLE_DOCS", "resolve_docs", "page_files"]

#: The sample book's docs folder, inside the package (found from the package, not the working folder).
SAMPLE_DOCS = Path(__file__).resolve().parent.parent / "sample_book" / "docs"

#: A page with fewer words than this (headings aside), or little more than "Coming soon", is a stub: the ingest
#: skips it (:func:`retrieval_lib.ingest.documents.is_stub` reads this figure).
STUB_MIN_WORDS = 40
#: Pages this long or longer are never a site generator's template page (Docusaurus' are 100-600 words).
STOCK_MAX_WORDS = 2_000
_STUB_MAX_WORDS = 4 * (STUB_MIN_WORDS + PLACEHOLDER_EXTRA_WORDS)
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)
_SITEMAP_NS = re.compile(r"^\{[^}]*\}")
#: Characters of page text whose words are hashed in one call (:func:`~retrieval_lib.book.text.words` costs some
#: forty array operations a call: one a page of a 2,000-page book was half the read); about a megabyte at a time.
BATCH_CHARS = 1 << 20
#: Seconds a sitemap URL may take to answer.
SITEMAP_TIMEOUT_S = 10.0
#: Bytes a sitemap may hold (the protocol's own limit is 50 MB).
SITEMAP_MAX_BYTES = 50_000_000


@dataclass
class Page:
    """One page of the book.

    Attributes:
        path: its file under the docs folder (POSIX), or for a sitemap page its URL path.
        route: the URL path the site serves it at (leading slash, no trailing slash).
        title: front matter ``title``, else the first H1, else the file name.
        words: its words (headings and code included), 0 when unknown.
        hashes: its words as :func:`~retrieval_lib.book.text.words` reads them, one 64-bit hash each, in order
            (empty for a sitemap page).
        stock: ``"Docusaurus tutorial"`` ... for a site generator's template page, ``"stub"`` for a placeholder
            page, None for a page of the book's own.
        problem: why the page could not be read (one line), None when it was.
        has_text: False for a sitemap page or an unreadable file: text findings cannot judge it.
        text_bytes: the cleaned texts (:func:`~retrieval_lib.book.text.clean`) of the pages read with this one,
            joined by spaces (None when unknown): its own is ``text_bytes[text_span[0]:text_span[1]]``
            (:attr:`cleaned`), and ``word_starts`` holds each of its words' first byte in ``text_bytes``. A chunk
            is found whole in the page by comparing bytes (:func:`retrieval_lib.book.findings.compare_pages`); the
            pages share one buffer, as they were read, rather than copy the book's text once more.
    """

    path: str
    route: str
    title: str = ""
    words: int = 0
    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint64), repr=False)
    stock: str | None = None
    problem: str | None = None
    has_text: bool = True
    text_bytes: bytes | None = field(default=None, repr=False)
    text_span: tuple[int, int] = (0, 0)
    word_starts: np.ndarray | None = field(default=None, repr=False)

    @property
    def cleaned(self) -> bytes | None:
        """Its text as :func:`~retrieval_lib.book.text.clean` makes it (None when unknown)."""
        return None if self.text_bytes is None else self.text_bytes[self.text_span[0]:self.text_span[1]]

    @classmethod
    def of_text(cls, path: str, route: str, title: str, body: str) -> Page:
        """A page of text ``body`` (after its front matter), read as :func:`read_docs` reads each page."""
        page = cls(path, route, title)
        _hash_pages([(page, body)])
        return page


@dataclass
class Book:
    """The pages of one book and how they were read.

    Attributes:
        pages: every page, in path order.
        source: the docs folder or the sitemap that was read.
        kind: ``"docusaurus"``, ``"mkdocs"`` or ``"sitemap"``.
        route_base: the route base path the routes were computed with.
        problems: one line per page that could not be read.
    """

    pages: list[Page]
    source: str
    kind: str
    route_base: str
    problems: list[str] = field(default_factory=list)

    @property
    def has_text(self) -> bool:
        """True when the pages' texts were read (a docs folder), False for a sitemap."""
        return self.kind != "sitemap"


def resolve_docs(value: str | os.PathLike[str] | None) -> str | None:
    """``book_docs`` as a folder path: ``"sample_book"`` names :data:`SAMPLE_DOCS`; a relative path is read as
    every path of a profile is (:func:`~retrieval_lib.params.resolve_path`): from the working folder when it is
    there, else from the project root; empty is None."""
    if value is None or not str(value).strip():
        return None
    if str(value) == "sample_book":
        return str(SAMPLE_DOCS)
    from retrieval_lib.params import resolve_path

    return str(resolve_path(value))


def detect_generator(docs: Path) -> tuple[str, bool]:
    """(``"mkdocs"``, use_directory_urls) when an ``mkdocs.yml`` sits beside or above ``docs``, else
    (``"docusaurus"``, True)."""
    import yaml

    for folder in (docs, docs.parent):
        for name in ("mkdocs.yml", "mkdocs.yaml"):
            config = folder / name
            if config.is_file():
                try:
                    data = yaml.load(config.read_text(encoding="utf-8"), Loader=yaml.BaseLoader) or {}
                except (OSError, UnicodeDecodeError, yaml.YAMLError):
                    data = {}
                flag = str(data.get("use_directory_urls", "true")).lower() if isinstance(data, dict) else "true"
                return "mkdocs", flag not in ("false", "no", "off", "0")
    return "docusaurus", True


def page_files(root: Path) -> list[tuple[str, Path]]:
    """The pages under a docs folder: (relative POSIX path, path), sorted by the former; ``.md`` and ``.mdx``
    files, skipping names that start with ``_`` or ``.`` and ``node_modules``; symlinked folders are followed, each
    real folder read once."""
    found: list[tuple[str, Path]] = []
    seen: set[str] = set()  # folders' real paths: a symlinked folder is read (as the site generators do), once
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames[:] = [d for d in dirnames if not not_a_page(d)]
        folder = Path(dirpath)
        prefix = folder.relative_to(root).as_posix()  # once a folder, not once a file
        prefix = "" if prefix == "." else prefix + "/"
        for name in filenames:
            if not not_a_page(name) and name.endswith(PAGE_SUFFIXES):
                found.append((prefix + name, folder / name))
    return sorted(found)


def _title(front_matter: dict[str, object], body: str, rel: str) -> str:
    title = front_matter.get("title")
    if title is not None and str(title).strip():
        return str(title).strip()
    h1 = _H1.search(body)
    return h1.group(1) if h1 else strip_number_prefix(Path(rel).stem)


def _fallback_route(rel: str, kind: str, route_base: str, use_directory_urls: bool) -> str:
    if kind == "mkdocs":
        return mkdocs_route(rel, route_base, use_directory_urls=use_directory_urls)
    return docusaurus_route(rel, {}, route_base)


def read_docs(docs: str | os.PathLike[str], *, route_base: str | None = None, generator: str = "auto") -> Book:
    """Read every page of a docs folder, once.

    Args:
        docs: the Docusaurus ``docs`` folder, or MkDocs' ``docs_dir``.
        route_base: the route base path (Docusaurus' ``routeBasePath``); default ``/docs`` for Docusaurus and
            ``/`` for MkDocs.
        generator: ``"docusaurus"``, ``"mkdocs"`` or ``"auto"`` (an ``mkdocs.yml`` beside the folder says MkDocs).

    Returns:
        The :class:`Book`; a page that cannot be read carries its :attr:`Page.problem` and is listed in
        :attr:`Book.problems`.

    Raises:
        ConfigurationError: ``docs`` is not a folder, or holds no Markdown page (``path``).
        ValidationError: ``generator`` is not one of the three.
    """
    root = Path(docs)
    if not root.is_dir():
        raise ConfigurationError(f"book docs {root} is not a folder (looked for {root.absolute()}); point book_docs "
                                 "at the site's docs folder", path=str(root))
    if generator not in ("auto", "docusaurus", "mkdocs"):
        raise ValidationError(f"generator must be auto, docusaurus or mkdocs, got {generator!r}", field="generator")
    kind, directory_urls = detect_generator(root) if generator == "auto" else (generator, True)
    base = route_base if route_base is not None else ("/docs" if kind == "docusaurus" else "/")
    files = page_files(root)
    if not files:
        raise ConfigurationError(f"book docs {root} holds no .md or .mdx page; point book_docs at the folder that "
                                 "holds the pages (Docusaurus: docs/, MkDocs: docs_dir)", path=str(root))
    pages: list[Page] = []
    problems: list[str] = []
    pending: list[tuple[Page, str]] = []  # read, words not yet hashed: (page, body)
    size = 0
    for rel, full in files:
        try:
            text = decode_utf8(full.read_bytes(), rel)
            if "\r" in text:  # a find of one character, much cheaper than a replace that copies the page
                text = text.replace("\r\n", "\n").replace("\r", "\n")  # as the ingest reads it
            front_matter, body = split_front_matter(text, rel)
            if kind == "mkdocs":
                route = mkdocs_route(rel, base, use_directory_urls=directory_urls)
            else:
                try:
                    route = docusaurus_route(rel, front_matter, base)
                except ValidationError as exc:
                    raise DocumentError(f"{rel}: {exc}", path=rel) from exc
        except (DocumentError, OSError) as exc:
            reason = str(exc) if isinstance(exc, DocumentError) else f"{rel}: cannot be read ({exc.strerror})"
            problems.append(reason)
            pages.append(Page(rel, _fallback_route(rel, kind, base, directory_urls), strip_number_prefix(
                Path(rel).stem), problem=reason, has_text=False))
            continue
        page = Page(rel, route, _title(front_matter, body, rel))
        pages.append(page)
        pending.append((page, body))
        size += len(body)
        if size >= BATCH_CHARS:
            _hash_pages(pending)
            pending, size = [], 0
    _hash_pages(pending)
    return Book(pages, str(root), kind, join_route(base, ""), problems)


def _hash_pages(pending: list[tuple[Page, str]]) -> None:
    """Set the words, hashes, cleaned text and stock mark of pages read (``(page, body)``), their words hashed in
    one call."""
    if not pending:
        return
    data, lengths = clean_all([body for _, body in pending])
    found = words_at(data, lengths)
    ends = np.cumsum(lengths + 1) - 1
    starts = cast(np.ndarray, found.starts)  # words_at sets them
    for (page, body), first, count, begin, end in zip(pending, found.first.tolist(), found.count.tolist(),
                                                      (ends - lengths).tolist(), ends.tolist()):
        page.hashes = found.hashes[first:first + count]
        page.word_starts = starts[first:first + count]
        page.text_bytes, page.text_span = data, (begin, end)
        page.words = count
        # a placeholder is a few words around its marker: a long page is never one (and is not searched for it)
        stub = count < _STUB_MAX_WORDS and is_placeholder(body, min_words=STUB_MIN_WORDS)
        # a site generator's template page is short: a long page is the book's own (and is not searched)
        page.stock = (stock_page(page.title, body) if count < STOCK_MAX_WORDS else None) or ("stub" if stub else None)


def parse_sitemap(data: bytes, source: str) -> list[str]:
    """The ``<loc>`` URLs of a sitemap's ``<url>`` entries, in order, each once.

    Raises:
        ConfigurationError: the bytes are not XML, or not a ``<urlset>`` (a sitemap index is named as such).
    """
    from xml.etree.ElementTree import ParseError

    from defusedxml import ElementTree
    from defusedxml.common import DefusedXmlException

    try:
        root = ElementTree.fromstring(data)
    except (ParseError, DefusedXmlException) as exc:
        raise ConfigurationError(f"sitemap {source} is not XML ({exc}); give the site's sitemap.xml",
                                 path=source) from None
    tag = _SITEMAP_NS.sub("", root.tag)
    if tag == "sitemapindex":
        raise ConfigurationError(f"sitemap {source} is a sitemap index; give one of the sitemaps it lists",
                                 path=source)
    if tag != "urlset":
        raise ConfigurationError(f"sitemap {source} is XML but not a sitemap (its root is <{tag}>, not <urlset>)",
                                 path=source)
    urls: dict[str, None] = {}
    for node in root.iter():
        if _SITEMAP_NS.sub("", node.tag) == "loc" and node.text and node.text.strip():
            urls[node.text.strip()] = None
    return list(urls)


def _fetch(url: str, timeout: float) -> bytes:
    import httpx

    try:
        with httpx.Client(timeout=timeout, follow_redirects=True) as client:
            response = client.get(url)
    except httpx.HTTPError as exc:
        raise ConfigurationError(f"sitemap {url} is unreachable ({type(exc).__name__}); check the URL, or save the "
                                 "file and give its path", path=url) from None
    if response.status_code != 200:
        raise ConfigurationError(f"sitemap {url} answered HTTP {response.status_code}; check the URL", path=url)
    if len(response.content) > SITEMAP_MAX_BYTES:
        raise ConfigurationError(f"sitemap {url} is larger than {SITEMAP_MAX_BYTES} bytes", path=url)
    return response.content


def read_sitemap(sitemap: str | os.PathLike[str], *, timeout: float = SITEMAP_TIMEOUT_S) -> Book:
    """Read a sitemap (a file path, or an ``http(s)://`` URL fetched once) into pages with routes and no text.

    Raises:
        ConfigurationError: the file is missing, the URL unreachable or not 200, the content not a sitemap, or
            it lists no page (``path``).
    """
    source = str(sitemap)
    if source.startswith(("http://", "https://")):
        data = _fetch(source, timeout)
    else:
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise ConfigurationError(f"sitemap {source} cannot be read ({exc.strerror}); check book_sitemap",
                                     path=source) from None
    urls = parse_sitemap(data, source)
    if not urls:
        raise ConfigurationError(f"sitemap {source} lists no page", path=source)
    pages: dict[str, Page] = {}
    for url in urls:
        route = join_route(unquote(urlsplit(url).path), "")  # /docs/%C3%A9t%C3%A9 is the page /docs/été
        pages.setdefault(route, Page(route, route, title=route.rsplit("/", 1)[-1], has_text=False))
    return Book(sorted(pages.values(), key=lambda p: p.path), source, "sitemap", "/")


def read_book(docs: str | os.PathLike[str] | None, sitemap: str | None, *, route_base: str | None = None) -> Book:
    """The book from ``docs`` (a folder) or ``sitemap`` (a file or URL); exactly one of them (the profile's
    ``book_docs`` / ``book_sitemap``: notebooks 05, 15 and 16 read it this way).

    Raises:
        ConfigurationError: neither or both given, or the book cannot be read (one line: what and what to do).
    """
    if bool(docs) == bool(sitemap):
        raise ConfigurationError("name the book once: book_docs (a docs folder) or book_sitemap (a sitemap.xml "
                                 "file or URL)" + (", not both" if docs else ""), option="book")
    if docs:
        return read_docs(docs, route_base=route_base or None)
    return read_sitemap(str(sitemap))
