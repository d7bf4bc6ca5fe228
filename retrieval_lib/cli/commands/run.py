"""``python -m retrieval_lib run``: the notebooks with papermill into a new report folder."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from retrieval_lib.cli.commands import print_json

#: Place in ``--help``: the everyday commands first.
ORDER = 3


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    p = add(sub, "run", "run the notebooks with papermill into a new report folder",
             "Execute the numbered notebooks headlessly with a parameter profile; write a new folder under outputs/ "
             "with an index.html, and print the verdict, the failed gates and the report's path.",
             "  python -m retrieval_lib run\n"
             "  python -m retrieval_lib run --params params/cloud.yaml --notebooks 01,05\n"
             "  python -m retrieval_lib run --quiet            # the verdict line only\n"
             "  python -m retrieval_lib run --dry-run          # the embed calls each notebook will make", common)
    p.add_argument("--params", type=Path, help="parameter file (default params/demo.yaml)")
    p.add_argument("--notebooks", help="comma-separated numbers or names, e.g. 01,03 (default all)")
    p.add_argument("--out", type=Path, help="parent folder of the run folder (default: the project's outputs/, "
                                             "wherever the command runs)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar; print the verdict line only")
    p.add_argument("--json", action="store_true", help="print the run's summary as JSON (with --dry-run: the plan)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the embed calls and texts each notebook will make, and run nothing")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.cli.commands import plan
    from retrieval_lib.workbook.runner import run_workbook
    from retrieval_lib.workbook.summary import terminal_lines

    if args.dry_run:
        return plan.run(args)
    result = run_workbook(params_file=args.params, notebooks=args.notebooks, out_dir=args.out,
                          progress=not (args.quiet or args.json), prefetch=plan.prefetch_queries)
    summary = json.loads((result.run_dir / "summary.json").read_text(encoding="utf-8"))
    if args.json:
        print_json({**summary, "exit_code": result.exit_code, "index_html": str(result.index_html)})
        return result.exit_code
    lines = terminal_lines(summary, quiet=args.quiet)
    # the verdict and what went wrong go to stderr when something did; the report's path is the output
    print("\n".join(lines), file=sys.stderr if result.exit_code else sys.stdout)
    print(f"report: {result.index_html}")
    return result.exit_code
