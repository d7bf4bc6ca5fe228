"""Do the metadata rows and the vectors agree? Points without a row, rows without a point, fields that differ.

Both sides are read whole, in large pages: the collection's payloads by scroll,
the table's rows by one streamed query. A field is compared only where the
table has a column for it (a team's ``documents`` table holds fewer), and a
payload is read under the common names (``source_file`` or ``source_path``,
``chunk_sequence`` or ``order_index``, the URL path as the slug when there is none).

Only a table this workbook reads is compared (:func:`~retrieval_lib.stores.metadata.metadata_source`): a database
holding none (a team's own, with its own tables) is not applicable, with its tables named, never "0 rows", and our
``chunks`` table only for a collection our ingest wrote. Nothing is written to the database.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from retrieval_lib.checks.gates import API_METADATA
from retrieval_lib.collection import CollectionView
from retrieval_lib.config import Settings
from retrieval_lib.stores.metadata import ROW_FIELDS, TABLES, MetadataDB, metadata_source, slug_of
from retrieval_lib.stores.scan import iter_points
from retrieval_lib.workbook.report import NotebookReport

__all__ = ["MetadataConsistency", "payload_view", "compare", "compare_store", "check", "record", "TEAM_HINT"]

# Examples kept per kind of disagreement.
_EXAMPLES = 5
#: The hint of a failed comparison on a team's collection: its rows and points are its pipeline's, never our ingest's.
TEAM_HINT = ("this collection and its rows were written by the team's own pipeline, which wrote them apart: re-run its "
             "metadata step (the workbook reads them and writes neither)")


def payload_view(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A payload's values under the row's field names (see the module docstring)."""
    url = payload.get("source_url")
    sequence = payload.get("chunk_sequence", payload.get("order_index"))
    return {
        "source_path": payload.get("source_file") or payload.get("source_path"),
        "slug": payload.get("slug") or slug_of(url),
        "chunk_sequence": sequence,
        **{f: payload.get(f) for f in ROW_FIELDS if f not in ("source_path", "slug", "chunk_sequence")},
    }


@dataclass
class MetadataConsistency:
    """The comparison's counts, with a few examples of each kind of disagreement."""

    points: int = 0
    rows: int = 0
    unkeyed_points: int = 0
    points_without_row: int = 0
    rows_without_point: int = 0
    differing_fields: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    #: why there is nothing to compare (no metadata database for this collection, or none of the tables this
    #: workbook reads), or "" when compared
    not_applicable: str = ""
    #: whether our ingest wrote the collection (False: a team's; None: not known), for the hint of a failure
    owned: bool | None = None

    @property
    def differing(self) -> int:
        return sum(self.differing_fields.values())

    @property
    def consistent(self) -> bool:
        return not (self.points_without_row or self.rows_without_point or self.differing or self.unkeyed_points)


def compare(payloads: Iterable[Mapping[str, Any]], rows: Iterable[Mapping[str, Any]],
            fields: Iterable[str] = ROW_FIELDS) -> MetadataConsistency:
    """Compare every point's payload with the row of its ``chunk_id`` on ``fields``."""
    result = MetadataConsistency()
    fields = list(fields)
    by_id: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        by_id[str(row["chunk_id"])] = row
    result.rows = len(by_id)
    seen: set[str] = set()
    for payload in payloads:
        result.points += 1
        chunk_id = payload.get("chunk_id")
        if chunk_id in (None, ""):
            result.unkeyed_points += 1
            continue
        key = str(chunk_id)
        seen.add(key)
        found = by_id.get(key)
        if found is None:
            result.points_without_row += 1
            if result.points_without_row <= _EXAMPLES:
                result.examples.append(f"point {key} has no row")
            continue
        row, view = found, payload_view(payload)
        for name in fields:
            if name in row and row[name] != view.get(name):
                result.differing_fields[name] = result.differing_fields.get(name, 0) + 1
                if result.differing_fields[name] <= _EXAMPLES:
                    result.examples.append(f"{key}: {name} is {view.get(name)!r} in the payload, "
                                           f"{row[name]!r} in the row")
    orphans = sorted(set(by_id) - seen)
    result.rows_without_point = len(orphans)
    result.examples += [f"row {k} has no point" for k in orphans[:_EXAMPLES]]
    return result


def compare_store(store: Any, collection: str, db: MetadataDB) -> MetadataConsistency:
    """:func:`compare` of ``collection`` in ``store`` with the rows of ``db`` (on the columns its table has)."""
    fields = [f for f in ROW_FIELDS if db.mapping.column(f)]
    read = ["chunk_id", "source_file", "order_index", *ROW_FIELDS]  # what payload_view reads, in large pages
    payloads = (p.payload or {} for p in iter_points(store, collection, read))
    return compare(payloads, db.iter_rows(), fields)


def check(settings: Settings, store: Any, collection: str, *, table: str = "chunks") -> MetadataConsistency:
    """:func:`compare_store` against the configured metadata database (``DATABASE_URL`` or the SQLite file), when it
    holds ``table`` for this collection; else a result that is not applicable, and why.

    Raises:
        ValidationError: ``table`` is not one of :data:`TABLES`.
        DatabaseUnavailableError: the database cannot be read.
    """
    from retrieval_lib.errors import ValidationError

    if table not in TABLES:
        raise ValidationError(f"metadata_table must be one of {', '.join(TABLES)} (got {table!r})",
                              field="metadata_table")
    # the embedded SQLite file is our own ingest's, for the collections it built; a team's collection has its
    # metadata, if any, in its own database (DATABASE_URL)
    owned = store.owned(collection) if isinstance(store, CollectionView) else True
    source = metadata_source(settings, owned, TABLES[table])
    if source.error is not None:
        raise source.error
    if not source.readable:
        return MetadataConsistency(not_applicable=source.reason, owned=owned)
    with MetadataDB.from_settings(settings, create=False, mapping=TABLES[table]) as db:
        result = compare_store(store, collection, db)
    result.owned = owned
    return result


def record(report: NotebookReport, result: MetadataConsistency) -> None:
    """Gate: every point has its row, every row its point, and the fields agree; counts as metrics."""
    if result.not_applicable:
        API_METADATA.not_applicable(report, result.not_applicable)
        return
    for name in ("points", "rows", "points_without_row", "rows_without_point", "unkeyed_points", "differing"):
        report.metric(f"metadata_{name}", getattr(result, name))
    differing = ", ".join(f"{k} {n}" for k, n in sorted(result.differing_fields.items())) or "none"
    API_METADATA.record(
        report, result.consistent, value=result.points_without_row
        + result.rows_without_point + result.differing + result.unkeyed_points, threshold=0, rule="==",
        detail=(f"{result.points} points, {result.rows} rows: {result.points_without_row} points without a row, "
                f"{result.rows_without_point} rows without a point, fields differing: {differing}"),
        hint=TEAM_HINT if result.owned is False else API_METADATA.causes)
    for example in result.examples[:_EXAMPLES]:
        report.finding(f"metadata: {example}")
