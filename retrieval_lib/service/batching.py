"""Micro-batching: concurrent ``/search`` requests embedded and searched together.

Each request thread hands its (already validated) query to :class:`SearchBatcher`.
There is no thread of the batcher's own: the requests take turns to lead (the
leader/followers pattern). A request that finds no batch running leads at once, in
its own thread: it takes every query waiting at that moment (at most ``max_batch``;
optionally after waiting ``max_wait_ms`` for more), groups them by their search
options, and runs each group through :meth:`~retrieval_lib.search.Retriever.search_many`:
one embedding call and one batched search for the group, the code the library's
batch path uses. Requests that arrive meanwhile wait; when the leader's own query is
answered it hands the lead to the first of them, which takes all that queued up. So
a lone request pays no wait and no thread hop, and requests that arrive while a
batch runs share the next call.

The queue is bounded (``max_queue``): beyond it a request is refused with
:class:`~retrieval_lib.service.errors.ServiceBusyError` (503) rather than queued
without end. An error in a group's call (the embedding service down, the store
unreachable) is raised in each of that group's requests; other groups go on.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from retrieval_lib.models import SearchResponse
from retrieval_lib.search import Retriever
from retrieval_lib.service.errors import ServiceBusyError

__all__ = ["SearchBatcher", "SearchKey"]

#: (top_k, similarity_threshold, source_prefix, section): queries with the same key share one call.
SearchKey = tuple[int, float, str | None, str | None]


@dataclass
class _Job:
    text: str
    key: SearchKey
    wake: threading.Event = field(default_factory=threading.Event)  # answered, or handed the lead
    finished: bool = False
    result: SearchResponse | None = None
    error: BaseException | None = None


class SearchBatcher:
    """A bounded queue in front of :meth:`Retriever.search_many`; see the module docstring.

    Args:
        retriever: what searches.
        max_batch: most queries in one embedding call.
        max_wait_ms: how long a leader waits for more queries before it takes a batch (0: take what is there).
        max_queue: most queries waiting; beyond it :meth:`search` raises ServiceBusyError.
    """

    def __init__(self, retriever: Retriever, *, max_batch: int = 96, max_wait_ms: float = 0.0,
                 max_queue: int = 256) -> None:
        if max_batch < 1 or max_queue < 1 or max_wait_ms < 0:
            raise ValueError("max_batch and max_queue must be at least 1, max_wait_ms at least 0")
        self.retriever = retriever
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000
        self.max_queue = max_queue
        self._pending: list[_Job] = []
        self._cond = threading.Condition()
        self._leading = False
        self._closed = False

    def search(self, text: str, key: SearchKey) -> SearchResponse:
        """Search ``text`` with the options of ``key`` (in the next batch); blocks until it is answered.

        Raises:
            ServiceBusyError: the queue is full, or the batcher is closed.
            What :meth:`Retriever.search_many` raises for this query's group.
        """
        job = _Job(text, key)
        with self._cond:
            if self._closed or len(self._pending) >= self.max_queue:
                raise ServiceBusyError(f"the service is busy ({len(self._pending)} queries waiting); retry shortly",
                                       limit=self.max_queue)
            self._pending.append(job)
            self._cond.notify()  # a leader waiting for more (max_wait_ms) takes a full batch at once
            lead = not self._leading
            self._leading = True
        while True:
            if lead:
                self._lead(job)
            if job.finished:
                break
            job.wake.wait()
            job.wake.clear()
            lead = not job.finished  # woken without an answer: handed the lead
        if job.error is not None:
            raise job.error
        if job.result is None:  # pragma: no cover - a finished job holds a result or an error
            raise RuntimeError("a batched search finished without a result")
        return job.result

    def close(self) -> None:
        """Refuse new queries (those queued are still answered)."""
        with self._cond:
            self._closed = True

    # ------------------------------------------------------------------ the leader
    def _take(self) -> list[_Job]:
        with self._cond:
            if self.max_wait:
                self._cond.wait_for(lambda: len(self._pending) >= self.max_batch, self.max_wait)
            taken, self._pending = self._pending[:self.max_batch], self._pending[self.max_batch:]
            return taken

    def _lead(self, own: _Job) -> None:
        """Run batches until ``own`` is answered, then hand the lead to the first query waiting (if any)."""
        while not own.finished:
            groups: dict[SearchKey, list[_Job]] = {}
            for job in self._take():
                groups.setdefault(job.key, []).append(job)
            for key, group in groups.items():
                self._search(key, group)
        with self._cond:
            if self._pending:
                self._pending[0].wake.set()  # its thread leads next; _leading stays True
            else:
                self._leading = False

    def _search(self, key: SearchKey, group: list[_Job]) -> None:
        top_k, threshold, source_prefix, section = key
        try:
            responses = self.retriever.search_many([j.text for j in group], top_k, threshold, source_prefix, section)
            for job, response in zip(group, responses):
                job.result = response
        except BaseException as err:  # noqa: BLE001 - handed to each waiting request, which raises it
            for job in group:
                job.error = err
        finally:
            for job in group:
                job.finished = True
                job.wake.set()
