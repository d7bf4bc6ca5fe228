"""Name the package's long modules (``make lint``): a note to look at, never a failure.

Modules are split by concern, not by size: a module past :data:`SOFT_MODULE_LINES` lines is worth a look for two
concerns in one file, and no more than that, so this prints and exits 0.

    python scripts/long_modules.py
"""

from __future__ import annotations

from pathlib import Path

#: Above this many lines a module gets a printed note.
SOFT_MODULE_LINES = 500
PACKAGE = Path(__file__).resolve().parent.parent / "retrieval_lib"


def long_modules(package: Path = PACKAGE, limit: int = SOFT_MODULE_LINES) -> list[str]:
    """``path (N lines)`` for every module of ``package`` (the bundled sample book aside) longer than ``limit``."""
    return [f"{m.relative_to(package.parent)} ({n} lines)" for m in sorted(package.rglob("*.py"))
            if "sample_book" not in m.parts and (n := len(m.read_text(encoding="utf-8").splitlines())) > limit]


if __name__ == "__main__":
    for line in long_modules():
        print(f"note: {line} is long; split it if it holds two concerns")
