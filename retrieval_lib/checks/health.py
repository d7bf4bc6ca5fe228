"""Collection health: a pass over EVERY point (paged scroll), not a sample.

- payload completeness per field (seed 000 FR-007's fields),
- ``metadata_completeness``: % of points carrying every field (seed 004),
- duplicate ``content_hash`` values (the same text stored twice),
- points whose ``model_version`` differs from the configured embedder,
- points per source file.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ..models import PAYLOAD_FIELDS
from ..store import VectorStore, size_warning

__all__ = ["PayloadScan", "scan_payloads"]


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

    @property
    def metadata_completeness(self) -> float:
        """% of points that carry every payload field (100.0 for an empty collection)."""
        return 100.0 * self.complete_points / self.points if self.points else 100.0

    def field_completeness(self) -> dict[str, float]:
        """% of points carrying each field."""
        return {f: (100.0 * n / self.points if self.points else 100.0) for f, n in self.field_present.items()}

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["metadata_completeness"] = self.metadata_completeness
        return out


def scan_payloads(store: VectorStore, collection: str, *, expected_model: str | None = None,
                  batch_size: int = 512, progress: bool = False) -> PayloadScan:
    """Read every point's payload once and tally completeness, duplicates and models.

    Args:
        store: the store holding the collection.
        collection: collection name.
        expected_model: the configured embedder's model; points with another
            ``model_version`` are counted as foreign.
        batch_size: points per scroll page.
        progress: show a progress bar (tqdm).
    """
    fields = list(PAYLOAD_FIELDS)
    present = Counter({f: 0 for f in fields})
    hashes: Counter[str] = Counter()
    models: Counter[str] = Counter()
    files: Counter[str] = Counter()
    points = complete = 0
    iterator = store.scroll(collection, with_payload=True, batch_size=batch_size)
    if progress:
        from tqdm import tqdm

        iterator = tqdm(iterator, total=store.count(collection), desc="scanning points", unit="pt")
    for point in iterator:
        payload = point.payload or {}
        points += 1
        have = [f for f in fields if payload.get(f) not in (None, "")]
        present.update(have)
        complete += len(have) == len(fields)
        if payload.get("content_hash"):
            hashes[str(payload["content_hash"])] += 1
        models[str(payload.get("model_version") or "(none)")] += 1
        files[str(payload.get("source_file") or "(none)")] += 1
    duplicates = {h: n for h, n in hashes.items() if n > 1}
    foreign = sum(n for m, n in models.items() if expected_model and m != expected_model)
    scan = PayloadScan(points=points, field_present=dict(present), complete_points=complete,
                       duplicate_hashes=duplicates, model_versions=dict(models), foreign_model_points=foreign,
                       points_per_file=dict(sorted(files.items())))
    small = size_warning(collection, points)
    if small:
        scan.warnings.append(small)
    if duplicates:
        scan.warnings.append(f"{sum(duplicates.values()) - len(duplicates)} points repeat the text of another")
    if foreign:
        scan.warnings.append(f"{foreign} points were embedded with a model other than {expected_model}")
    return scan
