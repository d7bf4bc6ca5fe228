"""A collection as the workbook reads it: a store seen through payload roles, and never written.

:class:`CollectionView` wraps any store (qdrant-client or qdrant-edge, same interface) and

- turns every payload it returns into the workbook's record (:meth:`PayloadRoles.read`), so search, scans and
  checks read ``content``, ``source_file``, ... whatever keys the team's pipeline wrote;
- translates what a caller asks for by role into the team's keys: ``with_payload=[roles]``, filters on a role,
  and distinct values of a role (a facet where one plain key holds it, a scan otherwise);
- refuses every write (points, collections, payload indexes) with :class:`~retrieval_lib.errors.ReadOnlyError`:
  the workbook reads a team's collection and leaves it exactly as it found it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from retrieval_lib.collection.infer import infer_roles
from retrieval_lib.collection.ours import written_by_us
from retrieval_lib.collection.roles import DEFAULT_ROLES, ROLES, PayloadRoles, ReadStats
from retrieval_lib.errors import ReadOnlyError
from retrieval_lib.stores.scan import Columns, collector_paused, page_size, payload_selector, with_progress

if TYPE_CHECKING:
    from retrieval_lib.stores import IndexInfo, ReadableStore

__all__ = ["CollectionView", "SAMPLE_POINTS", "held_fields"]

_SCAN_PAGE = 2_000
#: Points read to infer the mapping (payloads only; one page).
SAMPLE_POINTS = 1_000
_ID, _PAYLOAD = attrgetter("id"), attrgetter("payload")


class CollectionView:
    """``store`` read through payload roles; every other attribute (``kind``, ``location``, ``count``, ``info``
    ...) is the store's own.

    The roles of a collection are resolved on its first read: ``payload_fields`` (a profile's mapping) when
    given, else inferred from a sample of :data:`SAMPLE_POINTS` points. The same sample says whether our own
    ingest wrote the collection (:attr:`owned`).

    Attributes:
        read_stats: payload values of the wrong type, and texts cut for length, met so far.
    """

    def __init__(self, store: ReadableStore, roles: PayloadRoles | None = None) -> None:
        self.store = store
        self._given = roles
        self._roles: dict[str, PayloadRoles] = {}
        self._owned: dict[str, bool | None] = {}
        self._sampled: dict[str, int] = {}
        self._sample: dict[str, list[Any]] = {}
        self.read_stats = ReadStats()

    def roles_for(self, collection: str) -> PayloadRoles:
        """The mapping for ``collection`` (resolved once)."""
        if collection not in self._roles:
            self._resolve(collection)
        return self._roles[collection]

    def owned(self, collection: str) -> bool | None:
        """True when our own ingest wrote ``collection``, False for a team's own, None while it is empty."""
        if collection not in self._owned:
            self._resolve(collection)
        return self._owned[collection]

    def sampled(self, collection: str) -> int:
        """How many points the mapping was inferred from (0 when a profile gave it or the collection is empty)."""
        if collection not in self._sampled:
            self._resolve(collection)
        return self._sampled[collection]

    def _resolve(self, collection: str) -> None:
        # one page of whole payloads, read once: the mapping, the owner and inspect's sample all come from it
        self._sample[collection] = list(islice(self.store.scroll(collection, with_payload=True,
                                                                 batch_size=SAMPLE_POINTS), SAMPLE_POINTS))
        sample = [(p.id, p.payload) for p in self._sample[collection]]
        owned = written_by_us(sample)
        self._owned[collection] = owned
        if self._given is not None:
            roles, n = self._given, 0
        elif not sample or owned:
            roles, n = DEFAULT_ROLES, 0
        else:
            roles, n = infer_roles([payload for _, payload in sample]), len(sample)
        self._roles[collection] = roles
        self._sampled[collection] = n

    def describe(self, collection: str) -> str:
        """One line: how this collection's payloads are read (the line the commands print)."""
        roles = self.roles_for(collection)
        if roles.origin == "default":
            return "payload fields: the workbook's own schema"
        if roles.origin == "inferred":
            return roles.describe().replace("(inferred)", f"(inferred from {self.sampled(collection)} points; "
                                                          "`inspect --write-profile` fixes them)")
        return roles.describe()

    @property
    def roles(self) -> PayloadRoles:
        """The mapping of the only collection read so far (the common case), or the default one."""
        return next(iter(self._roles.values()), self._given or DEFAULT_ROLES)

    def __repr__(self) -> str:
        return f"CollectionView({self.store!r}, roles={self.roles.origin})"

    def __getattr__(self, name: str) -> Any:
        # only called for what this class does not define: the store's own reading API and attributes
        return getattr(self.store, name)

    def __enter__(self) -> CollectionView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.store.close()

    # ------------------------------------------------------------------ payloads in, records out
    def _records(self, collection: str, points: Sequence[Any]) -> list[Any]:
        roles = self.roles_for(collection)
        for p in points:
            p.payload = roles.read(p.payload, p.id, self.read_stats)
        return list(points)

    def _payload(self, collection: str, with_payload: bool | Sequence[str]) -> bool | list[str]:
        if isinstance(with_payload, bool):
            return with_payload
        keys = self.roles_for(collection).top_keys(with_payload)
        return keys if keys else False

    def _filter(self, collection: str, query_filter: Any) -> Any:
        """A filter on roles, rewritten onto the team's keys (a role held by several keys matches any of them)."""
        if query_filter is None:
            return None
        from qdrant_client import models

        roles = self.roles_for(collection)

        def key_condition(cond: Any) -> Any:
            if not isinstance(cond, models.FieldCondition):
                return cond.model_copy(update={k: [key_condition(c) for c in v] for k in ("must", "should", "must_not")
                                               if (v := getattr(cond, k, None))}) \
                    if isinstance(cond, models.Filter) else cond
            keys = roles.keys_of(cond.key) or (cond.key,)
            if len(keys) == 1:
                return cond.model_copy(update={"key": keys[0]})
            return models.Filter(should=[cond.model_copy(update={"key": k}) for k in keys])

        return key_condition(query_filter)

    def query(self, collection: str, vector: Sequence[float], *, limit: int, similarity_threshold: float | None = None,
              query_filter: Any = None, exact: bool = False, hnsw_ef: int | None = None) -> list[Any]:
        return self._records(collection, self.store.query(
            collection, vector, limit=limit, similarity_threshold=similarity_threshold,
            query_filter=self._filter(collection, query_filter), exact=exact, hnsw_ef=hnsw_ef))

    def query_batch(self, collection: str, vectors: Sequence[Sequence[float]], *, limit: int,
                    similarity_threshold: float | None = None, query_filter: Any = None, exact: bool = False,
                    hnsw_ef: int | None = None, with_payload: bool | Sequence[str] = True) -> list[list[Any]]:
        payload = self._payload(collection, with_payload)
        answers = self.store.query_batch(collection, vectors, limit=limit, similarity_threshold=similarity_threshold,
                                         query_filter=self._filter(collection, query_filter), exact=exact,
                                         hnsw_ef=hnsw_ef, with_payload=payload)
        return answers if payload is False else [self._records(collection, points) for points in answers]

    # ------------------------------------------------------------------ the store's own, unchanged
    @property
    def kind(self) -> str:
        return str(self.store.kind)

    @property
    def location(self) -> str:
        return str(self.store.location)

    def count(self, collection: str) -> int:
        return self.store.count(collection)

    def info(self, collection: str) -> Any:
        return self.store.info(collection)

    def vector_params(self, collection: str) -> tuple[str | None, int | None, str | None]:
        return self.store.vector_params(collection)

    def index_info(self, collection: str) -> IndexInfo:
        return self.store.index_info(collection)

    def close(self) -> None:
        self.store.close()

    def retrieve(self, collection: str, point_ids: Sequence[Any], *, with_vectors: bool = True,
                 with_payload: bool | Sequence[str] = False) -> list[Any]:
        payload = self._payload(collection, with_payload)
        points = self.store.retrieve(collection, point_ids, with_vectors=with_vectors, with_payload=payload)
        return self._records(collection, points) if payload is not False else points

    def scroll(self, collection: str, *, with_payload: bool | Sequence[str] = True, with_vectors: bool = False,
               batch_size: int = 256, query_filter: Any = None) -> Iterator[Any]:
        payload = self._payload(collection, with_payload)
        roles = self.roles_for(collection)
        only = None if isinstance(with_payload, bool) else list(with_payload)
        for p in self.store.scroll(collection, with_payload=payload, with_vectors=with_vectors,
                                   batch_size=batch_size, query_filter=self._filter(collection, query_filter)):
            if payload is not False:
                p.payload = roles.read(p.payload, p.id, self.read_stats, only)
            yield p

    def read_columns(self, collection: str, fields: Sequence[str], *, batch_size: int | None = None,
                     progress: bool = False, whole: bool = False) -> Columns:
        """:func:`~retrieval_lib.stores.scan.read_columns` of the roles in ``fields``: one pass that fetches just
        the team's keys for them (or, from qdrant-client's local mode, whole payloads where the sample says that
        costs less: :func:`~retrieval_lib.stores.scan.payload_selector`) and reads each page of payloads a column
        at a time (:meth:`PayloadRoles.columns`): the same values as :meth:`scroll`'s records, without a record
        per point. The cyclic collector is paused meanwhile (:func:`~retrieval_lib.stores.scan.collector_paused`)."""
        roles = self.roles_for(collection)
        selector = payload_selector(self.store, roles.top_keys(fields),
                                    [p.payload for p in self.raw_sample(collection)])
        size = batch_size or page_size(self.store, self.store.count(collection), whole=whole)
        points = with_progress(self.store, collection, self.store.scroll(
            collection, with_payload=selector, with_vectors=False, batch_size=size), progress)
        ids: list[str] = []
        values: dict[str, list[Any]] = {f: [] for f in fields}
        with collector_paused():
            while page := list(islice(points, size)):
                point_ids = list(map(_ID, page))
                ids.extend(map(str, point_ids))
                got = roles.columns(list(map(_PAYLOAD, page)), point_ids, fields, self.read_stats)
                for name, column in got.items():
                    values[name].extend(column)
        return Columns(ids=ids, values=values)

    def distinct_values(self, collection: str, key: str, limit: int = 100_000) -> dict[str, int]:
        """Distinct values of a role with their point counts: a facet on its key where one plain key holds it
        (our own schema, or a team's single key), a scan where the role is derived or spread over several keys."""
        roles = self.roles_for(collection)
        real = roles.filter_key(key)
        if real is not None and not (key == "source_file" and roles.derive_source_file):
            return self.store.distinct_values(collection, real, limit)
        if not roles.has(key):
            return {}
        counts: dict[str, int] = {}
        for p in self.scroll(collection, with_payload=[key], batch_size=_SCAN_PAGE):
            value = (p.payload or {}).get(key)
            if value is not None:
                counts[str(value)] = counts.get(str(value), 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1])[:limit])

    def raw_sample(self, collection: str) -> list[Any]:
        """The sampled points (up to :data:`SAMPLE_POINTS`) with their payloads as the team wrote them, the same
        sample the mapping was inferred from (read once)."""
        if collection not in self._sample:
            self._resolve(collection)
        return self._sample[collection]

    # ------------------------------------------------------------------ never written
    def _refuse(self, what: str, collection: str | None = None) -> ReadOnlyError:
        return ReadOnlyError(f"the workbook never {what} a collection it validates ({collection or 'this store'} is "
                             "read through payload roles, read-only); our own demo collection is written only by "
                             "`python -m retrieval_lib ingest`", collection=collection)

    def upsert(self, collection: str, points: Sequence[Any]) -> None:
        raise self._refuse("writes points into", collection)

    def delete(self, collection: str, point_ids: Sequence[Any]) -> None:
        raise self._refuse("deletes points from", collection)

    def create_collection(self, collection: str, *args: Any, **kw: Any) -> None:
        raise self._refuse("creates or recreates", collection)

    def ensure_payload_indexes(self, collection: str) -> list[str]:
        raise self._refuse("adds payload indexes to", collection)



def held_fields(store: Any, collection: str) -> list[str]:
    """The fields ``collection`` holds at all, in :data:`ROLES` order: through its payload roles when ``store``
    is a :class:`CollectionView`, every field for a bare store (our own schema)."""
    if isinstance(store, CollectionView):
        roles = store.roles_for(collection)
        return [r for r in ROLES if roles.has(r)]
    return list(ROLES)
