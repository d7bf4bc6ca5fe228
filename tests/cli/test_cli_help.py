"""The command line explains itself: a bare call lists the commands, help has examples, typos get suggestions."""

from __future__ import annotations

import subprocess
import sys

import pytest

from retrieval_lib.cli.main import build_parser, main
from retrieval_lib.config import PROJECT_ROOT

COMMANDS = ("search", "stats", "ingest", "run", "serve")


def test_a_bare_call_lists_the_commands_and_exits_0(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert f"    {command} " in out
    assert "exit codes:" in out


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_has_a_description_examples_and_exit_codes(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:\n  python -m retrieval_lib " + command in out
    assert "exit codes:\n  0 " in out and "\n  3 " in out
    usage_and_description = out.split("\n\n")[1]
    assert len(usage_and_description) > 30  # a sentence, not just the usage line


@pytest.mark.parametrize("argv", [["-v", "stats", "--help"], ["stats", "-v", "--help"]])
def test_verbose_is_accepted_before_or_after_the_command(argv, capsys):
    assert main(argv) == 0


def test_verbose_after_the_command_is_kept():
    assert build_parser().parse_args(["stats", "-v"]).verbose is True
    assert build_parser().parse_args(["-v", "stats"]).verbose is True
    assert build_parser().parse_args(["stats"]).verbose is False


@pytest.mark.parametrize("argv, suggestion", [
    (["search", "x", "--topk", "3"], "did you mean --top-k?"),
    (["stats", "--jsn"], "did you mean --json?"),
    (["serch", "x"], "did you mean search?"),
    (["run", "--notebok", "01"], "did you mean --notebooks?"),
])
def test_a_typo_gets_one_line_with_the_closest_option(argv, suggestion, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and suggestion in err


def test_an_option_of_another_command_is_not_suggested(capsys):
    assert main(["stats", "--bogus"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_outside_the_virtual_environment_one_line_says_what_to_do():
    # -S: no site-packages, like a system python3 without the workbook's dependencies
    proc = subprocess.run([sys.executable, "-S", "-m", "retrieval_lib", "stats"], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: this Python (")
    assert "make setup" in proc.stderr and "source .venv/bin/activate" in proc.stderr
