"""``python -m retrieval_lib ann``: the older name of ``check ann_recall`` (notebook 11's check alone).

Its older options stay: ``--top-k``, ``--queries``, ``--slice-queries``, ``--hnsw-ef``, ``--seed`` set the profile's
``ann_top_k``, ``ann_queries``, ``ann_slice_queries``, ``ann_hnsw_ef``, ``ann_seed``. No embed call is made: the
queries are stored vectors.
"""

from __future__ import annotations

import argparse
from typing import Any

from retrieval_lib.cli.commands.check import register_check
from retrieval_lib.workbook.registry import notebook_spec

__all__ = ["register"]

_LEGACY = {"--top-k": "ann_top_k", "--queries": "ann_queries", "--slice-queries": "ann_slice_queries",
           "--hnsw-ef": "ann_hnsw_ef", "--seed": "ann_seed"}


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    register_check(
        sub, add, common, notebook_spec("ann_recall"), name="ann",
        summary="ANN recall: does the HNSW index return what exact search would? (check ann_recall)",
        description="Search sampled stored vectors under the collection's HNSW index and with "
                    "SearchParams(exact=True), and report recall@k (mean, min, P5), for the whole collection and per "
                    "top-level source prefix with the filter applied. Checks first whether an index is built at all: "
                    "qdrant-client local mode, or a collection too small to be indexed, searches exactly, and the "
                    "report says the comparison proves nothing there. Needs a Qdrant server (QDRANT_URL) or "
                    "QDRANT_ENGINE=edge to measure anything. The same as `check ann_recall`.",
        examples="  QDRANT_ENGINE=edge python -m retrieval_lib ann\n"
                 "  python -m retrieval_lib ann --hnsw-ef 16 --queries 500 --json",
        legacy=_LEGACY)
