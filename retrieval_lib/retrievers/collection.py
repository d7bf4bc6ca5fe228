"""``kind: collection``: the workbook's own path (embed the question, ask the collection), as a retriever."""

from __future__ import annotations

import time
from collections.abc import Sequence

from retrieval_lib.errors import RetrievalError
from retrieval_lib.retrievers.spec import Answer, Hit, one_line
from retrieval_lib.search import Retriever

__all__ = ["CollectionRetriever"]


class CollectionRetriever:
    """Today's :class:`~retrieval_lib.search.Retriever` behind the retriever interface (no behaviour change)."""

    kind = "collection"

    def __init__(self, retriever: Retriever, *, owned: bool = False) -> None:
        self.retriever = retriever
        self._owned = owned

    def describe(self) -> str:
        r = self.retriever
        return f"collection {r.collection!r} ({r.embedder.provider} / {r.embedder.model})"

    def __repr__(self) -> str:
        return f"CollectionRetriever({self.describe()})"

    def ask(self, query: str, top_k: int) -> Answer:
        return self.ask_many([query], top_k)[0]

    def ask_many(self, queries: Sequence[str], top_k: int) -> list[Answer]:
        """Every question in one batched search; a failure answers each question with the error's one line. A hit's
        ``chunk_id`` is the chunk id, else the point id."""
        t0 = time.perf_counter()
        try:
            responses = self.retriever.search_many(list(queries), top_k=top_k)
        except RetrievalError as err:
            ms = (time.perf_counter() - t0) * 1000
            return [Answer(query=q, top_k=top_k, error=one_line(str(err)), error_kind=type(err).__name__,
                           elapsed_ms=ms) for q in queries]
        each = (time.perf_counter() - t0) * 1000 / max(1, len(responses))
        return [Answer(query=response.query_text, top_k=top_k, elapsed_ms=each,
                       hits=[Hit(rank=i, content=r.content, source_url=r.source_url, source_file=r.source_file,
                                 score=r.raw_score, chunk_id=r.chunk_id or r.point_id, title=r.title)
                             for i, r in enumerate(response.results, start=1)])
                for response in responses]

    def close(self) -> None:
        if self._owned:
            self.retriever.close()
