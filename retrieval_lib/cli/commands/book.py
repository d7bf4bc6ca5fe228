"""``python -m retrieval_lib book``: does the collection hold the book as it is now (notebook 16)?

The book is ``--docs DIR`` or ``--sitemap FILE|URL``, else the profile's ``book_docs`` / ``book_sitemap``; gates and
figures come from the parameter file (``params/demo.yaml`` by default, section '16 book').
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from retrieval_lib.cli.commands import profile_keys
from retrieval_lib.workbook.registry import notebook_spec

#: The notebook whose check this command runs alone.
SPEC = notebook_spec("book")
__all__ = ["register", "run"]

_KEYS = ("book_docs", "book_sitemap", "book_base_url", "book_route_base", "golden_set", "changed_max_share",
         "thin_min_coverage", "max_missing_pages", "max_gone_sources", "near_duplicate_cosine",
         "near_duplicate_top_k", "max_near_duplicate_share")


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    p = add(sub, "book", "the book against the collection: pages never ingested, gone, changed, thin, duplicates",
            "Read the book (a Docusaurus or MkDocs docs folder, or a sitemap.xml) and the collection (read-only, one "
            "scroll of source, URL, text and sequence), map every source onto a page, and list the pages never "
            "ingested, the sources gone from the book, the pages changed since the ingest, the pages ingested thin, "
            "and near-duplicate chunks with the share of top-k places they take.",
            "  python -m retrieval_lib book\n  python -m retrieval_lib book --docs ../site/docs --json\n"
            "  python -m retrieval_lib book --sitemap sitemap.xml --params params/their_book.yaml", common)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--docs", metavar="DIR", help="the book's docs folder (overrides book_docs)")
    group.add_argument("--sitemap", metavar="FILE", help="the site's sitemap.xml, a file or URL (overrides "
                                                         "book_sitemap)")
    p.add_argument("--params", default="params/demo.yaml", help="parameter file with the gates (default demo)")
    p.add_argument("--json", action="store_true", help="print the gates and the five lists as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.book import resolve_docs
    from retrieval_lib.checks import book
    from retrieval_lib.cli.commands import gate_exit_code, mapping_note, print_json
    from retrieval_lib.config import load_settings
    from retrieval_lib.search import open_collection
    from retrieval_lib.workbook.report import NotebookReport

    params = profile_keys(args.params, _KEYS, SPEC)
    docs, sitemap = resolve_docs(params["book_docs"]), params["book_sitemap"] or None
    if args.docs or args.sitemap:
        docs, sitemap = args.docs, args.sitemap
    if args.docs and not Path(resolve_docs(args.docs) or args.docs).is_dir():
        # a folder named on the command line that is not there is a typo to fix, not a finding to report
        from retrieval_lib.errors import ValidationError

        raise ValidationError(f"--docs {args.docs}: no such folder; give the book's docs folder (Docusaurus: docs/, "
                              "MkDocs: docs_dir)", field="--docs")
    settings = load_settings()
    gates = {k: params[k] for k in ("changed_max_share", "thin_min_coverage", "max_missing_pages",
                                    "max_gone_sources", "max_near_duplicate_share", "near_duplicate_cosine")}
    with open_collection(settings) as view, tempfile.TemporaryDirectory(prefix="book-") as tmp:
        if not args.json:
            mapping_note(view, settings.collection_name)
        s = book.study(view, settings.collection_name, docs=docs, sitemap=sitemap,
                       base_url=params["book_base_url"] or None, route_base=params["book_route_base"] or None,
                       golden_set=params["golden_set"], near_duplicate_cosine=float(params["near_duplicate_cosine"]),
                       near_duplicate_top_k=int(params["near_duplicate_top_k"]))
        report = NotebookReport(SPEC.stem, SPEC.question, run_dir=tmp)
        lists = book.record(report, s, **gates)
    code = gate_exit_code(report.gates)
    if args.json:
        print_json({"collection": settings.collection_name, "passed": code == 0,
                    "gates": [vars(g) for g in report.gates], "metrics": report.metrics,
                    "findings": report.findings,
                    **book.as_json(s, changed_max_share=gates["changed_max_share"],
                                   thin_min_coverage=gates["thin_min_coverage"]),
                    "exit_code": code})
        return code
    for line in report.findings:
        print(line)
    for name in book.LISTS:
        rows = lists[name]
        if rows and name in rows[0]:  # changed, thin: every ingested page with its figures, the flagged ones marked
            flagged = sum(1 for r in rows if r[name])
            print(f"\n{name}: {flagged} of {len(rows)} ingested pages (every page with its figures, worst first):")
        else:
            print(f"\n{name} ({len(rows)}):")
        for row in rows[:15]:
            print("  " + ", ".join(f"{k}={v}" for k, v in row.items() if v not in (None, "")))
    print()
    for gate in report.gates:
        print(gate)
    return code
