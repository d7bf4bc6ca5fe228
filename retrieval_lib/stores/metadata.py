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

Nothing here writes to a database unless asked to (:meth:`MetadataDB.sync`, ``create=True``), and only our
own ingest asks. :func:`metadata_source` is the one rule for whether a collection's rows can be read: the
database must hold the table this workbook reads, with its columns, and our ``chunks`` table is read only for
the collections our ingest wrote. A database without it (a team's own, with its own tables) is not "0 rows":
the service answers from the payload, and notebook 08 and ``inspect`` say why nothing is compared.
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

__all__ = ["ROW_FIELDS", "TableMapping", "CHUNKS", "SEED003_DOCUMENTS", "TABLES", "MetadataDB", "SyncSummary",
           "row_from_payload", "slug_of", "SQLITE_NAME", "sync_from_settings", "metadata_configured",
           "MetadataSource", "metadata_source", "judge_metadata", "metadata_where", "NO_METADATA_DATABASE"]

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
#: The tables this workbook reads, by name (notebook 08's ``metadata_table``): ours, and seed 003's ``documents``.
TABLES: dict[str, TableMapping] = {"chunks": CHUNKS, "documents": SEED003_DOCUMENTS}


def _chunks_table(meta: sa.MetaData) -> sa.Table:
    import sqlalchemy as sa
    return sa.Table("chunks", meta, sa.Column("chunk_id", sa.String, primary_key=True),
                    sa.Column("source_path", sa.String, nullable=False, index=True),
                    *(sa.Column(f, sa.Integer if f in _INTEGER_FIELDS else sa.String) for f in ROW_FIELDS[1:]))


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
            advice = (f"table {self.mapping.table!r} is missing or not of this shape: our `python -m retrieval_lib "
                      "ingest` writes `chunks` for the collections it builds; a team's database is only read (unset "
                      "DATABASE_URL, or set metadata_table to a table it holds)" if missing
                      else "check that it is running and that DATABASE_URL is right")
            raise DatabaseUnavailableError(
                f"the metadata database at {self.location} failed ({what}); {advice}", location=self.location,
            ) from None

    def create_schema(self) -> None:
        """Create table ``chunks`` (and its index) if missing. Only our ingest's database is ever given one."""
        with self._translated():
            self._meta.create_all(self.engine)

    def tables(self) -> list[str]:
        """The tables of the database's default schema (PostgreSQL: the first of its ``search_path``), sorted; read
        only (a SQLite file that does not exist is not created: it has none).

        Raises:
            DatabaseUnavailableError: the database cannot be reached.
        """
        import sqlalchemy as sa
        if self.backend == "sqlite":
            path = self.engine.url.database
            if path and path != ":memory:" and not Path(path).exists():
                return []
        with self._translated():
            return sorted(sa.inspect(self.engine).get_table_names())

    def columns(self, table: str) -> list[str]:
        """The column names of ``table`` (read only).

        Raises:
            DatabaseUnavailableError: the database cannot be reached.
        """
        import sqlalchemy as sa
        with self._translated():
            return [str(c["name"]) for c in sa.inspect(self.engine).get_columns(table)]

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


#: Why nothing is compared when the collection has no metadata database.
NO_METADATA_DATABASE = ("no metadata database for this collection (DATABASE_URL is not set): the service answers "
                        "from the payload")


@dataclass(frozen=True)
class MetadataSource:
    """Whether a collection's metadata rows can be read, and if not why (:func:`metadata_source`).

    Attributes:
        configured: a database exists for the collection (``DATABASE_URL``, or our ingest's SQLite file beside it).
        readable: it holds the table read, with its columns, and (for our ``chunks``) the collection is ours.
        reason: why the rows are not read, to show as it is ("" when ``readable``).
        tables: the database's tables, as listed (empty when not configured or not reached).
        error: the database could not be reached: nothing is known of its tables (``readable`` is False).
    """

    configured: bool
    readable: bool
    reason: str = ""
    tables: tuple[str, ...] = ()
    error: DatabaseUnavailableError | None = None


def metadata_source(settings: Settings, owned: bool | None, mapping: TableMapping = CHUNKS) -> MetadataSource:
    """Whether the rows of ``mapping``'s table can be read for a collection (``owned``: written by our ingest, False
    for a team's, None when unknown or empty); the one rule for the service, notebooks 00 and 08 and ``inspect``.

    Reads the database's table list and the table's columns only: nothing is created or written. A database
    without the table is not a table of no rows. Our ``chunks`` table holds the rows of the collection our ingest
    wrote, so it is not read for a team's collection; seed 003's ``documents`` is a team's own table, read for any.
    An unreachable database is not raised: it gives ``error`` (and its message as ``reason``).
    """
    if not metadata_configured(settings, owned):
        return MetadataSource(False, False, NO_METADATA_DATABASE)
    with MetadataDB.from_settings(settings, create=False, mapping=mapping) as db:
        return judge_metadata(db, owned, metadata_where(settings))


def metadata_where(settings: Settings) -> str:
    """How a reason names the metadata database: never its URL, which may hold a password."""
    return "the database at DATABASE_URL" if settings.database_url else f"the embedded store's {SQLITE_NAME}"


def judge_metadata(db: MetadataDB, owned: bool | None, where: str) -> MetadataSource:
    """:func:`metadata_source` of a database already open (``db``, read through its own mapping; ``where`` names it
    in a reason): its table list and the table's columns, read now. The service judges its database this way when
    the database was down at start-up and is reached again."""
    mapping = db.mapping
    try:
        tables = tuple(db.tables())
        columns = set(db.columns(mapping.table)) if mapping.table in tables else set()
    except DatabaseUnavailableError as err:
        return MetadataSource(True, False, err.message, error=err)
    ours = mapping == CHUNKS
    scope = ("rows are compared only for collections our ingest wrote" if ours else
             f"`{mapping.table}` is seed 003's published table ({', '.join(c for c in mapping.columns.values() if c)})")
    others = [name for name in TABLES if name != mapping.table and name in tables]
    switch = f"; it holds `{others[0]}`: set metadata_table: {others[0]}" if others else ""
    if ours and owned:
        scope += " (this one is: `python -m retrieval_lib ingest` writes its rows there)"
    if mapping.table not in tables:
        return MetadataSource(True, False, f"{where} holds no `{mapping.table}` table this workbook reads (its "
                                           f"tables: {', '.join(tables) or 'none'}); {scope}{switch}", tables)
    missing = sorted(c for c in dict.fromkeys(mapping.columns.values()) if c and c not in columns)
    if missing:
        return MetadataSource(True, False, f"the `{mapping.table}` table of {where} is not the one this workbook "
                                           f"reads (it has no column {', '.join(missing)}); {scope}{switch}", tables)
    if ours and owned is False:
        return MetadataSource(True, False, f"this collection was built by another pipeline, not by our ingest: the "
                                           f"`chunks` table of {where} holds our ingest's rows, not its points'; "
                                           f"{scope}{switch}", tables)
    return MetadataSource(True, True, "", tables)
