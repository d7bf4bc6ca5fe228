"""``python -m retrieval_lib reach``: chunk-level reachability, hubs and off-topic files (notebook 10's check).

The gates' thresholds and the questions' settings come from the parameter file
(``params/demo.yaml`` by default: ``max_antihub_share``, ``max_nk_skewness``,
``max_offtopic_files``, ``offtopic_max_z``; ``golden_set``, ``coverage_top_k``,
``headings_per_file`` for the questions); the pass itself from the options.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from typing import Any

from retrieval_lib.cli.commands import profile_keys
from retrieval_lib.workbook.registry import notebook_spec

#: The notebook whose check this command runs alone.
SPEC = notebook_spec("reachability")
__all__ = ["register", "run"]

_GATE_KEYS = ("max_antihub_share", "max_nk_skewness", "max_offtopic_files", "offtopic_max_z")
_QUESTION_KEYS = ("golden_set", "coverage_top_k", "headings_per_file")


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    from retrieval_lib.checks.reachability import MAX_FULL, REVERSE_DEPTH, SAMPLE_SIZE

    p = add(sub, "reach", "chunk reachability: anti-hubs, hubs and off-topic files",
            "Use every stored vector as a query (or a seeded sample above --max-full points) and count how often "
            "each chunk is in the others' top k: chunks nobody retrieves (anti-hubs), chunks in everybody's "
            "answers (hubs), and files far from the rest of the collection (off-topic candidates). Also marks "
            "the chunks that notebook 03's heading and golden questions reach. Gates come from --params.",
            "  python -m retrieval_lib reach\n"
            "  python -m retrieval_lib reach --top-k 10 --sample 2000 --seed 7 --json\n"
            "  python -m retrieval_lib reach --no-questions      # no embedding model loaded", common)
    p.add_argument("--json", action="store_true", help="print gates, metrics and the chunk lists as JSON")
    p.add_argument("--top-k", type=int, default=10, help="neighbours per chunk (default 10)")
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help=f"query with N sampled chunks when the collection holds more (default: every chunk up to "
                        f"--max-full, else {SAMPLE_SIZE})")
    p.add_argument("--max-full", type=int, default=MAX_FULL,
                   help=f"largest collection queried chunk by chunk (default {MAX_FULL})")
    p.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    p.add_argument("--reverse-depth", type=int, default=REVERSE_DEPTH,
                   help=f"neighbours a sampled chunk's reachability is checked against (default {REVERSE_DEPTH})")
    p.add_argument("--no-questions", action="store_true",
                   help="skip the heading and golden questions (no embedding model is loaded)")
    p.add_argument("--params", default="params/demo.yaml", help="parameter file with the gates (default demo)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.checks import coverage, offtopic, reach_report
    from retrieval_lib.cli.commands import gate_exit_code, print_json
    from retrieval_lib.config import load_settings
    from retrieval_lib.params import load_golden_set
    from retrieval_lib.search import Retriever
    from retrieval_lib.stores import open_store
    from retrieval_lib.workbook.report import NotebookReport

    params = profile_keys(args.params, _GATE_KEYS + (() if args.no_questions else _QUESTION_KEYS), SPEC)
    settings = load_settings()
    progress = not (args.quiet or args.json) and sys.stderr.isatty()
    with tempfile.TemporaryDirectory(prefix="reach-") as tmp:
        report = NotebookReport(SPEC.stem, SPEC.question, run_dir=tmp)
        if args.no_questions:
            with open_store(settings) as store:
                study, reach = _measure(store, settings.collection_name, args, progress), None
        else:
            with Retriever.from_settings(settings) as retriever:
                study = _measure(retriever.store, retriever.collection, args, progress)
                questions = coverage.measure(retriever, top_k=int(params["coverage_top_k"]),
                                             headings_per_file=int(params["headings_per_file"]),
                                             golden=load_golden_set(params["golden_set"]))
                reach = reach_report.query_reach(study, questions)
        off = offtopic.measure_offtopic(study.table.files, study.table.titles, study.table.vectors,
                                        max_z=float(params["offtopic_max_z"]), stock=study.table.stock)
        reach_report.record(report, study, off, reach, max_antihub_share=float(params["max_antihub_share"]),
                            max_nk_skewness=float(params["max_nk_skewness"]),
                            max_offtopic_files=int(params["max_offtopic_files"]))
    code = gate_exit_code(report.gates)
    if args.json:
        print_json({"collection": settings.collection_name, "passed": code == 0,
                    "gates": [vars(g) for g in report.gates], "metrics": report.metrics,
                    "findings": report.findings, "antihub_method": study.antihub.method,
                    "antihubs": reach_report.antihub_frame(study).to_dict("records"),
                    "hubs": reach_report.hub_frame(study).to_dict("records"),
                    "offtopic": _records(offtopic.offtopic_frame(off, candidates_only=True)),
                    "offtopic_groups": [vars(g) for g in off.groups],
                    "exit_code": code})
        return code
    print(report.summary())
    _print_rows("anti-hubs", reach_report.antihub_frame(study))
    _print_rows("hubs", reach_report.hub_frame(study, limit=10))
    for g in off.groups:
        print(f"off-topic: {g.text()}")
    for f in off.candidates:
        why = f"stock page of the {f.stock} template" if f.stock else f"group {f.group}"
        print(f"off-topic candidate: {f.path} ({f.title!r}), rest similarity {f.rest_similarity:.3f}"
              + (f", z {f.z:.2f}" if f.z is not None else "") + f", nearest {f.nearest_file}; {why}")
    return code


def _measure(store: Any, collection: str, args: argparse.Namespace, progress: bool) -> Any:
    from retrieval_lib.checks import reachability

    sample = {} if args.sample is None else {"sample_size": args.sample, "max_full": min(args.max_full, args.sample)}
    return reachability.measure(store, collection, top_k=args.top_k, **{"max_full": args.max_full, **sample},
                                seed=args.seed, reverse_depth=args.reverse_depth,
                                progress=progress)


def _records(frame: Any) -> list[dict[str, Any]]:
    """A frame's rows as JSON-ready dicts (pandas' missing values as None)."""
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def _print_rows(title: str, frame: Any, limit: int = 20) -> None:
    if frame.empty:
        return
    print(f"\n{title} ({len(frame)}):")
    for row in frame.head(limit).itertuples():
        print(f"  N_k {row.n_k:>6}  {row.source_file}  §{row.section_title}\n           {row.preview[:120]}")
