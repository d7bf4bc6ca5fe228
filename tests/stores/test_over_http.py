"""The workbook over HTTP, as every team runs it: ``QDRANT_URL`` and a read-only ``QDRANT_API_KEY``.

The real qdrant-client talks to :class:`fakes.qdrant_rest.QdrantRestFake` (Qdrant's REST protocol on 127.0.0.1,
local mode behind it) serving a copy of the sample collection, which our ingest would have given keyword payload
indexes on a server (:data:`~retrieval_lib.stores.INDEXED_FIELDS`). Each command runs in this process (the model is
loaded once) twice: over HTTP and on a local copy of the same store; their gates (by gate id), verdicts and
findings must agree, no request may be a write, and the key appears in no output or log. Then the faults: a scroll
dropped mid-scan, 503/429 with ``Retry-After``, a timeout, a read-only key on a write; and notebook 11 reading the
server's telemetry.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from corpus import SAMPLE_COLLECTION
from fakes.proxies import clear_proxies
from fakes.qdrant_rest import QdrantRestFake

from retrieval_lib.checks.collection import ann_recall as ann
from retrieval_lib.cli.main import main
from retrieval_lib.config import load_settings
from retrieval_lib.errors import ConfigurationError, StoreUnavailableError, ValidationError, VectorStoreError
from retrieval_lib.stores import INDEXED_FIELDS, open_store, read_columns
from retrieval_lib.workbook.report import NotebookReport

#: One worker builds this module's fixtures (--dist loadgroup); two would build them twice.
pytestmark = [pytest.mark.usefixtures("no_proxies"), pytest.mark.xdist_group("test_over_http")]

READ_ONLY_KEY = "qd-RO-over-http-5e1f9a"
FULL_KEY = "qd-FULL-over-http-77c2d0"
_SETTINGS = ("QDRANT_URL", "QDRANT_API_KEY", "QDRANT_PATH", "QDRANT_COLLECTION_NAME", "QDRANT_ENGINE",
             "QDRANT_TIMEOUT", "DATABASE_URL", "EMBEDDING_PROVIDER", "EMBEDDING_MODEL", "PAYLOAD_FIELDS")
#: The commands compared, as (name, argv); ``draft`` writes into a folder given per mode.
COMMANDS = [
    ("inspect", ["inspect", "--json"]),
    ("search", ["search", "What is ROS 2?", "--json"]),
    ("probe", ["probe", "--json"]),
    ("reach", ["reach", "--json"]),
    # 20 sampled queries, 5 a slice (the profile's 200 and 50): the fake's local mode answers every one by a full
    # scan, which the check names whatever the count, and each query is two full scans on one shared core
    ("ann", ["ann", "--json", "--ann-queries", "20", "--ann-slice-queries", "5"]),
    ("chunks", ["chunks", "--json"]),
    ("stats", ["stats", "--json"]),
    ("draft", ["draft", "--json", "--out"]),
]


def _copy(source: Path, to: Path) -> Path:
    shutil.copytree(source, to, ignore=shutil.ignore_patterns(".lock"))
    return to


def _serve(folder: Path, **kwargs: Any) -> QdrantRestFake:
    return QdrantRestFake(path=folder, api_key=FULL_KEY, read_only_key=READ_ONLY_KEY,
                          payload_indexes={SAMPLE_COLLECTION: dict(INDEXED_FIELDS)}, **kwargs)


def _cli(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    with pytest.MonkeyPatch.context() as mp:
        for name in _SETTINGS:
            mp.delenv(name, raising=False)
        for name, value in env.items():
            mp.setenv(name, value)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(argv)
    return code, out.getvalue()


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture(scope="session")
def both(book, tmp_path_factory) -> dict[str, Any]:
    """Every command of :data:`COMMANDS` run locally and over HTTP: ``{"local": {name: (code, json)}, "http": ...,
    "requests": the fake's request log, "texts": every output and log line of the HTTP runs}``.

    Built once per worker (a session fixture: the scheduler may interleave other modules' tests between this
    module's, which would tear a module fixture down and build it again) and, with ``--dist loadgroup``, on one
    worker only."""
    root = tmp_path_factory.mktemp("over-http")
    local = _copy(book.folder, root / "local")
    served = _copy(book.folder, root / "served")
    out: dict[str, Any] = {"local": {}, "http": {}, "texts": []}
    records = _Records()
    logging.getLogger().addHandler(records)
    previous = logging.getLogger().level
    logging.getLogger().setLevel(logging.DEBUG)
    try:
        with pytest.MonkeyPatch.context() as mp, _serve(served) as fake:
            clear_proxies(mp)  # the fake is on loopback (what no_proxies does for a module)
            envs = {"local": {"QDRANT_PATH": str(local), "QDRANT_COLLECTION_NAME": SAMPLE_COLLECTION},
                    "http": {"QDRANT_URL": fake.url, "QDRANT_API_KEY": READ_ONLY_KEY,
                             "QDRANT_COLLECTION_NAME": SAMPLE_COLLECTION}}
            for name, argv in COMMANDS:
                for mode in ("local", "http"):
                    args = [*argv, str(root / f"draft-{mode}")] if name == "draft" else argv
                    code, text = _cli(args, envs[mode])
                    out[mode][name] = (code, json.loads(text))
                    if mode == "http":
                        out["texts"].append(text)
            out["requests"] = list(fake.requests)
            out["url"] = fake.url
    finally:
        logging.getLogger().removeHandler(records)
        logging.getLogger().setLevel(previous)
    out["texts"].extend(records.lines)
    return out


def _gates(answer: dict[str, Any]) -> dict[str, Any]:
    return {g["id"]: g["passed"] for g in answer.get("gates", [])}


# --------------------------------------------------------------------------- the same answers over HTTP
# Every test that reads `both` is in the slow tier: the fixture runs every command twice, locally and over HTTP
# (about a minute of CPU).


@pytest.mark.slow
@pytest.mark.parametrize("name", ["probe", "reach", "ann", "chunks"])
def test_a_check_gives_the_same_gates_and_verdict_over_http(both, name):
    local_code, local = both["local"][name]
    http_code, http = both["http"][name]
    assert http_code == local_code
    assert _gates(http) == _gates(local)
    assert all(g["id"] for g in http.get("gates", []))  # compared by their stable ids
    if name != "ann":  # ann: local mode has no index to judge; the server's answer is in the next test
        assert http.get("passed") == local.get("passed")
        assert http.get("findings") == local.get("findings")


@pytest.mark.slow
def test_ann_over_http_names_the_full_scan_and_gates_nothing(both):
    _, http = both["http"]["ann"]
    assert http["applicable"] and http["gates"] == []
    assert any("proves nothing" in f and "every search is a full scan" in f for f in http["findings"])
    assert all(s["search"] == "full scan" for s in http["slices"])


@pytest.mark.slow
def test_search_stats_inspect_and_draft_read_the_same_collection_over_http(both):
    def ranked(answer):
        return [(r["point_id"], round(r["similarity_score"], 4)) for r in answer["results"]]

    assert ranked(both["http"]["search"][1]) == ranked(both["local"]["search"][1]) != []
    keys = ("points_count", "vector_count", "dimensions", "distance", "source_files", "models")
    assert {k: both["http"]["stats"][1][k] for k in keys} == {k: both["local"]["stats"][1][k] for k in keys}
    local, http = both["local"]["inspect"][1], both["http"]["inspect"][1]
    assert http["location"] == both["url"] and local["location"] != http["location"]
    # the one legitimate difference: the embedded store has a metadata database beside it, a server none
    for answer in (local, http):
        answer.pop("location")
        answer["checkable"] = [c for c in answer["checkable"] if "metadata" not in json.dumps(c)]
    assert http == local
    # counted with the model that made the vectors, by its own tokenizer
    assert (local["lengths"]["other_model"], local["lengths"]["estimated"]) == (False, False)
    assert both["http"]["draft"][0] == both["local"]["draft"][0] == 0
    for key in ("known_items", "topics", "negatives", "dropped", "pages", "language"):
        assert _rounded(both["http"]["draft"][1][key]) == _rounded(both["local"]["draft"][1][key]), key


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


@pytest.mark.slow
def test_no_request_over_http_wrote_or_was_refused(both):
    requests = both["requests"]
    assert len(requests) > 20
    assert [r for r in requests if r["write"]] == []
    assert {r["key"] for r in requests} == {"read-only"}
    refused = [(r["method"], r["path"], r["status"]) for r in requests if r["status"] in (401, 403, 404, 405)]
    assert refused == []  # no write refused, no endpoint the fake lacks, no collection missing


@pytest.mark.slow
def test_the_read_only_key_appears_in_no_output_or_log(both):
    assert both["texts"]
    assert not [t for t in both["texts"] if READ_ONLY_KEY in t]


# --------------------------------------------------------------------------- faults, at the store


@pytest.fixture
def fake(book, tmp_path):
    with _serve(_copy(book.folder, tmp_path / "served")) as server:
        yield server


def _store(fake: QdrantRestFake, key: str | None = READ_ONLY_KEY, **env: str) -> Any:
    settings = load_settings(env={"QDRANT_URL": fake.url, **({"QDRANT_API_KEY": key} if key else {}), **env})
    store = open_store(settings)
    store.waits = []
    store.sleep = store.waits.append  # the retry path, without waiting
    return store


def test_a_scroll_dropped_mid_scan_is_asked_again_and_the_scan_is_whole(fake, book):
    store = _store(fake)
    fake.drop_scrolls(2)
    cols = read_columns(store, SAMPLE_COLLECTION, ["source_file"], batch_size=100)
    assert len(cols) == len(book.points) == len(set(cols.ids))
    assert sum(1 for r in fake.requests if r.get("dropped")) == 2
    assert store.waits == [0.5, 1.0]  # bounded backoff, no Retry-After on a dropped connection


def test_a_scan_that_keeps_dropping_says_where_it_stopped(fake):
    store = _store(fake)
    fake.drop_scrolls(100)
    with pytest.raises(StoreUnavailableError) as ei:
        read_columns(store, SAMPLE_COLLECTION, ["source_file"], batch_size=100)
    message = ei.value.message
    assert "closed the connection mid-answer (after 4 attempts)" in message
    assert "stopped after 100 points (1 pages of 100" in message and "partial scan" in message
    assert sum(1 for r in fake.requests if r.get("dropped")) == 4  # the first try and three retries, no more
    assert READ_ONLY_KEY not in message


@pytest.mark.parametrize("status", [503, 429])
def test_unavailable_and_rate_limited_are_retried_honouring_retry_after(fake, status):
    store = _store(fake)
    fake.unavailable(2, retry_after="3", status=status)
    assert store.count(SAMPLE_COLLECTION) > 0
    assert store.waits == [3.0, 3.0]
    fake.unavailable(2, retry_after="3600", status=status)
    assert store.count(SAMPLE_COLLECTION) > 0
    assert store.waits[2:] == [10.0, 10.0]  # capped: a retried call stays bounded


def test_a_server_that_stays_unavailable_is_a_typed_error_after_bounded_retries(fake):
    store = _store(fake)
    before = len(fake.requests)
    fake.unavailable(50, retry_after=None)
    with pytest.raises(VectorStoreError) as ei:
        store.count(SAMPLE_COLLECTION)
    assert len(fake.requests) - before == 4
    assert store.waits == [0.5, 1.0, 2.0]
    assert "HTTP 503" in ei.value.message and "after 4 attempts" in ei.value.message


@pytest.mark.timeout(30)
def test_a_timeout_names_qdrant_timeout_and_is_not_retried(fake):
    store = _store(fake, QDRANT_TIMEOUT="0.3")
    fake.slow = 1.5
    before = len(fake.requests)
    with pytest.raises(StoreUnavailableError) as ei:
        store.count(SAMPLE_COLLECTION)
    assert "QDRANT_TIMEOUT is 0.3 s" in ei.value.message and "QDRANT_URL" in ei.value.message
    assert len(fake.requests) - before == 1 and store.waits == []


def test_a_write_with_a_read_only_key_is_refused_naming_the_variable_not_the_key(fake, book):
    store = _store(fake)
    with pytest.raises(ConfigurationError) as ei:
        store.delete(SAMPLE_COLLECTION, [book.points[0].id])
    assert ei.value.variable == "QDRANT_API_KEY" and "HTTP 403" in ei.value.message
    assert READ_ONLY_KEY not in repr(ei.value) + str(ei.value) + repr(store) + json.dumps(ei.value.to_dict())
    assert fake.requests[-1]["status"] == 403 and store.count(SAMPLE_COLLECTION) == len(book.points)
    with pytest.raises(ConfigurationError):
        _store(fake, key=None).count(SAMPLE_COLLECTION)  # no key at all: 401
    assert fake.requests[-1]["status"] == 401 and fake.requests[-1]["key"] == "none"


def test_a_wrong_vector_size_is_a_typed_error(fake):
    with pytest.raises(ValidationError) as ei:
        _store(fake).query(SAMPLE_COLLECTION, [0.1, 0.2, 0.3], limit=3)
    assert "384 dimensions" in ei.value.message


def test_a_field_without_an_index_is_counted_by_a_scan_never_by_creating_one(fake, book):
    store = _store(fake)
    with pytest.raises(VectorStoreError) as ei:
        store.facet_counts(SAMPLE_COLLECTION, "title")
    assert 'Index required but not found for "title"' in ei.value.message
    assert "never creates an index" in ei.value.message
    before = len(fake.requests)
    counted = store.distinct_values(SAMPLE_COLLECTION, "title")
    expected: dict[str, int] = {}
    for p in book.points:
        value = (p.payload or {}).get("title")
        if value is not None:
            expected[str(value)] = expected.get(str(value), 0) + 1
    assert counted == expected and len(counted) > 1
    assert list(counted.values()) == sorted(counted.values(), reverse=True)  # most frequent first, as a facet
    asked = [r["path"].rsplit("/", 1)[-1] for r in fake.requests[before:]]
    assert asked.count("facet") == 1 and "scroll" in asked and not fake.writes
    # the facet revision of a shared scan never falls back to scanning: no index, no revision
    from retrieval_lib.stores.scan import revision

    assert revision(store, SAMPLE_COLLECTION, len(book.points)) is not None  # ours: indexed


def test_the_fake_answers_as_qdrant_does(fake):
    headers = {"api-key": READ_ONLY_KEY}
    with httpx.Client(base_url=fake.url, headers=headers, timeout=5) as http:
        missing = http.post("/collections/nope/points/count", json={})
        assert missing.status_code == 404
        assert missing.json()["status"] == {"error": "Not found: Collection `nope` doesn't exist!"}
        assert isinstance(missing.json()["time"], float)
        assert http.put(f"/collections/{SAMPLE_COLLECTION}/index",
                        json={"field_name": "title", "field_schema": "keyword"}).status_code == 403
        assert http.get("/collections", headers={"api-key": "wrong"}).status_code == 401
        assert http.get("/collections").json()["result"]["collections"] == [{"name": SAMPLE_COLLECTION}]


# --------------------------------------------------------------------------- notebook 11 and the telemetry


def _ann_report(tmp_path: Path, fake: QdrantRestFake) -> tuple[Any, NotebookReport]:
    store = _store(fake)
    study = ann.measure(store, SAMPLE_COLLECTION, queries=40, slice_queries=5)
    report = NotebookReport("11_ann_recall", "Does the index return what exact search would?", run_dir=tmp_path)
    ann.AnnRecall(study, min_recall=0.95, min_recall_p5=0.8).record(report, show=False)  # params/demo.yaml's
    return study, report


def test_an_ann_recall_that_was_really_a_full_scan_is_named_and_not_gated(book, tmp_path):
    # the server claims every vector indexed, but its telemetry counts every search as plain
    with _serve(_copy(book.folder, tmp_path / "served"), indexed_vectors="all") as fake:
        study, report = _ann_report(tmp_path, fake)
    assert not study.index.searches_exactly  # indexed_vectors_count alone would have let the gate pass
    assert study.search_path is not None and study.search_path["hnsw"] == 0 and study.search_path["plain"] >= 40
    assert {g.id: g.passed for g in report.gates} == {"ann.recall_mean": None, "ann.recall_p5": None}
    assert all("telemetry counted" in g.detail for g in report.gates)
    assert any("was really a full scan" in f for f in report.findings)


def test_an_ann_recall_through_hnsw_by_the_telemetry_is_gated(book, tmp_path):
    with _serve(_copy(book.folder, tmp_path / "served"), indexed_vectors="all", search_path="hnsw") as fake:
        study, report = _ann_report(tmp_path, fake)
    assert study.search_path is not None and study.search_path["hnsw"] >= 40 and study.search_path["plain"] == 0
    assert _gates_of(report)["ann.recall_mean"] is True
    assert any("40 HNSW and 0 plain" in f for f in report.findings)


def _gates_of(report: NotebookReport) -> dict[str, Any]:
    return {g.id: g.passed for g in report.gates}


# --------------------------------------------------------------------------- the cost of a run on a server


def test_plan_states_a_runs_qdrant_requests_beside_its_embed_calls_for_a_server_only(fake, book, tmp_path):
    from retrieval_lib.cli.commands.plan import QDRANT_REQUESTS
    from retrieval_lib.workbook.registry import spec_for_stem

    env = {"QDRANT_URL": fake.url, "QDRANT_API_KEY": READ_ONLY_KEY, "QDRANT_COLLECTION_NAME": SAMPLE_COLLECTION}
    code, text = _cli(["plan", "--json"], env)
    assert code == 0
    plan = json.loads(text)
    assert plan["total_calls"] >= 1 and plan["qdrant"]["points"] == len(book.points)
    rows = {spec_for_stem(row["notebook"]).name: row for row in plan["qdrant"]["notebooks"]}
    assert set(rows) <= set(QDRANT_REQUESTS)  # every notebook measured
    for name, (other, passes, searches) in QDRANT_REQUESTS.items():
        if name in rows:  # the sample collection is one page a pass
            assert rows[name]["requests"] == other + passes + searches
    assert plan["qdrant"]["total"] == sum(r["requests"] or 0 for r in rows.values()) > 0
    assert not fake.writes
    code, text = _cli(["plan"], env)
    assert "Qdrant requests (a server" in text and "total: about" in text
    local = {"QDRANT_PATH": str(_copy(book.folder, tmp_path / "local")), "QDRANT_COLLECTION_NAME": SAMPLE_COLLECTION}
    code, text = _cli(["plan", "--json"], local)
    assert code == 0 and "qdrant" not in json.loads(text)


def test_the_estimate_grows_with_the_pages_of_a_pass_not_with_the_searches():
    from retrieval_lib.cli.commands.plan import RunPlan, qdrant_estimate
    from retrieval_lib.workbook.registry import NOTEBOOKS, NotebookPlan

    stem = NOTEBOOKS[3].stem  # a notebook's number is written only in the registry
    plan = RunPlan("local", "m", 64, [NotebookPlan(stem), NotebookPlan("not_a_notebook")], [])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("retrieval_lib.cli.commands.plan.QDRANT_REQUESTS", {NOTEBOOKS[3].name: (4, 2, 3)})
        small, large = qdrant_estimate(plan, 470), qdrant_estimate(plan, 100_000)
    assert [r["requests"] for r in small] == [4 + 2 + 3, None]
    assert [r["requests"] for r in large] == [4 + 2 * 20 + 3, None]  # 20 pages of 5,000 points a pass
