"""Chunk quality: chunks the model cannot read whole, and fragments that win top-1.

Lengths are counted with the configured embedder's own counter
(:meth:`Embedder.count_tokens`) on the text the pipeline embedded (our ingest: ``title + "\\n" + content``; a
team's: the content alone), plus the model's special tokens
(:func:`~retrieval_lib.collection.ours.tokens_read`, the rule ``inspect`` counts by too):

- MiniLM: its own wordpiece tokenizer, offline, so the counts are exact.
- Cohere v3: no tokenizer is available offline; the count is the embedder's
  estimate, ``max(ceil(words x 1.3), ceil(chars / 3))``, meant not to count short; say so when
  judging a Cohere collection (see docs/notebooks.md, "Chunk quality").

Definitions (a chunk is one stored point):

- ``read`` = count_tokens(embedded text) + special tokens
- past the window: ``read > window``; its unseen share = (read - window) / read
- share of text past the window = Σ max(0, read - window) / Σ read
- fragment: count_tokens(content) < ``min_tokens``, or heading lines make more
  than ``max_heading_share`` of its tokens
- fragment win rate = |queries whose top-1 is a fragment while its section has a full chunk| / |queries|
  (a fragment that is its section's only text, a one-line glossary entry, answers its own heading and is
  listed but not counted)

:func:`run` is the check (notebook 12 and ``check chunk_quality``): it measures the chunks and asks the
questions; its :class:`ChunkQuality` records the gates, figure and tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.gates import CHUNKS_FRAGMENT_WINS, CHUNKS_FRAGMENTS, CHUNKS_UNSEEN
from retrieval_lib.collection.boilerplate import HEADING
from retrieval_lib.collection.ours import tokens_read
from retrieval_lib.embedding.base import ESTIMATE_NOTE, tokens_estimated
from retrieval_lib.validation import number_in, whole_number
from retrieval_lib.workbook.check import NotApplicable

if TYPE_CHECKING:
    from retrieval_lib.search import Retriever
    from retrieval_lib.stores import ReadableStore
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "ChunkQuality", "ChunkStudy", "FragmentWin", "measure_chunks"]

#: The gates this check records.
GATES = (CHUNKS_UNSEEN, CHUNKS_FRAGMENTS, CHUNKS_FRAGMENT_WINS)


@dataclass(frozen=True)
class ChunkLength:
    """One chunk's size as the model reads it."""

    chunk_id: str
    source_file: str
    section: str
    read: int
    content_tokens: int
    heading_share: float
    unseen_share: float
    fragment: bool
    content: str = ""


@dataclass
class ChunkStudy:
    """Every chunk's length against the window, with the fragments."""

    window: int
    min_tokens: int
    max_heading_share: float
    chunks: list[ChunkLength] = field(default_factory=list)
    estimated: bool = False  # the counts are estimates (a hosted provider's model: no tokenizer here)

    @property
    def past_window(self) -> list[ChunkLength]:
        return sorted((c for c in self.chunks if c.read > self.window), key=lambda c: -c.read)

    @property
    def fragments(self) -> list[ChunkLength]:
        return [c for c in self.chunks if c.fragment]

    @property
    def unseen_text_share(self) -> float:
        """Σ max(0, read - window) / Σ read over every chunk (0.0 for no chunk)."""
        total = sum(c.read for c in self.chunks)
        return sum(max(0, c.read - self.window) for c in self.chunks) / total if total else 0.0

    @property
    def fragment_share(self) -> float:
        return len(self.fragments) / len(self.chunks) if self.chunks else 0.0


@dataclass(frozen=True)
class FragmentWin:
    """A query whose top-1 is a fragment, with the best full chunk of the same section."""

    query: str
    fragment_id: str
    fragment_score: float
    fragment_text: str
    best_full_id: str | None
    best_full_score: float | None
    best_full_text: str

    @property
    def displaced(self) -> bool:
        """Whether a full chunk of the same section lost top-1 to the fragment."""
        return self.best_full_id is not None


def scan_chunks(store: ReadableStore, collection: str) -> list[dict[str, Any]]:
    """Every point's payload fields the check reads, in one pass of large pages."""
    fields = ["chunk_id", "source_file", "title", "section_title", "content"]
    return [dict(p.payload or {}, _id=str(p.id))
            for p in store.scroll(collection, with_payload=fields, batch_size=1024)]


def measure_chunks(payloads: Sequence[dict[str, Any]], count_tokens: Callable[[str], int], window: int, *,
                   ours: bool = True, min_tokens: int = 40, max_heading_share: float = 0.5) -> ChunkStudy:
    """Measure each chunk against ``window`` (the model's input limit, special tokens included): the text its
    pipeline embedded (``ours``: title and content; a team's: the content alone), :func:`tokens_read`.

    Raises:
        ValidationError: ``window`` below 2, ``min_tokens`` below 0, ``max_heading_share`` outside 0-1.
    """
    whole_number(window, "window", low=2, unit="tokens")
    whole_number(min_tokens, "min_tokens")
    number_in(max_heading_share, "max_heading_share", 0, 1)
    study = ChunkStudy(window=window, min_tokens=min_tokens, max_heading_share=max_heading_share)
    for p in payloads:
        content = str(p.get("content") or "")
        read = tokens_read(p, count_tokens, ours=ours)
        own = count_tokens(content)
        headings = sum(count_tokens(m.group(0)) for m in HEADING.finditer(content))
        heading_share = headings / own if own else 1.0
        study.chunks.append(ChunkLength(
            chunk_id=str(p.get("chunk_id") or p.get("_id")), source_file=str(p.get("source_file") or ""),
            section=str(p.get("section_title") or ""), read=read, content_tokens=own,
            heading_share=heading_share, unseen_share=max(0, read - window) / read if read else 0.0,
            fragment=own < min_tokens or heading_share > max_heading_share, content=content))
    return study


def fragment_wins(retriever: Retriever, queries: Sequence[str], study: ChunkStudy, *,
                  top_k: int = 5) -> tuple[int, list[FragmentWin]]:
    """Run ``queries``; for each top-1 that is a fragment, find the best full chunk of its section.

    Returns:
        (queries that returned a result, the wins in query order).
    """
    by_id = {c.chunk_id: c for c in study.chunks}
    answered = 0
    wins: list[FragmentWin] = []
    for query, response in zip(queries, retriever.search_many(list(queries), top_k=top_k)):
        if not response.results:
            continue
        answered += 1
        top = response.results[0]
        chunk = by_id.get(str(top.chunk_id))
        if chunk is None or not chunk.fragment:
            continue
        same = retriever.search(query, top_k=20, source_prefix=chunk.source_file or None,
                                section=chunk.section or None)
        full = next((r for r in same.results
                     if r.source_file == chunk.source_file and not getattr(by_id.get(str(r.chunk_id)), "fragment",
                                                                           True)), None)
        wins.append(FragmentWin(query, chunk.chunk_id, top.similarity_score, chunk.content,
                                str(full.chunk_id) if full else None, full.similarity_score if full else None,
                                (full.content or "") if full else ""))
    return answered, wins


def study_queries(retriever: Retriever, golden_set: str, headings_per_file: int,
                  queries: Sequence[str] | None = ()) -> list[str]:
    """The golden and extra queries, 03's heading queries and the demo ``queries``, each once, in that order."""
    from retrieval_lib.checks.retrieval.source_coverage import build_queries, scan_sources
    from retrieval_lib.params import load_golden_set

    golden = load_golden_set(golden_set)
    sources = scan_sources(retriever.store, retriever.collection)
    return list(dict.fromkeys([q.query for q in golden.queries] + [q.query for q in golden.extra_queries]
                              + [q.text for q in build_queries(sources, headings_per_file)] + list(queries or [])))


def _clip(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def run(ctx: NotebookRun, *, golden_set: str, headings_per_file: int, queries: Sequence[str] | None,
        fragment_min_length: int, fragment_max_heading_share: float, max_unseen_share: float,
        max_fragment_share: float, max_fragment_win_rate: float) -> ChunkQuality | NotApplicable:
    """Notebook 12's check: every chunk's length with the configured embedder's own counter against its window,
    the fragments, and how often a fragment is top-1 for the golden, heading and demo ``queries``."""
    if reason := ctx.collection_absent() or ctx.no_text():  # no text: every chunk would be a 0-token fragment
        return NotApplicable(reason, GATES)
    embedder = ctx.collection_retriever.embedder
    study = measure_chunks(scan_chunks(ctx.store, ctx.collection), embedder.count_tokens, embedder.max_tokens,
                           ours=ctx.store.owned(ctx.collection) is not False,
                           min_tokens=fragment_min_length, max_heading_share=fragment_max_heading_share)
    study.estimated = tokens_estimated(embedder)
    texts = study_queries(ctx.retriever, golden_set, headings_per_file, queries)
    answered, wins = fragment_wins(ctx.retriever, texts, study)
    return ChunkQuality(study, texts, answered, wins, max_unseen_share=max_unseen_share,
                        max_fragment_share=max_fragment_share, max_fragment_win_rate=max_fragment_win_rate)


@dataclass
class ChunkQuality:
    """Notebook 12's result: the chunks against the window, the questions asked, the fragments that won, the bars."""

    study: ChunkStudy
    queries: list[str]
    answered: int
    wins: list[FragmentWin]
    max_unseen_share: float
    max_fragment_share: float
    max_fragment_win_rate: float

    def __str__(self) -> str:
        study = self.study
        return (f"{len(study.chunks)} chunks, window {study.window} tokens: {len(study.past_window)} past it, "
                f"{study.unseen_text_share:.1%} of the text unseen; {len(study.fragments)} fragments\n"
                f"{len(self.queries)} queries: a fragment is top-1 for {len(self.wins)} of {self.answered}")

    def tables(self) -> dict[str, Any]:
        """``past_window``: each chunk past the window, its tokens read and the share never seen; ``fragments``:
        each fragment, its content tokens, heading share and text; ``fragment_wins``: each fragment that won top-1
        beside the best full chunk of its section (scores to 3 decimals)."""
        import pandas as pd

        study = self.study
        past = [{"source_file": c.source_file, "section": c.section, "chunk_id": c.chunk_id, "tokens": c.read,
                 "unseen_share": round(c.unseen_share, 3)} for c in study.past_window]
        fragments = [{"source_file": c.source_file, "section": c.section, "content_tokens": c.content_tokens,
                      "heading_share": round(c.heading_share, 3), "text": _clip(c.content, 100)}
                     for c in study.fragments]
        wins = [{"query": w.query, "fragment": _clip(w.fragment_text), "fragment_score": round(w.fragment_score, 3),
                 "best_full_chunk": _clip(w.best_full_text) if w.best_full_id else "-",
                 "full_score": round(w.best_full_score, 3) if w.best_full_score is not None else None}
                for w in self.wins]
        return {"past_window": pd.DataFrame(past, columns=["source_file", "section", "chunk_id", "tokens",
                                                           "unseen_share"]),
                "fragments": pd.DataFrame(fragments, columns=["source_file", "section", "content_tokens",
                                                              "heading_share", "text"]),
                "fragment_wins": pd.DataFrame(wins, columns=["query", "fragment", "fragment_score",
                                                             "best_full_chunk", "full_score"])}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """Notebook 12's metrics, gates, findings, length histogram and tables."""
        from retrieval_lib.workbook.plots import count_histogram

        study, wins, answered = self.study, self.wins, self.answered
        unseen, frag_share = study.unseen_text_share, study.fragment_share
        displaced = [w for w in wins if w.displaced]
        win_rate = len(displaced) / answered if answered else 0.0
        past = study.past_window
        for name, value, unit in (("chunks", len(study.chunks), "chunks"), ("model_window", study.window, "tokens"),
                                  ("chunks_past_window", len(past), "chunks"), ("unseen_text_share", unseen, "share"),
                                  ("fragments", len(study.fragments), "chunks"),
                                  ("fragment_share", frag_share, "share"), ("fragment_win_rate", win_rate, "share")):
            report.metric(name, value, unit)
        CHUNKS_UNSEEN.record(
            report, unseen <= self.max_unseen_share, value=round(unseen, 4), threshold=self.max_unseen_share,
            rule="<=", unit="share", detail=f"{unseen:.1%} of the text past the {study.window}-token window (at most "
                                            f"{self.max_unseen_share:.1%}); {len(past)} chunks too long",
            hint=CHUNKS_UNSEEN.causes)
        CHUNKS_FRAGMENTS.record(
            report, frag_share <= self.max_fragment_share, value=round(frag_share, 4),
            threshold=self.max_fragment_share, rule="<=", unit="share",
            detail=f"{len(study.fragments)} of {len(study.chunks)} chunks are fragments ({frag_share:.1%}, at most "
                   f"{self.max_fragment_share:.1%})",
            hint=CHUNKS_FRAGMENTS.causes)
        if not answered:  # no query got an answer: a rate of 0 would pass on nothing
            CHUNKS_FRAGMENT_WINS.not_applicable(report, f"none of the {len(self.queries)} queries got an answer",
                                                fill={"max_fragment_win_rate": self.max_fragment_win_rate})
        else:
            CHUNKS_FRAGMENT_WINS.record(
                report, win_rate <= self.max_fragment_win_rate, value=round(win_rate, 4),
                threshold=self.max_fragment_win_rate, rule="<=", unit="share",
                detail=f"a fragment beat its own section's full chunk for {len(displaced)} of {answered} queries "
                       f"({win_rate:.1%}, at most {self.max_fragment_win_rate:.1%})",
                hint="the fragments in the wins table answer nothing: merge them with their section's text")
        worst = f"; the longest is {past[0].read} tokens ({past[0].source_file}, {past[0].unseen_share:.0%} unseen)" \
            if past else ""
        report.finding(f"{len(past)} of {len(study.chunks)} chunks are longer than the {study.window}-token window, "
                       f"{unseen:.1%} of all text is never seen by the model{worst}"
                       + (f" (token counts {ESTIMATE_NOTE})." if study.estimated else "."))
        report.finding(f"{len(study.fragments)} chunks ({frag_share:.1%}) are fragments (under {study.min_tokens} "
                       f"tokens or mostly heading); a fragment is top-1 for {len(wins)} of {answered} queries, "
                       f"{len(displaced)} of them over a full chunk of its own section.")
        fig = count_histogram([c.read for c in study.chunks], bins=40, xlabel="tokens the model reads (title + chunk)",
                              marks={"model window": float(study.window), "fragment size": float(study.min_tokens)},
                              title="Chunk lengths against the model window")
        report.figure(fig, "lengths", show=show)
        for name, frame in self.tables().items():
            report.table(frame, name)
