"""``python -m retrieval_lib reach``: the older name of ``check reachability`` (notebook 10's check alone).

Its older options stay: ``--top-k``, ``--max-full``, ``--seed``, ``--reverse-depth`` set the profile's
``reach_top_k``, ``reach_max_full``, ``reach_seed``, ``reach_reverse_depth``; ``--sample N`` samples ``N`` chunks
whenever the collection holds more (``reach_sample_size`` N, ``reach_max_full`` at most N); ``--no-questions`` skips
notebook 03's questions, so no embedding model is loaded.
"""

from __future__ import annotations

import argparse
from typing import Any

from retrieval_lib.cli.commands.check import register_check
from retrieval_lib.workbook.registry import notebook_spec

__all__ = ["register"]

_LEGACY = {"--top-k": "reach_top_k", "--max-full": "reach_max_full", "--seed": "reach_seed",
           "--reverse-depth": "reach_reverse_depth"}


def _extra(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="query with N sampled chunks when the collection holds more (default: the profile's "
                        "reach_max_full and reach_sample_size)")
    p.add_argument("--no-questions", action="store_true",
                   help="skip the heading and golden questions (no embedding model is loaded)")


def _prepare(args: argparse.Namespace, params: dict[str, Any], settings: Any) -> None:
    if args.sample is not None:
        params["reach_sample_size"] = args.sample
        params["reach_max_full"] = min(params["reach_max_full"], args.sample)
    if args.no_questions:
        params["questions"] = False


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    register_check(
        sub, add, common, notebook_spec("reachability"), name="reach",
        summary="chunk reachability: anti-hubs, hubs and off-topic files (check reachability)",
        description="Use every stored vector as a query (or a seeded sample above --max-full points) and count how "
                    "often each chunk is in the others' top k: chunks nobody retrieves (anti-hubs), chunks in "
                    "everybody's answers (hubs), and files far from the rest of the collection (off-topic "
                    "candidates). Also marks the chunks that notebook 03's heading and golden questions reach. "
                    "Gates and sizes come from --params. The same as `check reachability`.",
        examples="  python -m retrieval_lib reach\n"
                 "  python -m retrieval_lib reach --top-k 10 --sample 2000 --seed 7 --json\n"
                 "  python -m retrieval_lib reach --no-questions      # no embedding model loaded",
        legacy=_LEGACY, extra=_extra, prepare=_prepare)
