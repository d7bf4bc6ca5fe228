"""Whole-collection scans: one scroll of just the fields asked for, in large pages, as columns.

Every pass over a whole collection (coverage's file inventory, the health
tally, ingest's incremental diff, the metadata sync) reads through
:func:`read_columns` / :func:`iter_points`, so all of them share one rule for
page sizes:

- qdrant-client's local mode answers each scroll page by re-sorting every id
  and walking to the offset, so one page costs O(points) whatever its size and
  a pass in pages of fixed size is quadratic. In-process engines are therefore
  read in at most :data:`LOCAL_PAGES` pages (at least :data:`MIN_PAGE` points
  each), which keeps a pass linear in points and bounds its transient memory to
  a quarter of the collection's records.
- A Qdrant server pages by its id index (a page costs its own size), so pages
  of :data:`SERVER_PAGE` points bound the size of one response instead.

They also share what a pass asks for and how it holds what it reads: a pass
through payload roles asks local mode for whole payloads where that is cheaper
than selecting keys (:func:`payload_selector`), and a pass runs with the
cyclic garbage collector paused (:func:`collector_paused`): the records it
makes hold no cycles, and the collector's walks over them were a third of a
scroll's CPU at 100k points.

:func:`shared` keeps a scan's (small, JSON) result in the run folder so the
notebooks of one run (05 and 07 both tally payloads) scan once, and
:func:`kept` reads what another notebook kept (notebook 16 reads notebook 10's
neighbour lists, and queries nothing). The result is
reused only when its key matches: collection, store location and kind, point
count, the fields read, and the collection's *revision*:

- a store on disk: the name, size, inode and modification time (ns) of every
  file of the collection's folder (local mode: ``collection/<name>/``;
  qdrant-edge: the store's whole folder). Every upsert, delete or re-creation
  rewrites a file there (local mode commits each write to its sqlite file at
  once), so it changes the key. Only one process can open such a folder, so
  nothing writes to it between two notebooks unnoticed;
- a Qdrant server: a digest of the exact facet counts of the indexed fields
  ``content_hash``, ``source_file`` and ``model_version``, i.e. of every
  chunk's text, file and model. A server exposes no write counter; the one
  change this key cannot see is an edit that keeps the point count and all
  three facets, such as a ``set_payload`` that empties a non-indexed field
  (ingest rewrites a changed file's points whole, every field set);
- an in-memory store: no revision, so nothing is shared (it dies with its process).

The revision is read again after the scan and the result is stored only when
nothing changed meanwhile; the file is written to a temporary name and renamed
into place (atomic), so a reader sees the old file or the new one, never half.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import logging
import math
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval_lib.config import resolve_run_dir
from retrieval_lib.errors import RetrievalError, ValidationError
from retrieval_lib.stores.base import ReadableStore

__all__ = ["Columns", "read_columns", "iter_points", "page_size", "payload_selector", "collector_paused", "kept",
           "with_progress", "revision", "scan_key", "shared", "LOCAL_PAGES", "MIN_PAGE", "SERVER_PAGE",
           "SELECT_COST_OBJECTS", "SHARED_FOLDER"]

log = logging.getLogger(__name__)

#: At most this many scroll pages per pass on an in-process engine (each page costs O(points) in local mode).
LOCAL_PAGES = 4
#: Smallest page on an in-process engine (small collections are read in one page).
MIN_PAGE = 1_000
#: Points per page from a Qdrant server (bounds one response; a server page costs only its own size).
SERVER_PAGE = 5_000
#: Sub-folder of the run folder that holds shared scans (beside the run's query-embedding cache).
SHARED_FOLDER = "cache"
#: What selecting keys from a payload costs qdrant-client's local mode, in objects of a deep copy
#: (:func:`payload_selector`; measured: about 1.4 us a payload, a deep copy about 0.27 us an object).
SELECT_COST_OBJECTS = 4
#: Bumped when what :func:`shared` stores changes shape, so an older file is never read as a newer one.
_FORMAT = 1
#: Files of an embedded folder that say nothing about the collection's content.
_NOT_CONTENT = {".lock"}


@dataclass(frozen=True)
class Columns:
    """A scan's result, one list per field: ``values[field][i]`` belongs to point ``ids[i]``.

    A field a point does not carry is ``None`` in its column.
    """

    ids: list[str]
    values: dict[str, list[Any]]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, field: str) -> list[Any]:
        return self.values[field]


def page_size(store: ReadableStore, points: int, *, whole: bool = False) -> int:
    """Points per scroll page for a whole pass over ``points`` points of ``store`` (see the module docstring).

    ``whole``: the pass keeps every value it reads anyway (``draft`` keeps every chunk's text), so an in-process
    engine is read in ONE page: its records share their strings with what is kept, and one page sorts the ids
    once instead of :data:`LOCAL_PAGES` times (at 100k points that is a quarter of the pass). A server is
    paged as always.
    """
    if store.kind == "server":
        return SERVER_PAGE
    if whole:
        return max(1, points + 1)
    return max(MIN_PAGE, math.ceil(points / LOCAL_PAGES))


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for a whole-collection pass, and resumed after it (when it ran
    before: a caller that paused it keeps it paused).

    A pass over 100k points makes some 300k objects that the client returns and the pass holds (records and their
    payloads, freed by reference counts as always: they hold no cycles). Each time they grow the heap by a quarter,
    the collector walks every object of the process and finds nothing to free: at 100k points that is about 0.4 s
    of a 1.3 s scroll (measured with ``gc.callbacks``), and more in a notebook kernel, whose heap is larger. Paused,
    nothing is walked; garbage with cycles made meanwhile by anyone waits for the first collection after the pass.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _objects_beyond(payloads: Sequence[Any], keys: set[str], budget: int) -> int:
    """``budget`` less the objects a deep copy visits in ``payloads`` outside their top-level ``keys`` (each other
    key, and its value with every key, value and item inside it): negative once they pass it, and then counted no
    further (a large value is not walked whole: the answer is known)."""
    stack: list[Any] = []
    for p in payloads:
        if isinstance(p, dict):
            stack.extend(v for k, v in p.items() if k not in keys)
            budget -= 2 * len(stack)  # each key, and each value itself; what the values hold is walked below
        while stack and budget >= 0:
            value = stack.pop()
            if isinstance(value, dict):
                budget -= 2 * len(value)
                stack.extend(value.values())
            elif isinstance(value, list | tuple):
                budget -= len(value)
                stack.extend(value)
        if budget < 0:
            break
        stack.clear()
    return budget


def payload_selector(store: ReadableStore, keys: Sequence[str],
                     sample: Sequence[Mapping[str, Any] | None]) -> bool | list[str]:
    """What a pass over ``store`` asks for to read the top-level payload ``keys``: those keys, or the whole payload
    where that costs less.

    A server filters payloads before they travel, and qdrant-edge selects them in its engine: they are asked for
    the keys. qdrant-client's local mode (kind ``embedded`` or ``memory``) copies every payload it returns (a deep
    copy, whose cost is per object: each dict, list, key and value; a string is not copied), and to return some
    keys it first builds a new dict from every key of the payload, which costs about as much as copying
    :data:`SELECT_COST_OBJECTS` objects more. So where ``sample`` (whole payloads, e.g. the sample the payload roles
    were inferred from) says a whole payload holds on average at most that many objects beyond ``keys``, the whole
    payload is asked for; a team payload with more keys, or a large value beside them, is asked for by its keys.
    Either way the values read for ``keys`` are the same.

    Returns:
        ``True`` (whole payloads), the keys, or ``False`` when ``keys`` is empty.
    """
    if not keys:
        return False
    if store.kind not in ("embedded", "memory") or not sample:
        return list(keys)
    left = _objects_beyond(sample, set(keys), SELECT_COST_OBJECTS * len(sample))
    return True if left >= 0 else list(keys)


def _fields(fields: Sequence[str]) -> list[str]:
    if isinstance(fields, str) or not fields or not all(isinstance(f, str) and f for f in fields):
        raise ValidationError(f"fields must be a non-empty list of payload field names (got {fields!r})",
                              field="fields")
    return list(fields)


def _batch_size(batch_size: int | None) -> int | None:
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise ValidationError(f"batch_size must be a whole number >= 1 (got {batch_size!r})", field="batch_size")
    return batch_size


def iter_points(store: ReadableStore, collection: str, fields: Sequence[str], *,
                batch_size: int | None = None) -> Iterator[Any]:
    """Every point of ``collection`` with just ``fields`` of its payload (no vectors), in large pages.

    Args:
        batch_size: points per page; default :func:`page_size` for the collection's size.

    Raises:
        ValidationError: ``fields`` empty, or ``batch_size`` not a whole number >= 1.
        CollectionNotFoundError, VectorStoreError: from the store.
    """
    wanted = _fields(fields)
    size = _batch_size(batch_size) or page_size(store, store.count(collection))
    return store.scroll(collection, with_payload=wanted, with_vectors=False, batch_size=size)


def read_columns(store: ReadableStore, collection: str, fields: Sequence[str], *, batch_size: int | None = None,
                 progress: bool = False, whole: bool = False) -> Columns:
    """One pass over every point of ``collection``, reading only ``fields``, as :class:`Columns`.

    A store read through payload roles (a :class:`~retrieval_lib.collection.CollectionView`, which has
    ``roles_for``) reads its own columns: the team's keys, turned into roles a column at a time.

    Args:
        batch_size: points per page; default :func:`page_size`.
        progress: show a progress bar (tqdm).
        whole: the caller keeps every value read (:func:`page_size`).

    Raises:
        ValidationError: ``fields`` empty, or ``batch_size`` not a whole number >= 1.
        CollectionNotFoundError, VectorStoreError: from the store.
    """
    wanted, batch_size = _fields(fields), _batch_size(batch_size)
    if hasattr(store, "roles_for"):
        return store.read_columns(collection, wanted, batch_size=batch_size,  # type: ignore[attr-defined]
                                  progress=progress, whole=whole)
    size = batch_size or page_size(store, store.count(collection), whole=whole)
    points = with_progress(store, collection, iter_points(store, collection, wanted, batch_size=size), progress)
    ids: list[str] = []
    values: dict[str, list[Any]] = {f: [] for f in wanted}
    appenders = [(f, values[f].append) for f in wanted]
    with collector_paused():
        for point in points:
            payload = point.payload or {}
            ids.append(str(point.id))
            for name, append in appenders:
                append(payload.get(name))
    return Columns(ids=ids, values=values)


def with_progress(store: ReadableStore, collection: str, points: Iterator[Any], progress: bool) -> Iterator[Any]:
    """``points``, behind a progress bar (tqdm) over the collection's count when ``progress``."""
    if not progress:
        return points
    from tqdm import tqdm

    return iter(tqdm(points, total=store.count(collection), desc="scanning points", unit="pt"))


# --------------------------------------------------------------------------- a scan shared by a run
def _folder_revision(folder: Path, collection: str, kind: str) -> str | None:
    # local mode keeps a collection in collection/<name>/; any other engine (qdrant-edge, which may share the
    # folder with a local-mode store): the whole folder, a superset, so a write anywhere in it is seen
    root = folder / "collection" / collection if kind == "embedded" else folder
    if not root.is_dir():
        return None
    entries = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name not in _NOT_CONTENT):
        try:
            st = path.stat()
        except FileNotFoundError:  # removed while listed (a segment being merged): the next call sees it
            continue
        entries.append([str(path.relative_to(root)), st.st_size, st.st_ino, st.st_mtime_ns])
    return "files:" + hashlib.sha256(json.dumps(entries).encode()).hexdigest()


def _facet_revision(store: ReadableStore, collection: str, points: int) -> str | None:
    keys = ("content_hash", "source_file", "model_version")
    # facets only: where the server has no keyword index to facet on (a team's collection), counting by scans
    # would cost three passes per revision, so there is no revision and nothing is shared
    facet = getattr(store, "facet_counts", store.distinct_values)
    digest = hashlib.sha256()
    try:
        for key in keys:
            counts = facet(collection, key, limit=points + 1)
            digest.update(json.dumps([key, sorted(counts.items())]).encode())
    except RetrievalError:  # no keyword index on the server: nothing to key on, so nothing is shared
        return None
    return "facets:" + digest.hexdigest()


def revision(store: ReadableStore, collection: str, points: int) -> str | None:
    """What changes whenever the collection's content does (module docstring); None when nothing does."""
    folder = getattr(store, "folder", None)
    if folder is not None:
        return _folder_revision(Path(folder), collection, store.kind)
    if store.kind == "server":
        return _facet_revision(store, collection, points)
    return None


def scan_key(store: ReadableStore, collection: str, name: str, fields: Sequence[str]) -> dict[str, Any] | None:
    """The key a shared scan is stored under (None when the store has no revision: never shared)."""
    points = store.count(collection)
    rev = revision(store, collection, points)
    if rev is None:
        return None
    return {"format": _FORMAT, "scan": name, "collection": collection, "location": store.location,
            "kind": store.kind, "points": points, "fields": list(fields), "revision": rev}


def _scan_file(run_dir: Path, name: str, collection: str, location: str) -> Path:
    tag = hashlib.sha256(f"{location}\0{collection}".encode()).hexdigest()[:16]
    return run_dir / SHARED_FOLDER / f"scan-{name}-{tag}.json"


def _load(path: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # absent, or unreadable: compute again
        return None
    if not isinstance(stored, dict) or stored.get("key") != key or not isinstance(stored.get("result"), dict):
        return None
    return stored["result"]


def _write_atomically(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.chmod(temp, 0o644)  # mkstemp makes it owner-only; the run's other files are readable
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def kept(run_dir: str | os.PathLike[str] | None, name: str, store: ReadableStore, collection: str,
         fields: Sequence[str]) -> dict[str, Any] | None:
    """What another notebook of this run kept with :func:`shared` under ``name``, while its key still matches; None
    when there is nothing to reuse (no run folder, a store without a revision, nothing kept, or the collection
    changed since). Reads only: a notebook that uses another's result but computes it otherwise keeps nothing."""
    wanted = _fields(fields)
    key = scan_key(store, collection, name, wanted) if run_dir else None
    if not run_dir or key is None:
        return None
    return _load(_scan_file(resolve_run_dir(run_dir), name, collection, store.location), key)


def shared(run_dir: str | os.PathLike[str] | None, name: str, store: ReadableStore, collection: str,
           fields: Sequence[str], compute: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    """``compute()``'s result for this collection, computed once per run and reused while its key matches.

    Args:
        run_dir: the run folder; empty or None computes without sharing (an interactive kernel).
        name: what is scanned, e.g. ``"payloads"``: one file per name, collection and store.
        fields: the payload fields ``compute`` reads (part of the key).
        compute: the scan itself; returns a JSON-serialisable dict.

    Returns:
        (result, reused): ``reused`` is True when the result came from the run folder.

    Raises:
        Whatever ``compute`` or the store raises.
    """
    wanted = _fields(fields)
    key = scan_key(store, collection, name, wanted) if run_dir else None
    if not run_dir or key is None:
        return compute(), False
    path = _scan_file(resolve_run_dir(run_dir), name, collection, store.location)
    found = _load(path, key)
    if found is not None:
        return found, True
    result = compute()
    if scan_key(store, collection, name, wanted) == key:  # nothing was written during the scan
        try:
            _write_atomically(path, {"key": key, "result": result})
        except OSError as err:  # a read-only run folder costs the next notebook a scan, nothing more
            log.warning("could not keep the %s scan in %s (%s): the next notebook scans again", name, path, err)
    return result, False
