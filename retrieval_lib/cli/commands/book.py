"""``python -m retrieval_lib book``: does the collection hold the book as it is now (``check book``, notebook 16)?

The book is ``--docs DIR`` or ``--sitemap FILE|URL`` (each overrides the profile's ``book_docs`` / ``book_sitemap``
and clears the other), else the profile's; gates and figures come from the profile (``params/demo.yaml`` by
default, section '16 book'). ``--json`` prints the gates and the lists ``missing``, ``gone``, ``changed``, ``thin``,
``near_duplicates`` (and ``mapping``: every source and the page it maps to).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from retrieval_lib.cli.commands.check import register_check
from retrieval_lib.workbook.registry import notebook_spec

__all__ = ["register"]


def _extra(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--docs", metavar="DIR", default=None,
                       help="the book's docs folder, Docusaurus or MkDocs (overrides book_docs)")
    group.add_argument("--sitemap", metavar="FILE", default=None,
                       help="the site's sitemap.xml, a file or an http(s) URL (overrides book_sitemap)")


def _prepare(args: argparse.Namespace, params: dict[str, Any], settings: Any) -> None:
    """``--docs`` / ``--sitemap`` name the book (the other one of the profile's is dropped).

    Raises:
        ValidationError: ``--docs`` names no folder, or ``--sitemap`` no file (a URL is fetched by the check).
    """
    from retrieval_lib.book import resolve_docs
    from retrieval_lib.errors import ValidationError

    if args.docs is not None:
        if not Path(resolve_docs(args.docs) or args.docs).is_dir():
            # a folder named on the command line that is not there is a typo to fix, not a finding to report
            raise ValidationError(f"--docs {args.docs}: no such folder; give the book's docs folder (Docusaurus: "
                                  "docs/, MkDocs: docs_dir)", field="--docs")
        params["book_docs"], params["book_sitemap"] = args.docs, ""
    if args.sitemap is not None:
        if not args.sitemap.startswith(("http://", "https://")) and not Path(args.sitemap).is_file():
            raise ValidationError(f"--sitemap {args.sitemap}: no such file; give the site's sitemap.xml (a file, or "
                                  "its http(s) URL)", field="--sitemap")
        params["book_docs"], params["book_sitemap"] = "", args.sitemap


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    register_check(
        sub, add, common, notebook_spec("book"), name="book",
        summary="the book against the collection: pages never ingested, gone, changed, thin, duplicates",
        description="Read the book (a Docusaurus or MkDocs docs folder, or a sitemap.xml) and the collection "
                    "(read-only, one scroll of source, URL, text and sequence), map every source onto a page, and "
                    "list the pages never ingested, the sources gone from the book (and the golden questions that "
                    "still retrieve them), the pages changed since the ingest, the pages ingested thin, and "
                    "near-duplicate chunks with the share of top-k places they take. The same as `check book`.",
        examples="  python -m retrieval_lib book\n  python -m retrieval_lib book --docs ../site/docs --json\n"
                 "  python -m retrieval_lib book --sitemap sitemap.xml --params params/their_book.yaml",
        extra=_extra, prepare=_prepare)
