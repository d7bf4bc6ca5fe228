"""Draft a validation set from the collection itself: known-item queries, topics and negatives.

:func:`draft_collection` reads the collection once (:func:`~retrieval_lib.drafting.pages.read_pages`), drafts
known-item queries (:mod:`~retrieval_lib.drafting.known_items`) and topics (:mod:`~retrieval_lib.drafting.topics`)
in the book's own language (:mod:`~retrieval_lib.drafting.language`), and then makes **one** batched search pass
over the drafted questions and the shipped negatives (embedded once each, through the run's query cache when the
embedder has one): the negatives are judged against the median best score of the drafted questions
(:mod:`~retrieval_lib.drafting.negatives`). Known-item queries are never judged by their scores.

It only reads: the store is a :class:`~retrieval_lib.collection.CollectionView`, which refuses every write.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval_lib.collection import CollectionView
from retrieval_lib.drafting.known_items import Dropped, KnownItem, draft_known_items
from retrieval_lib.drafting.language import LanguageGuess, detect_language
from retrieval_lib.drafting.negatives import NEGATIVES_FILE, NegativeDraft, keep_negatives, load_negatives
from retrieval_lib.drafting.pages import read_pages, sample_texts
from retrieval_lib.drafting.topics import TopicDraft, draft_topics
from retrieval_lib.search import Retriever
from retrieval_lib.validation import whole_number

__all__ = ["Draft", "draft_collection", "DEFAULT_PER_FILE", "MEDIAN_SAMPLE"]

#: Known-item queries per source file unless ``--per-file`` says otherwise.
DEFAULT_PER_FILE = 3
#: Drafted questions searched for the in-domain median (evenly spread over the book): a median of 200 has a 95 %
#: interval of about +-7 percentiles, and keeps the search pass small on a book of thousands of pages.
MEDIAN_SAMPLE = 200


@dataclass
class Draft:
    """What one draft found, kept and dropped, with the evidence.

    Attributes:
        known: drafted known-item queries, each with its expected page.
        dropped: candidates left out (known items and whole pages), each with its reason.
        topics, topics_dropped: drafted topics, and the sections left out with the reason.
        negatives: every shipped negative with its best score and verdict (``kept``).
        top1: the best score of each drafted known-item query searched (all of them up to
            :data:`MEDIAN_SAMPLE`, else an even sample): the negatives' median; never used to drop a query.
        median: the median of ``top1``, the bar a negative must stay below.
        seconds: time spent reading (``scroll``), drafting (``draft``) and searching (``search``).
    """

    collection: str
    points: int
    pages: int
    roles: list[str]
    language: LanguageGuess
    negatives_language: str
    known: list[KnownItem]
    dropped: list[Dropped]
    topics: list[TopicDraft]
    topics_dropped: list[Dropped]
    negatives: list[NegativeDraft]
    top1: dict[str, float] = field(default_factory=dict)
    median: float | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    embedded: int = 0

    @property
    def kept_negatives(self) -> list[NegativeDraft]:
        return [n for n in self.negatives if n.kept]

    @property
    def files_with_query(self) -> int:
        return len({k.page for k in self.known})

    def lines(self) -> list[str]:
        """What a person reads after a draft: counts, the language, and why entries were dropped."""
        reasons = Counter(d.reason.split(":")[0] for d in self.dropped)
        out = [f"collection {self.collection!r}: {self.points:,} points in {self.pages} source files; read "
               f"{', '.join(self.roles)} (one scroll)",
               f"language: {self.language.describe()}; negatives asked in "
               f"{self.negatives_language}" + ("" if self.negatives_language == self.language.code else
                                               " (the shipped list has no questions in the book's language)"),
               f"known-item queries: {len(self.known)} drafted for {self.files_with_query} of {self.pages} files "
               f"({', '.join(f'{k} {sum(x.kind == k for x in self.known)}' for k in ('title', 'heading', 'lead'))})",
               f"dropped: {len(self.dropped)}" + (" (" + ", ".join(f"{k} {n}" for k, n in sorted(reasons.items()))
                                                  + ")" if reasons else "")]
        out.append(f"topics: {len(self.topics)} drafted"
                   + (f" ({', '.join(f'{t.topic!r} -> {t.expected_prefix}' for t in self.topics)})"
                      if self.topics else "")
                   + (f"; left out: {'; '.join(f'{d.text}: {d.reason}' for d in self.topics_dropped)}"
                      if self.topics_dropped else ""))
        kept = self.kept_negatives
        med = "n/a" if self.median is None else f"{self.median:.3f}"
        dropped = "; ".join(f"{n.query!r} ({n.reason})" for n in self.negatives if not n.kept)
        out.append(f"negatives: {len(kept)} of {len(self.negatives)} kept (best score below the in-domain median "
                   f"{med} of {len(self.top1)} drafted questions)" + (f"; dropped: {dropped[:600]}" if dropped else ""))
        return out


def draft_collection(store: Any, collection: str, embedder: Any, *, per_file: int = DEFAULT_PER_FILE,
                     negatives_file: str | Path = NEGATIVES_FILE,
                     progress: Callable[[str], None] | None = None) -> Draft:
    """Draft known-item queries, topics and negatives from ``collection`` (module docstring).

    Args:
        store: the store, read through payload roles (a bare store is wrapped in a read-only view).
        embedder: the model that built the collection (a run-cache embedder embeds each text once).
        per_file: known-item queries per source file, at most (at least 1).
        progress: called with a line as each stage starts (the CLI prints it on stderr).

    Raises:
        ValidationError: ``per_file`` below 1.
        ParamsError: the negatives file is missing or malformed.
        CollectionNotFoundError, ModelMismatchError, VectorStoreError, EmbeddingError: from the store and search.
    """
    whole_number(per_file, "per_file", low=1)
    view = store if isinstance(store, CollectionView) else CollectionView(store)
    say = progress or (lambda _: None)
    say(f"reading {view.count(collection):,} points (one scroll)")
    t0 = time.perf_counter()
    pages, roles = read_pages(view, collection)
    t1 = time.perf_counter()
    say(f"drafting from {len(pages):,} source files")
    language = detect_language(sample_texts(pages))
    known, dropped = draft_known_items(pages, per_file=per_file)
    topics, topics_dropped = draft_topics(pages)
    shipped, neg_lang = load_negatives(language.code, negatives_file)
    t2 = time.perf_counter()
    step = max(1, -(-len(known) // MEDIAN_SAMPLE))
    sample = known[::step]
    texts = [k.query for k in sample] + [n.query for n in shipped]
    say(f"searching {len(texts)} texts ({len(sample)} drafted questions, {len(shipped)} negatives; one batched pass)")
    best = _best_scores(Retriever(view, embedder, collection), texts)
    t3 = time.perf_counter()
    top1 = {k.query: s for k, s in zip(sample, best[:len(sample)]) if s is not None}
    judged, median = keep_negatives(shipped, best[len(sample):], list(top1.values()))
    return Draft(collection=collection, points=sum(len(p.chunks) for p in pages), pages=len(pages), roles=roles,
                 language=language, negatives_language=neg_lang, known=known, dropped=dropped, topics=topics,
                 topics_dropped=topics_dropped, negatives=judged, top1=top1, median=median,
                 seconds={"scroll": t1 - t0, "draft": t2 - t1, "search": t3 - t2}, embedded=len(set(texts)))


def _best_scores(retriever: Retriever, texts: Sequence[str]) -> list[float | None]:
    """Each text's best similarity score (None when the collection returns nothing): one batched pass."""
    if not texts:
        return []
    responses = retriever.search_many(list(texts), top_k=1)
    return [r.results[0].similarity_score if r.results else None for r in responses]
