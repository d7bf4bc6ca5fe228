"""The metadata database of seed 003: one row per chunk, keyed by ``chunk_id``.

One code path (SQLAlchemy 2 Core) speaks both backends:

- embedded default: a SQLite file in the embedded store's folder
  (``<QDRANT_PATH>/metadata.sqlite3``), so it travels and is deleted with the store;
- production: ``DATABASE_URL=postgresql://...``, PostgreSQL through psycopg 3.

Rows are derived from the chunk payloads by :func:`row_from_payload`, the one
place that says how a payload becomes a row. Ingest keeps the table in step with
the collection through :meth:`MetadataDB.sync` (a killed ingest, re-run, leaves rows
exactly matching the points). The service reads rows with :meth:`MetadataDB.rows_for`:
one ``WHERE chunk_id IN (...)`` query per search.

A team's own table (seed 003's published ``documents(chunk_id, source_path, slug,
title, order_index, ...)``) is read through a :class:`TableMapping`: a column
mapping, not a second code path.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from retrieval_lib.config import Settings, redact_url
from retrieval_lib.errors import DatabaseUnavailableError
from retrieval_lib.stores.scan import iter_points

if TYPE_CHECKING:  # SQLAlchemy is imported where a database is opened: most commands never open one
    import sqlalchemy as sa

__all__ = ["ROW_FIELDS", "TableMapping", "CHUNKS", "SEED003_DOCUMENTS", "MetadataDB", "SyncSummary",
           "row_from_payload", "slug_of", "SQLITE_NAME", "sync_from_settings", "metadata_configured"]

#: The columns of table ``chunks`` after ``chunk_id`` (issue 10, FR-004).
ROW_FIELDS: tuple[str, ...] = (
    "source_path", "slug", "title", "section_title", "source_url",
    "chunk_sequence", "total_chunks", "content_hash", "token_count",
    "processing_timestamp", "model_version",
)
_INTEGER_FIELDS = ("chunk_sequence", "total_chunks", "token_count")
#: The SQLite file's name inside the embedded store's folder.
SQLITE_NAME = "metadata.sqlite3"
# Rows written or read per statement: far below SQLite's 32,766 bound parameters and PostgreSQL's 65,535.
_BATCH = 500


@dataclass(frozen=True)
class TableMapping:
    """Which table holds the rows, and which of its columns holds each field (None: it has none).

    ``columns`` maps our field names (``chunk_id`` and :data:`ROW_FIELDS`) to the table's.
    """

    table: str
    columns: Mapping[str, str | None]

    def column(self, name: str) -> str | None:
        return self.columns.get(name)


#: Our own table.
CHUNKS = TableMapping("chunks", {"chunk_id": "chunk_id", **{f: f for f in ROW_FIELDS}})
#: The published seed-003 data model: ``documents(chunk_id, source_path, slug, title, order_index, ...)``.
SEED003_DOCUMENTS = TableMapping("documents", {"chunk_id": "chunk_id", "source_path": "source_path", "slug": "slug",
                                               "title": "title", "chunk_sequence": "order_index"})


def _chunks_table(meta: sa.MetaData) -> sa.Table:
    import sqlalchemy as sa
    return sa.Table(
        "chunks", meta,
        sa.Column("chunk_id", sa.String, primary_key=True),
        sa.Column("source_path", sa.String, nullable=False, index=True),
        sa.Column("slug", sa.String), sa.Column("title", sa.String), sa.Column("section_title", sa.String),
        sa.Column("source_url", sa.String),
        sa.Column("chunk_sequence", sa.Integer), sa.Column("total_chunks", sa.Integer),
        sa.Column("content_hash", sa.String), sa.Column("token_count", sa.Integer),
        sa.Column("processing_timestamp", sa.String), sa.Column("model_version", sa.String),
    )


def slug_of(source_url: Any) -> str | None:
    """The page's URL path (the Docusaurus route, e.g. ``/docs/module-01-ros2/what-is-ros2``)."""
    if not isinstance(source_url, str) or not source_url:
        return None
    return urlsplit(source_url).path or None


def row_from_payload(payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``chunks`` row for a chunk payload, or None when the payload has no ``chunk_id`` to key it by."""
    chunk_id = payload.get("chunk_id")
    if chunk_id in (None, ""):
        return None
    row: dict[str, Any] = {
        "chunk_id": str(chunk_id),
        "source_path": str(payload.get("source_file") or ""),
        "slug": slug_of(payload.get("source_url")),
    }
    for name in ("title", "section_title", "source_url", "content_hash", "processing_timestamp", "model_version"):
        value = payload.get(name)
        row[name] = None if value is None else str(value)
    for name in _INTEGER_FIELDS:
        value = payload.get(name)
        row[name] = value if isinstance(value, int) and not isinstance(value, bool) else None
    return row


@dataclass
class SyncSummary:
    """What :meth:`MetadataDB.sync` changed to make the rows match the points."""

    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    unkeyed: int = 0  # points whose payload has no chunk_id
    warnings: list[str] = field(default_factory=list)
    location: str = ""

    def line(self) -> str:
        """One line for the command line."""
        return (f"metadata rows ({self.location}): {self.inserted} inserted, {self.updated} updated, "
                f"{self.deleted} deleted, {self.unchanged} unchanged")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _engine_for(url: str, timeout: float) -> sa.Engine:
    import sqlalchemy as sa
    scheme = urlsplit(url).scheme
    if scheme.startswith("postgres"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
        seconds = max(2, int(timeout + 0.999))  # libpq counts whole seconds, at least 2
        return sa.create_engine(
            url, pool_pre_ping=True, pool_size=10, max_overflow=20, pool_timeout=timeout,
            connect_args={"connect_timeout": seconds, "options": f"-c statement_timeout={int(timeout * 1000)}"},
        )
    engine = sa.create_engine(url, pool_pre_ping=True, connect_args={"timeout": timeout, "check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _wal(dbapi_conn: Any, _record: Any) -> None:
        # WAL lets the service read while an ingest writes (the default journal blocks readers).
        dbapi_conn.execute("PRAGMA journal_mode=WAL")

    return engine


class MetadataDB:
    """Rows of chunk metadata in SQLite or PostgreSQL. Build with :meth:`open` or :meth:`from_settings`.

    Args:
        engine: a SQLAlchemy engine.
        location: where the database is, safe to print (no credentials).
        mapping: the table and columns to read (default our ``chunks``); only ``chunks`` can be written.
    """

    def __init__(self, engine: sa.Engine, location: str, *, mapping: TableMapping = CHUNKS) -> None:
        import sqlalchemy as sa
        self.engine = engine
        self.location = location
        self.mapping = mapping
        self._meta = sa.MetaData()
        if mapping == CHUNKS:
            self.table = _chunks_table(self._meta)
        else:
            cols: list[sa.Column[Any]] = [sa.Column(c) for c in dict.fromkeys(c for c in mapping.columns.values() if c)]
            self.table = sa.Table(mapping.table, self._meta, *cols)
        key = mapping.column("chunk_id")
        if not key:
            raise ValueError("a TableMapping must name the chunk_id column")
        self._key = self.table.c[key]

    @property
    def backend(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    def __repr__(self) -> str:
        return f"MetadataDB(backend={self.backend!r}, location={self.location!r}, table={self.mapping.table!r})"

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, url: str, *, timeout: float = 5.0, mapping: TableMapping = CHUNKS, create: bool = True) -> MetadataDB:
        """Connect to ``url`` (``postgresql://...`` or ``sqlite:///file``); create ``chunks`` if ``create``.

        Raises:
            DatabaseUnavailableError: the database cannot be reached (only when ``create``).
        """
        location = redact_url(url) if not url.startswith("sqlite") else url.split(":///", 1)[-1]
        db = cls(_engine_for(url, timeout), location, mapping=mapping)
        if create and mapping == CHUNKS:
            db.create_schema()
        return db

    @classmethod
    def from_settings(cls, settings: Settings, *, timeout: float | None = None, create: bool = True,
                      mapping: TableMapping = CHUNKS) -> MetadataDB:
        """``DATABASE_URL`` when set, else the SQLite file in the embedded store's folder.

        ``timeout`` (seconds for a connection or a statement) defaults to ``QDRANT_TIMEOUT``.
        With ``create=False`` nothing is connected to yet (a service starts while its database is down).
        """
        seconds = settings.qdrant_timeout if timeout is None else timeout
        if settings.database_url:
            return cls.open(settings.database_url, timeout=seconds, create=create, mapping=mapping)
        path = Path(settings.qdrant_path) / SQLITE_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        return cls.open(f"sqlite:///{path}", timeout=seconds, create=create, mapping=mapping)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> MetadataDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _translated(self) -> Iterator[None]:
        from sqlalchemy import exc as sa_exc
        try:
            yield
        except (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.ProgrammingError,
                sa_exc.TimeoutError, sa_exc.DatabaseError) as err:
            what = type(getattr(err, "orig", None) or err).__name__
            missing = isinstance(err, sa_exc.ProgrammingError) or "no such table" in str(err)
            advice = (f"table {self.mapping.table!r} is missing: run `python -m retrieval_lib ingest`" if missing
                      else "check that it is running and that DATABASE_URL is right")
            raise DatabaseUnavailableError(
                f"the metadata database at {self.location} failed ({what}); {advice}", location=self.location,
            ) from None

    def create_schema(self) -> None:
        """Create table ``chunks`` (and its index) if missing."""
        with self._translated():
            self._meta.create_all(self.engine)

    # ------------------------------------------------------------------ reading
    def _select(self) -> sa.Select:
        import sqlalchemy as sa
        wanted = [self.table.c[col].label(name) for name, col in self.mapping.columns.items() if col]
        return sa.select(*wanted)

    def rows_for(self, chunk_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The rows of ``chunk_ids``, by chunk_id, in ONE query (``WHERE chunk_id IN (...)``).

        Fields the table has no column for are absent from the rows.

        Raises:
            DatabaseUnavailableError: the database is down, or the table missing.
        """
        ids = list(dict.fromkeys(str(c) for c in chunk_ids))
        if not ids:
            return {}
        with self._translated(), self.engine.connect() as conn:
            result = conn.execute(self._select().where(self._key.in_(ids)))
            return {str(r["chunk_id"]): dict(r) for r in result.mappings()}

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """Every row (for consistency checks), in chunk_id order."""
        with self._translated(), self.engine.connect() as conn:
            result = conn.execution_options(yield_per=_BATCH).execute(self._select().order_by(self._key))
            for r in result.mappings():
                yield dict(r)

    def count(self) -> int:
        """Rows in the table."""
        import sqlalchemy as sa
        with self._translated(), self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(self.table)).scalar_one())

    def probe(self) -> dict[str, Any]:
        """Health facts: reachable, latency_ms, backend, location, tables {name: rows}; never raises."""
        t0 = time.perf_counter()
        try:
            rows = self.count()
        except DatabaseUnavailableError as err:
            return {"reachable": False, "latency_ms": round((time.perf_counter() - t0) * 1000, 3),
                    "backend": self.backend, "location": self.location, "error": err.message}
        return {"reachable": True, "latency_ms": round((time.perf_counter() - t0) * 1000, 3),
                "backend": self.backend, "location": self.location, "tables": {self.mapping.table: rows}}

    # ------------------------------------------------------------------ writing (table chunks only)
    def sync(self, payloads: Iterable[Mapping[str, Any]]) -> SyncSummary:
        """Make the table match ``payloads`` (every point of the collection) exactly, in one transaction.

        Rows that are missing or differ are written, rows with no point deleted,
        the rest left alone. Running it twice changes nothing the second time.
        """
        import sqlalchemy as sa
        if self.mapping != CHUNKS:
            raise ValueError(f"table {self.mapping.table!r} is read through a mapping and is never written")
        summary = SyncSummary()
        wanted: dict[str, dict[str, Any]] = {}
        for payload in payloads:
            row = row_from_payload(payload)
            if row is None:
                summary.unkeyed += 1
            else:
                wanted[row["chunk_id"]] = row
        if summary.unkeyed:
            summary.warnings.append(f"{summary.unkeyed} points carry no chunk_id and have no metadata row")
        with self._translated(), self.engine.begin() as conn:
            have = {str(r["chunk_id"]): dict(r) for r in conn.execute(sa.select(self.table)).mappings()}
            stale = sorted(set(have) - set(wanted))
            for start in range(0, len(stale), _BATCH):
                conn.execute(sa.delete(self.table).where(self._key.in_(stale[start:start + _BATCH])))
            todo = [row for key, row in wanted.items() if have.get(key) != row]
            # delete-then-insert by key: the same SQL on every backend (no dialect-specific upsert)
            for start in range(0, len(todo), _BATCH):
                batch = todo[start:start + _BATCH]
                conn.execute(sa.delete(self.table).where(self._key.in_([r["chunk_id"] for r in batch])))
                conn.execute(sa.insert(self.table), batch)
        summary.deleted = len(stale)
        summary.inserted = sum(1 for r in todo if r["chunk_id"] not in have)
        summary.updated = len(todo) - summary.inserted
        summary.unchanged = len(wanted) - len(todo)
        return summary

    def sync_collection(self, store: Any, collection: str) -> SyncSummary:
        """:meth:`sync` from every point of ``collection`` in ``store`` (read in large pages)."""
        fields = ["chunk_id", "source_file", *[f for f in ROW_FIELDS if f not in ("source_path", "slug")]]
        summary = self.sync(p.payload or {} for p in iter_points(store, collection, fields))
        summary.location = f"{self.backend} {self.location}"
        return summary


def sync_from_settings(settings: Settings, collection: str | None = None) -> SyncSummary:
    """Bring the configured metadata database in line with the configured collection (after an ingest).

    Raises:
        VectorStoreError, CollectionNotFoundError: the store cannot be read.
        DatabaseUnavailableError: the database cannot be written.
    """
    from retrieval_lib.stores.factory import open_store

    with open_store(settings) as store, MetadataDB.from_settings(settings) as db:
        return db.sync_collection(store, collection or settings.collection_name)


def metadata_configured(settings: Settings, owned: bool | None) -> bool:
    """Whether a metadata database exists for a collection: ``DATABASE_URL``, or, for a collection our own ingest
    built in an embedded store, the SQLite file beside it (a team's collection has no rows there)."""
    if settings.database_url:
        return True
    return not settings.qdrant_url and owned is not False and (Path(settings.qdrant_path) / SQLITE_NAME).exists()
