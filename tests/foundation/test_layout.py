"""The shape of the project stays what the design says it is.

These guard the rules a reviewer would otherwise have to re-check by hand on
every change: stored notebook outputs that compare equal on any CPU, modules
small enough to read, thin notebooks, dependencies that only point down,
every third-party import declared, and the end-to-end runs in the slow tier.
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


def _module_name(module: Path) -> str:
    parts = list(module.relative_to(PROJECT_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines inside ``if TYPE_CHECKING:`` blocks: those imports never run, so they make no loop."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _imports(module: Path) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import in ``module``, inside functions too, relative ones resolved,
    ``if TYPE_CHECKING:`` blocks excepted. ``from package import name`` counts ``package.name`` when that is a
    module of ours."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    name = _module_name(module)
    package = name if module.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append((target, node.lineno))
            out += [(f"{target}.{a.name}", node.lineno) for a in node.names if f"{target}.{a.name}" in _NAMES]
    return out


_NAMES = {_module_name(m) for m in MODULES}


def _graph() -> dict[str, set[str]]:
    return {_module_name(m): {t for t, _ in _imports(m) if t in _NAMES and t != _module_name(m)} for m in MODULES}


#: The layers, lowest first. A module imports its own family or a lower layer, never one beside or above it.
#: The foundation is flat (its modules import each other); ``collection`` reads a store through payload roles;
#: ``search`` joins an embedder and a collection, so it sits right above them; the package's own face and
#: ``__main__`` sit on top, above the command line.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("config", "errors", "models", "validation", "params", "percentile", "files"),
    ("embedding", "stores"),
    ("collection",),
    ("book",),
    ("search",),
    ("retrievers",),
    ("workbook", "judging", "ingest", "drafting"),
    ("checks",),
    ("service",),
    ("cli",),
    ("__main__", ""),
)
FOUNDATION = set(LAYERS[0])
_RANK = {family: rank for rank, families in enumerate(LAYERS) for family in families}


def _family_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def find_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    loops: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                loops.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return loops


def test_the_loop_finder_finds_a_loop_through_a_function_level_import(tmp_path):
    assert find_loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_loops({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_has_no_loop():
    graph = _graph()
    # a family's face (its __init__) imports the family's modules, so a module importing its own face is a loop
    assert not find_loops(graph), f"import loops (imports inside functions count): {find_loops(graph)}"


def test_every_family_is_placed_in_the_layers():
    families = {_family_of(_module_name(m)) for m in MODULES}
    assert families <= set(_RANK), f"place these in LAYERS: {sorted(families - set(_RANK))}"


def test_imports_point_down_the_layers():
    wrong = []
    for module in MODULES:
        name = _module_name(module)
        family = _family_of(name)
        for target, line in _imports(module):
            if not target.startswith("retrieval_lib.") or target not in _NAMES:
                continue
            other = _family_of(target)
            if other == family or (family in FOUNDATION and other in FOUNDATION):
                continue
            if _RANK[other] >= _RANK[family]:
                wrong.append(f"{module.relative_to(PROJECT_ROOT)}:{line} ({family or 'the package face'}) "
                             f"imports {target} ({other})")
    assert not wrong, "imports that point up or sideways:\n" + "\n".join(wrong)


def test_the_top_of_the_package_stays_small():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, f"{len(top)} modules at the top of retrieval_lib: {top}; put them in a family folder"


def _faces() -> set[str]:
    """What a notebook or a benchmark may import: the package, the foundation, each family's face."""
    return ({"retrieval_lib", "retrieval_lib.checks.service.api"}
            | {f"retrieval_lib.{f}" for f in FOUNDATION | {"search"}}
            | {f"retrieval_lib.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
            # the checks' families (checks/retrieval/...): a notebook imports its check from its family's face
            | {f"retrieval_lib.checks.{p.parent.name}" for p in (PACKAGE / "checks").glob("*/__init__.py")})


def _notebook_imports(nb: Path) -> set[str]:
    code = "\n".join("".join(c["source"]) for c in _cells(nb) if c["cell_type"] == "code")
    return set(re.findall(r"^\s*(?:from|import) (retrieval_lib[\w.]*)", code, re.M))


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_import_only_the_faces(nb):
    inner = _notebook_imports(nb) - _faces()
    assert not inner, f"{nb.name} reaches past a family's face: {sorted(inner)}"


def test_benchmarks_import_only_the_faces():
    inner = set()
    for script in sorted((PROJECT_ROOT / "benchmarks").glob("*.py")):
        text = script.read_text(encoding="utf-8")
        inner |= {f"{script.name}: {m}" for m in re.findall(r"^\s*(?:from|import) (retrieval_lib[\w.]*)", text, re.M)
                  if m not in _faces()}
    assert not inner, f"benchmarks reach past a family's face: {sorted(inner)}"


def test_every_family_face_declares_its_contract():
    missing = [str(p.relative_to(PROJECT_ROOT)) for p in PACKAGE.rglob("__init__.py")
               if "sample_book" not in p.parts and "__all__" not in p.read_text(encoding="utf-8")]
    assert not missing, f"faces without __all__: {missing}"


NUMBER_LITERAL = re.compile(r"^(0[1-9]|1[0-9])(_[a-z_]*)?$")


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string constant that is code, not a docstring."""
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    # the "16" of f"{label:16}" is a width, not a notebook
    docs |= {id(c) for n in ast.walk(tree) if isinstance(n, ast.FormattedValue) and n.format_spec
             for c in ast.walk(n.format_spec)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_the_number_finder_sees_a_literal_and_skips_a_docstring():
    tree = ast.parse('"""e.g. ``"03_source_coverage"``."""\nkey = "01"\nok = f"{x:16}"\nif s.startswith("14_"): pass\n')
    assert [line for line, text in _strings(tree) if NUMBER_LITERAL.match(text)] == [2, 4]


def test_notebook_numbers_are_written_only_in_the_registry():
    registry = PACKAGE / "workbook" / "registry.py"
    found = [f"{module.relative_to(PROJECT_ROOT)}:{line}: {text!r}" for module in MODULES if module != registry
             for line, text in _strings(ast.parse(module.read_text(encoding="utf-8"))) if NUMBER_LITERAL.match(text)]
    assert not found, "a notebook's number outside the registry:\n" + "\n".join(found)


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


def test_every_module_of_tests_whole_is_in_the_slow_tier():
    """tests/whole holds the runs that cross every family; `make test` leaves them to `make test-slow` (CI runs both),
    so a module added there without the mark would silently lengthen the tier a change is tried against."""
    unmarked = [p.name for p in sorted((PROJECT_ROOT / "tests" / "whole").glob("test_*.py"))
                if not re.search(r"^pytestmark = .*pytest\.mark\.slow\b", p.read_text(encoding="utf-8"), re.M)]
    assert unmarked == []
