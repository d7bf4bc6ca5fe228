"""``python -m retrieval_lib draft``: a validation set drafted from the collection itself (docs/drafting.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from retrieval_lib.cli.commands import mapping_note, print_json

NAME = "draft"
#: Place in ``--help``: right after ``inspect``, whose profile it starts from.
ORDER = 6


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    p = add(sub, NAME, "draft queries, topics and negatives from the collection, for a person to review",
            "Read the configured collection (read-only, one scroll through its payload roles) and draft a validation "
            "set for it: known-item queries from its titles, headings and lead sentences, each with the page that "
            "answers it; topic phrases from its top-level sections, with their prefix; and the shipped out-of-domain "
            "negatives in the book's language, kept where the book's best score stays below its in-domain median. "
            "Writes DIR/golden.yaml, queries.yaml, topics.yaml and profile.yaml (for `run --params`); every entry is "
            "`origin: drafted` until reviewed in notebook 13, and a re-draft keeps reviewed and rejected entries. "
            "Embeds each drafted question once (batched, through DIR/cache/).",
            "  python -m retrieval_lib inspect --write-profile params/their_book.yaml\n"
            "  python -m retrieval_lib draft --out params/drafts/their_book --profile params/their_book.yaml\n"
            "  python -m retrieval_lib run --params params/drafts/their_book/profile.yaml\n"
            "  python -m retrieval_lib draft --out DIR --per-file 5 --json", common)
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for the drafted files")
    p.add_argument("--profile", type=Path, metavar="FILE",
                   help="the profile to start from (e.g. the one `inspect --write-profile` wrote): its collection and "
                        "payload_fields are read, and DIR/profile.yaml keeps its other keys")
    p.add_argument("--per-file", type=int, default=None, metavar="N",
                   help="known-item queries per source file, at most (default 3)")
    p.add_argument("--json", action="store_true", help="print what was drafted and dropped as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.config import load_settings
    from retrieval_lib.drafting import DEFAULT_PER_FILE, draft_collection, write_draft
    from retrieval_lib.embedding import make_embedder
    from retrieval_lib.embedding.cache import CachedEmbedder, QueryCache, cache_file
    from retrieval_lib.errors import ValidationError
    from retrieval_lib.params import load_profile
    from retrieval_lib.search import open_collection

    per_file = DEFAULT_PER_FILE if args.per_file is None else args.per_file
    if per_file < 1:
        raise ValidationError(f"--per-file must be 1 or more (got {per_file})", field="per_file")
    profile = load_profile(args.profile) if args.profile else None
    base: dict[str, Any] = dict(profile.values) if profile else {}
    # the profile's collection and payload fields over the environment, as a run sets them
    settings = profile.settings() if profile else load_settings()
    embedder = CachedEmbedder(make_embedder(settings), QueryCache(cache_file(args.out)))
    with open_collection(settings) as view:
        if not args.json:
            mapping_note(view, settings.collection_name)
        say = None if (args.quiet or args.json) else (lambda line: print(f"… {line}", file=sys.stderr))
        found = draft_collection(view, settings.collection_name, embedder, per_file=per_file, progress=say)
    files = write_draft(found, args.out, base=base)
    usage = embedder.usage()
    if args.json:
        print_json({"collection": found.collection, "points": found.points, "pages": found.pages,
                    "language": found.language.code, "negatives_language": found.negatives_language,
                    "known_items": [vars(k) | {"draft_id": k.draft_id} for k in found.known],
                    "dropped": [vars(d) for d in found.dropped],
                    "topics": [vars(t) for t in found.topics],
                    "topics_dropped": [vars(d) for d in found.topics_dropped],
                    "negatives": [vars(n) for n in found.negatives], "in_domain_median": found.median,
                    "files": {k: str(v) for k, v in files.items()}, "notes": files.notes,
                    "embed": {"calls": usage.calls, "texts": usage.texts, "cached": usage.cached}})
        return 0
    print("\n".join(found.lines()))
    print(f"embedding: {usage.calls} calls for {usage.texts} texts ({usage.cached} from DIR/cache)")
    for note in files.notes:
        print(f"note: {note}", file=sys.stderr)
    if files.kept_reviewed:
        print(f"kept {files.kept_reviewed} reviewed or rejected entries from the earlier draft")
    print(f"\nwritten: {', '.join(str(p) for p in files.values())}")
    print(f"every entry is `origin: drafted`: review them in notebook 13, then: python -m retrieval_lib run --params "
          f"{files['profile']}")
    return 0
