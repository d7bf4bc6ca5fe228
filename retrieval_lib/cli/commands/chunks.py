"""``python -m retrieval_lib chunks``: chunk lengths against the model window, fragments and fragment wins.

Gates and sizes come from the parameter file (``params/demo.yaml`` by default, section '12 chunk quality'):
``max_unseen_share``, ``max_fragment_share``, ``max_fragment_win_rate``, ``fragment_min_length``,
``fragment_max_heading_share``; the queries are the golden set's (``golden_set``), 03's heading queries
(``headings_per_file``) and the demo queries (``queries``).
"""

from __future__ import annotations

import argparse
import tempfile
from typing import Any

from retrieval_lib.cli.commands import profile_keys
from retrieval_lib.workbook.registry import notebook_spec

#: The notebook whose check this command runs alone.
SPEC = notebook_spec("chunk_quality")
__all__ = ["register", "run"]

_KEYS = ("max_unseen_share", "max_fragment_share", "max_fragment_win_rate", "fragment_min_length",
         "fragment_max_heading_share", "golden_set", "headings_per_file", "queries")


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    p = add(sub, "chunks", "chunk quality: chunks past the model window, fragments, fragment wins",
            "Count every chunk's length with the configured embedder's own tokenizer (title line and special "
            "tokens included), list the chunks past the model's window and the share of text it never sees, list "
            "fragments, and run the golden, heading and demo queries to count how often a fragment wins top-1.",
            "  python -m retrieval_lib chunks\n  python -m retrieval_lib chunks --json", common)
    p.add_argument("--json", action="store_true", help="print gates, metrics and the lists as JSON")
    p.add_argument("--params", default="params/demo.yaml", help="parameter file with the gates (default demo)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.checks import chunks
    from retrieval_lib.cli.commands import gate_exit_code, print_json
    from retrieval_lib.search import Retriever
    from retrieval_lib.workbook.report import NotebookReport

    params = profile_keys(args.params, _KEYS, SPEC)
    with Retriever.from_settings() as retriever, tempfile.TemporaryDirectory(prefix="chunks-") as tmp:
        embedder = retriever.embedder
        window = int(getattr(embedder, "max_tokens", 512))
        study = chunks.measure_chunks(chunks.scan_chunks(retriever.store, retriever.collection),
                                      embedder.count_tokens, window, min_tokens=params["fragment_min_length"],
                                      max_heading_share=params["fragment_max_heading_share"])
        queries = chunks.study_queries(retriever, params["golden_set"], params["headings_per_file"],
                                       params["queries"])
        answered, wins = chunks.fragment_wins(retriever, queries, study)
        report = NotebookReport(SPEC.stem, SPEC.question, run_dir=tmp)
        chunks.record(report, study, answered, wins, max_unseen_share=params["max_unseen_share"],
                      max_fragment_share=params["max_fragment_share"],
                      max_fragment_win_rate=params["max_fragment_win_rate"], show=False)
        if args.json:
            print_json({"gates": [g.__dict__ for g in report.gates], "metrics": report.metrics,
                        "past_window": chunks.past_window_frame(study).to_dict("records"),
                        "fragments": chunks.fragments_frame(study).to_dict("records"),
                        "fragment_wins": chunks.wins_frame(wins).to_dict("records")})
        else:
            for line in report.findings:
                print(line)
            for gate in report.gates:
                print(gate)
        return gate_exit_code(report.gates)
