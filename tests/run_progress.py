"""Where a batch run in a child process has got to, read off its run folder: for the tests that stop a run midway.

Such a test waits for the event it needs (a notebook's cell is running) rather than for a fixed time: how long a run
takes to get there (a kernel's start, its imports) grows with a slower or busier machine, and a signal sent too early
would stop the run somewhere else than the test says.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Collection
from pathlib import Path

__all__ = ["wait_for_running_cell"]


def _running(executed: Path, text: str) -> bool:
    """Whether papermill has marked the code cell of ``executed`` whose source holds ``text`` as running (it saves
    the output notebook as each cell starts)."""
    try:
        cells = json.loads(executed.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError):  # not written yet, or being written
        return False
    return any(cell.get("cell_type") == "code" and text in "".join(cell.get("source", ""))
               and cell.get("metadata", {}).get("papermill", {}).get("status") == "running" for cell in cells)


def wait_for_running_cell(proc: subprocess.Popen, out: Path, notebook: str, text: str, *,
                          earlier: Collection[Path] = (), timeout: float = 120) -> Path:
    """The run folder ``proc`` made under ``out`` (a folder not in ``earlier``), once the code cell of ``notebook``
    (its file name) holding ``text`` is running there. Fails if ``proc`` ends first or ``timeout`` seconds pass
    (a hang guard: bound it by the test's own timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"the run ended (rc={proc.returncode}) before {notebook} ran {text!r}"
        new = [p for p in out.iterdir() if p not in earlier] if out.is_dir() else []
        if new and _running(new[0] / "notebooks" / notebook, text):
            return new[0]
        assert time.monotonic() < deadline, f"{notebook} did not start running {text!r} within {timeout:g} s"
        time.sleep(0.1)
