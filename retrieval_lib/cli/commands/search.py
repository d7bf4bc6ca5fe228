"""``python -m retrieval_lib search QUERY``: one query, its ranked chunks with their source and section.

With ``--params P`` the profile's collection is searched, or, when the profile names a team's ``retriever:``
(docs/retrievers.md), that retriever is asked: its answer reads the same way (``--json``: a SearchResponse).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_lib.cli.commands import mapping_note, print_json

if TYPE_CHECKING:
    from retrieval_lib.retrievers import RetrieverSpec

#: Place in ``--help``: the everyday commands first.
ORDER = 0


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    p = add(sub, "search", "run one query and show ranked chunks",
             "Embed a question as a search query and print the best chunks with their source, section and score.",
             '  python -m retrieval_lib search "What is ROS2?"\n'
             '  python -m retrieval_lib search "Gazebo simulation" --top-k 10 --source-prefix module-02-simulation/\n'
             '  python -m retrieval_lib search "What is ROS2?" --similarity-threshold 0.5 --json\n'
             '  python -m retrieval_lib search --params params/their_chatbot.yaml "What is ROS2?"', common)
    p.add_argument("query")
    p.add_argument("--top-k", type=int, default=5, help="results wanted, 1-20 (default 5)")
    p.add_argument("--similarity-threshold", "--threshold", dest="similarity_threshold", type=float, default=0.0,
                   help="minimum similarity 0-1 (default 0)")
    p.add_argument("--source-prefix", help="only chunks whose source path or URL starts with this")
    p.add_argument("--section", help="only chunks whose section title is exactly this")
    p.add_argument("--json", action="store_true", help="print the SearchResponse as JSON")
    p.add_argument("--params", type=Path, metavar="FILE",
                   help="a profile: its collection, or its `retriever:` (a team's endpoint or function) answers")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.cli.commands.check import read_profile
    from retrieval_lib.config import load_settings
    from retrieval_lib.retrievers.as_search import rank_stand_in
    from retrieval_lib.search import Retriever, validate_params, validate_query

    # with a profile: its collection and retriever over the environment, as a run sets them
    settings = load_settings() if args.params is None else read_profile(args.params)[0]
    # Bad input is refused before the model loads or a connection opens.
    validate_query(args.query, settings.query_max_chars)
    validate_params(args.top_k, args.similarity_threshold)
    from retrieval_lib.retrievers import team_retriever

    team = team_retriever(settings)  # the profile's `retriever:` or RETRIEVER_SPEC: the rule a run's kernel reads
    if team is not None:
        response = _ask_team(team, args)
    else:
        with Retriever.from_settings(settings) as retriever:
            response = retriever.search(args.query, top_k=args.top_k,
                                        similarity_threshold=args.similarity_threshold,
                                        source_prefix=args.source_prefix, section=args.section)
            mapping_note(retriever.store, retriever.collection)
    if args.json:
        print_json(response.model_dump(mode="json"))
        return 0
    # an empty answer's last warning says why it is empty: that goes with the answer, the rest to stderr
    reason = response.warnings[-1] if response.is_empty and response.warnings else None
    for warning in response.warnings:
        if warning is not reason:
            print(f"warning: {warning}", file=sys.stderr)
    if response.is_empty:
        print(f"No results for {response.query_text!r}: {reason or 'no matching chunk'}.")
        return 0
    if team is not None:  # the team's retriever embeds and searches inside: only its whole time is known
        print(f"{response.total_results} results for {response.query_text!r} from the team's retriever "
              f"({response.execution_time_ms:.0f} ms, its embedding and search together)")
    else:
        print(f"{response.total_results} results for {response.query_text!r} "
              f"({response.execution_time_ms:.0f} ms: embed {response.embed_ms:.0f}, search {response.search_ms:.0f})")
    ranks_only = rank_stand_in([response]) is not None  # 1/rank stand-ins are no score: none is printed
    for rank, r in enumerate(response.results, 1):
        where = f"§{r.section_title}" if r.section_title else (f"«{r.title}»" if r.title else "")
        score = "" if ranks_only else f"{r.similarity_score:.3f}  "
        print(f"\n{rank}. {score}{r.source_file or r.source_url or r.point_id}  {where}".rstrip())
        if r.source_url:
            print(f"   {r.source_url}")
        preview = " ".join((r.content or "").split())
        print(f"   {preview[:200]}{'…' if len(preview) > 200 else ''}")
    return 0


def _ask_team(spec: RetrieverSpec, args: argparse.Namespace) -> Any:
    """The team's retriever's answer as a SearchResponse; its failure is a :class:`RetrieverError` (exit 3)."""
    from retrieval_lib.errors import RetrieverError
    from retrieval_lib.retrievers import AnsweringSearch, open_retriever

    asker = open_retriever(spec)
    try:
        response = AnsweringSearch(asker).search(args.query, top_k=args.top_k,
                                                 similarity_threshold=args.similarity_threshold,
                                                 source_prefix=args.source_prefix, section=args.section)
        start_ms = getattr(asker, "start_ms", 0.0)
        if start_ms >= 1000:  # a function's child: its imports (a model...) are not the answer's time
            print(f"note: starting {asker.describe()} took {start_ms / 1000:.1f} s (its imports), not counted in the "
                  "answer's time", file=sys.stderr)
        mapping = getattr(asker, "mapping", None)
        if mapping is not None and not (asker.spec.results and asker.spec.fields):  # type: ignore[attr-defined]
            print(f"note: {asker.describe()}: mapping inferred from this answer: {mapping.describe()} (write it "
                  "into the profile with `retriever --params P --write-profile P`)", file=sys.stderr)
    finally:
        asker.close()
    if response.error:
        kind = response.error.split(":", 1)[0]
        raise RetrieverError(f"the retriever gave no answer: {response.error}", kind=kind,
                             retriever=asker.describe())
    return response
