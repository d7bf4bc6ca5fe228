"""Result types: what a search returns and what a collection reports.

Field names follow the specifications (seed 000 FR-007 for chunk metadata,
seed 004 for ``CollectionStats``). All are pydantic models, so
``model_dump(mode="json")`` gives JSON-ready dicts for the CLI and reports.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SEED003_FIELDS", "RESULT_FIELDS", "PAYLOAD_FIELDS", "SearchResult", "SearchResponse", "CollectionStats",
           "UnreportedField", "query_id"]


def query_id(text: str) -> str:
    """A query's stable id: ``q`` + the first 10 hex digits of the SHA-1 of its whitespace-normalised text.

    One rule for every file that keys queries by id (the run files' TREC/ranx runs and qrels, the judgments' TREC
    qrels), so they join. Case and inner spacing count ("What is ROS2?" and "what is ros2?" are different queries);
    leading and trailing spaces and runs of spaces do not.
    """
    norm = " ".join(text.split())
    return "q" + hashlib.sha1(norm.encode("utf-8")).hexdigest()[:10]

#: The fields seed 003 requires of every result (SC-004).
SEED003_FIELDS: tuple[str, ...] = ("chunk_id", "snippet", "source_path", "slug", "title", "score")
#: Every field of a result: seed 003's plus section, URL and position.
RESULT_FIELDS: tuple[str, ...] = SEED003_FIELDS + ("section_title", "source_url", "chunk_sequence")

#: Payload fields every chunk carries (seed 000 FR-007, seed 001, seed 004).
PAYLOAD_FIELDS: tuple[str, ...] = (
    "chunk_id",
    "source_file",
    "source_url",
    "title",
    "section_title",
    "content",
    "content_hash",
    "chunk_sequence",
    "total_chunks",
    "processing_timestamp",
    "token_count",
    "model_version",
)


class SearchResult(BaseModel):
    """One retrieved chunk: its full payload plus its similarity to the query.

    ``similarity_score`` is the cosine similarity clipped to [0, 1] (seed 000
    SC-008); ``raw_score`` is Qdrant's score as returned (cosine can be
    negative for unrelated text). Ranking uses ``raw_score``.
    A payload field the point does not carry is ``None`` and listed in
    ``missing_fields``.
    """

    model_config = ConfigDict(frozen=True)

    point_id: str
    chunk_id: str | None = None
    source_file: str | None = None
    source_url: str | None = None
    title: str | None = None
    section_title: str | None = None
    content: str | None = None
    content_hash: str | None = None
    chunk_sequence: int | None = None
    total_chunks: int | None = None
    processing_timestamp: str | None = None
    token_count: int | None = None
    model_version: str | None = None
    similarity_score: float = Field(ge=0.0, le=1.0)
    raw_score: float
    missing_fields: list[str] = Field(default_factory=list)

    @classmethod
    def from_point(cls, point_id: Any, score: float, payload: dict[str, Any] | None,
                   held: Collection[str] | None = None) -> SearchResult:
        """Build a result from a Qdrant point id, score and payload (the workbook's record of the point).

        ``held``: the fields the collection holds at all (its payload roles); a field it never holds is None
        but not *missing* (the point lacks nothing its collection has). Default: every field.
        """
        payload = payload or {}
        values: dict[str, Any] = {name: payload.get(name) for name in PAYLOAD_FIELDS}
        wanted = PAYLOAD_FIELDS if held is None else [f for f in PAYLOAD_FIELDS if f in held]
        missing = [name for name in wanted if payload.get(name) in (None, "")]
        for name in ("chunk_sequence", "total_chunks", "token_count"):
            if values[name] is not None and not isinstance(values[name], int):
                try:
                    values[name] = int(values[name])
                except (TypeError, ValueError):
                    values[name] = None
                    if name in wanted:
                        missing.append(name)
        for name in ("chunk_id", "source_file", "source_url", "title", "section_title", "content",
                     "content_hash", "processing_timestamp", "model_version"):
            if values[name] is not None and not isinstance(values[name], str):
                values[name] = str(values[name])
        return cls(
            point_id=str(point_id),
            similarity_score=min(1.0, max(0.0, float(score))),
            raw_score=float(score),
            missing_fields=sorted(set(missing)),
            **values,
        )


class SearchResponse(BaseModel):
    """The answer to one query (seed 000 RetrievalResponse, seed 004 SearchResponse)."""

    query_text: str
    results: list[SearchResult]
    total_results: int
    top_k: int
    similarity_threshold: float
    filters: dict[str, str] = Field(default_factory=dict)
    collection: str
    model: str
    embed_ms: float
    search_ms: float
    execution_time_ms: float
    timestamp: datetime
    warnings: list[str] = Field(default_factory=list)
    #: why the retriever failed on this query (one line, secrets redacted); None when it answered. A team's
    #: retriever (retrieval_lib.retrievers) sets it, so an errored question is never read as an empty answer.
    error: str | None = None

    @property
    def is_empty(self) -> bool:
        """True when no chunk passed the threshold and filters (a result, not an error)."""
        return not self.results

    def ranking(self) -> list[tuple[str, float]]:
        """(point_id, raw_score) in rank order: what consistency checks compare."""
        return [(r.point_id, r.raw_score) for r in self.results]


class UnreportedField(BaseModel):
    """Why a statistic is ``None``."""

    field: str
    reason: str


class CollectionStats(BaseModel):
    """Statistics of one collection (seed 004 ``CollectionStats``).

    A figure the backend cannot report is ``None``, and ``unreported`` says why.
    """

    collection: str
    location: str
    vector_count: int | None
    points_count: int | None
    dimensions: int | None
    distance: str | None
    index_status: str | None
    segments_count: int | None
    disk_data_size_bytes: int | None
    ram_data_size_bytes: int | None
    source_files: int | None = None
    #: points per ``model_version`` (the embedding model(s) the chunks were made with)
    models: dict[str, int] | None = None
    #: points per ``source_file``, sorted by path
    points_per_source_file: dict[str, int] | None = None
    indexed_fields: list[str] = Field(default_factory=list)
    unreported: list[UnreportedField] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
