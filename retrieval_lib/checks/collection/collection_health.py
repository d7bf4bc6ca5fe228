"""Collection health: a pass over EVERY point (one scroll of the payload fields, in large pages), not a sample.

- payload completeness per field (seed 000 FR-007's fields),
- ``metadata_completeness``: % of points carrying every field (seed 004),
- duplicate ``content_hash`` values (the same text stored twice):
  ``duplicate_share`` = (points beyond the first of each hash group) / all points,
- points whose ``model_version`` differs from the configured embedder,
- points per source file.

:func:`run` is the check (notebook 07 and ``check collection_health``): it reads the collection's statistics and
scans its payloads; its :class:`CollectionHealth` records the gates, findings, metrics, figures and tables.
:func:`scan_payloads` is the scan notebooks 05 and 13 share, and :func:`record_completeness` the one
metadata-completeness gate (notebooks 05 and 07 both judge it).
"""

from __future__ import annotations

import hashlib
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.gates import (
    HEALTH_COMPLETENESS,
    HEALTH_DIMENSION,
    HEALTH_DUPLICATES,
    HEALTH_MIN_POINTS,
    HEALTH_MODEL,
)
from retrieval_lib.collection import held_fields
from retrieval_lib.models import PAYLOAD_FIELDS, CollectionStats
from retrieval_lib.stores import ReadableStore, size_warning
from retrieval_lib.stores.scan import Columns, read_columns, shared
from retrieval_lib.validation import number_in, whole_number
from retrieval_lib.workbook.check import NotApplicable
from retrieval_lib.workbook.plots import plain_figure

if TYPE_CHECKING:
    import os

    from retrieval_lib.embedding.providers import Embedder
    from retrieval_lib.workbook.report import Gate, NotebookReport, NotebookRun

__all__ = ["run", "CollectionHealth", "PayloadScan", "scan_payloads", "record_completeness"]

#: The gates this check records.
GATES = (HEALTH_MIN_POINTS, HEALTH_COMPLETENESS, HEALTH_DUPLICATES, HEALTH_MODEL, HEALTH_DIMENSION)

#: The CollectionStats fields notebook 07 shows (stable from run to run, unlike the on-disk size).
STATS_SHOWN: tuple[str, ...] = ("vector_count", "points_count", "dimensions", "distance", "index_status",
                                "segments_count", "ram_data_size_bytes", "indexed_fields")


@dataclass
class PayloadScan:
    """What a full scan of a collection's payloads found."""

    points: int
    field_present: dict[str, int]
    complete_points: int
    duplicate_hashes: dict[str, int]
    model_versions: dict[str, int]
    foreign_model_points: int
    points_per_file: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    #: the fields the collection holds at all (its payload roles); completeness is judged over these
    held: list[str] = field(default_factory=lambda: list(PAYLOAD_FIELDS))

    @property
    def metadata_completeness(self) -> float:
        """% of points that carry every field the collection holds (100.0 for an empty collection)."""
        return 100.0 * self.complete_points / self.points if self.points else 100.0

    @property
    def extra_copies(self) -> int:
        """Points that repeat the text of an earlier point: each hash group's size minus one, summed."""
        return sum(self.duplicate_hashes.values()) - len(self.duplicate_hashes)

    @property
    def duplicate_share(self) -> float:
        """``extra_copies / points``: the share of points that store a text already stored (0.0 when empty)."""
        return self.extra_copies / self.points if self.points else 0.0

    @property
    def duplicates_by(self) -> str | None:
        """What tells two points' texts apart: ``"content_hash"`` where the collection holds one, else
        ``"identical-text"`` (a digest of the chunk's text), else None: duplicates cannot be judged."""
        return next((by for f, by in (("content_hash", "content_hash"), ("content", "identical-text"))
                     if f in self.held), None)

    def field_completeness(self) -> dict[str, float]:
        """% of points carrying each field."""
        return {f: (100.0 * n / self.points if self.points else 100.0) for f, n in self.field_present.items()}


def tally_payloads(columns: Columns, held: Sequence[str] = PAYLOAD_FIELDS) -> dict[str, Any]:
    """The raw counts of a payload scan (JSON, independent of the configured model), from its columns.

    A field is present on a point when its value is neither missing, ``None`` nor ``""``; completeness counts
    the ``held`` fields only (those the collection has at all). Duplicates are counted by ``content_hash`` where
    the collection holds one, else by a digest of the text itself.
    """
    fields = list(held)
    carried = {f: [v is not None and v != "" for v in columns[f]] for f in fields}
    if "content_hash" in held:
        hashes = Counter(str(h) for h in columns["content_hash"] if h)
    else:
        hashes = Counter(hashlib.sha256(" ".join(str(t).split()).encode("utf-8", "replace")).hexdigest()
                         for t in columns["content"] if t)
    return {"points": len(columns), "field_present": {f: sum(flags) for f, flags in carried.items()},
            "complete_points": sum(map(all, zip(*carried.values()))),
            "duplicate_hashes": {h: n for h, n in hashes.items() if n > 1},
            "model_versions": dict(Counter(str(m or "(none)") for m in columns["model_version"])),
            "points_per_file": dict(sorted(Counter(str(f or "(none)") for f in columns["source_file"]).items()))}


def scan_payloads(store: ReadableStore, collection: str, *, expected_model: str | None = None,
                  batch_size: int | None = None, run_dir: str | os.PathLike[str] | None = None) -> PayloadScan:
    """Read every point's payload fields once and tally completeness, duplicates and models.

    Only :data:`~retrieval_lib.models.PAYLOAD_FIELDS` are read, in large pages
    (:func:`retrieval_lib.stores.scan.read_columns`).

    Args:
        store: the store holding the collection.
        collection: collection name.
        expected_model: the configured embedder's model; points with another
            ``model_version`` are counted as foreign.
        batch_size: points per scroll page, >= 1; default large pages (:func:`retrieval_lib.stores.scan.page_size`).
        run_dir: the run folder: the tally is kept there and the run's other notebooks reuse it while the
            collection is unchanged (:func:`retrieval_lib.stores.scan.shared` says how); empty: scan here, share
            nothing.

    Raises:
        ValidationError: ``batch_size`` is not a whole number >= 1.
    """
    if batch_size is not None:
        whole_number(batch_size, "batch_size", low=1)
    held = [f for f in PAYLOAD_FIELDS if f in held_fields(store, collection)]

    def tally() -> dict[str, Any]:
        return tally_payloads(read_columns(store, collection, list(PAYLOAD_FIELDS), batch_size=batch_size), held)

    # a collection whose roles map none of the fields is counted, not shared: a shared scan is keyed on its fields
    found = shared(run_dir, "payloads", store, collection, held, tally)[0] if held else tally()
    # no model_version role: "(none)" on every point says nothing of the model, so no point counts as foreign
    foreign = sum(n for m, n in found["model_versions"].items()
                  if expected_model and m != expected_model and "model_version" in held)
    scan = PayloadScan(**found, foreign_model_points=foreign, held=held)
    small = size_warning(collection, scan.points)
    if small:
        scan.warnings.append(small)
    if scan.duplicate_hashes:
        scan.warnings.append(f"{scan.extra_copies} points repeat the text of another")
    if foreign:
        scan.warnings.append(f"{foreign} points were embedded with a model other than {expected_model}")
    return scan


def _check_thresholds(min_points: int, max_duplicate_share: float, min_metadata_completeness: float) -> None:
    whole_number(min_points, "min_points")
    number_in(max_duplicate_share, "max_duplicate_share", 0, 1)
    number_in(min_metadata_completeness, "min_metadata_completeness", 0, 100)


def collection_warnings(stats: CollectionStats, scan: PayloadScan, *, min_points: int) -> list[str]:
    """Every warning about the collection, once each: the store's, the scan's and the two this check adds.

    The store and the scan word the small-collection warning alike
    (:func:`~retrieval_lib.stores.qdrant.size_warning`), so exact de-duplication leaves one.

    Raises:
        ValidationError: ``min_points`` is not a whole number >= 0.
    """
    _check_thresholds(min_points, 0.0, 0.0)
    warnings = list(dict.fromkeys([*stats.warnings, *scan.warnings]))
    if scan.points < min_points:
        warnings.append(f"the collection holds {scan.points} points, below min_points {min_points}")
    if stats.vector_count != scan.points:
        warnings.append(f"Qdrant counts {stats.vector_count} points but the scan read {scan.points}")
    return warnings


def record_completeness(report: NotebookReport, scan: PayloadScan, minimum: float) -> Gate:
    """Record the gate "metadata completeness >= ``minimum``%" (value and detail from the same scan).

    Raises:
        ValidationError: ``minimum`` outside [0, 100].
    """
    _check_thresholds(0, 0.0, minimum)
    fill = {"min_metadata_completeness": minimum}
    if not scan.points or not scan.held:
        return HEALTH_COMPLETENESS.not_applicable(report, _NO_POINTS if not scan.points else _NO_FIELD, fill=fill)
    absent = [f for f in PAYLOAD_FIELDS if f not in scan.held]
    return HEALTH_COMPLETENESS.record(
        report, scan.metadata_completeness >= minimum, fill=fill, value=round(scan.metadata_completeness, 2),
        threshold=minimum, rule=">=", unit="%",
        detail=f"{scan.complete_points}/{scan.points} points carry every payload field"
               + (f" the collection holds ({len(scan.held)} of {len(PAYLOAD_FIELDS)}; it never "
                  f"holds {', '.join(absent)})" if absent else ""))


#: Why completeness and duplicates cannot be judged in an empty collection (the point count's gate fails on it).
_NO_POINTS = "the collection holds no points: no field and no text to judge (the point count's gate fails on it)"
#: Why completeness cannot be judged: no payload role maps a key of the collection.
_NO_FIELD = ("the collection holds none of the fields the workbook reads (its payload roles map "
             "none of its keys: `inspect` shows them; a profile's `payload_fields` names them)")
#: Why duplicates cannot be judged: neither a content hash nor the chunk's text to compare.
_NO_TEXT = ("the collection holds neither a content hash nor the chunk text (no payload role maps "
            "them: `inspect` shows the mapping), so two points' texts cannot be compared")


def _versions(scan: PayloadScan, template: str) -> str:
    return ", ".join(template.format(model=m, points=n) for m, n in sorted(scan.model_versions.items()))


# --------------------------------------------------------------------------- figures
@plain_figure
def completeness_figure(scan: PayloadScan, minimum: float):
    """% of points carrying each payload field, green at or above ``minimum`` (marked), red below."""
    from retrieval_lib.workbook.plots import horizontal_bars

    fields = scan.field_completeness()
    return horizontal_bars(list(fields), list(fields.values()),
                           colours=["tab:green" if v >= minimum else "tab:red" for v in fields.values()],
                           xlim=(0, 105), reference=minimum, reference_label=f"min_metadata_completeness {minimum:g}%",
                           xlabel=f"% of the {scan.points} points carrying the field",
                           title="payload completeness per field", label_size=10)


@plain_figure
def per_file_figure(scan: PayloadScan):
    """Points (chunks) per source file, one bar each."""
    from retrieval_lib.workbook.plots import horizontal_bars

    files = scan.points_per_file
    return horizontal_bars(list(files), list(files.values()), xlabel="points (chunks)",
                           title=f"points per source file ({scan.points} points, {len(files)} files)")


# --------------------------------------------------------------------------- the check
def run(ctx: NotebookRun, *, min_points: int, max_duplicate_share: float,
        min_metadata_completeness: float) -> CollectionHealth | NotApplicable:
    """Notebook 07's check: the collection's statistics and one scan of every point's payload, judged against the
    configured embedder (its model and dimension).

    Raises:
        ValidationError: a threshold out of range (before anything is read).
    """
    _check_thresholds(min_points, max_duplicate_share, min_metadata_completeness)
    if reason := ctx.collection_absent(judges_empty=True):
        return NotApplicable(reason, GATES, fill={"min_points": min_points, "max_duplicate_share": max_duplicate_share,
                                                  "min_metadata_completeness": min_metadata_completeness})
    retriever = ctx.collection_retriever
    embedder = retriever.embedder
    stats = retriever.stats()
    scan = scan_payloads(ctx.store, ctx.collection, expected_model=embedder.model, run_dir=ctx.shared_dir)
    return CollectionHealth(stats, scan, embedder, min_points=min_points, max_duplicate_share=max_duplicate_share,
                            min_metadata_completeness=min_metadata_completeness)


@dataclass
class CollectionHealth:
    """Notebook 07's result: the collection's statistics, the scan of its payloads, the embedder, the bars."""

    stats: CollectionStats
    scan: PayloadScan
    embedder: Embedder
    min_points: int
    max_duplicate_share: float
    min_metadata_completeness: float

    @property
    def warnings(self) -> list[str]:
        """Every warning about the collection, once each (:func:`collection_warnings`)."""
        return collection_warnings(self.stats, self.scan, min_points=self.min_points)

    def __str__(self) -> str:
        scan, stats, files = self.scan, self.stats, list(self.scan.points_per_file.values())
        spread = (f"points per file: min {min(files)}, median {statistics.median(files):g}, max {max(files)}"
                  if files else "no source file")
        return "\n".join([
            f"{scan.points} points scanned; " + (f"{scan.complete_points} complete: metadata completeness "
                                                 f"{scan.metadata_completeness:.2f}%" if scan.held else
                                                 "metadata completeness not applicable (no field held)"),
            f"{len(files)} source files; {spread}",
            f"{len(scan.duplicate_hashes)} groups, {scan.extra_copies} extra copies: duplicate share "
            f"{scan.duplicate_share:.4f}" if scan.duplicates_by else "duplicates not applicable (no text held)",
            f"collection dimension {stats.dimensions} vs embedder dimension {self.embedder.dimension}",
            "warnings:" if self.warnings else "no warnings", *(f"- {w}" for w in self.warnings)])

    def tables(self) -> dict[str, Any]:
        """The statistics (the on-disk size apart, as ``disk_size``: it changes with every build; ``note`` says why
        a figure is unreported), completeness per field (% to 2 decimals), points per file in file order,
        duplicated hashes (shortened to 16 characters, largest group first) and the models found."""
        import pandas as pd

        stats, scan = self.stats, self.scan
        unreported = {u.field: u.reason for u in stats.unreported}

        def stats_frame(fields: Sequence[str]) -> Any:
            return pd.DataFrame([{"field": f, "value": "unreported" if f in unreported else str(getattr(stats, f)),
                                  "note": unreported.get(f, "")} for f in fields])

        groups = sorted(scan.duplicate_hashes.items(), key=lambda kv: (-kv[1], kv[0]))
        return {"collection_stats": stats_frame(STATS_SHOWN), "disk_size": stats_frame(["disk_data_size_bytes"]),
                "field_completeness": pd.DataFrame([{"field": f, "points_with_field": scan.field_present[f],
                                                     "percent": round(pct, 2)}
                                                    for f, pct in scan.field_completeness().items()]),
                "points_per_file": pd.DataFrame({"source_file": list(scan.points_per_file),
                                                 "points": list(scan.points_per_file.values())}),
                "duplicate_hashes": pd.DataFrame({"content_hash": [h[:16] for h, _ in groups],
                                                  "points": [n for _, n in groups]}),
                "model_versions": pd.DataFrame([{"model_version": m, "points": n,
                                                 "matches_configured_model": m == self.embedder.model}
                                                for m, n in sorted(scan.model_versions.items())])}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """The tables (``duplicate_hashes`` when there is one), the two figures, then the gates, findings and
        metrics.

        Gates: at least ``min_points`` points; metadata completeness >= the minimum (:func:`record_completeness`);
        ``duplicate_share <= max_duplicate_share``; every point embedded with ``embedder.model`` (and the collection
        not empty); the collection's vector size equals ``embedder.dimension``. Each warning of
        :func:`collection_warnings` becomes a finding.

        Raises:
            ValidationError: a threshold out of range.
        """
        scan, stats, embedder, min_points = self.scan, self.stats, self.embedder, self.min_points
        max_share = self.max_duplicate_share
        _check_thresholds(min_points, max_share, self.min_metadata_completeness)
        tables = self.tables()
        for name in ("collection_stats", "field_completeness", "points_per_file", "duplicate_hashes",
                     "model_versions"):
            if name != "duplicate_hashes" or len(tables[name]):
                report.table(tables[name], name)
        report.figure(completeness_figure(scan, self.min_metadata_completeness), "field_completeness", show=show)
        report.figure(per_file_figure(scan), "points_per_file", show=show)
        files = scan.points_per_file
        sizes = list(files.values()) or [0]
        HEALTH_MIN_POINTS.record(report, scan.points >= min_points, fill={"min_points": min_points},
                                 value=scan.points, threshold=min_points, rule=">=", unit="points",
                                 detail=f"{scan.points} points in {len(files)} source files")
        record_completeness(report, scan, self.min_metadata_completeness)
        if not scan.points or scan.duplicates_by is None:
            HEALTH_DUPLICATES.not_applicable(report, _NO_POINTS if not scan.points else _NO_TEXT,
                                             fill={"max_duplicate_share": max_share})
        else:
            HEALTH_DUPLICATES.record(report, scan.duplicate_share <= max_share, fill={"max_duplicate_share": max_share},
                                     value=round(scan.duplicate_share, 4), threshold=max_share, rule="<=",
                                     unit="share", detail=f"{len(scan.duplicate_hashes)} {scan.duplicates_by} groups, "
                                                          f"{scan.extra_copies} extra copies")
        if "model_version" not in scan.held:
            HEALTH_MODEL.not_applicable(report, "the collection stores no model name (nor do most pipelines); "
                                                "notebook 09 checks the model by re-embedding stored chunks")
        else:
            HEALTH_MODEL.record(report, scan.foreign_model_points == 0 and scan.points > 0,
                                value=scan.foreign_model_points, threshold=0, rule="==", unit="points",
                                hint="configure the model the collection was built with (or rebuild the collection "
                                     "with the configured embedder): vectors of two models do not compare",
                                detail=f"configured {embedder.model}; found {_versions(scan, '{model} ({points})')}")
        HEALTH_DIMENSION.record(report, stats.dimensions == embedder.dimension,
                                value=stats.dimensions, threshold=embedder.dimension, rule="==", unit="dimensions",
                                hint="the collection was built with another embedding model: configure that model",
                                detail=f"{stats.dimensions} vs {embedder.dimension}")

        report.finding(f"{scan.points} points from {len(files)} source files ({min(sizes)}-{max(sizes)} per file), "
                       f"{stats.dimensions}-dimensional {stats.distance} vectors, index status {stats.index_status}, "
                       f"{stats.segments_count} segment(s)")
        fields = scan.field_completeness()
        weakest = min(fields, key=lambda f: (round(fields[f], 2), f)) if fields else None
        least = (f"least present field {weakest!r} at {round(fields[weakest], 2):g}%"
                 if weakest is not None and round(fields[weakest], 2) < 100 else "every field on every point")
        report.finding(f"metadata completeness {scan.metadata_completeness:.2f}% ({scan.complete_points}/"
                       f"{scan.points} points); {least}" if scan.held
                       else f"metadata completeness not applicable: {_NO_FIELD}")
        report.finding(f"{len(scan.duplicate_hashes)} duplicate {scan.duplicates_by} groups ({scan.extra_copies} "
                       f"extra copies, share {scan.duplicate_share:.4f})" if scan.duplicates_by
                       else f"duplicates not applicable: {_NO_TEXT}")
        report.finding(f"model_version: {_versions(scan, '{model} on {points} points')}; configured embedder "
                       f"{embedder.model} ({embedder.dimension} dims, collection {stats.dimensions})")
        if stats.unreported:
            report.finding("unreported by this backend: "
                           + "; ".join(f"{u.field} ({u.reason})" for u in stats.unreported))
        for w in self.warnings:
            report.finding(f"warning: {w}")
        for name, value in (("disk_data_size_bytes", stats.disk_data_size_bytes), ("points", scan.points),
                            ("vector_count", stats.vector_count), ("source_files", len(files)),
                            ("metadata_completeness", scan.metadata_completeness), ("field_completeness", fields),
                            ("duplicate_groups", len(scan.duplicate_hashes)),
                            ("duplicate_share", scan.duplicate_share),
                            ("foreign_model_points", scan.foreign_model_points),
                            ("model_versions", scan.model_versions), ("collection_dimension", stats.dimensions),
                            ("embedder_dimension", embedder.dimension), ("index_status", stats.index_status),
                            ("segments_count", stats.segments_count)):
            report.metric(name, value)
