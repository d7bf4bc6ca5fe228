"""A team's retriever, read by the query notebooks as they read the collection's :class:`Retriever`.

:class:`AnsweringSearch` has ``search`` / ``search_many`` returning
:class:`~retrieval_lib.models.SearchResponse` s built from the retriever's answers, so notebooks 01-06 and 13 ask
their questions through the team's code with no change. What the team's retriever cannot be given (the
retriever is given the question and top-k only) is applied to its answer, and said: a threshold drops results
scored below it, a ``source_prefix`` or ``section`` keeps matching results. An errored question is a response
with ``error`` set, never an empty answer. Everything else (``store``, ``embedder``, ``collection``...) is the
configured collection's, when there is one.

A retriever that returns no score (or a distance that cannot be a cosine one) gets ``1/rank`` as each result's score,
a stand-in that keeps the ranking; each such response carries :data:`NO_SCORE` in its warnings. That warning is the
one mark: :func:`rank_stand_in` reads it, and every gate or recommendation that reads a score asks it first and is
not applicable when the scores are stand-ins (rank-based gates still judge).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from retrieval_lib.errors import RetrievalError
from retrieval_lib.models import SearchResponse, SearchResult
from retrieval_lib.retrievers.base import QuestionRetriever
from retrieval_lib.retrievers.spec import Answer, Hit
from retrieval_lib.validation import validate_params, validate_query

__all__ = ["AnsweringSearch", "result_from_hit", "NO_SCORE", "RANKS_ONLY", "rank_stand_in"]

#: Why a gate that reads a score is not applicable to a retriever's answers without one.
RANKS_ONLY = "the retriever returns no score: ranks only"
#: The warning a response carries when the retriever returned no score: the one mark of rank stand-ins.
NO_SCORE = f"{RANKS_ONLY} (raw_score is a rank stand-in, 1/rank, not a similarity)"


def rank_stand_in(responses: Iterable[SearchResponse]) -> str | None:
    """Why the scores of ``responses`` are no similarity (:data:`RANKS_ONLY`) when one of them holds rank
    stand-ins (:data:`NO_SCORE`), else None: what every gate that reads a score asks first."""
    return RANKS_ONLY if any(NO_SCORE in r.warnings for r in responses) else None


def _point_id(hit: Hit) -> str:
    if hit.chunk_id:
        return hit.chunk_id
    digest = hashlib.sha1(f"{hit.source_url or hit.source_file or ''}\n{hit.content or ''}".encode()).hexdigest()
    return f"hit-{digest[:16]}"


def result_from_hit(hit: Hit) -> SearchResult:
    """A :class:`Hit` as a :class:`SearchResult`: ``raw_score`` is the score, or ``1/rank`` when there is none;
    content and source the answer lacks are listed in ``missing_fields``."""
    score = hit.score if hit.score is not None else 1.0 / hit.rank
    missing = [] if hit.content else ["content"]
    if not (hit.source_url or hit.source_file):
        missing.append("source_file")
    return SearchResult(point_id=_point_id(hit), chunk_id=hit.chunk_id, source_file=hit.source_file,
                        source_url=hit.source_url, title=hit.title, content=hit.content,
                        similarity_score=min(1.0, max(0.0, score)), raw_score=score, missing_fields=missing)


class AnsweringSearch:
    """``search`` / ``search_many`` over a :class:`QuestionRetriever` (see the module docstring).

    Args:
        asker: the team's retriever.
        collection: the configured collection's :class:`~retrieval_lib.search.Retriever` (or a callable that opens
            it on first use), or None when only a retriever is configured; attributes other than the search
            methods are read from it.
    """

    def __init__(self, asker: QuestionRetriever, collection: Any = None) -> None:
        self.asker = asker
        self._collection = collection
        self._url_files: dict[str, str] | None = None

    def _the_collection(self) -> Any:
        """The collection's retriever (opened on first use when given as a callable), or None."""
        if callable(self._collection) and not hasattr(self._collection, "search_many"):
            self._collection = self._collection()
        return self._collection

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or self.__dict__.get("_collection") is None:
            raise AttributeError(f"{name!r}: the run validates the retriever {self.asker.describe()} and has no "
                                 "collection configured")
        return getattr(self._the_collection(), name)

    def __repr__(self) -> str:
        return f"AnsweringSearch({self.asker.describe()})"

    def describe(self) -> str:
        return self.asker.describe()

    def search(self, query: str, top_k: int = 5, similarity_threshold: float = 0.0,
               source_prefix: str | None = None, section: str | None = None) -> SearchResponse:
        """One question (see :meth:`search_many`)."""
        return self.search_many([query], top_k, similarity_threshold, source_prefix, section)[0]

    def search_many(self, queries: Sequence[str], top_k: int = 5, similarity_threshold: float = 0.0,
                    source_prefix: str | None = None, section: str | None = None,
                    **_: Any) -> list[SearchResponse]:
        """Ask every question through the retriever; each answer as a :class:`SearchResponse`.

        Raises:
            ValidationError: a query or parameter out of range (before anything is asked).
        """
        texts = [validate_query(q, self._max_chars()) for q in queries]
        top_k, threshold, warnings = validate_params(top_k, similarity_threshold)
        answers = self.asker.ask_many(texts, top_k)
        return [self._response(a, threshold, source_prefix, section, warnings) for a in answers]

    def _max_chars(self) -> int:
        try:
            return int(getattr(self._the_collection(), "query_max_chars", 1000))
        except Exception:  # noqa: BLE001 - no collection to read the limit from: the default limit
            return 1000

    def _files_by_url(self) -> dict[str, str]:
        """The collection's ``source_url`` -> ``source_file`` (read once, one pass over the two columns), so a
        retriever that answers URLs only is matched to the collection's files; empty without a collection."""
        if self._url_files is None:
            self._url_files = {}
            try:
                base = self._the_collection()
                if base is not None:
                    cols = base.store.read_columns(base.collection, ["source_url", "source_file"])
                    for url, file in zip(cols.values["source_url"], cols.values["source_file"]):
                        if url and file:
                            self._url_files.setdefault(str(url), str(file))
            except RetrievalError:  # no collection to read: results keep only the URL they came with
                pass
        return self._url_files

    def _with_files(self, results: list[SearchResult], warnings: list[str]) -> list[SearchResult]:
        if not any(r.source_url and not r.source_file for r in results):
            return results
        files = self._files_by_url()
        out = [r.model_copy(update={"source_file": files[r.source_url],
                                    "missing_fields": [f for f in r.missing_fields if f != "source_file"]})
               if r.source_url and not r.source_file and r.source_url in files else r for r in results]
        if any(a is not b for a, b in zip(out, results)):
            warnings.append("source_file read from the collection by each result's source_url (the retriever "
                            "answers URLs)")
        return out

    def _response(self, answer: Answer, threshold: float, source_prefix: str | None, section: str | None,
                  warnings: list[str]) -> SearchResponse:
        own = list(warnings)
        results = self._with_files([result_from_hit(h) for h in answer.hits], own)
        if answer.hits and any(h.score is None for h in answer.hits):
            own.append(NO_SCORE)
        if threshold > 0:
            kept = [r for r, h in zip(results, answer.hits) if h.score is None or h.score >= threshold]
            if len(kept) < len(results):
                own.append(f"{len(results) - len(kept)} result(s) scored below {threshold:g}, dropped after "
                           "retrieval (the retriever is given the question and top-k only)")
            results = kept
        if source_prefix is not None:
            results = [r for r in results if (r.source_file or "").startswith(source_prefix)
                       or (r.source_url or "").startswith(source_prefix)]
            own.append(f"source_prefix {source_prefix!r} applied to the retriever's answer")
        if section is not None:
            results = [r for r in results if r.section_title == section]
            own.append(f"section {section!r} applied to the retriever's answer")
        if answer.error:
            own.append(f"the retriever failed: {answer.error}")
        return SearchResponse(
            query_text=answer.query, results=results, total_results=len(results), top_k=answer.top_k,
            similarity_threshold=threshold, filters={}, collection=self.asker.describe(),
            model="the retriever's own", embed_ms=0.0, search_ms=round(answer.elapsed_ms, 3),
            execution_time_ms=round(answer.elapsed_ms, 3), timestamp=datetime.now(UTC), warnings=own,
            error=answer.error)
