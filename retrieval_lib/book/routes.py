"""The route rule: which URL a site generator gives a Markdown file, and how a file's front matter reads.

One rule, used by our ingest (:mod:`retrieval_lib.ingest.documents`, which cites the routes) and by the book check
(:mod:`retrieval_lib.book.mapping`, which maps a collection's URLs back onto files):

- :func:`docusaurus_route`: the Docusaurus docs plugin's rule (number prefixes dropped, ``id`` and ``slug`` front
  matter, ``index.md``/``README.md`` or a file named like its folder standing for the folder);
- :func:`mkdocs_route`: MkDocs' rule (``index.md``/``README.md`` stand for the folder; ``use_directory_urls``
  decides between ``/a/b/`` and ``/a/b.html``);
- :func:`split_front_matter` and :func:`decode_utf8`: the front matter block and the strict UTF-8 reading both
  need, each raising :class:`~retrieval_lib.errors.DocumentError` with a one-line reason.

Routes are URL paths with a leading slash and no trailing slash (``"/"`` for the site's root).
"""

from __future__ import annotations

import codecs
import posixpath
import re
from typing import Any

import yaml

from retrieval_lib.errors import DocumentError, ValidationError

__all__ = ["docusaurus_route", "mkdocs_route", "route_of_stored_path", "join_route", "strip_number_prefix",
           "split_front_matter",
           "decode_utf8", "front_matter_text", "INDEX_NAMES", "PAGE_SUFFIXES", "not_a_page"]

# Front matter counts only at the very start of the file, as Docusaurus reads it.
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(?P<yaml>.*?)^---[ \t]*(?:\n|\Z)", re.DOTALL | re.MULTILINE)
# Docusaurus' DefaultNumberPrefixParser: "01-intro", "3 - Setup", "02__x" lose their number; "2021-11-release" and
# "7.0-upgrade" (a date, a version) keep it, and so does a name that is only a prefix
_NUMBER_PREFIX = re.compile(r"^\d+\s*[-_.]+\s*(?=[^-_.\s])")
_NOT_A_PREFIX = re.compile(r"^\d+[-_.]\d+")
# libyaml's safe loader where PyYAML was built with it (a book of 2,000 pages: 1 s of pure-Python parsing saved)
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: File stems (lower case) that stand for their folder.
INDEX_NAMES = ("index", "readme")
#: The files a docs folder's pages are written in.
PAGE_SUFFIXES = (".md", ".mdx")


def not_a_page(name: str) -> bool:
    """A file or folder name the site generator makes no page of: partials (``_x.md``), hidden entries and
    node_modules (the ingest's walk and the book's read skip the same names)."""
    return name.startswith(("_", ".")) or name == "node_modules"


def split_front_matter(text: str, rel: str) -> tuple[dict[str, Any], str]:
    """Return (front matter, rest of the text) of a Markdown file's text.

    Raises:
        DocumentError: the block is not valid YAML, or not a mapping (``path=rel``).
    """
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    try:
        data = yaml.load(match["yaml"], Loader=_SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        # +2: marks are 0-based and the opening "---" is line 1 of the file.
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise DocumentError(
            f"{rel}: invalid YAML front matter{where}: {problem}; fix the block between the '---' lines",
            path=rel,
        ) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DocumentError(
            f"{rel}: front matter must be a mapping of keys to values, got {type(data).__name__}",
            path=rel,
        )
    return data, text[match.end():]


def decode_utf8(raw: bytes, rel: str) -> str:
    """Strict UTF-8 decoding with an optional BOM.

    Raises:
        DocumentError: the bytes are not UTF-8 (``path=rel``; the message names the byte).
    """
    offset = 0
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
        offset = len(codecs.BOM_UTF8)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"{rel}: not valid UTF-8 (byte {exc.start + offset}); re-save the file as UTF-8",
            path=rel,
        ) from exc


def strip_number_prefix(name: str) -> str:
    """``01-intro`` -> ``intro``, as Docusaurus serves it; ``2021-11-release``, ``7.0-upgrade`` and a name that is
    only a prefix stay as they are."""
    return name if _NOT_A_PREFIX.match(name) else _NUMBER_PREFIX.sub("", name, count=1)


def front_matter_text(front_matter: dict[str, Any], key: str) -> str | None:
    """A front matter value as text (numbers allowed), None when absent or empty.

    Raises:
        ValidationError: the value is neither text nor a number (``field="front_matter"``).
    """
    value = front_matter.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValidationError(f"front matter '{key}' must be text, got {type(value).__name__}", field="front_matter")
    text = str(value).strip()
    return text or None


def join_route(route_base: str, path: str) -> str:
    """Join with single slashes, no trailing slash, "/" when nothing is left."""
    segments = [s for s in f"{route_base}/{path}".split("/") if s]
    return "/" + "/".join(segments)


def _parts(source_file: str) -> list[str]:
    parts = [p for p in source_file.split("/") if p not in ("", ".")]
    if not parts or source_file.startswith("/") or ".." in parts:
        raise ValidationError(f"source_file must be a relative path inside the docs root, got {source_file!r}",
                              field="source_file")
    return parts


def docusaurus_route(source_file: str, front_matter: dict[str, Any], route_base: str = "/docs") -> str:
    """Compute the URL path the Docusaurus docs plugin gives a document.

    Number prefixes (``01-``, ``1_``, ``02.``) are dropped from every folder
    and file name that has something after them; the extension is dropped.
    The doc id is front matter ``id`` or the stripped file name. ``index``,
    ``README`` or a file named like its folder (compared as written,
    case-insensitively, as Docusaurus does) stands for the folder. An
    absolute ``slug`` replaces the whole path, a relative one only the last
    segment.

    Args:
        source_file: Path relative to the docs root, POSIX separators.
        front_matter: The document's front matter (``id`` and ``slug`` matter).
        route_base: The docs plugin's ``routeBasePath`` as a URL path.

    Returns:
        The route, e.g. ``/docs/module-01-ros2/what-is-ros2``; never empty,
        no trailing slash.

    Raises:
        ValidationError: ``source_file`` is empty, absolute or leaves the
            docs root (``field="source_file"``), or ``id``/``slug`` is not
            text (``field="front_matter"``).
    """
    *directories, file_name = _parts(source_file)
    stem = posixpath.splitext(file_name)[0]
    dir_path = "/".join(strip_number_prefix(d) for d in directories)

    slug = front_matter_text(front_matter, "slug")
    doc_id = front_matter_text(front_matter, "id")
    if slug is not None and slug.startswith("/"):
        path = slug
    elif slug is not None:
        # Resolved like a relative URL against the folder, so "../x" works too.
        path = posixpath.normpath(f"/{dir_path}/{slug}")
    elif stem.lower() in INDEX_NAMES or (directories and stem.lower() == directories[-1].lower()):
        path = dir_path
    else:
        path = f"{dir_path}/{doc_id if doc_id is not None else strip_number_prefix(stem)}"
    return join_route(route_base, path)


def mkdocs_route(source_file: str, route_base: str = "/", *, use_directory_urls: bool = True) -> str:
    """Compute the URL path MkDocs gives a page of its ``docs_dir``.

    ``index.md`` and ``README.md`` stand for their folder; other pages keep their name (MkDocs drops no number
    prefix and reads no ``slug``). With ``use_directory_urls`` (MkDocs' default) ``a/b.md`` is served at ``/a/b/``,
    without it at ``/a/b.html``; both are returned without a trailing slash (``/a/b``, ``/a/b.html``).

    Raises:
        ValidationError: ``source_file`` is empty, absolute or leaves the docs root (``field="source_file"``).
    """
    *directories, file_name = _parts(source_file)
    stem = posixpath.splitext(file_name)[0]
    folder = "/".join(directories)
    if stem.lower() in INDEX_NAMES:
        path = folder if use_directory_urls else f"{folder}/index.html"
    else:
        path = f"{folder}/{stem}" if use_directory_urls else f"{folder}/{stem}.html"
    return join_route(route_base, path)


def route_of_stored_path(path: str | None, route_base: str = "/docs") -> str | None:
    """The Docusaurus route of a file path as a team's ingest stored it, or None when it gives none.

    Stored paths come relative to the docs folder (``module-01/01-intro.md``), to the repository
    (``docs/module-01/01-intro.md``, ``./docs/...``) or absolute (``/home/ci/book/docs/module-01/01-intro.md``);
    everything up to the last ``docs`` folder is dropped, then :func:`docusaurus_route` applies (without front
    matter: a page's own ``slug`` needs the book at hand, :mod:`retrieval_lib.book.mapping`). Only Markdown files
    (``.md``, ``.mdx``) have routes.
    """
    if not isinstance(path, str) or not path.strip():
        return None
    parts = [p for p in path.strip().replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or posixpath.splitext(parts[-1])[1].lower() not in PAGE_SUFFIXES or ".." in parts:
        return None
    docs = max((i for i, p in enumerate(parts[:-1]) if p == "docs"), default=-1)
    try:
        return docusaurus_route("/".join(parts[docs + 1:]), {}, route_base)
    except ValidationError:
        return None
