"""``python -m retrieval_lib``: see :mod:`retrieval_lib.cli`."""

import sys

from .cli import main

sys.exit(main())
