"""``python -m retrieval_lib ann``: ANN recall against exact search (notebook 11's check).

The sample sizes, the seed, ``hnsw_ef`` and the gates' minimums come from the
parameter file (``params/demo.yaml`` by default, section "11 ann recall");
an option given on the command line wins. No embedding model is loaded: the
queries are stored vectors.
"""

from __future__ import annotations

import argparse
import tempfile
from typing import Any

from retrieval_lib.cli.commands import profile_keys
from retrieval_lib.workbook.registry import notebook_spec

#: The notebook whose check this command runs alone.
SPEC = notebook_spec("ann_recall")
__all__ = ["register", "run"]

_KEYS = ("ann_top_k", "ann_queries", "ann_slice_queries", "ann_hnsw_ef", "ann_seed", "ann_min_recall",
         "ann_min_recall_p5")


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    p = add(sub, "ann", "ANN recall: does the HNSW index return what exact search would?",
            "Search sampled stored vectors under the collection's HNSW index and with SearchParams(exact=True), "
            "and report recall@k (mean, min, P5), for the whole collection and per top-level source prefix with "
            "the filter applied. Checks first whether an index is built at all: qdrant-client local mode, or a "
            "collection too small to be indexed, searches exactly, and the report says the comparison proves "
            "nothing there. Needs a Qdrant server (QDRANT_URL) or QDRANT_ENGINE=edge to measure anything.",
            "  QDRANT_ENGINE=edge python -m retrieval_lib ann\n"
            "  python -m retrieval_lib ann --hnsw-ef 16 --queries 500 --json", common)
    p.add_argument("--json", action="store_true", help="print the index, gates, metrics and slices as JSON")
    p.add_argument("--top-k", type=int, default=None, help="results compared per query (params: ann_top_k)")
    p.add_argument("--queries", type=int, default=None, help="sampled stored vectors (params: ann_queries)")
    p.add_argument("--slice-queries", type=int, default=None,
                   help="of those, queries per source-prefix slice (params: ann_slice_queries)")
    p.add_argument("--hnsw-ef", type=int, default=None, help="HNSW search breadth (params: ann_hnsw_ef)")
    p.add_argument("--seed", type=int, default=None, help="the sample's seed (params: ann_seed)")
    p.add_argument("--params", default="params/demo.yaml", help="parameter file with the gates (default demo)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.checks import ann
    from retrieval_lib.cli.commands import gate_exit_code, print_json
    from retrieval_lib.config import load_settings
    from retrieval_lib.stores import open_store
    from retrieval_lib.workbook.report import NotebookReport

    params = profile_keys(args.params, _KEYS, SPEC)

    def pick(option: Any, key: str) -> Any:
        return option if option is not None else params[key]

    settings = load_settings()
    with tempfile.TemporaryDirectory(prefix="ann-") as tmp, open_store(settings) as store:
        study = ann.measure(store, settings.collection_name, top_k=pick(args.top_k, "ann_top_k"),
                            queries=pick(args.queries, "ann_queries"),
                            slice_queries=pick(args.slice_queries, "ann_slice_queries"),
                            hnsw_ef=pick(args.hnsw_ef, "ann_hnsw_ef"), seed=pick(args.seed, "ann_seed"))
        report = NotebookReport(SPEC.stem, SPEC.question, run_dir=tmp)
        ann.record(report, study, min_recall=float(params["ann_min_recall"]),
                   min_recall_p5=float(params["ann_min_recall_p5"]))
    code = gate_exit_code(report.gates)
    if args.json:
        print_json({"collection": settings.collection_name, "passed": code == 0, "applicable": study.applicable,
                    "index": vars(study.index), "gates": [vars(g) for g in report.gates],
                    "metrics": report.metrics, "findings": report.findings,
                    "slices": ann.slices_frame(study).to_dict("records"), "exit_code": code})
        return code
    print(report.summary())
    if study.slices:
        print()
        print(ann.slices_frame(study).to_string(index=False))
    return code
