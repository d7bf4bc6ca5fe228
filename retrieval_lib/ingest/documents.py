"""Reading Docusaurus documents: front matter, title, route and a clean body.

The book is a Docusaurus site, so every file under ``docs/`` becomes a page
whose URL follows the docs plugin's rules (number prefixes dropped, ``id`` and
``slug`` front matter honoured, ``index.md`` standing for its folder). The
retrieval workbook cites those URLs, so :func:`docusaurus_route` mirrors the
plugin rather than inventing its own scheme.

MDX files also carry noise that means nothing to a reader or an embedding
model: ``import`` lines, JSX wrappers such as ``<Tabs>`` and comments.
:func:`strip_mdx` (defined in :mod:`retrieval_lib.ingest.mdx`, re-exported here)
drops that noise but never touches fenced code.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval_lib.book.pages import STUB_MIN_WORDS, page_files
from retrieval_lib.book.routes import (
    decode_utf8,
    docusaurus_route,
    split_front_matter,
    strip_number_prefix,
)
from retrieval_lib.collection.boilerplate import is_placeholder
from retrieval_lib.errors import DocumentError, ValidationError
from retrieval_lib.ingest.mdx import strip_mdx
from retrieval_lib.ingest.syntax import atx_heading, normalize_newlines, with_fence_state

__all__ = ["MarkdownDoc", "read_document", "docusaurus_route", "strip_mdx", "is_stub", "discover_documents"]


@dataclass(frozen=True)
class MarkdownDoc:
    """One parsed Docusaurus document.

    Attributes:
        source_file: Path relative to the docs root, POSIX separators.
        front_matter: Parsed YAML front matter (``{}`` if none).
        title: Front matter ``title``, else the first H1, else the file stem
            without its number prefix.
        route: The Docusaurus URL path of the page, e.g. ``/docs/intro``.
        body: Markdown without front matter and without MDX noise.
    """

    source_file: str
    # A dict is unhashable; leaving it out of the hash keeps the frozen
    # dataclass hashable while equality still compares it.
    front_matter: dict[str, Any] = field(hash=False)
    title: str
    route: str
    body: str


# --- reading ----------------------------------------------------------------
# Front matter, routes and decoding: one rule for the ingest and the book check, owned by retrieval_lib.book.routes.

def _first_h1(body: str) -> str | None:
    """Text of the first ``# Heading`` outside fenced code, or None."""
    for line, in_code in with_fence_state(body.split("\n")):
        heading = None if in_code else atx_heading(line)
        if heading is not None and heading[0] == 1:
            return heading[1]
    return None


def _relative_posix(path: Path, docs_root: Path) -> str:
    """``path`` relative to ``docs_root`` with POSIX separators."""
    try:
        return Path(path).relative_to(docs_root).as_posix()
    except ValueError:
        pass
    try:
        # Symlinks or a relative/absolute mix: compare the resolved paths.
        return Path(path).resolve().relative_to(Path(docs_root).resolve()).as_posix()
    except ValueError:
        raise ValidationError(f"{path} is not inside the docs root {docs_root}", field="path") from None



def _tidy_body(text: str) -> str:
    """Drop leading blank lines and trailing whitespace."""
    return re.sub(r"\A(?:[ \t]*\n)+", "", text).rstrip()


def read_document(path: Path, docs_root: Path, route_base: str = "/docs") -> MarkdownDoc:
    """Read one Docusaurus ``.md``/``.mdx`` file.

    Args:
        path: The file to read.
        docs_root: The Docusaurus ``docs`` folder that ``path`` lies in.
        route_base: The docs plugin's ``routeBasePath`` as a URL path.

    Returns:
        The parsed document: front matter, title, route and cleaned body.

    Raises:
        DocumentError: The file cannot be read, is not UTF-8, or has front
            matter that is not valid YAML or not a mapping, or whose
            ``id``/``slug`` is not text. ``path`` names the file.
        ValidationError: ``path`` is not inside ``docs_root`` (``field="path"``).
    """
    rel = _relative_posix(Path(path), Path(docs_root))
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise DocumentError(f"{rel}: cannot be read ({reason}); check the path and its permissions", path=rel) from exc
    text = normalize_newlines(decode_utf8(raw, rel))
    front_matter, content = split_front_matter(text, rel)
    body = _tidy_body(strip_mdx(content))

    fm_title = front_matter.get("title")
    if fm_title is not None and str(fm_title).strip():
        title = str(fm_title).strip()
    else:
        title = _first_h1(body) or strip_number_prefix(posixpath.splitext(posixpath.basename(rel))[0])

    try:
        route = docusaurus_route(rel, front_matter, route_base)
    except ValidationError as exc:  # a front matter id/slug that is not text
        raise DocumentError(f"{rel}: {exc}", path=rel) from exc
    return MarkdownDoc(source_file=rel, front_matter=front_matter, title=title, route=route, body=body)


# --- stubs ------------------------------------------------------------------


def is_stub(doc: MarkdownDoc, min_words: int = STUB_MIN_WORDS) -> bool:
    """Tell whether a document has no real content yet.

    Headings and admonition fence lines (``:::note`` / ``:::``) are ignored.

    Args:
        doc: The document to judge.
        min_words: Fewer words than this makes a stub.

    Returns:
        True for an empty or short body, or one that is essentially a
        placeholder ("Coming soon", "TODO", "TBD", "Work in progress",
        "Under construction", ...; case-insensitive).

    Raises:
        ValidationError: ``min_words`` is negative (``field="min_words"``).
    """
    if min_words < 0:
        raise ValidationError(f"min_words must be >= 0, got {min_words}", field="min_words")
    return is_placeholder(doc.body, min_words=min_words)


# --- discovery --------------------------------------------------------------


def discover_documents(docs_root: Path) -> list[Path]:
    """Find the Docusaurus pages under a docs folder.

    Args:
        docs_root: The Docusaurus ``docs`` folder.

    Returns:
        Paths (``docs_root / relative``) of every ``*.md`` and ``*.mdx`` file,
        recursively, sorted by relative POSIX path. Files or folders whose
        name starts with ``_`` or ``.`` and ``node_modules`` are skipped.

    Raises:
        DocumentError: ``docs_root`` is not a directory.
    """
    root = Path(docs_root)
    if not root.is_dir():
        raise DocumentError(
            f"{root}: docs root is not a directory; point it at the Docusaurus docs folder",
            path=str(root),
        )
    return [full for _, full in page_files(root)]
