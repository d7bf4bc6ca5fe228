"""Benchmark: what reading a collection costs over HTTP, in requests and bytes, against one scroll of the same fields.

A synthetic collection of ``--scale`` points (``benchmarks/synthetic.py``: the real payload schema, 300 files) is
served by the loopback Qdrant (``tests/fakes/qdrant_rest.py``: Qdrant's REST protocol on 127.0.0.1, qdrant-client's
local mode behind it) with the keyword indexes our ingest gives a server collection. Through the real
qdrant-client, measured in the same run:

- the floor: ONE scroll request of every point with just the fields read (``limit`` = all points);
- the workbook's whole-collection read (``stores.read_columns``: a count, then pages of ``SERVER_PAGE`` points);
- notebook 03's ``source_coverage.scan_sources`` and 05/07's ``health.scan_payloads`` (their own fields), each against
  the floor for its fields;
- with ``--full-run``: a whole ``run`` of every notebook on the sample collection (a copy of ``.qdrant``, which
  ``make sample`` builds) over HTTP with a read-only key: its requests and bytes by endpoint, and its writes (none).

Bytes are the HTTP bodies both ways (headers left out: a few hundred bytes a request). The goal for a scan is at
most x1.3 the floor's bytes. Seconds are printed too, but the fake's engine is local mode, whose scroll re-sorts
every id per page (a real server pages by its id index), so time ratios here overstate paging.

    .venv/bin/python benchmarks/bench_http.py                       # 20,000 points
    .venv/bin/python benchmarks/bench_http.py --scale 100000        # about 3 GB of memory in the fake's engine
    .venv/bin/python benchmarks/bench_http.py --scale 2000 --full-run
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from fakes.qdrant_rest import QdrantRestFake  # noqa: E402

from benchmarks.synthetic import build  # noqa: E402
from retrieval_lib.config import load_settings  # noqa: E402
from retrieval_lib.stores import INDEXED_FIELDS, VectorStore, open_store, read_columns  # noqa: E402

COLLECTION = "bench_http"
KEY = os.urandom(12).hex()  # a read-only key made for this run
FIELDS = ["source_file", "source_url", "content_hash", "model_version"]


def _measure(fake: QdrantRestFake, call: Any) -> tuple[int, int, float, Any]:
    requests, sent = fake.totals()
    started = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - started
    after, total = fake.totals()
    return after - requests, total - sent, seconds, result


def _floor(store: Any, fields: list[str], points: int) -> Any:
    return store.client.scroll(COLLECTION, limit=points + 1, with_payload=fields, with_vectors=False)[0]


def _row(name: str, got: tuple[int, int, float, Any], floor: tuple[int, int, float, Any]) -> str:
    ratio = got[1] / floor[1] if floor[1] else float("nan")
    return (f"{name:<34} {got[0]:>5} req {got[1]:>13,} B {got[2]:>7.2f} s   x{ratio:.3f} bytes of the floor "
            f"({floor[0]} req, {floor[1]:,} B, {floor[2]:.2f} s){'' if ratio <= 1.3 else '  ABOVE x1.3'}")


def scans(scale: int) -> None:
    from retrieval_lib.checks.collection import collection_health as health
    from retrieval_lib.checks.retrieval import source_coverage as coverage

    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        started = time.perf_counter()
        store = VectorStore.at_path(Path(tmp) / "store")
        build(store, COLLECTION, scale)
        store.close()
        print(f"built {scale:,} points in {time.perf_counter() - started:.0f} s; serving them over HTTP")
        with QdrantRestFake(path=Path(tmp) / "store", read_only_key=KEY, api_key=os.urandom(12).hex(),
                            payload_indexes={COLLECTION: dict(INDEXED_FIELDS)}) as fake:
            settings = load_settings(env={"QDRANT_URL": fake.url, "QDRANT_API_KEY": KEY, "QDRANT_TIMEOUT": "300"})
            server = open_store(settings)
            floor = _measure(fake, lambda: _floor(server, FIELDS, scale))
            got = _measure(fake, lambda: read_columns(server, COLLECTION, FIELDS))
            assert len(got[3]) == len(floor[3]) == scale, "a scan came back short"
            print(_row(f"read_columns({len(FIELDS)} fields)", got, floor))
            for name, call in (("coverage.scan_sources (03)", lambda: coverage.scan_sources(server, COLLECTION)),
                               ("health.scan_payloads (05, 07)", lambda: health.scan_payloads(server, COLLECTION))):
                before = len(fake.requests)
                got = _measure(fake, call)
                read = sorted({f for r in fake.requests[before:] for f in r.get("fields", [])})
                floor = _measure(fake, lambda f=read: _floor(server, f, scale))
                print(_row(name, got, floor))
            server.close()


def full_run() -> None:
    source = ROOT / ".qdrant"
    if not (source / "collection").is_dir():
        raise SystemExit("no sample collection in .qdrant: run `make sample` first")
    with tempfile.TemporaryDirectory(prefix="bench-http-run-") as tmp:
        shutil.copytree(source, Path(tmp) / "store", ignore=shutil.ignore_patterns(".lock"))
        with QdrantRestFake(path=Path(tmp) / "store", read_only_key=KEY, api_key=os.urandom(12).hex(),
                            payload_indexes={c: dict(INDEXED_FIELDS) for c in os.listdir(source / "collection")}
                            ) as fake:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("QDRANT_", "HTTP_PROXY", "HTTPS_PROXY"))}
            env.update(QDRANT_URL=fake.url, QDRANT_API_KEY=KEY, NO_PROXY="127.0.0.1,localhost")
            started = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "retrieval_lib", "run", "--params", "params/demo.yaml",
                                   "--out", str(Path(tmp) / "out"), "-q"], env=env, cwd=ROOT, capture_output=True,
                                  text=True, timeout=1800)
            seconds = time.perf_counter() - started
            requests, total = fake.totals()
            by_path: Counter[str] = Counter()
            for r in fake.requests:
                by_path[r["method"] + " " + "/".join(p if i != 1 else "{c}" for i, p in
                                                      enumerate(r["path"].strip("/").split("/")))] += 1
            print(f"full run over HTTP (params/demo.yaml, exit {proc.returncode}, {seconds:.0f} s): {requests} "
                  f"requests, {total:,} bytes, {len(fake.writes)} writes")
            for path, n in by_path.most_common():
                print(f"  {n:>6}  {path}")
            if proc.returncode not in (0, 1):
                print(proc.stderr[-2000:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=20_000, help="points in the synthetic collection")
    parser.add_argument("--full-run", action="store_true", help="also a whole run on the sample collection")
    args = parser.parse_args()
    scans(args.scale)
    if args.full_run:
        full_run()


if __name__ == "__main__":
    main()
