"""More CLI commands, one module each, found here by name so each check brings its own command.

A command module defines::

    def register(sub, add, common) -> None:
        p = add(sub, "name", "one-line summary", "description", "  examples", common)
        p.add_argument("--json", action="store_true", help="...")
        p.set_defaults(func=run)

``add`` is :func:`retrieval_lib.cli.main._add` (help, examples and the exit codes in one format), and ``run(args)``
returns the exit code: 0 the gates hold, 1 a gate failed; errors raise from :mod:`retrieval_lib.errors`
(2 bad input or configuration, 3 a dependency failing), which :func:`retrieval_lib.cli.main.main` prints as one line.

The commands sit with :mod:`retrieval_lib.cli.main` above every family: they may import the core, the checks,
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

from retrieval_lib.workbook.report import gate_state

__all__ = ["command_modules", "print_json", "gate_exit_code", "mapping_note"]


def command_modules() -> list[ModuleType]:
    """Every command module of this package, in ``ORDER`` then name order (modules starting with ``_`` are helpers)."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    modules = [importlib.import_module(f"{__name__}.{name}") for name in names]
    return sorted(modules, key=lambda m: (getattr(m, "ORDER", 100), m.__name__))


def print_json(data: object) -> None:
    """``data`` as indented JSON on stdout (non-JSON values as their ``str``)."""
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def mapping_note(view: Any, collection: str) -> None:
    """The one line that says how a collection's payloads are read, on stderr, when they are not our own schema
    (inferred from a sample, or a profile's ``payload_fields``)."""
    if view.roles_for(collection).origin != "default":
        print(f"note: {view.describe(collection)}", file=sys.stderr)


def gate_exit_code(gates: Iterable[Any]) -> int:
    """0 when no gate failed (or there is none; a not-applicable gate does not fail), 1 when one failed.

    Args:
        gates: :class:`retrieval_lib.workbook.report.Gate` objects or their dicts (``{"passed": bool | None}``).
    """
    return 1 if any(gate_state(g) == "failed" for g in gates) else 0
