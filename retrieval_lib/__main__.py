"""``python -m retrieval_lib``: see :mod:`retrieval_lib.cli.main`."""

import importlib.util
import sys

# Imported lazily by the commands; checked up front so that a Python outside the project's virtual
# environment gets one line saying what to do, not a traceback from deep inside a command.
_REQUIRED = ("qdrant_client", "sentence_transformers", "cohere", "papermill", "pandas", "yaml", "tqdm")

_missing = [name for name in _REQUIRED if importlib.util.find_spec(name) is None]
if _missing:
    sys.stderr.write(
        f"error: this Python ({sys.executable}) lacks the workbook's dependencies ({', '.join(_missing)}): "
        "run `make setup`, then `source .venv/bin/activate` (or use .venv/bin/retrieval-lib)\n")
    sys.exit(2)

from retrieval_lib.cli.main import main  # noqa: E402 - only once the dependencies are known to be there

sys.exit(main())
