"""Schemathesis against the service: every check, the published contract against what the service does.

Each run is schemathesis 4's own command line (``st run``: the examples, coverage and fuzzing
phases, all checks, ST202 "schema-valid request rejected" included) against the app served by
uvicorn on a loopback port in this process. Bounded: a fixed number of examples per operation,
the deterministic generation mode (so the same requests each run), and a wall-clock bound on
the whole run. Three services: healthy, the embedding service down (the real Cohere SDK
pointed at a closed port), and the vector store down (a Qdrant URL on a closed port); with a
dependency down, 502 and 503 are the documented answers, so only they may be 5xx.

The same check against the real model and the sample collection runs in
``test_service_process.py`` (that module's service process is already up).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fakes.tcp import closed_port
from service_fixtures import (
    BagOfWordsEmbedder,
    assert_schemathesis_clean,
    schemathesis_run,
    serving,
    small_retriever,
    sqlite_db,
)

from retrieval_lib import Retriever, load_settings
from retrieval_lib.embedding import CohereEmbedder
from retrieval_lib.service import ServiceOptions, create_app
from retrieval_lib.stores import open_store

pytestmark = [pytest.mark.usefixtures("no_proxies"), pytest.mark.slow]

COHERE_MODEL = "embed-english-light-v3.0"


@contextmanager
def served(retriever: Retriever, tmp_path: Path) -> Iterator[tuple[str, io.StringIO]]:
    db = sqlite_db(tmp_path)
    try:
        db.sync_collection(retriever.store, retriever.collection)
    except Exception:  # noqa: BLE001 - the store is down: the database stays empty, which is a state too
        db.create_schema()
    log = io.StringIO()
    app = create_app(load_settings(env={}), retriever=retriever, metadata=db, options=ServiceOptions(),
                     log_stream=log)
    with serving(app) as url:
        yield url, log
    db.close()


def _healthy() -> Retriever:
    return small_retriever()


def _embedder_down() -> Retriever:
    retriever = small_retriever(embedder=BagOfWordsEmbedder(model=COHERE_MODEL, dimension=384))
    retriever.embedder = CohereEmbedder("co-test-key", COHERE_MODEL, base_url=f"http://127.0.0.1:{closed_port()}",
                                        timeout=1.0, max_retries=0)
    return retriever


def _store_down() -> Retriever:
    settings = load_settings(env={"QDRANT_URL": f"http://127.0.0.1:{closed_port()}", "QDRANT_TIMEOUT": "1"})
    return Retriever(open_store(settings), BagOfWordsEmbedder(), "book")


@pytest.mark.parametrize(("name", "make", "expected_5xx"), [
    ("healthy", _healthy, ()),
    ("embedding service down", _embedder_down, (502,)),
    ("vector store down", _store_down, (503,)),
])
def test_schemathesis_finds_no_failure_of_any_check(name, make, expected_5xx, tmp_path, figure_line):
    with served(make(), tmp_path) as (url, log):
        report = schemathesis_run(url, tmp_path / "st", expected_5xx=expected_5xx)
        lines = [json.loads(line) for line in log.getvalue().splitlines()]
    cases = report["test_cases"]
    statuses: dict[int, int] = {}
    for line in lines:
        statuses[line["status"]] = statuses.get(line["status"], 0) + 1
    figure_line(f"service ({name}): schemathesis {report['schemathesis_version']}, {cases['generated']} test cases, "
                f"{len(lines)} requests, statuses {dict(sorted(statuses.items()))}, "
                f"{cases['unique_failures']} failures, {report['running_time']:.1f} s")
    assert_schemathesis_clean(report)
    assert cases["generated"] >= 100
    # one query-log line per request, every one of them parsed above; no 500 among them
    assert len(lines) >= cases["generated"] and 500 not in statuses
    assert set(statuses) - {200, 400, 404, 405, 408, 413, 415, *expected_5xx} == set(), statuses
    if not expected_5xx:
        assert statuses.get(200, 0) >= 10 and statuses.get(400, 0) >= 10
