"""The JSON the service reads and writes (what its OpenAPI schema publishes).

The request model checks types only (strictly: ``"5"`` is not a ``top_k``) and
refuses unknown fields; the ranges (empty query, length, ``top_k`` >= 1,
threshold in [0, 1]) are the library's rules, applied by
:mod:`retrieval_lib.validation`, so the HTTP API and the library refuse the same
inputs with the same messages. Every one of those limits is also *published*:
:func:`publish_limits` writes them into the OpenAPI schema (``minLength``,
``maxLength``, ``pattern``, ``minimum``, ``maximum``), with the app's own query
limit, so a client generated from the schema sends only requests the service
accepts (schemathesis checks that they agree: ``tests/service/test_service_fuzz.py``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from retrieval_lib.models import RESULT_FIELDS
from retrieval_lib.validation import MAX_TOP_K

__all__ = ["SearchRequest", "SearchAnswer", "ErrorAnswer", "HealthAnswer", "publish_limits", "RESULT_FIELDS",
           "FILTER_MAX_CHARS", "VISIBLE_CHARACTER"]

DEFAULT_TOP_K = 5
#: Longest ``source_prefix`` or ``section`` accepted.
FILTER_MAX_CHARS = 500
#: A character that counts as written: not white space, not a control or format character (zero-width
#: space, joiners, BOM, bidi marks, soft hyphen), not a variation selector or filler. A query must contain one.
#: The same pattern is published in the schema (ECMA, Python and Rust regex engines read it alike; lone
#: surrogates are not text at all, and are refused before this pattern is tried).
VISIBLE_CHARACTER = (r"[^\s\x00-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
                     r"\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\ufff0-\ufffb]")
#: A filter value must hold one character that is not white space.
NOT_BLANK = r"[^\s\x1c-\x1f\x85]"


def _whole_number(value: Any) -> Any:
    """JSON Schema counts ``5.0`` as an integer, so the API does too; ``5.5``, ``"5"`` and ``true`` stay refused."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class SearchRequest(BaseModel):
    """``POST /search`` body."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={
        "examples": [{"query": "What is ROS2?", "top_k": 5}]})

    query: str = Field(description="natural-language question; not empty, at most the service's limit "
                                   "(500 characters by default)")
    top_k: Annotated[int, BeforeValidator(_whole_number)] = Field(
        DEFAULT_TOP_K, description=f"results wanted, at least 1; above {MAX_TOP_K} it is capped with a warning "
                                   "(not refused)")
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


def publish_limits(openapi: dict[str, Any], *, query_max_chars: int) -> dict[str, Any]:
    """Write the limits the service enforces into ``openapi``'s ``SearchRequest`` (in place; returns it).

    ``top_k`` has a minimum and no maximum: above :data:`MAX_TOP_K` it is capped with a warning, not
    refused (``x-capped-at`` says where). Unknown fields are refused (``additionalProperties: false``).
    """
    request = openapi.get("components", {}).get("schemas", {}).get("SearchRequest")
    if not isinstance(request, dict):
        return openapi
    request["additionalProperties"] = False
    props = request["properties"]
    props["query"].update(minLength=1, maxLength=query_max_chars, pattern=VISIBLE_CHARACTER,
                          description=f"natural-language question: 1 to {query_max_chars} characters, at least one "
                                      "of them visible (not only white space, zero-width characters or a BOM); "
                                      "valid Unicode (no lone surrogates)")
    props["top_k"].update(minimum=1, **{"x-capped-at": MAX_TOP_K})
    for _, branch in _branches(props["similarity_threshold"]):
        if branch.get("type") == "number":
            branch.update(minimum=0, maximum=1)
    for name in ("source_prefix", "section"):
        for _, branch in _branches(props[name]):
            if branch.get("type") == "string":
                branch.update(minLength=1, maxLength=FILTER_MAX_CHARS, pattern=NOT_BLANK)
    return openapi


def _branches(prop: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate(prop.get("anyOf", [prop])))
