"""Ingest: markdown/MDX book in, chunks with full metadata embedded into a Qdrant collection.

- :mod:`.documents` finds and reads the book's files (front matter, Docusaurus routes);
- :mod:`.mdx` strips MDX syntax; :mod:`.syntax` holds the shared line-ending, fence,
  heading and list-marker rules;
- :mod:`.blocks` splits a page into sections and blocks; :mod:`.chunking` turns them into
  :class:`~.chunking.Chunk` objects, with :mod:`.units` (the pieces and how an oversized one
  is cut) and :mod:`.packing` (chunk boundaries and overlap);
- :mod:`.pipeline` embeds and writes them, incrementally and convergently.
"""

from retrieval_lib.ingest.pipeline import (
    DEFAULT_BASE_URL,
    SAMPLE_BOOK,
    IngestSummary,
    default_chunk_tokens,
    ingest,
    ingest_from_settings,
    prepare_documents,
)

__all__ = ["SAMPLE_BOOK", "DEFAULT_BASE_URL", "IngestSummary", "prepare_documents", "ingest",
           "ingest_from_settings", "default_chunk_tokens"]
