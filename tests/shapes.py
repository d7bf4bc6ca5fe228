"""Collections in the shapes teams' own pipelines wrote (shared/REAL_COLLECTIONS.md), built by hand.

Each shape is a function of (file index, chunk index, text) -> (point id, payload), written the way that
repository's ingest writes it. :func:`build` fills a collection of one shape (or a mix) with real MiniLM
vectors of the texts, so searches rank by meaning.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from typing import Any

from corpus import DOCS
from qdrant_client import models

Shape = Callable[[int, int, str, dict[str, Any]], tuple[Any, dict[str, Any]]]

SITE = "https://book.example"


def _url(doc: dict[str, Any]) -> str:
    return f"{SITE}/docs/{doc['source_file'].removesuffix('.md')}"


def cohere_int_text_url(f: int, i: int, text: str, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """#1: int counter ids; ``text``, ``url``, ``chunk_id`` meaning the index within the page."""
    return f * 100 + i, {"text": text, "url": _url(doc), "chunk_id": doc.get("chunk_sequence", 0)}


def minilm_uuid5_nested(f: int, i: int, text: str, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """#2: uuid5 ids; ``content``, ``module``, ``chapter``, ``page_url``, ``heading``, a nested ``metadata{}``."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{f}-{i}")), {
        "content": text, "module": doc["source_file"].split("/")[0], "chapter": doc["title"],
        "page_url": "/docs/" + doc["source_file"].removesuffix(".md"), "heading": doc["section_title"],
        "difficulty": "beginner", "metadata": {"word_count": len(text.split())}}


def gemini_int_source_constant(f: int, i: int, text: str, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """#9-like: a constant ``source`` tag ("docs") beside the real ``path``."""
    return f * 1000 + i, {"text": text, "path": "docs/" + doc["source_file"], "chapter": doc["title"],
                          "section": doc["section_title"], "source": "docs"}


def openai_nested_metadata(f: int, i: int, text: str, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """#7: uuid4 ids; ``content``, ``chunk_id``, ``stored_at``, the rest nested in ``metadata{}``."""
    return str(uuid.uuid4()), {
        "content": text, "chunk_id": f"{f}-{i}", "stored_at": "2026-01-02T03:04:05Z",
        "metadata": {"file_path": "docs/" + doc["source_file"], "chapter": doc["title"],
                     "section_header": doc["section_title"],
                     "content_hash": hashlib.sha256(text.encode()).hexdigest()[:16]}}


def md5_text_url_title(f: int, i: int, text: str, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """#13: md5-hex ids of ``url:index``; ``text``, ``url``, ``title``, ``chunk_index``."""
    url = _url(doc)
    return hashlib.md5(f"{url}:{i}".encode()).hexdigest(), {"text": text, "url": url, "title": doc["title"],
                                                           "chunk_index": i}


def chunk_text_position(f: int, i: int, text: str, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """#8: ``chunk_text``, ``chapter_id``, ``position``, ``token_count``."""
    return str(uuid.uuid4()), {"chunk_id": f"c{f}-{i}", "chapter_id": doc["source_file"], "chapter_number": f,
                               "chunk_text": text, "position": i, "token_count": len(text.split())}


def headings_list(f: int, i: int, text: str, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """#5: sha256[:16] ids (as ints); ``headings[]`` list, nested ``metadata{content_hash, chunk_id}``."""
    digest = int(hashlib.sha256(f"{f}:{i}".encode()).hexdigest()[:15], 16)
    return digest, {"url": _url(doc), "title": doc["title"], "headings": [doc["title"], doc["section_title"]],
                    "content": text, "metadata": {"content_hash": hashlib.md5(text.encode()).hexdigest(),
                                                  "chunk_id": f"{f}-{i}"}}


def two_schemas(f: int, i: int, text: str, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """#4: two schemas in one collection: ``content,url,chunk_index,source`` and
    ``content,file_path,file_name,chunk_id,source``."""
    if f % 2:
        return str(uuid.uuid4()), {"content": text, "url": _url(doc), "chunk_index": i, "source": "web"}
    return str(uuid.uuid4()), {"content": text, "file_path": "docs/" + doc["source_file"],
                               "file_name": doc["source_file"].split("/")[-1], "chunk_id": f"{f}-{i}",
                               "source": "local_file"}


SHAPES: dict[str, Shape] = {
    "int ids, text/url/chunk_id (#1)": cohere_int_text_url,
    "uuid5, nested metadata, page_url (#2)": minilm_uuid5_nested,
    "constant source tag, path (#9)": gemini_int_source_constant,
    "nested metadata.file_path (#7)": openai_nested_metadata,
    "md5 ids, text/url/title/chunk_index (#13)": md5_text_url_title,
    "chunk_text/position/token_count (#8)": chunk_text_position,
    "headings list, hashed int ids (#5)": headings_list,
    "two schemas in one collection (#4)": two_schemas,
}

#: What each shape's source file should read as, for the first document (a path, or a URL's path).
EXPECTED_SOURCE = {
    "int ids, text/url/chunk_id (#1)": "docs/",
    "uuid5, nested metadata, page_url (#2)": "docs/",
    "constant source tag, path (#9)": "docs/",
    "nested metadata.file_path (#7)": "docs/",
    "md5 ids, text/url/title/chunk_index (#13)": "docs/",
    "chunk_text/position/token_count (#8)": "",
    "headings list, hashed int ids (#5)": "docs/",
    "two schemas in one collection (#4)": "docs/",
}


def build(store: Any, collection: str, shape: Shape, vectors: list[list[float]]) -> int:
    """Fill ``collection`` (created here) with every doc of :data:`corpus.DOCS` in ``shape``; returns the count.

    ``vectors``: one vector per doc, in order (the docs' contents embedded by the test's embedder).
    """
    store.client.create_collection(collection, vectors_config=models.VectorParams(
        size=len(vectors[0]), distance=models.Distance.COSINE))
    points = []
    for f, (doc, vector) in enumerate(zip(DOCS, vectors)):
        point_id, payload = shape(f, doc["id"], doc["content"], doc)  # the doc id: unique where urls repeat
        points.append(models.PointStruct(id=point_id, vector=vector, payload=payload))
    store.client.upsert(collection, points=points, wait=True)
    return len(points)


#: The sample book's folders team #9's collection is built from (:func:`team9_book`).
TEAM9_FOLDERS = ("module-01-ros2", "module-02-simulation")


def team9_book(root: Any, embedder: Any, collection: str = "team9") -> Any:
    """#9 (DoniaBatool): a copy of :data:`TEAM9_FOLDERS` of the sample book under ``root / "docs"`` and its
    collection in ``root / "store"``: uuid5 ids; ``text``, ``path`` (relative to the docs folder), ``chapter``,
    ``section``, ``source`` = "docs"; pieces of ~250 words embedded by ``embedder``; no URL key. Returns the docs
    folder."""
    import shutil

    from qdrant_client import QdrantClient

    from retrieval_lib.book import SAMPLE_DOCS

    docs = root / "docs"
    for folder in TEAM9_FOLDERS:
        shutil.copytree(SAMPLE_DOCS / folder, docs / folder)
    client = QdrantClient(path=str(root / "store"))
    client.create_collection(collection, vectors_config=models.VectorParams(size=embedder.dimension,
                                                                            distance=models.Distance.COSINE))
    pieces: list[tuple[str, int, str]] = []
    for path in sorted(docs.rglob("*.md")):
        rel = path.relative_to(docs).as_posix()
        words = path.read_text(encoding="utf-8").split()
        pieces += [(rel, n, " ".join(words[i:i + 250])) for n, i in enumerate(range(0, len(words), 250))]
    vectors = embedder.embed_documents([piece for _, _, piece in pieces])
    client.upsert(collection, [
        models.PointStruct(id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{rel}#{i}")), vector=vector,
                           payload={"text": piece, "path": rel, "chapter": rel.split("/")[0], "section": f"part {i}",
                                    "source": "docs"})
        for (rel, i, piece), vector in zip(pieces, vectors)])
    client.close()
    return docs


def compare_chunked(docs: Any, chunks_of: dict[str, list[str]]) -> dict[str, Any]:
    """Each page of the docs folder ``docs`` against its chunks as a team's chunker cut them (``chunks_of``: page
    path -> chunk texts, laid out page after page): :func:`retrieval_lib.book.compare_pages`' comparisons by page."""
    from retrieval_lib.book import BookChunks, BookMap, compare_pages, read_docs

    contents: list[str | None] = []
    page_chunks = {}
    for rel, cs in chunks_of.items():
        page_chunks[rel] = list(range(len(contents), len(contents) + len(cs)))
        contents += cs
    n = len(contents)
    chunks = BookChunks([str(i) for i in range(n)], [None] * n, [None] * n, contents, [None] * n)
    return {c.page: c for c in compare_pages(read_docs(docs), BookMap([], page_chunks), chunks)}
