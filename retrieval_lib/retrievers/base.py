"""What every retriever kind shares: the protocol, and answering many questions from one at a time."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from retrieval_lib.retrievers.mapping import NoResultsList, ResultMapping, empty_results, infer_mapping
from retrieval_lib.retrievers.spec import Answer, RetrieverSpec, one_line, redact

__all__ = ["QuestionRetriever", "MappedRetriever", "Tally", "TalliedRetriever"]


@runtime_checkable
class QuestionRetriever(Protocol):
    """What answers a question: ``ask`` one, ``ask_many`` (never raises for one question), ``describe``, ``close``."""

    kind: str

    def ask(self, query: str, top_k: int) -> Answer: ...

    def ask_many(self, queries: Sequence[str], top_k: int) -> list[Answer]: ...

    def describe(self) -> str: ...

    def close(self) -> None: ...


class MappedRetriever:
    """A team's retriever whose raw answers (JSON) map onto hits through ``results``/``fields``; what the spec
    leaves out is inferred from the first answer. Subclasses implement :meth:`_call` and :meth:`describe`."""

    kind = "team"

    def __init__(self, spec: RetrieverSpec) -> None:
        self.spec = spec
        self.mapping: ResultMapping | None = None
        self.mapping_evidence: list[str] = []
        self._secrets: list[str] = []  # expanded ${ENV} values, taken out of every message
        self.last_raw: Any = None  # the last raw answer (what a probe shows)
        #: ms the last question spent starting the retriever (a child process and its imports): left out of its
        #: ``elapsed_ms``, which times the answer alone
        self.start_ms = 0.0
        if spec.results is not None and spec.fields:
            self.mapping = ResultMapping(spec.results, dict(spec.fields))

    def _call(self, query: str, top_k: int) -> Any:
        """The raw JSON answer to one question; raises :class:`_Failed` when there is none."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the retriever holds (nothing by default)."""

    def __enter__(self) -> MappedRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"

    def _mapping_for(self, raw: Any) -> ResultMapping:
        """The spec's mapping, completed from ``raw`` (the first answer) where it leaves a part out."""
        if self.mapping is None:
            if self.spec.results is not None:
                items = ResultMapping(self.spec.results).result_list(raw)
                _, fields, evidence = infer_mapping(items)
                results = self.spec.results
            else:
                results, fields, evidence = infer_mapping(raw)
            if {"score", "distance"} & set(self.spec.fields):  # the profile's score or distance, never both
                fields = {k: v for k, v in fields.items() if k not in ("score", "distance")}
            self.mapping = ResultMapping(results, {**fields, **self.spec.fields})
            self.mapping_evidence = evidence
        return self.mapping

    def ask(self, query: str, top_k: int) -> Answer:
        """Ask one question; a failure is an :class:`Answer` with ``error`` (one line, redacted), never a raise."""
        t0 = time.perf_counter()
        try:
            raw = self.last_raw = self._call(query, top_k)
            # an empty first answer is an answer: the mapping waits for one that holds results
            hits = [] if self.mapping is None and empty_results(raw) else self._mapping_for(raw).hits(raw, top_k)
        except _Failed as err:
            return self._failed(query, top_k, err.kind, err.message, t0)
        except NoResultsList as err:
            return self._failed(query, top_k, "no results list", str(err), t0)
        return Answer(query=query, top_k=top_k, hits=hits,
                      elapsed_ms=(time.perf_counter() - t0) * 1000 - self.start_ms)

    def ask_many(self, queries: Sequence[str], top_k: int) -> list[Answer]:
        """:meth:`ask` for each question in turn (one at a time: the team's service sees what a user sends)."""
        return [self.ask(q, top_k) for q in queries]

    def _failed(self, query: str, top_k: int, kind: str, message: str, t0: float) -> Answer:
        text = one_line(redact(f"{kind}: {message}" if message else kind, self._secrets))
        return Answer(query=query, top_k=top_k, error=text, error_kind=kind,
                      elapsed_ms=(time.perf_counter() - t0) * 1000)


class _Failed(Exception):
    """One question failed: ``kind`` (``timeout``, ``http 503``...) and a message (redacted by the caller)."""

    def __init__(self, kind: str, message: str = "") -> None:
        super().__init__(kind)
        self.kind = kind
        self.message = message


class Tally:
    """What a run's retrievers answered: questions asked, failed, each fault's count and the first error."""

    def __init__(self) -> None:
        from collections import Counter

        self.asked = 0
        self.failed = 0
        self.kinds: Counter[str] = Counter()
        self.first_error: str | None = None
        self.describe = ""

    def add(self, answers: Sequence[Answer], describe: str) -> None:
        self.describe = describe
        self.asked += len(answers)
        for a in answers:
            if a.error is not None:
                self.failed += 1
                self.kinds[a.error_kind or "error"] += 1
                self.first_error = self.first_error or a.error


class TalliedRetriever:
    """A :class:`QuestionRetriever` whose answers are counted in a :class:`Tally` (a run's ``asker``)."""

    def __init__(self, inner: QuestionRetriever, tally: Tally | None = None) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.tally = tally if tally is not None else Tally()

    def ask(self, query: str, top_k: int) -> Answer:
        return self.ask_many([query], top_k)[0]

    def ask_many(self, queries: Sequence[str], top_k: int) -> list[Answer]:
        answers = self.inner.ask_many(queries, top_k)
        self.tally.add(answers, self.inner.describe())
        return answers

    def describe(self) -> str:
        return self.inner.describe()

    def close(self) -> None:
        self.inner.close()

    def __repr__(self) -> str:
        return f"TalliedRetriever({self.inner!r})"
