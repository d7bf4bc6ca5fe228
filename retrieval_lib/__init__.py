"""retrieval_lib: prove that Qdrant retrieval works before an LLM goes on top.

The few names a script needs, assembled here; each family's own face has the rest:

- foundation, flat: :mod:`~retrieval_lib.config` (settings, read from the environment in one place),
  :mod:`~retrieval_lib.errors` (the exception tree), :mod:`~retrieval_lib.models` (results),
  :mod:`~retrieval_lib.validation`, :mod:`~retrieval_lib.params` (parameter files),
  :mod:`~retrieval_lib.percentile`; then :mod:`~retrieval_lib.search`, the retriever over an embedder and a store;
- :mod:`retrieval_lib.embedding`, :mod:`retrieval_lib.stores`: the embedders and the stores;
- :mod:`retrieval_lib.workbook`, :mod:`retrieval_lib.judging`, :mod:`retrieval_lib.ingest`: the notebooks' runs
  and reports, human judgments, our own demo ingest;
- :mod:`retrieval_lib.checks`: one module per question a notebook asks;
- :mod:`retrieval_lib.service`, :mod:`retrieval_lib.cli`: the seed-003 HTTP service and the command line.

Imports point one way, down this list (``tests/foundation/test_layout.py`` enforces it).
"""

import sys as _sys

try:
    import dotenv as _dotenv  # noqa: F401 - the first third-party import: is this the project's Python?
    import pydantic as _pydantic  # noqa: F401
except ModuleNotFoundError as _missing:  # pragma: no cover - exercised by a subprocess test
    # ``python3 -m retrieval_lib`` outside the project's virtual environment: one line, not a traceback
    if _sys.argv[:1] == ["-m"]:
        _sys.stderr.write(
            f"error: this Python ({_sys.executable}) lacks the workbook's dependencies ({_missing.name} is "
            "missing): run `make setup`, then `source .venv/bin/activate` (or use .venv/bin/retrieval-lib)\n")
        raise SystemExit(2) from None
    raise

from retrieval_lib.config import VERSION as __version__
from retrieval_lib.config import Settings, load_settings
from retrieval_lib.embedding import Embedder, make_embedder
from retrieval_lib.errors import RetrievalError
from retrieval_lib.models import SearchResponse, SearchResult
from retrieval_lib.search import Retriever
from retrieval_lib.stores import VectorStore, open_store
from retrieval_lib.workbook import open_run, run_workbook

__all__ = ["__version__", "Settings", "load_settings", "Embedder", "make_embedder", "RetrievalError",
           "SearchResponse", "SearchResult", "Retriever", "VectorStore", "open_store", "open_run", "run_workbook"]
