"""A loopback Qdrant REST server for tests: the real wire protocol, a real engine behind it, 127.0.0.1 only.

Requests are parsed into the models qdrant-client itself ships (``qdrant_client.http.models``, pydantic) and
answered by qdrant-client's local mode on a folder (a COPY of a store: local mode locks its folder) or
``":memory:"``, whose methods take the same models. uvicorn serves it on a free port of 127.0.0.1, as a plain ASGI
app (not FastAPI: the fake must cut a response short mid-body and count the bytes it sends, which its response
classes hide; the body models are qdrant-client's own pydantic models either way).

Endpoints (the paths of ``qdrant_client/http/api/*.py``): ``GET /``, ``GET /collections``,
``GET|PUT|DELETE /collections/{c}``, ``GET /collections/{c}/exists``, ``POST /collections/{c}/points/scroll``,
``.../points/count``, ``POST /collections/{c}/points`` (retrieve), ``.../points/search``, ``.../points/query``,
``.../points/query/batch``, ``POST /collections/{c}/facet``; writes: ``PUT /collections/{c}/points`` (upsert),
``POST .../points/delete``, ``PUT /collections/{c}/index`` (payload index); ``GET /telemetry``. Anything else is
404 (and recorded, so a test sees what the workbook asked for that the fake lacks).

Statuses and texts follow Qdrant's own source (github.com/qdrant/qdrant, read at 74f3e85b):

- the error body ``{"status": {"error": "..."}, "time": ...}`` and the status of each ``StorageError``:
  ``src/actix/helpers.rs`` (``process_response_error``, ``impl ResponseError for HttpError``: BadInput and
  BadRequest 400, NotFound 404, Forbidden 403, RateLimitExceeded 429, ShardUnavailable 503); the prefixes
  ("Wrong input: ", "Not found: ", "Bad request: ", "Forbidden: "): ``lib/storage/src/content_manager/errors.rs``;
- 404 ``Not found: Collection `x` doesn't exist!``: ``lib/storage/src/content_manager/collections_ops.rs``;
- 400 for a facet on a key without a keyword index, ``Bad request: Index required but not found for "key" of one
  of the following types: [keyword]``: ``lib/collection/src/operations/verification/mod.rs``;
- 400 for a wrong vector size, ``Wrong input: Vector dimension error: expected dim: 384, got 3``:
  ``lib/segment/src/common/operation_error.rs``;
- 401 with a plain-text body for a missing or unknown key ("Must provide an API key or an Authorization bearer
  token", "Invalid API key or JWT"): ``src/actix/auth.rs`` and ``src/common/auth/mod.rs``; a read-only key
  (``read_only_api_key``, global read access) refused a write with 403 ``Forbidden: Global manage access is
  required``: ``lib/storage/src/rbac/mod.rs`` (``GlobalAccessMode::meets_requirements``);
- ``GET /telemetry?details_level=4`` lists each collection's shards and their segments, each with its
  ``vector_index_searches`` counters (``unfiltered_plain``, ``unfiltered_hnsw``, ``filtered_plain``,
  ``filtered_exact``, ``unfiltered_exact``, ...), empty ones left out, segments only at level 4 and up:
  ``lib/segment/src/telemetry.rs``, ``lib/collection/src/shards/local_shard/telemetry.rs``.

What the engine cannot tell, the fake is told: ``payload_indexes`` (the keyword indexes each collection has; local
mode keeps none), ``indexed_vectors`` (what ``indexed_vectors_count`` reports: 0, the truth for local mode and for
a server below its indexing threshold, or "all") and ``search_path`` (what the telemetry counts a non-exact search
as: "plain", the truth here, or "hnsw").

Faults: ``slow`` seconds before every answer; :meth:`QdrantRestFake.drop_scrolls` closes the connection
mid-response on the next n scroll requests that carry an offset (a scan's second page on); :meth:`unavailable`
answers the next n requests with 503 (or 429) and ``Retry-After``. Bounded: after ``max_requests`` requests every
further one gets 503.

``fake.requests`` records each request: ``method``, ``path``, ``status``, ``write`` (a write route), ``key``
("full", "read-only", "none" or "invalid": never the key itself), ``bytes_in``, ``bytes_out``.

Run alone (``make demo-http``): ``python tests/fakes/qdrant_rest.py --path COPY --url-file F [--read-only-key-env
NAME] [--index COLLECTION:FIELD ...] [--log-file F.jsonl]``; it serves until SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import threading
import time
import warnings
from collections import defaultdict
from typing import Any

__all__ = ["QdrantRestFake", "WRITE_SUFFIXES"]

_HOST = "127.0.0.1"
#: POST routes that write (every PUT, DELETE and PATCH writes too).
WRITE_SUFFIXES = ("/points/delete", "/points/payload", "/points/payload/delete", "/points/payload/clear",
                  "/points/vectors/delete", "/points/batch")
_COUNTERS = ("unfiltered_plain", "unfiltered_hnsw", "unfiltered_sparse", "filtered_plain", "filtered_small_cardinality",
             "filtered_large_cardinality", "filtered_exact", "filtered_sparse", "unfiltered_exact")


class QdrantError(Exception):
    """An answer with Qdrant's error body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def is_write(method: str, path: str) -> bool:
    """Whether a request writes (Qdrant's own split: reads are GET or a POST that reads)."""
    return method in ("PUT", "DELETE", "PATCH") or (method == "POST" and path.endswith(WRITE_SUFFIXES))


class QdrantRestFake:
    """A Qdrant server on 127.0.0.1 (see the module). ``with QdrantRestFake(path=copy) as fake: fake.url``."""

    def __init__(self, *, path: str | os.PathLike[str] | None = None, api_key: str | None = None,
                 read_only_key: str | None = None, payload_indexes: dict[str, dict[str, str]] | None = None,
                 indexed_vectors: str = "none", search_path: str = "plain", slow: float = 0.0,
                 max_requests: int = 50_000) -> None:
        from qdrant_client import QdrantClient

        if indexed_vectors not in ("none", "all") or search_path not in ("plain", "hnsw"):
            raise ValueError("indexed_vectors is 'none' or 'all'; search_path is 'plain' or 'hnsw'")
        self.engine = QdrantClient(path=str(path)) if path else QdrantClient(location=":memory:")
        self.api_key, self.read_only_key = api_key, read_only_key
        self.indexes: dict[str, dict[str, str]] = {c: dict(f) for c, f in (payload_indexes or {}).items()}
        self.indexed_vectors, self.search_path = indexed_vectors, search_path
        self.slow = float(slow)
        self.max_requests = max_requests
        self.requests: list[dict[str, Any]] = []
        self.searches: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(_COUNTERS, 0))
        self.url, self.port = "", 0
        self._lock = threading.Lock()  # local mode promises no thread safety
        self._faults: dict[str, Any] = {"drop_scrolls": 0, "unavailable": 0, "retry_after": "1", "status": 503}
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._started = time.monotonic()
        #: called with each finished request's record (``main``'s ``--log-file``)
        self.on_request: Any = None

    # ------------------------------------------------------------------ faults
    def drop_scrolls(self, n: int) -> None:
        """Close the connection mid-response on the next ``n`` scroll requests that carry an offset."""
        self._faults["drop_scrolls"] = n

    def unavailable(self, n: int, *, retry_after: str | None = "1", status: int = 503) -> None:
        """Answer the next ``n`` requests with ``status`` (503 or 429) and ``Retry-After`` (None: no header)."""
        self._faults.update(unavailable=n, retry_after=retry_after, status=status)

    # ------------------------------------------------------------------ what was asked
    @property
    def writes(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["write"]]

    def totals(self) -> tuple[int, int]:
        """(requests, bytes in + out) so far."""
        return len(self.requests), sum(r["bytes_in"] + r["bytes_out"] for r in self.requests)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> QdrantRestFake:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((_HOST, 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://{_HOST}:{self.port}"
        config = uvicorn.Config(self._asgi, log_level="critical", access_log=False, lifespan="off", interface="asgi3",
                                timeout_keep_alive=5)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name=f"qdrant-rest-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self._server.started:
            raise RuntimeError("the loopback Qdrant did not start in 10 s")
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._server = None
        with contextlib.suppress(Exception):
            self.engine.close()

    def __enter__(self) -> QdrantRestFake:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the ASGI front: keys, faults, counts
    def _key_kind(self, headers: dict[str, str]) -> str:
        key = headers.get("api-key")
        if key is None and headers.get("authorization", "").lower().startswith("bearer "):
            key = headers["authorization"][7:]
        if key is None:
            return "none"
        if self.api_key is not None and key == self.api_key:
            return "full"
        if self.read_only_key is not None and key == self.read_only_key:
            return "read-only"
        return "invalid"

    async def _asgi(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        method, path = scope["method"], scope["path"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        entry: dict[str, Any] = {"method": method, "path": path, "write": is_write(method, path),
                                 "key": self._key_kind(headers), "bytes_in": len(body), "bytes_out": 0, "status": 0}
        self.requests.append(entry)
        if self.slow:
            await asyncio.sleep(self.slow)
        status, extra, payload, ctype = self._answer(scope, entry, body)
        entry["status"] = status
        out = [(b"content-type", ctype.encode()), (b"content-length", str(len(payload)).encode())]
        out += [(k.lower().encode(), str(v).encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": out})
        if path.endswith("/points/scroll") and self._drop(body):
            # half the body, then the connection closes: the client reads a response cut short
            entry["bytes_out"] = len(payload) // 2
            entry["dropped"] = True
            await send({"type": "http.response.body", "body": payload[: len(payload) // 2], "more_body": True})
            raise ConnectionAbortedError("dropped mid-scroll, as told")
        entry["bytes_out"] = len(payload)
        await send({"type": "http.response.body", "body": payload})
        if self.on_request is not None:
            self.on_request(entry)

    def _drop(self, body: bytes) -> bool:
        if self._faults["drop_scrolls"] <= 0:
            return False
        try:
            offset = json.loads(body or b"{}").get("offset")
        except ValueError:
            return False
        if offset is None:
            return False
        self._faults["drop_scrolls"] -= 1
        return True

    def _answer(self, scope: dict[str, Any], entry: dict[str, Any], body: bytes) -> tuple[int, dict, bytes, str]:
        started = time.monotonic()
        if len(self.requests) > self.max_requests:
            return self._error(503, "Service unavailable: the loopback fake's request budget is spent", started)
        if self._faults["unavailable"] > 0:
            self._faults["unavailable"] -= 1
            status = self._faults["status"]
            text = ("Rate limiting exceeded: too many requests" if status == 429
                    else "Shard temporarily unavailable: the loopback fake was told so")
            code, _, payload, ctype = self._error(status, text, started)
            retry = self._faults["retry_after"]
            return code, ({"Retry-After": retry} if retry is not None else {}), payload, ctype
        kind = entry["key"]
        if self.api_key is not None or self.read_only_key is not None:
            if kind == "none":
                return 401, {}, b"Must provide an API key or an Authorization bearer token", "text/plain"
            if kind == "invalid":
                return 401, {}, b"Invalid API key or JWT", "text/plain"
            if kind == "read-only" and entry["write"]:
                return self._error(403, "Forbidden: Global manage access is required", started)
        query = dict(p.split("=", 1) for p in scope.get("query_string", b"").decode().split("&") if "=" in p)
        try:
            parsed = json.loads(body) if body else {}
        except ValueError as err:
            return self._error(400, f"Format error in JSON body: {err}", started)
        if isinstance(parsed, dict) and isinstance(parsed.get("with_payload"), list):
            entry["fields"] = list(parsed["with_payload"])  # what a read asked for (benchmarks/bench_http.py)
        if isinstance(parsed, dict) and isinstance(parsed.get("limit"), int):
            entry["limit"] = parsed["limit"]
        try:
            with self._lock, warnings.catch_warnings():
                warnings.simplefilter("ignore")  # local mode warns about search params it ignores
                result = self._route(scope["method"], scope["path"], parsed, query)
        except QdrantError as err:
            return self._error(err.status, err.message, started)
        payload = json.dumps({"result": result, "status": "ok", "time": time.monotonic() - started}).encode()
        return 200, {}, payload, "application/json"

    @staticmethod
    def _error(status: int, message: str, started: float) -> tuple[int, dict, bytes, str]:
        body = json.dumps({"status": {"error": message}, "time": time.monotonic() - started}).encode()
        return status, {}, body, "application/json"

    # ------------------------------------------------------------------ the API
    def _route(self, method: str, path: str, body: Any, query: dict[str, str]) -> Any:
        parts = [p for p in path.split("/") if p]
        if method == "GET" and not parts:
            return {"title": "qdrant - vector search engine", "version": "1.15.0"}
        if method == "GET" and parts == ["telemetry"]:
            return self._telemetry(int(query.get("details_level", "0") or 0))
        if parts[:1] != ["collections"]:
            raise QdrantError(404, f"Not found: {path}")
        if len(parts) == 1 and method == "GET":
            return {"collections": [{"name": c.name} for c in self.engine.get_collections().collections]}
        name, rest = parts[1], "/".join(parts[2:])
        if method == "PUT" and rest == "":
            return self._create(name, body)
        if not self.engine.collection_exists(name):
            if method == "GET" and rest == "exists":
                return {"exists": False}
            raise QdrantError(404, f"Not found: Collection `{name}` doesn't exist!")
        handler = self._ROUTES.get((method, rest))
        if handler is None:
            raise QdrantError(404, f"Not found: {method} {path}")
        return handler(self, name, body)

    def _dump(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self._dump(v) for v in value]
        return value.model_dump(mode="json", exclude_none=True) if hasattr(value, "model_dump") else value

    @staticmethod
    def _parse(model: Any, body: Any) -> Any:
        from pydantic import ValidationError

        try:
            return model.model_validate(body)
        except ValidationError as err:
            raise QdrantError(400, f"Format error in JSON body: {err.errors()[0].get('msg')}") from None

    def _size(self, name: str, using: str | None) -> int | None:
        vectors = self.engine.get_collection(name).config.params.vectors
        params = vectors.get(using or "") if isinstance(vectors, dict) else vectors
        return getattr(params, "size", None)

    def _check_vector(self, name: str, vector: Any, using: str | None) -> None:
        size = self._size(name, using)
        if isinstance(vector, list) and vector and not isinstance(vector[0], list) and size and len(vector) != size:
            raise QdrantError(400, f"Wrong input: Vector dimension error: expected dim: {size}, got {len(vector)}")

    # ---- collections
    def _info(self, name: str, body: Any) -> Any:
        info = self.engine.get_collection(name)
        data = self._dump(info)
        schema = self.indexes.get(name, {})
        data["payload_schema"] = {f: {"data_type": t, "points": info.points_count or 0} for f, t in schema.items()}
        data["indexed_vectors_count"] = (info.points_count or 0) if self.indexed_vectors == "all" else 0
        return data

    def _exists(self, name: str, body: Any) -> Any:
        return {"exists": True}

    def _create(self, name: str, body: Any) -> Any:
        from qdrant_client import models

        if self.engine.collection_exists(name):
            raise QdrantError(400, f"Wrong input: Collection `{name}` already exists!")
        req = self._parse(models.CreateCollection, body)
        self.engine.create_collection(name, vectors_config=req.vectors)
        return True

    def _delete_collection(self, name: str, body: Any) -> Any:
        self.indexes.pop(name, None)
        return bool(self.engine.delete_collection(name))

    def _create_index(self, name: str, body: Any) -> Any:
        from qdrant_client import models

        req = self._parse(models.CreateFieldIndex, body)
        schema = req.field_schema
        kind = getattr(schema, "value", None) or getattr(getattr(schema, "type", None), "value", None) or "keyword"
        self.indexes.setdefault(name, {})[req.field_name] = str(kind)
        return {"operation_id": 0, "status": "completed"}

    # ---- reading points
    def _scroll(self, name: str, body: Any) -> Any:
        from qdrant_client import models

        req = self._parse(models.ScrollRequest, body)
        points, offset = self.engine.scroll(
            name, scroll_filter=req.filter, limit=req.limit or 10, offset=req.offset,
            with_payload=True if req.with_payload is None else req.with_payload,
            with_vectors=bool(req.with_vector) if isinstance(req.with_vector, bool | None) else req.with_vector,
            order_by=req.order_by)
        return {"points": self._dump(points), "next_page_offset": offset}

    def _count(self, name: str, body: Any) -> Any:
        from qdrant_client import models

        req = self._parse(models.CountRequest, body)
        return {"count": self.engine.count(name, count_filter=req.filter, exact=req.exact is not False).count}

    def _retrieve(self, name: str, body: Any) -> Any:
        from qdrant_client import models

        req = self._parse(models.PointRequest, body)
        found = self.engine.retrieve(name, req.ids, with_payload=True if req.with_payload is None else req.with_payload,
                                     with_vectors=False if req.with_vector is None else req.with_vector)
        return self._dump(found)

    def _count_search(self, name: str, filtered: bool, params: Any) -> None:
        exact = bool(getattr(params, "exact", False))
        if exact and self.search_path == "hnsw":  # a plain segment counts every search as plain
            counter = "filtered_exact" if filtered else "unfiltered_exact"
        elif self.search_path == "hnsw":
            counter = "filtered_large_cardinality" if filtered else "unfiltered_hnsw"
        else:
            counter = "filtered_plain" if filtered else "unfiltered_plain"
        self.searches[name][counter] += 1

    def _one_query(self, name: str, req: Any) -> Any:
        from qdrant_client import models

        query = req.query
        vector = query.nearest if isinstance(query, models.NearestQuery) else query
        self._check_vector(name, vector, req.using)
        self._count_search(name, req.filter is not None, req.params)
        return self.engine.query_points(
            name, query=vector, using=req.using, query_filter=req.filter, search_params=req.params,
            limit=req.limit or 10, offset=req.offset, score_threshold=req.score_threshold,
            with_payload=True if req.with_payload is None else req.with_payload,
            with_vectors=False if req.with_vector is None else req.with_vector)

    def _query(self, name: str, body: Any) -> Any:
        from qdrant_client import models

        return self._dump(self._one_query(name, self._parse(models.QueryRequest, body)))

    def _query_batch(self, name: str, body: Any) -> Any:
        from qdrant_client import models

        req = self._parse(models.QueryRequestBatch, body)
        return [self._dump(self._one_query(name, r)) for r in req.searches]

    def _search(self, name: str, body: Any) -> Any:
        from qdrant_client import models

        req = self._parse(models.SearchRequest, body)
        vector, using = req.vector, None
        if isinstance(vector, models.NamedVector):
            vector, using = vector.vector, vector.name
        query = models.QueryRequest(query=vector, using=using, filter=req.filter, params=req.params, limit=req.limit,
                                    offset=req.offset, score_threshold=req.score_threshold,
                                    with_payload=req.with_payload, with_vector=req.with_vector)
        return self._dump(self._one_query(name, query).points)

    def _facet(self, name: str, body: Any) -> Any:
        from qdrant_client import models

        req = self._parse(models.FacetRequest, body)
        if self.indexes.get(name, {}).get(req.key) not in ("keyword", "integer", "uuid", "bool"):
            raise QdrantError(400, f'Bad request: Index required but not found for "{req.key}" of one of the '
                                   "following types: [keyword, integer, uuid, bool]")
        hits = self.engine.facet(name, req.key, facet_filter=req.filter, limit=req.limit or 10,
                                 exact=bool(req.exact)).hits
        return {"hits": self._dump(hits)}

    # ---- writing points
    def _upsert(self, name: str, body: Any) -> Any:
        from qdrant_client import models

        if "batch" in (body or {}):
            req = self._parse(models.PointsBatch, body)
            self.engine.upsert(name, points=req.batch)
        else:
            req = self._parse(models.PointsList, body)
            for p in req.points:
                self._check_vector(name, p.vector, None)
            self.engine.upsert(name, points=req.points)
        return {"operation_id": 0, "status": "completed"}

    def _delete_points(self, name: str, body: Any) -> Any:
        from qdrant_client import models

        if "points" in (body or {}):
            selector: Any = self._parse(models.PointIdsList, body)
        else:
            selector = self._parse(models.FilterSelector, body)
        self.engine.delete(name, points_selector=selector)
        return {"operation_id": 0, "status": "completed"}

    _ROUTES: dict[tuple[str, str], Any] = {
        ("GET", ""): _info, ("GET", "exists"): _exists, ("DELETE", ""): _delete_collection,
        ("PUT", "index"): _create_index, ("POST", "points/scroll"): _scroll, ("POST", "points/count"): _count,
        ("POST", "points"): _retrieve, ("POST", "points/query"): _query, ("POST", "points/query/batch"): _query_batch,
        ("POST", "points/search"): _search, ("POST", "facet"): _facet, ("PUT", "points"): _upsert,
        ("POST", "points/delete"): _delete_points,
    }

    # ---- telemetry
    def _telemetry(self, level: int) -> Any:
        collections = []
        for c in self.engine.get_collections().collections:
            info = self.engine.get_collection(c.name)
            shard: dict[str, Any] = {"variant_name": "local_shard", "status": "green", "total_optimized_points": 0}
            if level >= 4:
                counts = {k: {"count": v} for k, v in self.searches[c.name].items() if v}
                shard["segments"] = [{
                    "info": {"segment_type": "indexed" if self.indexed_vectors == "all" else "plain",
                             "num_vectors": info.points_count or 0, "num_points": info.points_count or 0},
                    "config": {"vector_data": {}, "payload_storage_type": {"type": "mmap"}},
                    "vector_index_searches": [{"index_name": "", **counts}],
                    "payload_field_indices": []}]
            collections.append({"id": c.name, "init_time_ms": 0,
                                "shards": [{"id": 0, "key": None, "local": shard, "remote": [],
                                            "replicate_states": {}}]})
        return {"id": "loopback-fake", "app": {"name": "qdrant", "version": "1.15.0"},
                "collections": {"number_of_collections": len(collections), "collections": collections}}


def main(argv: list[str] | None = None) -> int:
    """Serve a store folder until SIGTERM; write the URL to ``--port-file`` once listening."""
    import signal

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", required=True, help="a COPY of a local-mode store folder")
    parser.add_argument("--url-file", required=True, help="where to write the URL once listening")
    parser.add_argument("--read-only-key-env", default=None,
                        help="the environment variable holding the read-only key (never passed on argv)")
    parser.add_argument("--log-file", default=None, help="append each request's record (JSON lines) here")
    parser.add_argument("--index", action="append", default=[],
                        help="COLLECTION:FIELD keyword index the server claims (repeatable)")
    args = parser.parse_args(argv)
    indexes: dict[str, dict[str, str]] = {}
    for item in args.index:
        collection, field = item.split(":", 1)
        indexes.setdefault(collection, {})[field] = "keyword"
    key = os.environ.get(args.read_only_key_env) if args.read_only_key_env else None
    fake = QdrantRestFake(path=args.path, read_only_key=key, api_key=None if key is None else os.urandom(16).hex(),
                          payload_indexes=indexes).start()
    if args.log_file:
        log = open(args.log_file, "a", encoding="utf-8")  # open while serving
        fake.on_request = lambda entry: (log.write(json.dumps(entry) + "\n"), log.flush())
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with open(args.url_file, "w", encoding="utf-8") as out:
        out.write(fake.url)
    try:
        stop.wait()
    finally:
        fake.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
