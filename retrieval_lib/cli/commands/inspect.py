"""``python -m retrieval_lib inspect``: what the configured collection holds, and a profile to validate it with."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from retrieval_lib.cli.commands import print_json
from retrieval_lib.collection.inspect import Inspection, inspect_collection, mapping_rows
from retrieval_lib.embedding.base import ESTIMATE_NOTE

NAME = "inspect"
#: Place in ``--help``: right after the everyday commands, before any check.
ORDER = 5


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    p = add(sub, NAME, "what a collection holds: vectors, ids, payload keys, the mapping, the model",
            "Read the configured collection (read-only) and tell what it holds: its vectors and ids, every payload "
            "key with its fill rate, which key holds which field the workbook reads (with the evidence), whether "
            "the configured embedding model made its vectors, chunk lengths against the model's window, duplicate "
            "texts, and what can and cannot be checked. --write-profile saves a parameter profile for `run`.",
            "  QDRANT_COLLECTION_NAME=their_book python -m retrieval_lib inspect\n"
            "  python -m retrieval_lib inspect --write-profile params/their_book.yaml\n"
            "  python -m retrieval_lib run --params params/their_book.yaml\n"
            "  python -m retrieval_lib inspect --json", common)
    p.add_argument("--json", action="store_true", help="print the facts as JSON (the mapping as payload_fields)")
    p.add_argument("--write-profile", type=Path, metavar="FILE",
                   help="write a parameter profile for this collection (its name, the mapping) to FILE")
    p.add_argument("--book", metavar="DIR", help="a docs folder (or a sitemap.xml): say how each source maps onto "
                                                  "its pages, with counts (the book check, notebook 16)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.config import load_settings
    from retrieval_lib.embedding import E5Embedder, LocalEmbedder, make_embedder
    from retrieval_lib.search import open_collection
    from retrieval_lib.stores.metadata import metadata_source

    settings = load_settings()
    embedder = make_embedder(settings)
    quiet = bool(args.json)
    with open_collection(settings) as view:
        # the tables it would read, looked at (read-only): a team's database without them is not a "yes"
        metadata = metadata_source(settings, view.owned(settings.collection_name))
        # the models available offline, tried in turn when the configured one did not make the vectors
        found = inspect_collection(view, settings.collection_name, embedder,
                                   alternatives=[LocalEmbedder, E5Embedder], metadata_db=metadata.readable,
                                   metadata_why=metadata.reason,
                                   progress=None if quiet else (lambda line: print(f"… {line}", file=sys.stderr)))
        matched = book_mapping(view, settings.collection_name, args.book) if getattr(args, "book", None) else None
    if args.write_profile:
        write_profile(args.write_profile, found, book=getattr(args, "book", None))
    if args.json:
        print_json({**found.as_dict(), **({"book": matched} if matched is not None else {})})
    else:
        print("\n".join(lines(found)))
        if matched is not None:
            print("\n".join(book_lines(matched)))
        if args.write_profile:
            print(f"\nprofile written: {args.write_profile} (run it: python -m retrieval_lib run --params "
                  f"{args.write_profile})")
    return 0


def book_keys(book: str | None) -> dict[str, str]:
    """A profile's ``book_docs`` / ``book_sitemap`` for ``--book`` (a folder, or a sitemap file or URL); a folder or
    file named from the working folder is written whole, as ``draft`` writes its files: ``run`` and ``check`` may
    start elsewhere."""
    if book is not None and not book.startswith(("http://", "https://")) and Path(book).exists():
        book = str(Path(book).resolve())
    sitemap = book is not None and (book.endswith(".xml") or book.startswith(("http://", "https://")))
    return {"book_docs": "" if book is None or sitemap else book, "book_sitemap": book if sitemap and book else ""}


def write_profile(path: Path, found: Inspection, book: str | None = None) -> None:
    """A parameter profile for this collection: its name, the mapping, and what the sample book's do not fit."""
    profile: dict[str, Any] = {
        "profile": found.collection,
        "collection": found.collection,
        "payload_fields": found.roles.as_profile(),
        # the sample book's golden set, query sets and judgments describe another book: not applicable here
        "golden_set": "",
        "judgments": f"params/judgments/{found.collection}.yaml",
        # 07's size gate judges this collection by its own count, not by the sample book's 150 points: a later
        # ingest that stops early falls below it
        "min_points": found.points,
        # the book check (16) compares the collection with its book: the one `--book` named, or none (not
        # applicable, never the sample book)
        **book_keys(book),
    }
    head = (f"# Written by `python -m retrieval_lib inspect` on {datetime.now(UTC):%Y-%m-%d} for collection "
            f"{found.collection!r}.\n# payload_fields: which of its payload keys holds each field the workbook "
            "reads (edit if a guess is wrong).\n# golden_set: none for this book yet; judgments: its own file, "
            "empty until someone grades results in notebook 13.\n# Their gates are not applicable until then; every "
            "other value is the notebooks' default,\n# except min_points: the points counted today (07 then fails "
            "when a re-ingest holds fewer).\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + yaml.safe_dump(profile, sort_keys=False, allow_unicode=True), encoding="utf-8")


def lines(f: Inspection) -> list[str]:
    """The facts as a person reads them."""
    v = f.vectors
    owner = {True: "written by this workbook's own ingest", False: "built by another pipeline (read-only here)",
             None: "empty"}[f.owned]
    out = [f"collection {f.collection!r} at {f.location}: {f.points:,} points, {owner}",
           "",
           "vectors: " + (f"named {', '.join(v['named'])}; used: {v['used'] or 'none'}" if v["named"] else "unnamed")
           + f"; dimension {v['dimension']}; distance {v['distance']}"
           + (f"; sparse: {', '.join(v['sparse'])} (not used)" if v["sparse"] else "; no sparse vectors")
           + (f"  ({v['note']})" if v["note"] else ""),
           "ids: " + ", ".join(f"{form} ({n})" for form, n in sorted(f.ids.items(), key=lambda kv: -kv[1])),
           "",
           f"payload keys ({len(f.keys)}, over a sample of {min(f.points, 1000):,} points):",
           f"  {'key':32} {'filled':>7}  {'type':7} example"]
    for k in f.keys:
        example = repr(k["example"])[:50] if k["example"] is not None else "-"
        out.append(f"  {k['key'][:32]:32} {k['filled']:>7.0%}  {k['type']:7} {example}")
    out += ["", f"fields the workbook reads ({f.roles.origin} mapping):"]
    out += [f"  {row['role']:21} <- {row['payload key']:24} {row['evidence']}" for row in mapping_rows(f)]
    rejected = f.roles.evidence.get("_rejected")
    if rejected:
        out.append(f"  not used: {rejected.strip().rstrip(';')}")
    m = f.model
    out += ["", f"embedding model: {m.get('verdict')}"]
    for t in m.get("tried", []):
        cos = f"mean cosine {t['cosine_mean']:.3f}, lowest {t['cosine_min']:.3f}" if t["cosine_mean"] is not None \
            else t["why"]
        out.append(f"  {t['model']}: {cos}")
    ln = f.lengths
    if ln.get("sample"):
        of = f"{ln['sample']} of {f.points} chunks sampled" if ln["sample"] < f.points else f"{ln['sample']} chunks"
        unit = f"tokens {ESTIMATE_NOTE}" if ln.get("estimated") else "in this model's tokens as it reads them"
        out.append(f"chunk lengths ({of}, {unit}): median {ln['tokens_p50']:.0f}, "
                   f"p95 {ln['tokens_p95']:.0f}, longest {ln['tokens_max']}; {ln['over_window']} "
                   f"({ln['over_window_share']:.0%}) exceed the {ln['window']}-token window (the model reads only "
                   "the first part of those)" + ("; counted with the configured model, which did not make these "
                                                "vectors: set EMBEDDING_PROVIDER/EMBEDDING_MODEL to the one that did "
                                                "to count with its tokenizer and window" if ln.get("other_model")
                                                else ""))
    d = f.duplicates
    out.append(f"duplicate texts: {d['points_with_a_duplicate_text']} points repeat another's text "
               f"({d['groups']} groups)" + (f", e.g. {d['examples'][0]}" if d["examples"] else "")
               + ("; ids from a salted hash duplicate a whole book on every re-ingest" if d["groups"] else ""))
    bad = f.bad_data
    problems = [f"{n} values of the wrong type for {role}" for role, n in bad["wrong_type"].items()]
    problems += [f"{n} {role} texts over 200,000 characters (cut)" for role, n in bad["truncated"].items()]
    if bad["points_without_text"]:
        problems.append(f"{bad['points_without_text']} points without a text")
    if bad["sampled_points_without_vector"]:
        problems.append(f"{bad['sampled_points_without_vector']} sampled points without a vector")
    out.append("bad data: " + ("; ".join(problems) if problems else "none found"))
    out += ["", "what can be checked:"]
    out += [f"  {'yes' if c['can'] else 'no ':3}  {c['check']}: {c['why']}" for c in f.checkable]
    return out


def book_mapping(view: Any, collection: str, book: str) -> dict[str, Any]:
    """How each of the collection's sources maps onto the pages of ``book`` (a docs folder, or a sitemap file or
    URL ending in ``.xml``): counts per way of matching, the inferred URL base path, every source."""
    from retrieval_lib.book import map_sources, read_chunks, read_docs, read_sitemap, resolve_docs

    pages = read_sitemap(book) if book_keys(book)["book_sitemap"] else read_docs(resolve_docs(book) or book)
    bmap = map_sources(pages, read_chunks(view, collection))
    return {"book": pages.kind, "pages": len(pages.pages), "route_base": pages.route_base,
            "base_path": bmap.base_path, "base_origin": bmap.base_origin, "counts": bmap.counts(),
            "how_matched": bmap.how_matched(),
            "problem": bmap.problem, "unreadable_pages": pages.problems,
            "pages_without_chunks": len(pages.pages) - len(bmap.page_chunks),
            "sources": [{"source": m.source, "chunks": m.chunks, "page": m.page, "how": m.how, "hint": m.hint}
                        for m in bmap.sources]}


def book_lines(m: dict[str, Any]) -> list[str]:
    """The mapping onto the book as a person reads it."""
    without = m["pages_without_chunks"]
    mapped = (f"{without} {'page' if without == 1 else 'pages'} without a chunk" if m["sources"]
              else "nothing to map onto its pages")
    out = ["", f"the book ({m['book']}, {m['pages']} pages, route base {m['route_base']}): {len(m['sources'])} "
               f"sources mapped: {m['how_matched']}; {mapped}"]
    if m["problem"]:
        out.append(f"  problem: {m['problem']}")
    out += [f"  unreadable page: {line}" for line in m["unreadable_pages"]]
    # the sources that match no page first: they are what a person looks for
    rows = sorted(m["sources"], key=lambda row: row["page"] is not None)
    out += [f"  {row['how']:24} {row['source']} -> {row['page'] or '(no page)'}"
            + (f"  ({row['hint']})" if row["hint"] else "") for row in rows[:200]]
    return out
