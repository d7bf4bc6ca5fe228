"""Ingest: Docusaurus markdown → chunks with the seeds' payload → Qdrant.

Incremental and idempotent. Each point carries ``file_hash`` (the file's bytes
plus the chunking settings and embedding model); a file whose points all carry
the current hash, and form a complete sequence, is left alone. A changed file
is re-chunked, its new points upserted, and only then its stale points deleted,
so a search never sees the file missing. A run killed at any moment leaves
points that either match the current hash completely or not, and the next run
finishes the job: the collection converges, with no duplicates (point ids are
derived from ``source_file`` and position) and no orphans.

Every document is read and chunked before anything is written, so a bad file
(not UTF-8, broken front matter) stops the ingest with nothing half-written.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

from retrieval_lib.book.pages import SAMPLE_DOCS
from retrieval_lib.collection.ours import point_id_for, written_by_us
from retrieval_lib.config import Settings, load_settings
from retrieval_lib.embedding.providers import Embedder, batch_limit, make_embedder, request_size
from retrieval_lib.errors import ConfigurationError, ReadOnlyError
from retrieval_lib.ingest.chunking import CHUNKER_VERSION, chunk_markdown, model_window
from retrieval_lib.ingest.documents import MarkdownDoc, discover_documents, is_stub, read_document
from retrieval_lib.search import ensure_compatible
from retrieval_lib.stores import VectorStore, open_store
from retrieval_lib.stores.scan import iter_points

__all__ = ["SAMPLE_BOOK", "DEFAULT_BASE_URL", "IngestSummary", "prepare_documents", "ingest",
           "ingest_from_settings", "default_chunk_tokens"]

log = logging.getLogger(__name__)

#: The sample book shipped with the package (the embedded default's corpus).
SAMPLE_BOOK = SAMPLE_DOCS
DEFAULT_BASE_URL = "https://physical-ai-book.example"


@dataclass(frozen=True)
class PreparedChunk:
    """A chunk ready to embed: its id, the text to embed, and its payload."""

    point_id: str
    embed_text: str
    payload: dict[str, Any]


@dataclass
class IngestSummary:
    """What an ingest did, file by file and chunk by chunk."""

    collection: str
    files_added: int = 0
    files_replaced: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    files_skipped: int = 0
    chunks_added: int = 0
    chunks_replaced: int = 0
    chunks_deleted: int = 0
    chunks_total: int = 0
    seconds: float = 0.0
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def line(self) -> str:
        """The one-line summary the CLI prints."""
        return (
            f"{self.collection}: files {self.files_added} added, {self.files_replaced} replaced, "
            f"{self.files_deleted} deleted, {self.files_unchanged} unchanged, {self.files_skipped} skipped; "
            f"chunks {self.chunks_added} added, {self.chunks_replaced} replaced, {self.chunks_deleted} deleted; "
            f"{self.chunks_total} chunks in {self.seconds:.1f} s"
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _file_hash(raw: bytes, *, model: str, max_tokens: int, overlap: int, base_url: str) -> str:
    h = hashlib.sha256(raw)
    # The chunker's version too: a new chunker re-chunks (and re-embeds) every file.
    h.update(f"|{model}|{max_tokens}|{overlap}|{base_url}|chunker {CHUNKER_VERSION}".encode())
    return h.hexdigest()


def prepare_documents(
    docs_dir: Path,
    embedder: Embedder,
    *,
    base_url: str = DEFAULT_BASE_URL,
    max_tokens: int | None = None,
    overlap_tokens: int = 40,
) -> tuple[dict[str, list[PreparedChunk]], dict[str, str], list[str]]:
    """Read and chunk every document under ``docs_dir`` (nothing is written).

    Returns:
        (chunks by source_file, file_hash by source_file, skipped stub files)

    Raises:
        DocumentError: a file is not valid UTF-8 or has broken front matter.
        ConfigurationError: ``docs_dir`` is missing or holds no markdown.
    """
    docs_dir = Path(docs_dir)
    if not docs_dir.is_dir():
        raise ConfigurationError(f"docs folder {docs_dir} does not exist", option="docs_dir")
    paths = discover_documents(docs_dir)
    if not paths:
        raise ConfigurationError(f"no .md or .mdx files under {docs_dir}", option="docs_dir")
    max_tokens = max_tokens or default_chunk_tokens(embedder)
    base = base_url.rstrip("/")
    prepared: dict[str, list[PreparedChunk]] = {}
    hashes: dict[str, str] = {}
    skipped: list[str] = []
    for path in paths:
        doc: MarkdownDoc = read_document(path, docs_dir)
        if is_stub(doc):
            skipped.append(doc.source_file)
            continue
        chunks = chunk_markdown(doc.body, title=doc.title, max_tokens=max_tokens,
                                overlap_tokens=overlap_tokens, count_tokens=embedder.count_tokens,
                                window_tokens=model_window(embedder))
        if not chunks:
            skipped.append(doc.source_file)
            continue
        file_hash = _file_hash(path.read_bytes(), model=embedder.model, max_tokens=max_tokens,
                               overlap=overlap_tokens, base_url=base)
        hashes[doc.source_file] = file_hash
        items = []
        for chunk in chunks:
            payload = {
                "chunk_id": f"{doc.source_file}#{chunk.sequence}",
                "source_file": doc.source_file,
                "source_url": base + doc.route,
                "title": doc.title,
                "section_title": chunk.section_title,
                "heading_path": list(chunk.heading_path),
                "content": chunk.text,
                "content_hash": hashlib.sha256(chunk.text.encode("utf-8")).hexdigest(),
                "chunk_sequence": chunk.sequence,
                "total_chunks": len(chunks),
                "token_count": chunk.token_count,
                "model_version": embedder.model,
                "file_hash": file_hash,
            }
            # The document title travels with the text that is embedded (not with `content`):
            # a chunk deep in "Gazebo Basics" should still be found by "Gazebo".
            embed_text = f"{doc.title}\n{chunk.text}"
            items.append(PreparedChunk(point_id_for(doc.source_file, chunk.sequence), embed_text, payload))
        prepared[doc.source_file] = items
    return prepared, hashes, skipped


def default_chunk_tokens(embedder: Embedder) -> int:
    """Chunk size that fits the model's input window with room for the title line."""
    return 200 if int(embedder.max_tokens) <= 256 else 350


def _existing_points(store: VectorStore, collection: str) -> dict[str, list[dict[str, Any]]]:
    by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    fields = ["source_file", "file_hash", "chunk_sequence", "total_chunks", "model_version"]
    for point in iter_points(store, collection, fields):  # just these fields, in large pages
        payload = dict(point.payload or {})
        payload["_id"] = str(point.id)
        by_file[str(payload.get("source_file"))].append(payload)
    return by_file


def _is_complete(points: list[dict[str, Any]], file_hash: str) -> bool:
    """Whether ``points`` all carry ``file_hash`` and hold every position 0 .. total_chunks - 1 once."""
    if not points or any(p.get("file_hash") != file_hash for p in points):
        return False
    total = points[0].get("total_chunks")
    sequences = [s for s in (p.get("chunk_sequence") for p in points) if isinstance(s, int)]
    # A point without a whole-number position (a damaged or foreign payload) makes the file
    # incomplete, so it is re-ingested rather than crashing the comparison below.
    if len(sequences) != len(points):
        return False
    return sorted(sequences) == list(range(total or 0))


def _finish_file(store: VectorStore, collection: str, source: str, chunks: list[PreparedChunk],
                 old: list[dict[str, Any]], summary: IngestSummary) -> None:
    """Every new point of ``source`` is written: delete its stale ones and count the file."""
    old_ids = {p["_id"] for p in old}
    new_ids = {c.point_id for c in chunks}
    stale = sorted(old_ids - new_ids)
    store.delete(collection, stale)
    if old_ids:
        summary.files_replaced += 1
        summary.chunks_replaced += len(new_ids & old_ids)
        summary.chunks_added += len(new_ids - old_ids)
        summary.chunks_deleted += len(stale)
    else:
        summary.files_added += 1
        summary.chunks_added += len(chunks)


#: Points read to tell whether this ingest wrote a collection (their ids against its own id scheme).
OWNER_SAMPLE = 256


def refuse_foreign(store: VectorStore, collection: str) -> None:
    """Raise unless ``collection`` is absent, empty, or written by this ingest (judged on a sample of its points).

    Raises:
        ReadOnlyError: another pipeline wrote its points.
    """
    if not store.exists(collection):
        return
    sample = [(p.id, p.payload) for p in islice(store.scroll(
        collection, with_payload=["source_file", "chunk_sequence"], batch_size=OWNER_SAMPLE), OWNER_SAMPLE)]
    if written_by_us(sample) is False:
        raise ReadOnlyError(
            f"collection {collection!r} holds points that this workbook's ingest did not write (their ids or "
            "payload are another pipeline's): ingest never writes into, or recreates, a team's own collection. "
            "Ingest the demo book into another collection (--collection NAME); to write into this one anyway, "
            "pass --allow-foreign-collection", collection=collection)


def ingest(
    store: VectorStore,
    embedder: Embedder,
    collection: str,
    docs_dir: Path = SAMPLE_BOOK,
    *,
    base_url: str = DEFAULT_BASE_URL,
    recreate: bool = False,
    max_tokens: int | None = None,
    overlap_tokens: int = 40,
    batch_size: int | None = None,
    progress: bool = True,
    allow_foreign: bool = False,
) -> IngestSummary:
    """Bring ``collection`` in line with the documents under ``docs_dir``.

    ``batch_size``: chunks per embed call and per upsert; by default the embedder's request size
    (:func:`~retrieval_lib.embedding.base.request_size`, read again before every call, so a batch a timeout halved
    is followed by calls of the halved size), or its provider's encode batch for a model on this machine
    (:data:`PROVIDERS`). The progress bar advances after every call.
    ``allow_foreign``: write (or with ``recreate``, drop and rebuild) even a collection whose points another
    pipeline wrote. By default such a collection is refused before anything is read from the book.

    Raises:
        ReadOnlyError: ``collection`` holds points this ingest did not write (and ``allow_foreign`` is False).
        DocumentError: a document cannot be read (nothing was written).
        ModelMismatchError: the collection was built with another model or
            dimension (use ``recreate=True``).
        VectorStoreError, EmbeddingError: a dependency failed midway; re-running
            converges.
    """
    from qdrant_client import models
    from tqdm import tqdm

    started = datetime.now(UTC)
    if not allow_foreign:
        refuse_foreign(store, collection)
    prepared, hashes, skipped = prepare_documents(docs_dir, embedder, base_url=base_url,
                                                  max_tokens=max_tokens, overlap_tokens=overlap_tokens)
    summary = IngestSummary(collection=collection, skipped=skipped, files_skipped=len(skipped))
    for name in skipped:
        summary.warnings.append(f"skipped {name}: empty or a stub (e.g. 'Coming soon')")

    if store.exists(collection) and not recreate:
        ensure_compatible(store, collection, embedder, check_model=False)  # a wrong size: nothing is written
    store.create_collection(collection, embedder.dimension, recreate=recreate)
    existing = _existing_points(store, collection)
    ensure_compatible(store, collection, embedder,
                      found_models=(p.get("model_version") for pts in existing.values() for p in pts))

    todo: list[tuple[str, list[PreparedChunk]]] = []
    for source, chunks in prepared.items():
        if _is_complete(existing.get(source, []), hashes[source]):
            summary.files_unchanged += 1
        else:
            todo.append((source, chunks))
    # Chunks are embedded in batches of `batch_size` across files (not one call per file); a file's
    # stale points are deleted only once every one of its new points is written, so a search never
    # sees a file missing, and a run killed between two batches leaves that file incomplete (redone).
    fixed = batch_size

    def next_size() -> int:  # the embedder's request size now: a timeout at a local server may have halved it
        return fixed or request_size(embedder) or batch_limit(embedder.provider)

    queue = [(source, c) for source, chunks in todo for c in chunks]
    left = {source: len(chunks) for source, chunks in todo}
    # one stamp a run: every chunk this run writes was processed by it (a file left unchanged keeps its own run's),
    # so a collection's stamps count its ingest runs, not how many seconds its embedding took
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    bar = tqdm(total=len(queue), desc="embedding chunks", unit="chunk", disable=not progress or not queue)
    try:
        start = 0
        while start < len(queue):
            batch = queue[start:start + next_size()]
            start += len(batch)
            vectors = embedder.embed_documents([c.embed_text for _, c in batch])
            store.upsert(collection, [
                models.PointStruct(id=c.point_id, vector=v,
                                   payload={**c.payload, "processing_timestamp": stamp})
                for (source, c), v in zip(batch, vectors)
            ])
            bar.update(len(batch))
            for source, written in Counter(s for s, _ in batch).items():
                left[source] -= written
                if left[source] == 0:
                    _finish_file(store, collection, source, prepared[source], existing.get(source, []), summary)
    finally:
        bar.close()

    # Files that are gone (or became stubs) lose their chunks.
    for source, points in existing.items():
        if source not in prepared:
            store.delete(collection, [p["_id"] for p in points])
            summary.files_deleted += 1
            summary.chunks_deleted += len(points)

    summary.chunks_total = store.count(collection)
    summary.seconds = (datetime.now(UTC) - started).total_seconds()
    return summary


def ingest_from_settings(
    docs_dir: Path | None = None,
    *,
    collection: str | None = None,
    base_url: str | None = None,
    recreate: bool = False,
    progress: bool = True,
    allow_foreign: bool = False,
    settings: Settings | None = None,
) -> IngestSummary:
    """:func:`ingest` with the configured store and embedder (what the CLI calls)."""
    settings = settings or load_settings()
    embedder = make_embedder(settings)
    with open_store(settings, create=True) as store:
        return ingest(store, embedder, collection or settings.collection_name, docs_dir or SAMPLE_BOOK,
                      base_url=base_url or DEFAULT_BASE_URL, recreate=recreate, progress=progress,
                      allow_foreign=allow_foreign)
