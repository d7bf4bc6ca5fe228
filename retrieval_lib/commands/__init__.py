"""More CLI commands, one module each, found here by name so each check brings its own command.

A command module defines::

    def register(sub, add, common) -> None:
        p = add(sub, "name", "one-line summary", "description", "  examples", common)
        p.add_argument("--json", action="store_true", help="...")
        p.set_defaults(func=run)

``add`` is :func:`retrieval_lib.cli._add` (help, examples and the exit codes in one format), and ``run(args)``
returns the exit code: 0 the gates hold, 1 a gate failed; errors raise from :mod:`retrieval_lib.errors`
(2 bad input or configuration, 3 a dependency failing), which :func:`retrieval_lib.cli.main` prints as one line.

The commands sit with :mod:`retrieval_lib.cli` above every family: they may import the core, the checks,
ingest and the service.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any

__all__ = ["command_modules", "print_json", "gate_exit_code", "profile_keys"]


def command_modules() -> list[ModuleType]:
    """Every command module of this package, in name order (modules starting with ``_`` are helpers)."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


def print_json(data: object) -> None:
    """``data`` as indented JSON on stdout (non-JSON values as their ``str``)."""
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def gate_exit_code(gates: Iterable[Any]) -> int:
    """0 when every gate passed (or there is none), 1 when at least one failed.

    Args:
        gates: :class:`retrieval_lib.report.Gate` objects or their dicts (``{"passed": bool, ...}``).
    """
    def passed(g: Any) -> bool:
        return bool(g.get("passed") if isinstance(g, dict) else g.passed)

    return 0 if all(passed(g) for g in gates) else 1


def profile_keys(path: str, keys: Iterable[str], section: str) -> dict[str, Any]:
    """The values of ``keys`` in the parameter profile at ``path``, so a command runs with a notebook's figures.

    Args:
        section: the notebook's section of params/demo.yaml, named in the error (e.g. ``"10 reachability"``).

    Raises:
        ParamsError: the file is missing or invalid, or lacks one of ``keys``.
    """
    from ..errors import ParamsError
    from ..params import read_yaml

    keys = tuple(keys)
    values, resolved = read_yaml(path)
    missing = [k for k in keys if k not in values]
    if missing:
        raise ParamsError(f"{resolved.name} lacks {', '.join(missing)}: add them (see params/demo.yaml, section "
                          f"'{section}')", path=str(resolved), key=missing[0])
    return {k: values[k] for k in keys}
