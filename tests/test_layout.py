"""The shape of the project stays what the design says it is.

These guard the rules a reviewer would otherwise have to re-check by hand on
every change: stored notebook outputs that compare equal on any CPU, modules
small enough to read, thin notebooks, dependencies that only point down, and
every third-party import declared.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest

from retrieval_lib.config import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "retrieval_lib"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "sample_book" not in p.parts)
NOTEBOOKS = sorted((PROJECT_ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MAX_MODULE_LINES = 400
MAX_NOTEBOOK_CODE_LINES = 80
# A float printed with 7 or more decimals carries digits that depend on the CPU's floating-point path
# (torch picks other kernels on other CPUs): nbval would compare them and fail on another machine.
LONG_FLOAT = re.compile(r"\d\.\d{7,}")


def _cells(nb: Path) -> list[dict]:
    return json.loads(nb.read_text(encoding="utf-8"))["cells"]


def code_lines(nb: Path) -> int:
    """Non-blank lines across a notebook's code cells (the parameters cell included)."""
    return sum(1 for c in _cells(nb) if c["cell_type"] == "code"
               for line in "".join(c["source"]).splitlines() if line.strip())


def long_floats(nb: Path) -> list[str]:
    """``cell N: text`` for every stored output that holds a float with 7+ decimals."""
    found = []
    for i, cell in enumerate(_cells(nb)):
        text = json.dumps(cell.get("outputs", []), ensure_ascii=False)
        # images are base64, not numbers a person reads
        text = re.sub(r'"image/[a-z+]+": "[^"]*"', "", text)
        for match in LONG_FLOAT.finditer(text):
            found.append(f"cell {i}: …{text[max(0, match.start() - 30):match.end() + 10]}…")
    return found


def test_the_long_float_detector_fires_on_a_machine_dependent_score(tmp_path):
    nb = tmp_path / "01_x.ipynb"
    nb.write_text(json.dumps({"cells": [
        {"cell_type": "code", "source": ["x"], "outputs": [
            {"output_type": "stream", "name": "stdout", "text": ["| raw_score | 0.8148189663380712 |\n"]}]},
        {"cell_type": "code", "source": ["y"], "outputs": [
            {"output_type": "stream", "name": "stdout", "text": ["0.815 and 1e-06 and 2026.11\n"]}]},
    ]}))
    assert [f.split(":")[0] for f in long_floats(nb)] == ["cell 0"]


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_outputs_hold_no_machine_dependent_digits(nb):
    assert not long_floats(nb), f"{nb.name}: round what is shown to 3-4 decimals: {long_floats(nb)[:3]}"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_are_thin(nb):
    lines = code_lines(nb)
    assert lines <= MAX_NOTEBOOK_CODE_LINES, f"{nb.name} holds {lines} code lines; move logic into retrieval_lib"
    code = "\n".join("".join(c["source"]) for c in _cells(nb) if c["cell_type"] == "code")
    assert not re.search(r"^\s*def ", code, re.M), f"{nb.name} defines a function: it belongs in the package"
    assert ".kind" not in code, f"{nb.name} branches on the backend; the package owns backend differences"


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_are_small_enough_to_read(module):
    lines = len(module.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{module.relative_to(PROJECT_ROOT)} has {lines} lines; split it by concern"


def _imports(module: Path) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import in ``module``, relative ones resolved."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    package = ".".join(module.relative_to(PROJECT_ROOT).with_suffix("").parts[:-1])
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.append((name, node.lineno))
            if node.level and not node.module:  # "from . import x": x are modules of the package
                out += [(f"{name}.{a.name}", node.lineno) for a in node.names]
    return out


#: Entry points: they dispatch to every family (``ingest``, ``run``, later ``serve``), so they sit above all.
ENTRY_POINTS = {"cli.py", "__main__.py"}


def _family(module: Path) -> str:
    parts = module.relative_to(PACKAGE).parts
    if (len(parts) == 1 and parts[0] in ENTRY_POINTS) or parts[0] == "commands":
        return "entry"
    return parts[0] if len(parts) > 1 else "core"


def test_core_never_imports_a_family_and_families_never_import_each_other():
    # core knows nothing of checks, ingest or the service; checks use the core; nothing imports upward or sideways
    allowed = {"core": {"core"}, "checks": {"core", "checks"}, "ingest": {"core", "ingest"},
               "service": {"core", "service"}, "entry": {"core", "checks", "ingest", "service", "entry"}}
    wrong = []
    for module in MODULES:
        family = _family(module)
        for name, line in _imports(module):
            if not name.startswith("retrieval_lib."):
                continue
            target = name.split(".")[1]
            target_family = "entry" if target == "commands" else target if (PACKAGE / target).is_dir() else "core"
            if target_family not in allowed.get(family, {family, "core"}):
                wrong.append(f"{module.relative_to(PROJECT_ROOT)}:{line} ({family}) imports {name}")
    assert not wrong, "\n".join(wrong)


def _declared_distributions() -> set[str]:
    names = set()
    for line in (PROJECT_ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            names.add(re.split(r"[=<>!~\[ ]", line)[0].lower().replace("_", "-"))
    return names


def test_every_third_party_import_of_the_package_is_declared():
    from importlib.metadata import packages_distributions

    owners = packages_distributions()
    declared = _declared_distributions()
    missing = set()
    for module in MODULES:
        for name, _ in _imports(module):
            top = name.split(".")[0]
            if not top or top == "retrieval_lib" or top in sys.stdlib_module_names or top == "__future__":
                continue
            dists = {d.lower().replace("_", "-") for d in owners.get(top, [top])}
            if not dists & declared:
                missing.add(f"{top} (from {', '.join(sorted(dists))})")
    assert not missing, f"imported but not pinned in requirements.txt: {sorted(missing)}"
