"""nbval on every core: each pytest-xdist worker reads its own copy of the embedded store.

An embedded Qdrant folder can be opened by one process at a time, and every notebook's kernel opens it; so a
worker copies the store once (its SQLite metadata included) and its kernels read the copy through QDRANT_PATH.
The stored outputs show the store's path sanitised (``notebooks/sanitize.cfg``), so the copy compares equal.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

# A kernel per core side by side: torch on one intra-op thread in each (they inherit this). A second OpenMP thread
# spins on the core the other kernel needs: measured back to back in one hour, `make test`'s nbval took 98 s with
# torch's default and 76 s with one thread, the outputs the same. (The pytest suite, measured the same way, gained
# nothing: 596 s and 593 s.) `OMP_NUM_THREADS=2 make nbval` runs it otherwise.
os.environ.setdefault("OMP_NUM_THREADS", "1")
if os.environ.get("WARM_KERNEL") == "1":  # `make test`: the kernels start warm, as the suite's (tests/warm_kernel.py)
    from warm_kernel import install

    install()


def pytest_configure(config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    source = Path(os.environ.get("QDRANT_PATH") or Path(__file__).resolve().parent.parent / ".qdrant")
    if not source.is_dir():
        return  # nothing to copy: the notebooks fail with the store's own message, as without workers
    folder = Path(tempfile.mkdtemp(prefix=f"nbval-{worker}-"))
    shutil.copytree(source, folder / ".qdrant", ignore=shutil.ignore_patterns(".lock"))
    os.environ["QDRANT_PATH"] = str(folder / ".qdrant")
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def pytest_collection_modifyitems(session, config, items) -> None:
    """The notebooks that measure the embedding service itself (they load the model in their kernel and time it:
    the longest to re-run, ``bypass`` in the registry) first, each notebook's cells kept in order, so the workers
    (``--dist loadfile``, a notebook at a time) start on them rather than finish on one."""
    from retrieval_lib.workbook import NOTEBOOKS

    heavy = {spec.stem for spec in NOTEBOOKS if spec.bypass}
    items.sort(key=lambda item: Path(str(item.fspath)).stem not in heavy)
