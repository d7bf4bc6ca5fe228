"""``python -m retrieval_lib check NAME``: one notebook's check alone, from the registry, with no notebook.

Every notebook with a check (:attr:`~retrieval_lib.workbook.registry.NotebookSpec.module`) is a ``NAME`` here, and
its parameters are its options (``--max-unseen-share 0.02``), read from the profile (``--params``, default
params/demo.yaml) unless given. The check runs through the same entry its notebook calls
(:mod:`retrieval_lib.workbook.check`): the same gates, values and verdicts. Text: its findings, then its gates.
``--json``: ``{"check", "passed", "gates", "metrics", "findings"}`` and each of its tables by name, as rows.

The older command names (``chunks``, ``reach``, ``ann``, ``probe``...) are modules of their own that call
:func:`register_check` with their name and, where they had them, their older option names.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from retrieval_lib.workbook.registry import NOTEBOOKS, NotebookSpec

#: Place in ``--help``: after the everyday commands.
ORDER = 5

__all__ = ["register", "register_check"]

#: A hook that adds a command's own options to its parser.
Extra = Callable[[argparse.ArgumentParser], None]
#: A hook that turns a command's own options into parameter values (``params`` is changed in place); it is given
#: the settings the check runs with.
Prepare = Callable[[argparse.Namespace, dict[str, Any], Any], None]


def _value(text: str) -> Any:
    """An option's value as YAML reads it: ``0.02`` a number, ``[a, b]`` a list, ``true`` a boolean."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _add_options(p: argparse.ArgumentParser, spec: NotebookSpec, legacy: Mapping[str, str]) -> None:
    """The common options, and one per parameter of ``spec`` (and its older names, ``legacy``: option -> key)."""
    p.add_argument("--params", type=Path, default=None, metavar="FILE",
                   help="the profile: the collection, the retriever and every parameter (default params/demo.yaml)")
    p.add_argument("--json", action="store_true", help="print the gates, metrics, findings and tables as JSON")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="keep the check's figures, tables and metrics in DIR (default: a temporary folder)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    taken = set(legacy)
    for option, key in legacy.items():
        p.add_argument(option, dest=key, type=_value, default=None, help=f"the profile's {key}")
    for key in spec.params:
        option = "--" + key.replace("_", "-")
        if key != "run_dir" and option not in taken:
            p.add_argument(option, dest=key, type=_value, default=None, metavar="VALUE",
                           help=f"overrides the profile's {key}")


def register_check(sub: Any, add: Any, common: argparse.ArgumentParser, spec: NotebookSpec, *, name: str,
                   summary: str, description: str, examples: str, legacy: Mapping[str, str] | None = None,
                   extra: Extra | None = None, prepare: Prepare | None = None) -> argparse.ArgumentParser:
    """Register the command ``name`` that runs ``spec``'s check (:func:`run_named`).

    Args:
        legacy: older option names of parameters (``{"--top-k": "ann_top_k"}``).
        extra, prepare: the command's own options, and how they become parameter values.
    """
    p = add(sub, name, summary, description, examples, common)
    _add_options(p, spec, legacy or {})
    if extra is not None:
        extra(p)
    p.set_defaults(func=lambda args: run_named(spec, args, prepare))
    return p


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    checks = [s for s in NOTEBOOKS if s.module]
    p = add(sub, "check", "run one notebook's check alone, with no notebook",
            "Run the check of one notebook of the workbook on the configured collection (or the profile's "
            "retriever), with the profile's parameters: the same gates, values and verdicts as the notebook. "
            "Each parameter is an option of its own. Checks: " + ", ".join(s.name for s in checks) + ".",
            "  python -m retrieval_lib check chunk_quality\n"
            "  python -m retrieval_lib check chunk_quality --max-unseen-share 0.02 --json\n"
            "  python -m retrieval_lib check chunk_quality --params outputs/drafts/foreign_book/profile.yaml",
            common)
    names = p.add_subparsers(dest="check", metavar="NAME", required=True)
    for spec in checks:
        register_check(names, add, common, spec, name=spec.name, summary=spec.question,
                       description=f"{spec.question} (notebook {spec.stem}; {spec.module})",
                       examples=f"  python -m retrieval_lib check {spec.name}\n"
                                f"  python -m retrieval_lib check {spec.name} --json")


def read_profile(path: Path | None) -> tuple[Any, dict[str, Any], str]:
    """The settings (the profile's collection and retriever over the environment, as a run sets them), every
    parameter (the profile's, else the default profile's, as the notebook's own cell gives) and the file read."""
    from retrieval_lib.workbook.runner import load_profile

    profile = load_profile(path)
    return profile.settings(), profile.with_defaults(), str(profile.path)


def run_named(spec: NotebookSpec, args: argparse.Namespace, prepare: Prepare | None = None) -> int:
    """Run ``spec``'s check as the CLI does; 0 its gates hold, 1 one failed (printed, or as JSON)."""
    from retrieval_lib.cli.commands import gate_exit_code, print_json
    from retrieval_lib.params import check_parameters
    from retrieval_lib.workbook.check import check_params, open_check, run_check

    settings, values, path = read_profile(args.params)
    params = check_params(spec, values, path=path)
    given = {k: getattr(args, k) for k in params if getattr(args, k, None) is not None}
    check_parameters(given, where="the command line")  # a wrong value stops here, as a profile's would
    params.update(given)
    if prepare is not None:
        prepare(args, params, settings)
    with tempfile.TemporaryDirectory(prefix=f"{spec.name}-") as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        with open_check(spec, out, settings=settings) as ctx:
            ctx.progress = not (args.quiet or args.json) and sys.stderr.isatty()
            result = run_check(spec, ctx, params)
            result.record(ctx.report, show=False)
            ctx.finish()
            report = ctx.report
        tables = {name: frame.to_dict("records") if hasattr(frame, "to_dict") else frame
                  for name, frame in result.tables().items()}
    if args.json:
        print_json({"check": spec.name, "passed": report.passed, "gates": [g.__dict__ for g in report.gates],
                    "metrics": report.metrics, "findings": report.findings, **tables})
    else:
        for line in report.findings:
            print(line)
        for gate in report.gates:
            print(gate)
    return gate_exit_code(report.gates)
