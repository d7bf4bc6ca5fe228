"""``python -m retrieval_lib retriever --params P``: probe the profile's retriever once and show its mapping.

Asks the team's endpoint or function one question, infers where the results are in its answer and which key is
which field (content, source, score, chunk id, title), prints the mapping with its evidence, and with
``--write-profile OUT`` writes the profile with the mapping filled in (``${ENV}`` references kept, never values).
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from retrieval_lib.cli.commands import print_json

NAME = "retriever"
#: Place in ``--help``: beside inspect.
ORDER = 6
#: Asked when --question is not given: a question any book about anything can answer something to.
DEFAULT_QUESTION = "What is this book about?"


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    p = add(sub, NAME, "probe the profile's retriever (a team's endpoint or function) and infer its mapping",
            "Ask the retriever named by the profile's `retriever:` one question, show its answer under the "
            "workbook's names, and where the results and each field were found (with the evidence). "
            "--write-profile saves the profile with `results` and `fields` written in. Exit 3 when the retriever "
            "gives no usable answer (the one-line reason says which: unreachable, timeout, http 500, not json, "
            "no results list, raised ..., exited ...).",
            "  python -m retrieval_lib retriever --params params/their_chatbot.yaml\n"
            "  python -m retrieval_lib retriever --params params/their_chatbot.yaml --question \"What is ROS 2?\" "
            "--write-profile params/their_chatbot.yaml\n"
            "  python -m retrieval_lib run --params params/their_chatbot.yaml", common)
    p.add_argument("--params", type=Path, metavar="FILE", required=True,
                   help="the profile whose `retriever:` to probe")
    p.add_argument("--question", default=None,
                   help="the question to ask (default: the profile's first golden queries in turn while the answers "
                        "are empty, then a generic one)")
    p.add_argument("--top-k", type=int, default=5, help="results to ask for (default 5)")
    p.add_argument("--write-profile", type=Path, metavar="OUT",
                   help="write the profile, with the inferred mapping, to OUT (may be the same file)")
    p.add_argument("--json", action="store_true", help="print the probe as JSON (the raw answer included)")
    p.set_defaults(func=run)


def _questions(values: dict[str, Any]) -> list[str]:
    """The profile's first golden queries, then :data:`DEFAULT_QUESTION`: asked in turn while answers are empty."""
    from retrieval_lib.errors import RetrievalError
    from retrieval_lib.params import load_golden_set
    from retrieval_lib.retrievers.open import PROBE_TRIES

    try:
        golden = load_golden_set(values.get("golden_set") or None)
    except RetrievalError:  # a golden set that does not load only costs the default question
        return [DEFAULT_QUESTION]
    return [q.query for q in golden.queries[:PROBE_TRIES - 1]] + [DEFAULT_QUESTION]


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.config import load_settings
    from retrieval_lib.errors import ConfigurationError, RetrieverError
    from retrieval_lib.retrievers import probe_retriever, team_retriever
    from retrieval_lib.validation import validate_params, validate_query
    from retrieval_lib.workbook.runner import load_profile

    profile = load_profile(args.params)
    # the profile's `retriever:`, else RETRIEVER_SPEC: the rule a run reads (written into the profile below)
    spec = team_retriever(profile.values, load_settings())
    if spec is None:
        raise ConfigurationError(f"{profile.path.name} names no `retriever:` of the team's (none, or kind collection, "
                                 "and no RETRIEVER_SPEC): add one (kind: http with url, or kind: python with function; "
                                 "docs/retrievers.md), then probe it", option="--params")
    asked = [args.question] if args.question else _questions(profile.values)
    questions = [validate_query(q, 1000) for q in asked]
    top_k, _, _ = validate_params(args.top_k, 0.0)
    report = probe_retriever(spec, questions[0], top_k=top_k, more=questions[1:])
    if args.json:
        print_json({"question": report.question, "retriever": report.describe, "error": report.error,
                    "error_kind": report.error_kind, "results": report.results, "fields": report.fields,
                    "evidence": report.evidence, "hits": report.hits, "raw": report.raw, "spec": report.spec})
    else:
        print("\n".join(report.lines()))
    if not report.ok:
        raise RetrieverError(f"the retriever gave no usable answer: {report.error}", kind=report.error_kind or "error",
                             retriever=report.describe)
    if args.write_profile:
        write_profile(args.write_profile, profile.values, report.spec)
        if not args.json:
            print(f"\nprofile written: {args.write_profile} (run it: python -m retrieval_lib run --params "
                  f"{args.write_profile})")
    return 0


def write_profile(path: Path, values: dict[str, Any], spec: dict[str, Any]) -> None:
    """``values`` with ``retriever:`` replaced by ``spec`` (the mapping filled in), as YAML under a header."""
    head = (f"# `retriever:` probed by `python -m retrieval_lib retriever` on {datetime.now(UTC):%Y-%m-%d}: results "
            "and fields were inferred from one answer (edit if a guess is wrong).\n# Header and env values stay "
            "${ENV_NAME} references; the values come from the environment or .env at call time.\n")
    out = {k: v for k, v in values.items() if k != "retriever"} | {"retriever": spec}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + yaml.safe_dump(out, sort_keys=False, allow_unicode=True), encoding="utf-8")
