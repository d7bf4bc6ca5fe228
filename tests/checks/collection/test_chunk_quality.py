"""Tests for checks.collection.chunk_quality (notebook 12): chunks past the window, fragments, fragment wins."""

from __future__ import annotations

import pytest
from corpus import fill_collection
from fakes.embedders import FakeEmbedder, hashed_bag_of_words

from retrieval_lib.checks.collection import chunk_quality as chunks
from retrieval_lib.errors import ValidationError
from retrieval_lib.ingest import SAMPLE_BOOK
from retrieval_lib.ingest.chunking import SPECIAL_TOKENS, chunk_markdown, default_count_tokens
from retrieval_lib.ingest.documents import discover_documents, is_stub, read_document
from retrieval_lib.search import Retriever
from retrieval_lib.stores.qdrant import VectorStore
from retrieval_lib.workbook.report import NotebookReport

WINDOW = 64  # tokens, special tokens included
LONG = "## Long\n\n" + " ".join(f"word{i}" for i in range(120))  # 122 tokens + title + 2 specials

HEAVY = "A very long heading that says almost everything about the section of the robot arm"


def doc(i: int, section: str, content: str, source: str = "a/page.md") -> dict:
    return dict(id=i, source_file=source, route=source.removesuffix(".md"), title="Page", section_title=section,
                content=content, chunk_sequence=i)


HANDMADE = [
    doc(1, "Long", LONG),
    doc(2, "Joints", "## Joints\n\nShort remark."),  # a fragment: 7 tokens
    doc(3, "Joints", "## Joints\n\n" + " ".join(f"The joint {i} rotates about its own axis." for i in range(5))),
    doc(4, HEAVY, f"## {HEAVY}\n\nSee below for the details."),  # heading tokens over half the chunk
    doc(5, "Other", "## Other\n\n" + " ".join(f"Sentence {i} of the other section is here." for i in range(4))),
]


def handmade_study() -> chunks.ChunkStudy:
    payloads = [dict(d, chunk_id=f"{d['source_file']}#{d['id']}") for d in HANDMADE]
    return chunks.measure_chunks(payloads, default_count_tokens, WINDOW, min_tokens=20)


def test_chunks_past_the_window_are_listed_with_the_share_never_seen() -> None:
    study = handmade_study()
    (past,) = study.past_window
    assert past.chunk_id == "a/page.md#1" and past.section == "Long"
    read = default_count_tokens("Page\n" + LONG) + SPECIAL_TOKENS
    assert past.read == read and past.unseen_share == pytest.approx((read - WINDOW) / read)
    total = sum(c.read for c in study.chunks)
    assert study.unseen_text_share == pytest.approx((read - WINDOW) / total)
    assert all(c.read <= WINDOW for c in study.chunks if c is not past)


def test_fragments_are_short_chunks_or_mostly_heading() -> None:
    study = handmade_study()
    assert [c.chunk_id for c in study.fragments] == ["a/page.md#2", "a/page.md#4"]
    assert study.fragment_share == pytest.approx(2 / 5)
    heading_heavy = study.fragments[1]
    assert heading_heavy.content_tokens >= 20 and heading_heavy.heading_share > 0.5


def test_a_section_folded_onto_its_headings_line_is_text_not_heading() -> None:
    # a chunker that folds whitespace (" ".join(text.split())) leaves "## Joints The joint 0 rotates ..." on one line
    folded = [dict(d, content=" ".join(d["content"].split()), chunk_id=f"{d['source_file']}#{d['id']}")
              for d in HANDMADE]
    study = chunks.measure_chunks(folded, default_count_tokens, WINDOW, min_tokens=20)
    # the short chunk and the one that is mostly its heading still are fragments; the full sections are not,
    # although their one line starts with "## "
    assert [c.chunk_id for c in study.fragments] == ["a/page.md#2", "a/page.md#4"]
    assert [c.heading_share for c in study.chunks if c.chunk_id in ("a/page.md#3", "a/page.md#5")] == [0, 0]


def test_bad_sizes_are_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as err:
        chunks.measure_chunks([], default_count_tokens, 1)
    assert err.value.field == "window"
    with pytest.raises(ValidationError) as err:
        chunks.measure_chunks([], default_count_tokens, 256, max_heading_share=1.5)
    assert err.value.field == "max_heading_share"


def test_a_fragment_that_wins_top1_is_shown_beside_its_sections_best_full_chunk(tmp_path) -> None:
    embedder = FakeEmbedder.hashed()
    with VectorStore.in_memory() as store:
        fill_collection(store, "hand", embedder, HANDMADE)
        retriever = Retriever(store, embedder, "hand")
        study = chunks.measure_chunks(chunks.scan_chunks(store, "hand"), default_count_tokens, WINDOW, min_tokens=20)
        answered, wins = chunks.fragment_wins(retriever, ["Joints short remark", "other section sentence"], study)
        assert answered == 2
        (win,) = wins
        assert win.query == "Joints short remark" and win.fragment_id.endswith("#2")
        assert win.best_full_id is not None and win.best_full_id.endswith("#3")
        assert win.best_full_score is not None and win.best_full_score < win.fragment_score
        report = NotebookReport("12_chunk_quality", "t", run_dir=tmp_path)
        result = chunks.ChunkQuality(study, [], answered, wins, max_unseen_share=0.01, max_fragment_share=0.1,
                                     max_fragment_win_rate=0.1)
        result.record(report, show=False)
        assert [g.passed for g in report.gates] == [False, False, False]
        assert report.metrics["fragment_win_rate"] == pytest.approx(0.5)
        table = result.tables()["fragment_wins"]
        assert list(table.columns) == ["query", "fragment", "fragment_score", "best_full_chunk", "full_score"]
        assert (tmp_path / "figures" / "12_chunk_quality_lengths.png").is_file()


def book_bodies() -> list[tuple[str, str, str]]:
    docs = [read_document(p, SAMPLE_BOOK) for p in discover_documents(SAMPLE_BOOK)]
    return [(d.source_file, d.title, d.body) for d in docs if not is_stub(d)]


def fixed_windows(size: int) -> list[dict]:
    """The sample book cut by another chunker: fixed ``size``-token word windows, no regard for structure."""
    payloads = []
    for source, title, body in book_bodies():
        words = body.split(" ")
        for n, start in enumerate(range(0, len(words), size)):
            payloads.append(dict(chunk_id=f"{source}#{n}", source_file=source, title=title,
                                 section_title=title, content=" ".join(words[start:start + size])))
    return payloads


def test_a_collection_made_with_fixed_1000_token_windows_reports_truncation_and_fragments(tmp_path) -> None:
    window = 256
    foreign = chunks.measure_chunks(fixed_windows(1000), default_count_tokens, window)
    assert len(foreign.past_window) > len(foreign.chunks) / 2
    assert foreign.unseen_text_share > 0.5  # most of the text is never seen
    assert foreign.fragments  # the short tails of the files
    report = NotebookReport("12_chunk_quality", "t", run_dir=tmp_path)
    result = chunks.ChunkQuality(foreign, [], 0, [], max_unseen_share=0.01, max_fragment_share=0.04,
                                 max_fragment_win_rate=0.02)
    result.record(report, show=False)
    assert not report.gates[0].passed
    assert result.tables()["past_window"]["unseen_share"].max() > 0.7

    # The workbook's own chunker on the same book, against the same window: nothing past it.
    ours = [dict(chunk_id=f"{s}#{c.sequence}", source_file=s, title=t, section_title=c.section_title,
                 content=c.text)
            for s, t, b in book_bodies()
            for c in chunk_markdown(b, title=t, window_tokens=window - SPECIAL_TOKENS)]
    study = chunks.measure_chunks(ours, default_count_tokens, window)
    assert study.past_window == [] and study.unseen_text_share == 0.0
    assert study.fragment_share < foreign.fragment_share or study.fragment_share < 0.04


def test_token_counts_of_a_hosted_model_are_said_to_be_estimates(tmp_path) -> None:
    # team #6 (Gemini) and #14 (Cohere): no tokenizer of theirs is on this machine, so "3 chunks longer than the
    # 2048-token window" is an estimate, and the finding and inspect say so
    from retrieval_lib.embedding import CachedEmbedder, CohereEmbedder, LocalEmbedder, QueryCache
    from retrieval_lib.embedding.base import ESTIMATE_NOTE, tokens_estimated

    assert CohereEmbedder.tokens_estimated and not tokens_estimated(LocalEmbedder)
    hosted = FakeEmbedder(hashed_bag_of_words(8), dimension=8)
    hosted.tokens_estimated = True  # what every hosted provider's embedder says (RemoteEmbedder)
    assert tokens_estimated(CachedEmbedder(hosted, QueryCache(tmp_path / "c.json")))
    local = FakeEmbedder(hashed_bag_of_words(8), dimension=8)
    assert not tokens_estimated(CachedEmbedder(local, QueryCache(tmp_path / "d.json")))
    for estimated in (False, True):
        study = chunks.measure_chunks(fixed_windows(1000), default_count_tokens, 256)
        study.estimated = estimated
        report = NotebookReport("12_chunk_quality", "t", run_dir=tmp_path / str(estimated))
        chunks.ChunkQuality(study, [], 0, [], max_unseen_share=0.01, max_fragment_share=0.04,
                            max_fragment_win_rate=0.02).record(report, show=False)
        window = next(f for f in report.findings if "-token window" in f)
        assert (ESTIMATE_NOTE in window) is estimated
