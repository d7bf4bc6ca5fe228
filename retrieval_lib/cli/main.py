"""Command line: ``python -m retrieval_lib {search,stats,ingest,run,serve,...}``; more commands live in
:mod:`retrieval_lib.cli.commands`, one module each.

Exit codes: :data:`EXIT_CODES`, which every command's ``--help`` ends with (also in docs/cli.md); 2 is a
:class:`~retrieval_lib.errors.ValidationError` or ``ConfigurationError``, 3 a dependency's error, each error's own
``exit_code``. Errors print one line on stderr, never a traceback, never a secret.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from retrieval_lib.errors import RetrievalError

__all__ = ["main"]


#: What each exit code means.
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

    # every command is a module of retrieval_lib.cli.commands
    from retrieval_lib.cli.commands import command_modules

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
