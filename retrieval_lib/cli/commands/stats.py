"""``python -m retrieval_lib stats``: seed 004's collection statistics as a table a person reads."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from retrieval_lib.cli.commands import mapping_note, print_json
from retrieval_lib.models import CollectionStats

#: Place in ``--help``: the everyday commands first.
ORDER = 1


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    p = add(sub, "stats", "collection statistics",
             "Points, dimension, models, points per source file and size of the configured collection.",
             "  python -m retrieval_lib stats\n  python -m retrieval_lib stats --json", common)
    p.add_argument("--json", action="store_true", help="print CollectionStats as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.config import load_settings
    from retrieval_lib.search import open_collection
    from retrieval_lib.stores import collection_stats

    settings = load_settings()
    with open_collection(settings) as view:
        stats = collection_stats(view, settings.collection_name)
        mapping_note(view, settings.collection_name)
    if args.json:
        print_json(stats.model_dump(mode="json"))
        return 0
    print("\n".join(stats_lines(stats)))
    for warning in stats.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def stats_lines(stats: CollectionStats) -> list[str]:
    """CollectionStats as a table a person reads: labels, MiB, the model(s), points per source file."""
    from retrieval_lib.workbook.summary import format_value

    why = {u.field: u.reason for u in stats.unreported}

    def shown(field: str, value: object, unit: str = "") -> str:
        return f"not reported ({why[field]})" if value is None and field in why else format_value(value, unit)

    stored = "not stored in the payload (`probe` checks it by re-embedding)"
    models = ", ".join(f"{m} ({n:,} points)" for m, n in (stats.models or {}).items()) or (
        stored if stats.models == {} else shown("models", None))
    rows = [
        ("collection", stats.collection), ("location", stats.location),
        ("points", shown("vector_count", stats.vector_count)), ("dimension", shown("dimensions", stats.dimensions)),
        ("distance", shown("distance", stats.distance)), ("embedding model", models),
        ("source files", shown("source_files", stats.source_files)),
        ("index status", shown("index_status", stats.index_status)),
        ("segments", shown("segments_count", stats.segments_count)),
        ("size on disk", shown("disk_data_size_bytes", stats.disk_data_size_bytes, "bytes")),
        ("size in memory", shown("ram_data_size_bytes", stats.ram_data_size_bytes, "bytes")),
        ("indexed fields", format_value(stats.indexed_fields)),
    ]
    lines = [f"{label:16} {value}" for label, value in rows]
    if stats.points_per_source_file:
        lines += ["", "points per source file:"]
        lines += [f"  {n:5,}  {path}" for path, n in stats.points_per_source_file.items()]
    return lines
