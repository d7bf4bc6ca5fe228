"""``python -m retrieval_lib serve``: the seed-003 retrieval API on this machine."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

#: Place in ``--help``: the everyday commands first.
ORDER = 4


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    p = add(sub, "serve", "serve the seed-003 retrieval API (POST /search, GET /health)",
             "Load the model, open the store and the metadata database, and answer HTTP with uvicorn until "
             "interrupted. One JSON line per request goes to the query log (stderr, or --log-file).",
             "  python -m retrieval_lib serve\n"
             "  python -m retrieval_lib serve --port 8080 --log-file queries.jsonl\n"
             "  curl -s localhost:8000/search -H 'content-type: application/json' -d '{\"query\": \"What is ROS2?\"}'",
             common)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--log-file", type=Path, help="append the query log here instead of stderr")
    p.add_argument("--max-query-chars", type=int, default=500, help="longest query accepted (default 500)")
    p.add_argument("--max-body-bytes", type=int, default=65536,
                   help="largest request body; a larger one gets 413 unread (default 65536)")
    p.add_argument("--header-timeout", type=float, default=10.0,
                   help="seconds a client may take to send its headers; then 408 and close (default 10)")
    p.add_argument("--body-timeout", type=float, default=10.0,
                   help="seconds a request body may stall between reads; then 408 (default 10)")
    p.add_argument("--max-connections", type=int, default=200,
                   help="connections served at once; beyond it 503 (default 200)")
    p.add_argument("--shutdown-timeout", type=int, default=5,
                   help="seconds SIGTERM waits for requests in flight (default 5)")
    p.add_argument("--no-batching", action="store_true",
                   help="embed and search every query alone instead of batching concurrent ones")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.config import load_settings
    from retrieval_lib.errors import ValidationError
    from retrieval_lib.service.app import ServiceOptions

    for flag in ("max_query_chars", "max_body_bytes", "header_timeout", "body_timeout", "max_connections"):
        if not getattr(args, flag) > 0:
            raise ValidationError(f"--{flag.replace('_', '-')} must be above 0 (got {getattr(args, flag)})", field=flag)
    if args.shutdown_timeout < 0:
        raise ValidationError(f"--shutdown-timeout must be 0 or more (got {args.shutdown_timeout})",
                              field="shutdown_timeout")
    from retrieval_lib.service.server import serve

    serve(load_settings(), host=args.host, port=args.port, log_file=args.log_file,
          options=ServiceOptions(query_max_chars=args.max_query_chars, max_body_bytes=args.max_body_bytes,
                                 header_timeout=args.header_timeout, body_timeout=args.body_timeout,
                                 max_connections=args.max_connections, shutdown_timeout=args.shutdown_timeout,
                                 batching=not args.no_batching))
    return 0
