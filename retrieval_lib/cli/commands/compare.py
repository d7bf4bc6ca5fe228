"""``python -m retrieval_lib compare BASELINE CANDIDATE``: did retrieval get worse between two runs (notebook 14)?

Exit codes: 0 no metric significantly worse; 1 a metric worse with p < --alpha and |delta| >= --min-effect (the
metric and its worst queries are named); 2 the runs cannot be compared (different query sets: the queries that
differ are listed) or a run folder is missing.

It runs notebook 14's check (:func:`retrieval_lib.checks.comparison.compare.run`, the entry ``check compare`` and the
notebook call) with the two folders as ``baseline_run`` and ``candidate_run``; it prints the comparison whole.
"""

from __future__ import annotations

import argparse
import tempfile
from typing import Any

__all__ = ["register", "run"]


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    from retrieval_lib.checks.comparison.compare import DEFAULT_METRICS

    p = add(sub, "compare", "did retrieval get worse between two runs (paired tests per query)",
            "Compare two run folders (outputs/<run>, or a committed baseline such as params/baselines/sample_book) "
            "query by query: per metric baseline, candidate, delta with its 95% bootstrap interval and a paired "
            "test (ranx); the queries that got worse with both rankings side by side; ranking overlap (RBO, "
            "Jaccard, top-1 changed) of every shared query; gates that changed; a KS test of top-1 scores; and how "
            "small a change the judged queries can detect. Fails (exit 1) only on a significant AND large enough "
            "drop, so CI can gate on it.",
            "  python -m retrieval_lib compare params/baselines/sample_book outputs/20261123T073813Z-demo\n"
            "  python -m retrieval_lib compare OLD_RUN NEW_RUN --metric ndcg@5 --metric mrr --min-effect 0.05\n"
            "  python -m retrieval_lib compare OLD_RUN NEW_RUN --json > comparison.json", common)
    p.add_argument("baseline", help="the reference run folder")
    p.add_argument("candidate", help="the run folder to judge")
    p.add_argument("--json", action="store_true", help="print the whole comparison as JSON")
    p.add_argument("--metric", action="append", default=None, metavar="NAME",
                   help=f"a ranx metric, repeatable (default {' '.join(DEFAULT_METRICS)})")
    p.add_argument("--alpha", type=float, default=None,
                   help="significance level of the paired test (default: compare_alpha of params/demo.yaml)")
    p.add_argument("--min-effect", type=float, default=None,
                   help="smallest drop of a metric that counts as a regression (default: compare_min_effect of "
                        "params/demo.yaml)")
    p.add_argument("--test", choices=("student", "fisher"), default="student",
                   help="ranx's paired test: t-test (default) or Fisher's randomisation test")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.checks.comparison.compare import DEFAULT_METRICS, Comparison, NothingToCompare
    from retrieval_lib.cli.commands import print_json
    from retrieval_lib.params import DEFAULT_PROFILE, load_profile
    from retrieval_lib.workbook.check import open_check, run_check
    from retrieval_lib.workbook.registry import notebook_spec

    spec = notebook_spec("compare")
    defaults = load_profile(DEFAULT_PROFILE, secrets=set()).values  # each default is written once, there
    given = {"compare_alpha": args.alpha, "compare_min_effect": args.min_effect}
    params = {"baseline_run": args.baseline, "candidate_run": args.candidate,
              **{k: defaults[k] if v is None else v for k, v in given.items()},
              "metrics": tuple(args.metric or DEFAULT_METRICS), "test": args.test}
    with tempfile.TemporaryDirectory(prefix="compare-") as tmp, open_check(spec, tmp) as ctx:
        result = run_check(spec, ctx, params)
    if isinstance(result, NothingToCompare) and result.error is not None:
        raise result.error  # the runs asked different questions: exit 2, the queries listed
    if not isinstance(result, Comparison):
        print(result)
        return 0
    if args.json:
        print_json(result.as_dict())
    else:
        print(result.text())
    return result.exit_code
