"""The specification codes the notebooks cite, each with what it asks in one sentence.

The five specifications behind the workbook are ``shared/seeds/00N_*.txt``: seed 000 (retrieval
and query validation), 001 (the retrieval layer), 002 (the validation data model), 003 (the
retrieval HTTP API) and 004 (embedding retrieval data model). Notebooks name the codes once, in a
"Specification" line; the report and docs/gates.md print this glossary so nobody has to open the seeds.
"""

from __future__ import annotations

__all__ = ["GLOSSARY", "SEEDS", "explain"]

SEEDS: dict[str, str] = {
    "seed 000": "Retrieval & query validation for the RAG chatbot (user stories, FR-001…012, SC-001…008)",
    "seed 001": "The retrieval layer: query in, Cohere query embedding, Qdrant search, chunks out",
    "seed 002": "Data model of the retrieval pipeline and its validation (queries, results, reports)",
    "seed 003": "The retrieval HTTP API: POST /search, GET /health, metadata joined by chunk_id",
    "seed 004": "Data model of embedding retrieval: SearchResult, CollectionStats, golden queries",
}

GLOSSARY: dict[str, str] = {
    "seed 000 US1": "a natural-language question returns the most relevant chunks, best first",
    "seed 000 US2": "top_k and the similarity threshold can be set per query",
    "seed 000 US3": "empty queries and Qdrant or Cohere failures give clear errors, never a crash",
    "seed 000 US4": "each result can be inspected: its text, source file, section and score",
    "seed 000 FR-004": "results are ordered by similarity score, highest first",
    "seed 000 FR-005": "top_k is configurable (default 5)",
    "seed 000 FR-006": "the similarity threshold is configurable (default 0.0)",
    "seed 000 FR-007": "every result carries its full chunk metadata (chunk_id, source_file, section_title, content, "
                       "content_hash, chunk_sequence, total_chunks, processing_timestamp, token_count, model_version)",
    "seed 000 FR-008": "every result carries its similarity score",
    "seed 000 FR-009": "an empty query is refused before any work",
    "seed 000 FR-012": "queries use the same embedding model and settings as the documents",
    "seed 000 SC-001": "well-defined topics get at least 3 relevant results in the top 5, scoring above 0.5",
    "seed 000 SC-002": "95% of queries (embedding + search) finish in under 2 seconds",
    "seed 000 SC-003": "every one of the book's content files can be retrieved: none orphaned",
    "seed 000 SC-004": "the same query always returns identical results in the same order",
    "seed 000 SC-005": "every edge case (empty query, connection failure, API error) is handled without a crash",
    "seed 000 SC-006": "at least 80% of top-3 results are topically related, judged by a person",
    "seed 000 SC-007": "\"Gazebo simulation\" returns chunks primarily from the module-02-simulation files",
    "seed 000 SC-008": "similarity scores lie between 0 and 1, higher meaning a better match",
    "seed 003 FR-008": "every query and its response time are logged",
    "seed 003 FR-012": "top_k is capped at 20",
    "seed 003 SC-001": "the service answers health checks within 10 seconds of launch",
    "seed 003 SC-002": "searches return within 2 seconds for queries under 500 characters",
    "seed 003 SC-003": "known test queries return their known chapters",
    "seed 003 SC-004": "every result has chunk_id, snippet, source_path, slug, title and score",
    "seed 003 SC-005": "the same search always returns the identical answer",
    "seed 003 SC-006": "invalid requests get a 4xx with a descriptive message",
    "seed 003 SC-007": "dependency failures give a 5xx without crashing the service",
    "seed 003 SC-008": "10 concurrent searches complete without errors",
}


def explain(code: str) -> str:
    """What ``code`` (e.g. ``"seed 000 SC-003"``) asks; a ``ValueError``-free lookup that says when it is unknown."""
    return GLOSSARY.get(code) or SEEDS.get(code) or f"{code} (not in the glossary; see shared/seeds/)"

