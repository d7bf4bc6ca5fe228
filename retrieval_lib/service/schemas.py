"""The JSON the service reads and writes (what its OpenAPI schema publishes).

The request model checks types only (strictly: ``"5"`` is not a ``top_k``) and
refuses unknown fields; the ranges (empty query, length, ``top_k`` >= 1,
threshold in [0, 1]) are the library's rules, applied by
:mod:`retrieval_lib.validation`, so the HTTP API and the library refuse the same
inputs with the same messages.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from retrieval_lib.models import RESULT_FIELDS, SEED003_FIELDS
from retrieval_lib.validation import MAX_TOP_K

__all__ = ["SearchRequest", "ResultItem", "SearchAnswer", "ErrorDetail", "ErrorAnswer", "HealthAnswer",
           "RESULT_FIELDS", "SEED003_FIELDS", "DEFAULT_TOP_K"]

DEFAULT_TOP_K = 5



class SearchRequest(BaseModel):
    """``POST /search`` body."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={
        "examples": [{"query": "What is ROS2?", "top_k": 5}]})

    query: str = Field(description="natural-language question; not empty, at most the service's limit "
                                   "(500 characters by default)")
    top_k: int = Field(DEFAULT_TOP_K, description=f"results wanted, at least 1; above {MAX_TOP_K} it is capped "
                                                  "with a warning")
    similarity_threshold: float | None = Field(None, description="minimum score, 0 to 1")
    source_prefix: str | None = Field(None, description="keep chunks whose source path or URL starts with this")
    section: str | None = Field(None, description="keep chunks whose section title is exactly this")


class ResultItem(BaseModel):
    """One retrieved chunk: the vector hit joined with its metadata row by ``chunk_id``."""

    chunk_id: str
    snippet: str
    source_path: str | None
    slug: str | None
    title: str | None
    score: float = Field(description="cosine similarity clipped to [0, 1]; results are ordered by it")
    section_title: str | None
    source_url: str | None
    chunk_sequence: int | None


class SearchAnswer(BaseModel):
    """``POST /search`` answer."""

    query: str
    results: list[ResultItem]
    total_results: int
    took_ms: float
    warnings: list[str]


class ErrorDetail(BaseModel):
    type: str = Field(description="the exception's class in retrieval_lib's error tree, e.g. ValidationError")
    message: str
    status: int


class ErrorAnswer(BaseModel):
    """The one error body."""

    error: ErrorDetail


class HealthAnswer(BaseModel):
    """``GET /health`` answer (200 when every dependency is reachable, else 503 with the same body)."""

    status: str = Field(description="ok or unavailable")
    dependencies: dict[str, dict[str, Any]] = Field(
        description="vector_store, database, embedder: each with reachable, latency_ms and its facts")
