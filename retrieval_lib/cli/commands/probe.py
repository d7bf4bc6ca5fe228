"""``python -m retrieval_lib probe``: does the configured embedder still make the collection's vectors?

Re-embeds a seeded, per-file stratified sample of stored chunks as documents and compares each with its stored
vector (cosine), runs each chunk's first sentence as a query (self-retrieval), and names the likely cause when the
vectors do not match (:mod:`retrieval_lib.checks.contract`). The embedding cost is printed on stderr first.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from typing import Any

from retrieval_lib.cli.commands import gate_exit_code, print_json
from retrieval_lib.workbook.registry import notebook_spec

#: The notebook whose check this command runs alone.
SPEC = notebook_spec("embedding_contract")
NAME = "probe"


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    from retrieval_lib.checks.contract import DEFAULT_MAX_SELF_RETRIEVAL_DROP, DEFAULT_MIN_COSINE

    p = add(sub, NAME, "check stored vectors against the configured embedder (model, input type, text)",
            "Sample stored chunks (seeded, stratified by source file), re-embed their text as documents and compare "
            "with the stored vectors; search each chunk's first sentence as a query. When the vectors do not match, "
            "say why: a different model, a swapped input type, text changed since ingest, or truncation.",
            "  python -m retrieval_lib probe\n"
            "  python -m retrieval_lib probe --sample 128 --seed 7\n"
            "  python -m retrieval_lib probe --json", common)
    p.add_argument("--sample", type=int, default=64, help="points to sample (default 64)")
    p.add_argument("--seed", type=int, default=0, help="sample seed (default 0)")
    p.add_argument("--top-k", type=int, default=5, help="self-retrieval depth (default 5)")
    p.add_argument("--min-cosine", type=float, default=DEFAULT_MIN_COSINE,
                   help=f"gate on the lowest cosine (default {DEFAULT_MIN_COSINE:g})")
    p.add_argument("--max-drop", type=float, default=DEFAULT_MAX_SELF_RETRIEVAL_DROP,
                   help="gate on how much lower the sample's self-retrieval is with the stored vectors than with "
                        f"fresh re-embeddings of the same texts (default {DEFAULT_MAX_SELF_RETRIEVAL_DROP:g})")
    p.add_argument("--json", action="store_true", help="print gates, metrics, findings, cost and points as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.checks import contract
    from retrieval_lib.config import load_settings
    from retrieval_lib.embedding.providers import make_embedder
    from retrieval_lib.errors import ValidationError
    from retrieval_lib.stores import open_store
    from retrieval_lib.workbook.report import NotebookReport

    # Bad arguments are refused before the model loads or a connection opens.
    contract._check_args(args.sample, args.top_k, args.min_cosine)
    if not 0.0 <= args.max_drop <= 1.0:
        raise ValidationError(f"--max-drop must lie in [0, 1] (got {args.max_drop})", field="max_drop")
    settings = load_settings()
    embedder = make_embedder(settings)
    print(contract.plan_cost(embedder, args.sample).line().replace("cost:", "probe cost (at most):", 1),
          file=sys.stderr)
    with open_store(settings) as store, tempfile.TemporaryDirectory() as tmp:
        result = contract.probe(store, settings.collection_name, embedder, sample=args.sample, seed=args.seed,
                                top_k=args.top_k, min_cosine=args.min_cosine)
        report = NotebookReport(SPEC.stem, SPEC.question, run_dir=tmp)
        contract.record(report, result, max_self_retrieval_drop=args.max_drop)
    if args.json:
        frame = contract.rows_frame(result, decimals=6)
        print_json({"collection": result.collection, "passed": report.passed,
                    "gates": [g.__dict__ for g in report.gates], "metrics": report.metrics,
                    "findings": report.findings, "cost": result.cost.__dict__,
                    "diagnosis": None if result.diagnosis is None else result.diagnosis.__dict__,
                    "points": frame.astype(object).where(frame.notna(), None).to_dict(orient="records")})
    else:
        print(report.summary())
    return gate_exit_code(report.gates)
