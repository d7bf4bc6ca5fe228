"""The shipped sample book, ingested with the real MiniLM embedder.

The collection is built once per session (about 30 s) into an embedded store
under pytest's tmp folder, never into the project's ``.qdrant``.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest
from corpus import SAMPLE_COLLECTION as COLLECTION  # the session build is conftest's `book` fixture

from retrieval_lib import Retriever
from retrieval_lib.checks.retrieval.golden_set import load_golden_set, matches
from retrieval_lib.collection.ours import point_id_for
from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.ingest import (
    DEFAULT_BASE_URL,
    SAMPLE_BOOK,
    default_chunk_tokens,
    ingest,
)
from retrieval_lib.ingest.documents import is_stub, read_document
from retrieval_lib.models import PAYLOAD_FIELDS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

STUB = "appendices/d-release-notes.md"
GOLDEN = load_golden_set(PROJECT_ROOT / "params" / "golden" / "sample_book.yaml")
IN_DOMAIN = list(GOLDEN.queries) + list(GOLDEN.extra_queries)
PIZZA = "What is the best pizza recipe?"
FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)


def book_files() -> list[str]:
    """Every page of the sample book (relative POSIX paths), found independently of ingest."""
    return sorted(p.relative_to(SAMPLE_BOOK).as_posix() for p in SAMPLE_BOOK.rglob("*")
                  if p.suffix in (".md", ".mdx") and p.is_file())


CONTENT_FILES = [f for f in book_files() if f != STUB]


@pytest.fixture(scope="session")
def retriever(book, embedder) -> Retriever:
    return Retriever(book.store, embedder, COLLECTION)


# --------------------------------------------------------------------------- coverage

def test_every_content_file_has_chunks_and_the_stub_is_skipped(book):
    assert STUB in book_files() and len(CONTENT_FILES) >= 25
    files = book.by_file()
    missing = [f for f in CONTENT_FILES if not files.get(f)]
    assert missing == []
    assert set(files) == set(CONTENT_FILES)
    assert book.summary.skipped == [STUB] and book.summary.files_skipped == 1
    assert any(STUB in w for w in book.summary.warnings)
    assert book.summary.files_added == len(CONTENT_FILES)
    assert len(book.points) >= 150
    assert book.summary.chunks_total == book.summary.chunks_added == len(book.points)
    # the stub is a stub and nothing else is
    stubs = [f for f in book_files() if is_stub(read_document(SAMPLE_BOOK / f, SAMPLE_BOOK))]
    assert stubs == [STUB]


def test_every_chunk_is_read_whole_by_the_model(book, embedder):
    """Title line + chunk, as MiniLM's own tokenizer reads it ([CLS] and [SEP] included), fit its window."""
    tokenizer = embedder._st.tokenizer
    limit = default_chunk_tokens(embedder)
    grown = 0
    for p in book.points:
        text = p.payload["content"]
        assert text.strip(), p.payload["chunk_id"]
        assert p.payload["token_count"] == embedder.count_tokens(text)
        read = len(tokenizer(f"{p.payload['title']}\n{text}")["input_ids"])
        assert read <= embedder.max_tokens, (p.payload["chunk_id"], read)
        grown += p.payload["token_count"] > limit  # a lead-in kept with its block, still within the window
    assert grown < len(book.points) / 10


def _parts_rebuild(fences: list[list[str]], opener: str, closer: str, inner: list[str]) -> bool:
    """Whether two or more consecutive whole fences, each opened and closed like the block, hold its lines."""
    lines: list[str] = []
    for count, part in enumerate(fences, 1):
        if part[0] != opener or part[-1] != closer:
            return False
        lines += part[1:-1]
        if len(lines) >= len(inner):
            return count > 1 and lines == inner
    return False


def test_every_code_block_is_whole_in_one_chunk_or_cut_between_lines(book):
    """A code block lies whole in one chunk, or its lines lie in order in consecutive chunks, each part a
    whole fence with the block's own opening line: no line is ever cut, none lost, none repeated."""
    files = book.by_file()
    checked = cut = 0
    for f in CONTENT_FILES:
        body = read_document(SAMPLE_BOOK / f, SAMPLE_BOOK).body
        chunks = sorted(files[f], key=lambda c: c["chunk_sequence"])
        for match in FENCED.finditer(body):
            code = match.group(0).strip()
            checked += 1
            if any(code in c["content"] for c in chunks):
                continue
            cut += 1
            opener, *inner, closer = code.split("\n")
            fences = [m.group(0).split("\n") for c in chunks for m in FENCED.finditer(c["content"])]
            assert any(_parts_rebuild(fences[start:], opener, closer, inner)
                       for start in range(len(fences) - 1)), (f, code[:80])
    assert checked >= 30 and cut > 0


def test_every_payload_is_complete_and_consistent(book, embedder):
    files = book.by_file()
    for p in book.points:
        payload = p.payload
        for name in PAYLOAD_FIELDS:
            assert payload.get(name) not in (None, ""), (name, payload.get("chunk_id"))
        f, seq = payload["source_file"], payload["chunk_sequence"]
        assert str(p.id) == point_id_for(f, seq) and payload["chunk_id"] == f"{f}#{seq}"
        assert payload["content_hash"] == hashlib.sha256(payload["content"].encode("utf-8")).hexdigest()
        assert payload["total_chunks"] == len(files[f])
        assert payload["model_version"] == embedder.model
        assert payload["source_url"].startswith(f"{DEFAULT_BASE_URL}/docs/")
    for f, chunks in files.items():
        assert sorted(c["chunk_sequence"] for c in chunks) == list(range(len(chunks))), f
        assert len({c["source_url"] for c in chunks}) == 1 and len({c["title"] for c in chunks}) == 1
    urls = {f: chunks[0]["source_url"] for f, chunks in files.items()}
    assert urls["introduction/01-what-is-physical-ai.md"] == f"{DEFAULT_BASE_URL}/docs/intro"  # slug /intro
    assert urls["module-01-ros2/01-ros2-overview.md"] == f"{DEFAULT_BASE_URL}/docs/module-01-ros2/what-is-ros2"  # id
    assert urls["module-02-simulation/02-gazebo-basics.md"] == \
        f"{DEFAULT_BASE_URL}/docs/module-02-simulation/gazebo-fundamentals"  # relative slug
    assert urls["appendices/a-glossary.md"] == f"{DEFAULT_BASE_URL}/docs/glossary"
    assert urls["module-03-isaac/02-isaac-sim-setup.mdx"] == f"{DEFAULT_BASE_URL}/docs/module-03-isaac/isaac-sim-setup"
    assert len(set(urls.values())) == len(urls)


def test_mdx_page_carries_no_imports_or_jsx(book):
    chunks = book.by_file()["module-03-isaac/02-isaac-sim-setup.mdx"]
    raw = (SAMPLE_BOOK / "module-03-isaac/02-isaac-sim-setup.mdx").read_text(encoding="utf-8")
    assert "import Tabs" in raw and "<TabItem" in raw  # the page really is MDX
    for c in chunks:
        prose = FENCED.sub("", c["content"])
        assert not re.search(r"^import\s", prose, re.MULTILINE), c["chunk_id"]
        assert "<Tabs" not in prose and "<TabItem" not in prose and "</TabItem>" not in prose, c["chunk_id"]


# --------------------------------------------------------------------------- real content

def _bodies() -> dict[str, str]:
    return {f: read_document(SAMPLE_BOOK / f, SAMPLE_BOOK).body for f in book_files()}


def test_the_book_is_real_content():
    bodies = _bodies()
    words = sum(len(re.findall(r"\w+", b)) for b in bodies.values())
    assert words >= 20_000

    seen: dict[str, str] = {}
    repeated = []
    for f, body in bodies.items():
        for paragraph in re.split(r"\n[ \t]*\n", body):
            norm = " ".join(paragraph.split()).lower()
            if len(norm.split()) < 20:
                continue
            if norm in seen:
                repeated.append((seen[norm], f, norm[:80]))
            seen[norm] = f
    assert repeated == []
    assert len(seen) >= 300

    placeholder = re.compile(r"\bTODO\b|\bTBD\b|\bFIXME\b|lorem\s+ipsum|coming\s+soon", re.IGNORECASE)
    for f in book_files():
        if f == STUB:
            continue
        text = (SAMPLE_BOOK / f).read_text(encoding="utf-8")
        found = placeholder.search(text)
        assert found is None, (f, found and text[max(0, found.start() - 60):found.end() + 20])


# --------------------------------------------------------------------------- golden sanity

def test_golden_set_holds_seed_004s_queries_and_the_setup_query():
    assert len(GOLDEN.queries) == 5 and GOLDEN.top_k == 5
    assert "How do I set up ROS2?" in [q.query for q in GOLDEN.extra_queries]
    assert PIZZA in [n.query for n in GOLDEN.negatives]


@pytest.fixture(scope="session")
def top_results(retriever) -> dict[str, Any]:
    texts = [q.query for q in IN_DOMAIN] + [PIZZA, "Gazebo simulation"]
    return dict(zip(texts, retriever.search_many(texts, top_k=5)))


@pytest.mark.parametrize("golden", IN_DOMAIN, ids=[q.query for q in IN_DOMAIN])
def test_expected_page_is_in_the_top_5(top_results, golden):
    response = top_results[golden.query]
    assert len(response.results) == 5
    found = [r.source_url for r in response.results if any(matches(r, p) for p in golden.expected_url_patterns)]
    assert found, (golden.query, [r.source_url for r in response.results])


def test_out_of_domain_scores_below_every_in_domain_top_result(top_results):
    pizza = top_results[PIZZA].results[0].similarity_score
    tops = {q.query: top_results[q.query].results[0].similarity_score for q in IN_DOMAIN}
    assert all(pizza < top for top in tops.values()), (pizza, tops)
    assert pizza < min(tops.values()) - 0.1  # a clear margin, not a coin toss


def test_gazebo_query_comes_mostly_from_the_simulation_module(top_results):
    sources = [r.source_file for r in top_results["Gazebo simulation"].results]
    assert len(sources) == 5
    assert sum(s.startswith("module-02-simulation/") for s in sources) >= 3, sources


# --------------------------------------------------------------------------- idempotence

def test_second_ingest_changes_nothing(book, embedder, top_results):
    # top_results is requested so the searches run before this re-ingest (order independence).
    before = {str(p.id): p.payload for p in book.store.scroll(COLLECTION, with_payload=True)}
    summary = ingest(book.store, embedder, COLLECTION, SAMPLE_BOOK, progress=False)
    assert summary.files_added == 0 and summary.files_replaced == 0 and summary.files_deleted == 0
    assert summary.chunks_added == summary.chunks_replaced == summary.chunks_deleted == 0
    assert summary.files_unchanged == len(CONTENT_FILES) and summary.skipped == [STUB]
    after = {str(p.id): p.payload for p in book.store.scroll(COLLECTION, with_payload=True)}
    assert after == before
