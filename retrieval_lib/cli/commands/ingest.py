"""``python -m retrieval_lib ingest``: our own demo pipeline, a markdown book into a collection."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from retrieval_lib.cli.commands import print_json

#: Place in ``--help``: the everyday commands first.
ORDER = 2


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    p = add(sub, "ingest", "chunk, embed and upsert a Docusaurus docs folder",
             "Read a Docusaurus docs folder (markdown and MDX), chunk it along headings, embed the chunks and bring "
             "the collection in line with it: changed files are replaced, deleted ones removed, unchanged ones "
             "skipped.",
             "  python -m retrieval_lib ingest                 # the sample book\n"
             "  python -m retrieval_lib ingest ~/book/docs --collection mybook --base-url https://book.example\n"
             "  python -m retrieval_lib ingest --recreate      # rebuild with the configured model", common)
    p.add_argument("docs_dir", nargs="?", type=Path, help="docs folder (default: the sample book)")
    p.add_argument("--collection", help="collection name (default QDRANT_COLLECTION_NAME)")
    p.add_argument("--base-url", default=None,
                   help="site URL the routes hang off (default https://physical-ai-book.example)")
    p.add_argument("--recreate", action="store_true", help="drop and rebuild the collection (only one it built)")
    p.add_argument("--allow-foreign-collection", action="store_true",
                   help="write into a collection another pipeline built (refused by default: it is the team's data)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.config import load_settings
    from retrieval_lib.ingest import ingest_from_settings
    from retrieval_lib.stores.metadata import sync_from_settings

    settings = load_settings()
    summary = ingest_from_settings(
        docs_dir=args.docs_dir, collection=args.collection, base_url=args.base_url,
        recreate=args.recreate, progress=not args.quiet, settings=settings,
        allow_foreign=args.allow_foreign_collection,
    )
    # the metadata rows (seed 003) follow the points; a full reconcile, so a killed run converges when re-run
    rows = sync_from_settings(settings, args.collection)
    if args.json:
        print_json({**summary.as_dict(), "metadata": rows.as_dict()})
    else:
        print(summary.line())
        print(rows.line())
    for warning in summary.warnings + rows.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0
