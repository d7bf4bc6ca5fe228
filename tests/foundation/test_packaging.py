"""pyproject.toml declares what the package imports, and requirements.txt pins every declared dependency."""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from test_layout import MODULES, _imports

from retrieval_lib.config import PROJECT_ROOT


def _name(requirement: str) -> str:
    """A requirement's distribution name, normalised (``psycopg[binary]>=3.1`` -> ``psycopg``)."""
    return re.split(r"[=<>!~\[ ;]", requirement.strip())[0].lower().replace("_", "-")


def declared() -> set[str]:
    """The distributions ``[project] dependencies`` names."""
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {_name(d) for d in project["dependencies"]}


def pinned() -> set[str]:
    """The distributions requirements.txt pins."""
    lines = (PROJECT_ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return {_name(line.split("#")[0]) for line in lines if line.split("#")[0].strip() and not line.startswith("-")}


def test_every_runtime_import_of_the_package_is_a_declared_dependency():
    owners, names = packages_distributions(), declared()
    missing = set()
    for module in MODULES:
        for name, line in _imports(module):
            top = name.split(".")[0]
            if not top or top in ("retrieval_lib", "__future__") or top in sys.stdlib_module_names:
                continue
            dists = {d.lower().replace("_", "-") for d in owners.get(top, [top])}
            if not dists & names:
                missing.add(f"{top} ({', '.join(sorted(dists))}; {module.relative_to(PROJECT_ROOT)}:{line})")
    assert not missing, f"imported but not in pyproject.toml's dependencies: {sorted(missing)}"


def test_every_declared_dependency_is_pinned():
    assert declared() - pinned() == set(), "pin these in requirements.txt (make setup installs exactly its pins)"
