"""The notebook registry describes every notebook once, and the notebooks on disk agree with it."""

from __future__ import annotations

import papermill as pm
import pytest

from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.errors import ValidationError
from retrieval_lib.workbook import NOTEBOOKS, notebook_spec, open_run
from retrieval_lib.workbook.registry import spec_for_stem

ON_DISK = sorted(p.stem for p in (PROJECT_ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_every_notebook_on_disk_has_a_record_and_every_record_a_notebook():
    assert sorted(s.stem for s in NOTEBOOKS) == ON_DISK


def test_numbers_and_names_are_unique():
    assert len({s.number for s in NOTEBOOKS}) == len(NOTEBOOKS)
    assert len({s.name for s in NOTEBOOKS}) == len(NOTEBOOKS)


@pytest.mark.parametrize("spec", NOTEBOOKS, ids=lambda s: s.stem)
def test_a_record_names_the_parameters_its_notebook_declares(spec):
    declared = list(pm.inspect_notebook(str(PROJECT_ROOT / "notebooks" / f"{spec.stem}.ipynb")))
    assert list(spec.params) == declared


@pytest.mark.parametrize("spec", NOTEBOOKS, ids=lambda s: s.stem)
def test_a_record_names_its_check_one_hop_away(spec):
    """Issue 31: a notebook's check is the module named like it in its family's folder, with the one entry."""
    import importlib
    import inspect

    module = importlib.import_module(spec.module)
    assert module.__name__ == f"retrieval_lib.checks.{spec.family}.{spec.name}"
    declared = set(inspect.signature(module.run).parameters) - {"ctx"}
    assert set(spec.params) - {"run_dir"} <= declared, "run() takes every parameter of its notebook"


@pytest.mark.parametrize("spec", [s for s in NOTEBOOKS if s.command], ids=lambda s: s.stem)
def test_a_record_names_a_command_the_cli_has(spec):
    from retrieval_lib.cli.main import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert spec.command in commands


def test_a_notebook_is_found_by_name_and_an_unknown_name_is_a_clear_error():
    assert notebook_spec("compare").stem.endswith("_compare")
    assert spec_for_stem("99_nothing") is None
    with pytest.raises(ValidationError, match="no notebook is called 'nothing'"):
        notebook_spec("nothing")


def test_open_run_takes_the_question_and_codes_from_the_registry(tmp_path):
    spec = NOTEBOOKS[0]
    run = open_run(spec.stem, tmp_path)
    try:
        assert run.report.title == spec.question and run.report.specification == list(spec.codes)
    finally:
        run.close()


def test_open_run_refuses_an_unregistered_notebook_without_a_title(tmp_path):
    with pytest.raises(ValidationError, match="not in the registry"):
        open_run("99_unknown", tmp_path)
    run = open_run("99_unknown", tmp_path, title="a scratch notebook")
    assert run.report.title == "a scratch notebook"
    run.close()


@pytest.mark.parametrize("argv, key", [
    (["check", "chunk_quality", "--max-unseen-share", "abc"], "max_unseen_share"),
    (["probe", "--sample", "-3"], "contract_sample"),
    (["check", "reachability", "--reach-top-k", "[1, 2]"], "reach_top_k"),
])
def test_a_check_option_of_the_wrong_type_is_one_line_naming_it_before_anything_opens(argv, key, capsys):
    """`check NAME --PARAMETER VALUE` is validated as a profile's value would be: exit 2, one line, no traceback,
    and nothing is opened (the run would otherwise fail at the gate, after the whole measurement)."""
    from retrieval_lib.cli.main import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: the command line: ") and key in err and len(err.splitlines()) == 1
    assert "Traceback" not in err
