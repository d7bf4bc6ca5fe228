"""Validated semantic search: text in, ranked chunks with full metadata out.

:class:`Retriever` ties one embedder to one collection in one store. It
checks, once, that the embedder matches the collection (dimension, and the
``model_version`` the chunks were embedded with), then answers queries:

- :meth:`Retriever.search` for one query (seed 000 US1/US2, seed 004 rules),
- :meth:`Retriever.search_many` for hundreds, embedding and querying in batches.

Ranking is by Qdrant's score, highest first, ties broken by point id, so a
repeated query returns the identical list (seed 000 SC-004): the same ids in the
same order, with scores equal to within :data:`SCORE_TOLERANCE`.
"""

from __future__ import annotations

import difflib
import math
import time
from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from retrieval_lib.collection import CollectionView, PayloadRoles, held_fields, rebuild_advice
from retrieval_lib.config import Settings, load_settings
from retrieval_lib.embedding.providers import Embedder, make_embedder, request_size
from retrieval_lib.errors import ConfigurationError, ModelMismatchError, ValidationError, VectorStoreError
from retrieval_lib.models import CollectionStats, SearchResponse, SearchResult
from retrieval_lib.stores import ReadableStore, collection_stats, open_store, size_warning
from retrieval_lib.validation import MAX_TOP_K, validate_filter, validate_params, validate_query

__all__ = ["Retriever", "open_collection", "ensure_compatible", "validate_query", "validate_params", "same_ranking",
           "MAX_TOP_K", "SCORE_TOLERANCE"]

#: Largest score difference at which two answers to the same query still count as identical.
#: Scores are not bit-stable between calls: qdrant-client's local mode re-normalises the stored
#: float32 vectors in place on every cosine search, which moves a repeated query's scores by
#: ~1e-8 now and then (measured: 1 of 195 repeats, at most 8.9e-9); the same dot product can
#: come out one float64 ulp apart between a sequential and a concurrent run (measured: 12 of
#: 4,000 rankings, at most 5.6e-17); and a text embedded in a batch or alone differs in the last bits
#: too. 1e-6 is 100x that noise and far below any score gap that matters; ties are decided at
#: the same precision (6 decimals).
SCORE_TOLERANCE = 1e-6


def same_ranking(a: Sequence[tuple[str, float]], b: Sequence[tuple[str, float]], *,
                 score_tol: float = SCORE_TOLERANCE) -> bool:
    """The one definition of "the same answer": the same point ids in the same order, scores within ``score_tol``.

    ``a`` and ``b`` are ``(point_id, raw_score)`` lists in rank order, as
    :meth:`SearchResponse.ranking` gives them. The default tolerance is
    :data:`SCORE_TOLERANCE` (scores are not bit-stable between calls, see there);
    ``score_tol=0`` asks for bit-identical scores.
    """
    return len(a) == len(b) and all(
        ida == idb and abs(float(sa) - float(sb)) <= score_tol for (ida, sa), (idb, sb) in zip(a, b)
    )


# Extra candidates fetched so that a tie at the k-th place is broken by id, not by chance.
_TIE_MARGIN = 5


def _id_key(point_id: Any) -> tuple[int, int, str]:
    # Qdrant ids are unsigned integers or UUIDs: integers in numeric order (not "10" < "2"), then UUIDs.
    if isinstance(point_id, int) and not isinstance(point_id, bool):
        return (0, point_id, "")
    return (1, 0, str(point_id))


# Scores closer than this are a tie: the same text embedded in a batch or alone can differ in
# the last float bits, and such noise must not decide the order of two equal chunks.
_TIE_DECIMALS = 6


def _tie_score(score: float) -> float:
    return round(float(score), _TIE_DECIMALS)


def _rank(points: Iterable[Any], top_k: int, held: Collection[str] | None = None) -> list[SearchResult]:
    ordered = sorted(points, key=lambda p: (-_tie_score(p.score), _id_key(p.id)))
    return [SearchResult.from_point(p.id, p.score, p.payload, held) for p in ordered[:top_k]]


def _tie_may_continue(points: Sequence[Any], top_k: int, limit: int) -> bool:
    """True when the tie at the top_k-th place may go on past the ``limit`` points fetched."""
    if len(points) < limit or len(points) < top_k:
        return False
    scores = sorted((_tie_score(p.score) for p in points), reverse=True)
    return scores[-1] >= scores[top_k - 1]


def ensure_compatible(store: ReadableStore, collection: str, embedder: Embedder, *,
                      found_models: Iterable[str | None] | None = None, check_model: bool = True) -> list[str]:
    """The one rule for "this embedder may query (or add to) this collection".

    The collection's vector size must equal the embedder's dimension, and every
    ``model_version`` its chunks carry must be the embedder's model. Search checks
    it before the first query, ingest before the first write.

    Args:
        found_models: the ``model_version`` values already known (ingest has read
            them); by default they are read with a facet over the whole collection.
        check_model: False checks the dimension only.

    Returns:
        The distinct ``model_version`` values found (empty when chunks carry none).

    Raises:
        CollectionNotFoundError: the collection does not exist.
        ModelMismatchError: sizes differ, or a chunk was embedded with another model.
    """
    _, size, _ = store.vector_params(collection)
    model = embedder.model
    owned = store.owned(collection) if isinstance(store, CollectionView) else True
    # ours: use the model it was built with, or rebuild it; a team's: its advice names the setting itself
    advice = ("set EMBEDDING_PROVIDER/EMBEDDING_MODEL to the model the collection was built with, or "
              + rebuild_advice(True)) if owned is not False else rebuild_advice(False)
    if size is not None and size != embedder.dimension:
        raise ModelMismatchError(
            f"collection {collection!r} holds {size}-dimensional vectors but the configured embedder "
            f"({embedder.provider}, {model}) makes {embedder.dimension}-dimensional ones: {advice}",
            collection_dimension=size, embedder_dimension=embedder.dimension,
            collection_model=None, configured_model=model,
        )
    if not check_model:
        return []
    if found_models is None:
        try:  # every model_version in the collection, not just the first chunk's
            found_models = store.distinct_values(collection, "model_version")
        except VectorStoreError:  # e.g. a server collection without a keyword index on model_version
            sample = next(store.scroll(collection, with_payload=["model_version"], batch_size=1), None)
            first = (sample.payload or {}).get("model_version") if sample is not None else None
            found_models = [str(first)] if first else []
    found = sorted({str(m) for m in found_models if m not in (None, "")})
    foreign = [m for m in found if m != model]
    if foreign:
        raise ModelMismatchError(
            f"collection {collection!r} was embedded with {', '.join(map(repr, foreign))} but the configured "
            f"embedder is {model!r}; scores would be meaningless. Set EMBEDDING_MODEL={foreign[0]} (and the matching "
            f"EMBEDDING_PROVIDER), or {rebuild_advice(owned is not False)}",
            collection_dimension=size, embedder_dimension=embedder.dimension,
            collection_model=foreign[0], configured_model=model,
        )
    return found


def open_collection(settings: Settings) -> CollectionView:
    """The configured store, read through the collection's payload roles (never written).

    The roles are the settings' ``payload_fields`` (a profile's mapping, ``PAYLOAD_FIELDS``) when set, else
    inferred from a sample of the collection on its first read.

    Raises:
        ConfigurationError: ``payload_fields`` names an unknown role or an empty key.
        StoreLockedError, StoreUnavailableError: the store cannot be opened.
    """
    roles = None
    if settings.payload_fields:
        try:
            roles = PayloadRoles.from_profile(settings.payload_fields)
        except ValueError as err:
            raise ConfigurationError(f"PAYLOAD_FIELDS: {err}", variable="PAYLOAD_FIELDS") from None
    return CollectionView(open_store(settings), roles)


class Retriever:
    """Search one collection with one embedder.

    Args:
        store: where the vectors live.
        embedder: how queries become vectors.
        collection: collection name.
        query_max_chars: longest accepted query.
        check_model: compare the collection's ``model_version`` payload with the
            embedder's model and refuse to search on a mismatch.
    """

    def __init__(self, store: ReadableStore, embedder: Embedder, collection: str, *,
                 query_max_chars: int = 1000, check_model: bool = True) -> None:
        # every read goes through payload roles: a team's own keys, or our schema (the identity)
        self.store: CollectionView = store if isinstance(store, CollectionView) else CollectionView(store)
        self.embedder = embedder
        self.collection = collection
        self.query_max_chars = query_max_chars
        self.check_model = check_model
        self._checked = False
        self._collection_warnings: list[str] = []
        self._distinct_cache: dict[str, dict[str, int]] = {}

    @classmethod
    def from_settings(cls, settings: Settings | None = None, *, embedder: Embedder | None = None,
                      **overrides: Any) -> Retriever:
        """Build store, embedder (unless given) and retriever from :func:`load_settings` (or ``settings``)."""
        settings = settings or load_settings()
        if overrides:
            settings = settings.with_overrides(**overrides)
        embedder = embedder or make_embedder(settings)
        store = open_collection(settings)
        return cls(store, embedder, settings.collection_name, query_max_chars=settings.query_max_chars)

    def __repr__(self) -> str:
        return f"Retriever(collection={self.collection!r}, store={self.store!r}, embedder={self.embedder!r})"

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Retriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def held_fields(self) -> list[str]:
        """The fields this collection holds at all, through its payload roles (the rest are never 'missing')."""
        return held_fields(self.store, self.collection)

    # ------------------------------------------------------------------ checks
    def check_compatibility(self) -> list[str]:
        """Fail unless the embedder fits the collection; returns collection warnings.

        Raises:
            CollectionNotFoundError: the collection does not exist.
            ModelMismatchError: vector sizes differ, or the chunks carry a
                ``model_version`` other than the embedder's model.
        """
        if self._checked:
            return self._collection_warnings
        warnings: list[str] = []
        count = self.store.count(self.collection)
        small = size_warning(self.collection, count)
        if small:
            warnings.append(small)
        found = ensure_compatible(self.store, self.collection, self.embedder,
                                  check_model=self.check_model and count > 0)
        if self.check_model and count and not found:
            warnings.append("chunks carry no model_version: the embedding model cannot be cross-checked")
        self._collection_warnings = warnings
        self._checked = True
        return warnings

    # ------------------------------------------------------------------ filters
    def _distinct(self, key: str) -> dict[str, int]:
        if key not in self._distinct_cache:
            self._distinct_cache[key] = self.store.distinct_values(self.collection, key)
        return self._distinct_cache[key]

    def _filter(self, source_prefix: str | None, section: str | None) -> tuple[Any, dict[str, str], bool]:
        """Qdrant filter for the options; the bool is False when nothing can match."""
        from qdrant_client import models

        conditions: list[Any] = []
        applied: dict[str, str] = {}
        possible = True
        if source_prefix is not None:
            applied["source_prefix"] = source_prefix
            # Qdrant has no prefix match on keywords, so the prefix is resolved to the exact set of
            # source paths/URLs that start with it (from a facet), then matched with MatchAny.
            files = [f for f in self._distinct("source_file") if f.startswith(source_prefix)]
            urls = [u for u in self._distinct("source_url")
                    if u.startswith(source_prefix)
                    or urlsplit(u).path.lstrip("/").startswith(source_prefix.lstrip("/"))]
            options: list[Any] = []
            if files:
                options.append(models.FieldCondition(key="source_file", match=models.MatchAny(any=files)))
            if urls:
                options.append(models.FieldCondition(key="source_url", match=models.MatchAny(any=urls)))
            if options:
                conditions.append(models.Filter(should=options))
            else:
                possible = False
        if section is not None:
            applied["section"] = section
            conditions.append(models.FieldCondition(key="section_title", match=models.MatchValue(value=section)))
        return (models.Filter(must=conditions) if conditions else None), applied, possible

    # ------------------------------------------------------------------ search
    def search(self, query: str, top_k: int = 5, similarity_threshold: float = 0.0,
               source_prefix: str | None = None, section: str | None = None) -> SearchResponse:
        """Embed ``query`` as a search query and return the best chunks.

        Args:
            query: natural-language text, 1 to ``query_max_chars`` characters.
            top_k: results wanted, 1-20 (larger is capped with a warning).
            similarity_threshold: minimum ``similarity_score`` (0-1); 0 keeps all.
            source_prefix: keep chunks whose ``source_file`` or ``source_url``
                (or the URL's path) starts with this.
            section: keep chunks whose ``section_title`` equals this exactly.

        Returns:
            A SearchResponse; an empty ``results`` list is a valid answer.

        Raises:
            ValidationError, CollectionNotFoundError, ModelMismatchError,
            VectorStoreError, EmbeddingError.
        """
        return self.search_many([query], top_k, similarity_threshold, source_prefix, section)[0]

    def search_many(self, queries: Sequence[str], top_k: int = 5, similarity_threshold: float = 0.0,
                    source_prefix: str | None = None, section: str | None = None, *,
                    batch_size: int | None = None, progress: bool = False) -> list[SearchResponse]:
        """:meth:`search` for many queries: embedded in batches of the embedder's own request limit (``batch_size``
        by default :func:`~retrieval_lib.embedding.base.request_size`), each batch searched in one batch.

        Every query is validated before any is embedded, so one bad query fails
        the call before work is done. ``embed_ms`` and ``search_ms`` of each
        response are its share of its batch's time. An embedder with a run's query
        cache (:class:`~retrieval_lib.embedding.cache.CachedEmbedder`) first embeds every
        query it has not seen in as few calls as possible; the batches then read the cache.
        """
        if isinstance(queries, str):
            raise ValidationError("search_many takes a list of queries, not one string", field="queries")
        texts = [validate_query(q, self.query_max_chars) for q in queries]
        top_k, threshold, warnings = validate_params(top_k, similarity_threshold)
        source_prefix = validate_filter(source_prefix, "source_prefix")
        section = validate_filter(section, "section")
        warnings = warnings + self.check_compatibility()
        query_filter, applied, possible = self._filter(source_prefix, section)
        prefetch = getattr(self.embedder, "prefetch", None)
        if possible and prefetch is not None:
            prefetch(texts)

        batch_size = batch_size or request_size(self.embedder) or max(1, len(texts))
        batches = range(0, len(texts), batch_size)
        if progress:
            from tqdm import tqdm

            batches = tqdm(batches, desc="queries", unit="batch", total=math.ceil(len(texts) / batch_size))
        responses: list[SearchResponse] = []
        for start in batches:
            chunk = texts[start:start + batch_size]
            stamp = datetime.now(UTC)
            t0 = time.perf_counter()
            vectors = self.embedder.embed_queries(chunk) if possible else [[]] * len(chunk)
            t1 = time.perf_counter()
            if not possible:
                hits: list[list[Any]] = [[] for _ in chunk]
            elif len(chunk) == 1:
                hits = [self.store.query(self.collection, vectors[0], limit=top_k + _TIE_MARGIN,
                                         similarity_threshold=threshold or None, query_filter=query_filter)]
            else:
                hits = self.store.query_batch(self.collection, vectors, limit=top_k + _TIE_MARGIN,
                                              similarity_threshold=threshold or None, query_filter=query_filter)
            if possible:  # a tie at the cut wider than the margin: fetch more so ids decide, not chance
                hits = [self._complete_ties(v, pts, top_k, threshold or None, query_filter)
                        for v, pts in zip(vectors, hits)]
            t2 = time.perf_counter()
            embed_ms = (t1 - t0) * 1000 / len(chunk)
            search_ms = (t2 - t1) * 1000 / len(chunk)
            vector_for = dict(zip(chunk, vectors)) if possible else {}
            for text, points in zip(chunk, hits):
                results = _rank(points, top_k, self.held_fields())
                own = list(warnings)
                if not results:
                    own.append(self._why_empty(vector_for.get(text), threshold, query_filter, applied, possible))
                missing = sorted({f for r in results for f in r.missing_fields})
                if missing:
                    own.append(f"results lack payload fields: {', '.join(missing)}")
                responses.append(SearchResponse(
                    query_text=text, results=results, total_results=len(results), top_k=top_k,
                    similarity_threshold=threshold, filters=applied, collection=self.collection,
                    model=self.embedder.model, embed_ms=round(embed_ms, 3), search_ms=round(search_ms, 3),
                    execution_time_ms=round(embed_ms + search_ms, 3), timestamp=stamp, warnings=own,
                ))
        return responses

    def _why_empty(self, vector: Sequence[float] | None, threshold: float, query_filter: Any,
                   applied: dict[str, str], possible: bool) -> str:
        """Say which of the filters or the threshold removed every chunk (an empty result is an answer)."""
        section = applied.get("section")
        if section is not None:
            sections = self._distinct("section_title")
            if section not in sections:
                close = difflib.get_close_matches(section, list(sections), n=3, cutoff=0.5)
                examples = close or sorted(sections)[:3]
                return (f"no chunk has section_title {section!r}; {len(sections)} sections exist, e.g. "
                        + ", ".join(repr(x) for x in examples))
        prefix = applied.get("source_prefix")
        if not possible and prefix is not None:
            files = sorted(self._distinct("source_file"))
            return (f"no source file or URL starts with {prefix!r}; {len(files)} files exist, e.g. "
                    + ", ".join(repr(f) for f in files[:3]))
        if threshold > 0 and vector is not None:
            best = self.store.query(self.collection, vector, limit=1, query_filter=query_filter)
            if best:
                return (f"no chunk scored at least {threshold:g} (the best scored {float(best[0].score):.3f}); "
                        "lower the threshold to see results")
            return "the filters together match no chunk" if applied else "the collection holds no chunk"
        if applied:
            shown = ", ".join(f"{k}={v!r}" for k, v in applied.items())
            return f"no chunk matches the filters together ({shown})"
        return "no matching chunk"

    def _complete_ties(self, vector: Sequence[float], points: list[Any], top_k: int,
                       similarity_threshold: float | None, query_filter: Any) -> list[Any]:
        limit = top_k + _TIE_MARGIN
        while _tie_may_continue(points, top_k, limit):
            limit *= 4
            points = self.store.query(self.collection, vector, limit=limit,
                                      similarity_threshold=similarity_threshold, query_filter=query_filter)
        return points

    def stats(self) -> CollectionStats:
        """Collection statistics (seed 004)."""
        return collection_stats(self.store, self.collection)
