"""Command line: ``python -m retrieval_lib {search,stats,ingest,run}``.

Exit codes (also in the README):

== ==================================================================
0  success (an empty search result is a success)
1  ``run``: the notebooks ran but at least one gate failed
2  invalid input or configuration (``ValidationError``, ``ConfigurationError``, ...);
   ``run``: a notebook raised an error
3  a dependency (Qdrant, Cohere) was unavailable or failing
130 interrupted (Ctrl-C)
== ==================================================================

Errors print one line on stderr, never a traceback, never a secret.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from .errors import RetrievalError

__all__ = ["main"]


def _print_json(data: object) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def _cmd_search(args: argparse.Namespace) -> int:
    from .config import load_settings
    from .search import Retriever, validate_params, validate_query

    settings = load_settings()
    # Bad input is refused before the model loads or a connection opens.
    validate_query(args.query, settings.query_max_chars)
    validate_params(args.top_k, args.threshold)
    with Retriever.from_settings(settings) as retriever:
        response = retriever.search(args.query, top_k=args.top_k, similarity_threshold=args.threshold,
                                    source_prefix=args.source_prefix, section=args.section)
    if args.json:
        _print_json(response.model_dump(mode="json"))
        return 0
    for warning in response.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if response.is_empty:
        print(f"No results for {response.query_text!r} (threshold {response.similarity_threshold:g}).")
        return 0
    print(f"{response.total_results} results for {response.query_text!r} "
          f"({response.execution_time_ms:.0f} ms: embed {response.embed_ms:.0f}, search {response.search_ms:.0f})")
    for rank, r in enumerate(response.results, 1):
        print(f"\n{rank}. {r.similarity_score:.3f}  {r.source_file}  §{r.section_title}")
        print(f"   {r.source_url}")
        preview = " ".join((r.content or "").split())
        print(f"   {preview[:200]}{'…' if len(preview) > 200 else ''}")
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    from .config import load_settings
    from .store import VectorStore

    settings = load_settings()
    with VectorStore.open(settings) as store:
        stats = store.stats(settings.collection_name)
    if args.json:
        _print_json(stats.model_dump(mode="json"))
        return 0
    for key, value in stats.model_dump(exclude={"unreported", "warnings"}).items():
        print(f"{key:22} {value}")
    for item in stats.unreported:
        print(f"{item.field:22} not reported: {item.reason}")
    for warning in stats.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _cmd_ingest(args: argparse.Namespace) -> int:
    from .ingest import ingest_from_settings

    summary = ingest_from_settings(
        docs_dir=args.docs_dir, collection=args.collection, base_url=args.base_url,
        recreate=args.recreate, progress=not args.quiet,
    )
    if args.json:
        _print_json(summary.as_dict())
    else:
        print(summary.line())
    for warning in summary.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from .runner import run_workbook
    from .summary import terminal_lines

    result = run_workbook(params_file=args.params, notebooks=args.notebooks, out_dir=args.out,
                          progress=not (args.quiet or args.json))
    summary = json.loads((result.run_dir / "summary.json").read_text(encoding="utf-8"))
    if args.json:
        _print_json({**summary, "exit_code": result.exit_code, "index_html": str(result.index_html)})
        return result.exit_code
    lines = terminal_lines(summary, quiet=args.quiet)
    # the verdict and what went wrong go to stderr when something did; the report's path is the output
    print("\n".join(lines), file=sys.stderr if result.exit_code else sys.stdout)
    print(f"report: {result.index_html}")
    return result.exit_code


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one stderr line (argparse's default prints the whole usage block first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="python -m retrieval_lib",
                                     description="Validate Qdrant retrieval before an LLM goes on top.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log retries and progress details")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("search", help="run one query and show ranked chunks")
    p.add_argument("query")
    p.add_argument("--top-k", type=int, default=5, help="results wanted, 1-20 (default 5)")
    p.add_argument("--threshold", type=float, default=0.0, help="minimum similarity 0-1 (default 0)")
    p.add_argument("--source-prefix", help="only chunks whose source path or URL starts with this")
    p.add_argument("--section", help="only chunks whose section title is exactly this")
    p.add_argument("--json", action="store_true", help="print the SearchResponse as JSON")
    p.set_defaults(func=_cmd_search)

    p = sub.add_parser("stats", help="collection statistics")
    p.add_argument("--json", action="store_true", help="print CollectionStats as JSON")
    p.set_defaults(func=_cmd_stats)

    p = sub.add_parser("ingest", help="chunk, embed and upsert a Docusaurus docs folder")
    p.add_argument("docs_dir", nargs="?", type=Path, help="docs folder (default: the sample book)")
    p.add_argument("--collection", help="collection name (default QDRANT_COLLECTION_NAME)")
    p.add_argument("--base-url", default=None, help="site URL the routes hang off (default https://physical-ai-book.example)")
    p.add_argument("--recreate", action="store_true", help="drop and rebuild the collection")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_ingest)

    p = sub.add_parser("run", help="run the notebooks with papermill into a new report folder")
    p.add_argument("--params", type=Path, help="parameter file (default params/demo.yaml)")
    p.add_argument("--notebooks", help="comma-separated numbers or names, e.g. 01,03 (default all)")
    p.add_argument("--out", type=Path, help="parent folder of the run folder (default outputs/)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar; print the verdict line only")
    p.add_argument("--json", action="store_true", help="print the run's summary as JSON")
    p.set_defaults(func=_cmd_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # the parser already printed its one-line usage error (or the help)
        return 2 if exc.code not in (0, None) else 0
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except RetrievalError as err:
        print(f"error: {err.message}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
