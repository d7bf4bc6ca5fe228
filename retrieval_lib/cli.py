"""Command line: ``python -m retrieval_lib {search,stats,ingest,run,serve,...}``; more commands live in
:mod:`retrieval_lib.commands`, one module each.

Exit codes (also in the README):

== ==================================================================
0  success (an empty search result is a success)
1  ``run`` and the check commands (``probe``, ``reach``, ...): at least one gate failed
2  invalid input or configuration (``ValidationError``, ``ConfigurationError``, ...);
   ``run``: a notebook raised an error
3  a dependency (Qdrant, Cohere) was unavailable or failing
130 interrupted (Ctrl-C)
== ==================================================================

Errors print one line on stderr, never a traceback, never a secret.
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from .errors import RetrievalError
from .models import CollectionStats

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
    # an empty answer's last warning says why it is empty: that goes with the answer, the rest to stderr
    reason = response.warnings[-1] if response.is_empty and response.warnings else None
    for warning in response.warnings:
        if warning is not reason:
            print(f"warning: {warning}", file=sys.stderr)
    if response.is_empty:
        print(f"No results for {response.query_text!r}: {reason or 'no matching chunk'}.")
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
    print("\n".join(stats_lines(stats)))
    for warning in stats.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def stats_lines(stats: CollectionStats) -> list[str]:
    """CollectionStats as a table a person reads: labels, MiB, the model(s), points per source file."""
    from .summary import format_value

    why = {u.field: u.reason for u in stats.unreported}

    def shown(field: str, value: object, unit: str = "") -> str:
        return f"not reported ({why[field]})" if value is None and field in why else format_value(value, unit)

    models = ", ".join(f"{m} ({n:,} points)" for m, n in (stats.models or {}).items()) or shown("models", None)
    rows = [
        ("collection", stats.collection), ("location", stats.location),
        ("points", shown("vector_count", stats.vector_count)), ("dimension", shown("dimensions", stats.dimensions)),
        ("distance", shown("distance", stats.distance)), ("embedding model", models),
        ("source files", shown("source_files", stats.source_files)),
        ("index status", shown("index_status", stats.index_status)),
        ("segments", shown("segments_count", stats.segments_count)),
        ("size on disk", shown("disk_data_size_bytes", stats.disk_data_size_bytes, "bytes")),
        ("size in memory", shown("ram_data_size_bytes", stats.ram_data_size_bytes, "bytes")),
        ("indexed fields", format_value(stats.indexed_fields)),
    ]
    lines = [f"{label:16} {value}" for label, value in rows]
    if stats.points_per_source_file:
        lines += ["", "points per source file:"]
        lines += [f"  {n:5,}  {path}" for path, n in stats.points_per_source_file.items()]
    return lines


def _cmd_ingest(args: argparse.Namespace) -> int:
    from .config import load_settings
    from .ingest import ingest_from_settings
    from .service.metadata import sync_from_settings

    settings = load_settings()
    summary = ingest_from_settings(
        docs_dir=args.docs_dir, collection=args.collection, base_url=args.base_url,
        recreate=args.recreate, progress=not args.quiet, settings=settings,
    )
    # the metadata rows (seed 003) follow the points; a full reconcile, so a killed run converges when re-run
    rows = sync_from_settings(settings, args.collection)
    if args.json:
        _print_json({**summary.as_dict(), "metadata": rows.as_dict()})
    else:
        print(summary.line())
        print(rows.line())
    for warning in summary.warnings + rows.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from .commands import plan
    from .runner import run_workbook
    from .summary import terminal_lines

    if args.dry_run:
        return plan.run(args)
    result = run_workbook(params_file=args.params, notebooks=args.notebooks, out_dir=args.out,
                          progress=not (args.quiet or args.json), prefetch=plan.prefetch_queries)
    summary = json.loads((result.run_dir / "summary.json").read_text(encoding="utf-8"))
    if args.json:
        _print_json({**summary, "exit_code": result.exit_code, "index_html": str(result.index_html)})
        return result.exit_code
    lines = terminal_lines(summary, quiet=args.quiet)
    # the verdict and what went wrong go to stderr when something did; the report's path is the output
    print("\n".join(lines), file=sys.stderr if result.exit_code else sys.stdout)
    print(f"report: {result.index_html}")
    return result.exit_code


def _cmd_serve(args: argparse.Namespace) -> int:
    from .config import load_settings
    from .service.app import ServiceOptions
    from .service.server import serve

    serve(load_settings(), host=args.host, port=args.port, log_file=args.log_file,
          options=ServiceOptions(query_max_chars=args.max_query_chars, max_body_bytes=args.max_body_bytes))
    return 0


EXIT_CODES = """exit codes:
  0    success (an empty search result is a success)
  1    run and the check commands: at least one gate failed
  2    invalid input or configuration; run: a notebook raised an error
  3    Qdrant or the embedding service was unavailable or failing
  130  interrupted (Ctrl-C)"""


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one stderr line (argparse's default prints the whole usage block first),
    with the closest known option or command suggested for a typo."""

    known: list[str] = []  # every option and command of the whole CLI, set by build_parser

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}{self._suggestion(message)} (see `{self.prog} --help`)\n")

    def _suggestion(self, message: str) -> str:
        words = re.findall(r"(?:unrecognized arguments: |invalid choice: ')(.+?)(?:'|$)", message)
        for word in (w for group in words for w in group.split()):
            close = difflib.get_close_matches(word.split("=")[0], self.known, n=1, cutoff=0.7)
            if close:
                return f"; did you mean {close[0]}?"
        return ""


def _add(sub: Any, name: str, summary: str, description: str, examples: str,
         common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    return sub.add_parser(
        name, help=summary, description=description, parents=[common],
        epilog=f"examples:\n{examples}\n\n{EXIT_CODES}", formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def build_parser() -> argparse.ArgumentParser:
    # -v works before or after the command: each subcommand shares it, without resetting the top-level one
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="log retries and progress details")
    parser = _OneLineParser(
        prog="python -m retrieval_lib", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Validate Qdrant retrieval before an LLM goes on top.",
        epilog="Run `python -m retrieval_lib COMMAND --help` for a command's options and examples.\n\n" + EXIT_CODES,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log retries and progress details")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineParser)

    p = _add(sub, "search", "run one query and show ranked chunks",
             "Embed a question as a search query and print the best chunks with their source, section and score.",
             '  python -m retrieval_lib search "What is ROS2?"\n'
             '  python -m retrieval_lib search "Gazebo simulation" --top-k 10 --source-prefix module-02-simulation/\n'
             '  python -m retrieval_lib search "What is ROS2?" --threshold 0.5 --json', common)
    p.add_argument("query")
    p.add_argument("--top-k", type=int, default=5, help="results wanted, 1-20 (default 5)")
    p.add_argument("--threshold", type=float, default=0.0, help="minimum similarity 0-1 (default 0)")
    p.add_argument("--source-prefix", help="only chunks whose source path or URL starts with this")
    p.add_argument("--section", help="only chunks whose section title is exactly this")
    p.add_argument("--json", action="store_true", help="print the SearchResponse as JSON")
    p.set_defaults(func=_cmd_search)

    p = _add(sub, "stats", "collection statistics",
             "Points, dimension, models, points per source file and size of the configured collection.",
             "  python -m retrieval_lib stats\n  python -m retrieval_lib stats --json", common)
    p.add_argument("--json", action="store_true", help="print CollectionStats as JSON")
    p.set_defaults(func=_cmd_stats)

    p = _add(sub, "ingest", "chunk, embed and upsert a Docusaurus docs folder",
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
    p.add_argument("--recreate", action="store_true", help="drop and rebuild the collection")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_ingest)

    p = _add(sub, "run", "run the notebooks with papermill into a new report folder",
             "Execute the numbered notebooks headlessly with a parameter profile; write a new folder under outputs/ "
             "with an index.html, and print the verdict, the failed gates and the report's path.",
             "  python -m retrieval_lib run\n"
             "  python -m retrieval_lib run --params params/cloud.yaml --notebooks 01,05\n"
             "  python -m retrieval_lib run --quiet            # the verdict line only\n"
             "  python -m retrieval_lib run --dry-run          # the embed calls each notebook will make", common)
    p.add_argument("--params", type=Path, help="parameter file (default params/demo.yaml)")
    p.add_argument("--notebooks", help="comma-separated numbers or names, e.g. 01,03 (default all)")
    p.add_argument("--out", type=Path, help="parent folder of the run folder (default outputs/)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar; print the verdict line only")
    p.add_argument("--json", action="store_true", help="print the run's summary as JSON (with --dry-run: the plan)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the embed calls and texts each notebook will make, and run nothing")
    p.set_defaults(func=_cmd_run)

    p = _add(sub, "serve", "serve the seed-003 retrieval API (POST /search, GET /health)",
             "Load the model, open the store and the metadata database, and answer HTTP with uvicorn until "
             "interrupted. One JSON line per request goes to the query log (stderr, or --log-file).",
             "  python -m retrieval_lib serve\n"
             "  python -m retrieval_lib serve --port 8080 --log-file queries.jsonl\n"
             "  curl -s localhost:8000/search -H 'content-type: application/json' -d '{\"query\": \"What is ROS2?\"}'",
             common)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--log-file", type=Path, help="append the query log here instead of stderr")
    p.add_argument("--max-query-chars", type=int, default=500, help="longest query accepted (default 500)")
    p.add_argument("--max-body-bytes", type=int, default=65536,
                   help="largest request body; a larger one gets 413 unread (default 65536)")
    p.set_defaults(func=_cmd_serve)

    # the checks' own commands (probe, reach, chunks, compare, ...), one module each
    from .commands import command_modules

    for module in command_modules():
        module.register(sub, _add, common)

    top = {o for action in parser._actions for o in action.option_strings}
    _OneLineParser.known = sorted(top | set(sub.choices))
    _OPTIONS.clear()
    _OPTIONS.update({name: sorted(top | {o for a in sp._actions for o in a.option_strings})
                     for name, sp in sub.choices.items()})
    return parser


#: Each command's options, so a typo is matched against the options of the command it was typed for.
_OPTIONS: dict[str, list[str]] = {}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:  # a bare invocation shows what there is to do
        parser.print_help()
        return 0
    command = next((a for a in argv if a in _OPTIONS), None)
    if command:
        _OneLineParser.known = _OPTIONS[command]
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # the parser already printed its one-line usage error (or the help)
        return 2 if exc.code not in (0, None) else 0
    if args.command is None:
        parser.print_help()
        return 0
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
