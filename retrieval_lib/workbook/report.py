"""What a notebook leaves behind: ``metrics.json``, gates, figures and tables.

Every notebook makes one :class:`NotebookReport`, records figures, tables,
metrics and gates through it, and calls :meth:`NotebookReport.save` at the
end. The runner reads the saved ``metrics.json`` files to build the run's
``summary.json`` and ``index.html``.

``metrics.json`` layout::

    {"notebook": "03_source_coverage", "title": "...", "status": "complete",
     "passed": true, "gates": [{"name", "passed", "value", "threshold", "detail"}],
     "metrics": {...}, "figures": ["figures/03_....png"], "tables": ["tables/03_....csv"],
     "findings": ["..."]}
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from retrieval_lib.collection import CollectionView
from retrieval_lib.config import Settings, load_settings, resolve_run_dir
from retrieval_lib.embedding.cache import CachedEmbedder, EmbedUsage, QueryCache, cache_file, total_usage
from retrieval_lib.embedding.providers import make_embedder
from retrieval_lib.errors import (
    CollectionNotFoundError,
    ConfigurationError,
    StoreUnavailableError,
    ValidationError,
)
from retrieval_lib.files import write_text_atomic
from retrieval_lib.params import Provenance
from retrieval_lib.retrievers import (
    AnsweringSearch,
    CollectionRetriever,
    RetrieverSpec,
    TalliedRetriever,
    Tally,
    open_retriever,
    parse_spec,
    team_retriever,
)
from retrieval_lib.search import Retriever, open_collection
from retrieval_lib.workbook.plots import plain_text
from retrieval_lib.workbook.registry import spec_for_stem

__all__ = ["Gate", "gate_state", "MARKS", "NotebookReport", "NotebookRun", "open_run"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else round(value, 6)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _jsonable(value.item())
    return value


#: How a gate's value is compared with its threshold (what the report prints between them).
RULES = (">=", "<=", "==", ">", "<")


@dataclass
class Gate:
    """One pass/fail check of a notebook, with the figure it was judged on.

    Attributes:
        name: what must hold, in words ("every source file is reachable by a query").
        passed: whether it held; None when it is **not applicable**: the collection lacks what the gate
            judges (no model field, no metadata database, no golden set for this book ...), and ``detail`` says
            why. Absent data never passes and never fails a gate.
        value, threshold: the figure measured and the bar it was held to.
        detail: one sentence with the evidence.
        rule: how value meets threshold (one of :data:`RULES`), or "" when it is not a comparison.
        unit: the unit of value and threshold ("ms", "files", "share" ...), "" for none.
        parameter: the params key that sets ``threshold``, so a failed gate can say what to change.
        hint: what to do when the gate fails, when the check knows better than the generic hint.
        provenance: ``{"drafted": n, "reviewed": m}`` when the gate was computed on data that carries origins
            (``draft``, docs/drafting.md); the report shows drafted and reviewed entries apart. None for
            hand-written data.
        id: the gate's stable identifier (``"<check>.<what>"``, e.g. ``"golden.passes"``): it never changes with
            the threshold or the wording, so ``compare`` and the summary key on it. Empty for a gate recorded
            without one.
    """

    name: str
    passed: bool | None
    value: Any = None
    threshold: Any = None
    detail: str = ""
    rule: str = ""
    unit: str = ""
    parameter: str | None = None
    hint: str | None = None
    provenance: dict[str, int] | None = None
    id: str = ""

    def __str__(self) -> str:
        return f"[{MARKS[gate_state(self)]}] {self.name}: {self.detail}"


#: How each state is written in a notebook's text and the terminal.
MARKS = {"passed": "PASS", "failed": "FAIL", "not applicable": "N/A"}


def gate_state(gate: Gate | dict[str, Any]) -> str:
    """``"passed"``, ``"failed"`` or ``"not applicable"``: the one rule that reads a gate's ``passed``, for a
    :class:`Gate` or its dict in ``metrics.json``/``summary.json``."""
    passed = gate.get("passed") if isinstance(gate, dict) else gate.passed
    return "not applicable" if passed is None else "passed" if passed else "failed"


class NotebookReport:
    """Collects one notebook's results and writes them under the run folder.

    Args:
        notebook: short name, e.g. ``"03_source_coverage"`` (prefixes file names).
        title: the question the notebook answers.
        run_dir: the run folder (see :func:`resolve_run_dir`).
    """

    def __init__(self, notebook: str, title: str, run_dir: str | os.PathLike[str] | None = None) -> None:
        self.notebook = notebook
        self.title = title
        self.run_dir = resolve_run_dir(run_dir)
        self.gates: list[Gate] = []
        self.metrics: dict[str, Any] = {}
        self.figures: list[str] = []
        self.tables: list[str] = []
        self.findings: list[str] = []
        #: What the notebook validated (collection, location, embedder); set by :class:`NotebookRun`.
        self.context: dict[str, Any] = {}
        self.units: dict[str, str] = {}
        #: The specification codes this notebook answers (see :mod:`retrieval_lib.workbook.specs`).
        self.specification: list[str] = []

    def gate(self, name: str, passed: bool | None, *, value: Any = None, threshold: Any = None, detail: str = "",
             rule: str = "", unit: str = "", parameter: str | None = None, hint: str | None = None,
             provenance: Provenance | None = None, noun: str = "queries", gate_id: str = "") -> Gate:
        """Record a pass/fail check; returns it (its ``str`` is a one-line verdict).

        ``provenance`` says how many of the entries the gate judged (``noun``: queries, negatives, topics) are
        drafted and how many reviewed; when the data carries origins, the detail ends with "on N drafted, M
        reviewed queries" and the report shows the two apart.

        Raises:
            ValidationError: ``rule`` is not one of :data:`RULES` (or empty).
        """
        if rule and rule not in RULES:
            raise ValidationError(f"gate rule must be one of {', '.join(RULES)} (got {rule!r})", field="rule")
        counts = None
        if provenance is not None and provenance.marked:
            counts = provenance.as_dict()
            said = provenance.phrase(noun)
            detail = f"{detail} ({said})" if detail else said
        g = Gate(name=name, passed=None if passed is None else bool(passed), value=_jsonable(value),
                 threshold=_jsonable(threshold), detail=detail,
                 rule=rule, unit=unit, parameter=parameter, hint=hint, provenance=counts, id=gate_id)
        self.gates.append(g)
        return g

    def not_applicable(self, name: str, reason: str, *, parameter: str | None = None, gate_id: str = "") -> Gate:
        """Record a gate that cannot be judged on this collection, and why (``passed`` is None).

        Use it when the input the gate judges is absent (a field the team never wrote, no metadata database, no
        golden set or judgments for this book): the gate neither passes nor fails.
        """
        return self.gate(name, None, detail=f"not applicable: {reason}", parameter=parameter, gate_id=gate_id)

    def metric(self, name: str, value: Any, unit: str = "") -> Any:
        """Record a figure for the summary (rounded to 6 places in JSON); ``unit`` labels it in the report
        (``"bytes"`` is shown in MiB)."""
        self.metrics[name] = _jsonable(value)
        if unit:
            self.units[name] = unit
        return value

    def finding(self, text: str) -> str:
        """Record a sentence stating what the notebook found."""
        self.findings.append(text)
        return text

    def figure(self, fig: Any, name: str, *, show: bool = True) -> Path:
        """Save a matplotlib figure as PNG under ``figures/``, show it inline, and close it.

        Every text in it is drawn as written (:func:`~retrieval_lib.workbook.plots.plain_text`): labels from a
        collection are never parsed as mathtext.
        """
        import matplotlib.pyplot as plt

        plain_text(fig)
        if show:
            from IPython import get_ipython
            from IPython.display import display

            if get_ipython() is not None:
                display(fig)
        folder = self.run_dir / "figures"
        folder.mkdir(exist_ok=True)
        path = folder / f"{self.notebook}_{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        self.figures.append(str(path.relative_to(self.run_dir)))
        return path

    def table(self, frame: Any, name: str) -> Path:
        """Save a pandas DataFrame as CSV under ``tables/``."""
        folder = self.run_dir / "tables"
        folder.mkdir(exist_ok=True)
        path = folder / f"{self.notebook}_{name}.csv"
        frame.to_csv(path, index=False)
        self.tables.append(str(path.relative_to(self.run_dir)))
        return path

    @property
    def passed(self) -> bool:
        """No gate failed (a not-applicable gate does not fail a notebook)."""
        return not any(gate_state(g) == "failed" for g in self.gates)

    def save(self, *, status: str = "complete", error: str | None = None) -> Path:
        """Write ``metrics/<notebook>.json``; returns its path.

        ``status`` is ``"complete"`` when the notebook ran to its end, ``"error"``
        when a cell raised (``error`` then holds the one-line reason).
        """
        path = self.run_dir / "metrics" / f"{self.notebook}.json"
        data = {
            "notebook": self.notebook,
            "title": self.title,
            "status": status,
            "error": error,
            "passed": self.passed and status == "complete",
            # provenance only where the data carries origins: hand-written data's gates stay as they were
            "gates": [{k: v for k, v in asdict(g).items() if k != "provenance" or v is not None}
                      for g in self.gates],
            "metrics": self.metrics,
            "figures": self.figures,
            "tables": self.tables,
            "findings": self.findings,
            "context": self.context,
            "units": self.units,
            "specification": self.specification,
        }
        return write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False), fsync=False)

    def summary(self) -> str:
        """The gates and findings as lines of text: what the notebook's last cell prints."""
        lines = [str(g) for g in self.gates] + [f"- {f}" for f in self.findings]
        verdict = "ALL GATES PASSED" if self.passed else "SOME GATES FAILED"
        return "\n".join(lines + [verdict if self.gates else "no gates"])


def _bypass(notebook: str) -> str | None:
    """Why ``notebook`` must measure the embedding service itself (the registry says), or None."""
    spec = spec_for_stem(notebook)
    return spec.bypass if spec else None


class NotebookRun:
    """One notebook's run: its report and (opened on first use) its retriever and store.

    Build it with :func:`open_run` in a notebook's first code cell and call
    :meth:`finish` in its last. Whatever happens in between, the run is saved:
    in an IPython kernel a hook fires after every cell, and when a cell raises
    it saves ``metrics.json`` with status ``"error"`` and releases the store
    (the embedded folder's lock), so a failed notebook still leaves a record
    and never blocks the next one.
    """

    def __init__(self, notebook: str, title: str, run_dir: str | os.PathLike[str] | None = None, *,
                 settings: Settings | None = None, spec: Sequence[str] = ()) -> None:
        self.report = NotebookReport(notebook, title, run_dir)
        self.report.specification = list(spec)
        self._settings = settings
        self._retriever: Retriever | None = None
        self._store: CollectionView | None = None  # opened alone when a check reads the collection before it asks
        self._asker: TalliedRetriever | None = None  # the profile's retriever (retrieval_lib.retrievers)
        self._spec: RetrieverSpec | None = None
        self._answering: AnsweringSearch | None = None  # one per run: it reads the collection's URL -> file map once
        self._asked = Tally()  # what every asker this run opened answered (04 reopens it)
        self._embedders: list[CachedEmbedder] = []  # every embedder this run made (04 reopens its retriever)
        self._cache: Any = None
        self._cache_path = cache_file(self.report.run_dir) if run_dir else None  # interactive: this kernel only
        self.finished = False
        #: Long steps may show progress bars (the CLI on a terminal); a notebook keeps its stored outputs clean.
        self.progress = False
        self._hooked = self._register_hook()
        if self._hooked:
            _display_for_reports()

    @property
    def settings(self) -> Settings:
        """The :class:`~retrieval_lib.config.Settings` this run uses (environment and ``.env``)."""
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    @property
    def retriever_spec(self) -> RetrieverSpec:
        """The profile's ``retriever:`` (``RETRIEVER_SPEC``), validated once; ``kind: collection`` when none is
        given."""
        if self._spec is None:
            self._spec = team_retriever(self.settings) or parse_spec(None)
        return self._spec

    @property
    def asker(self) -> TalliedRetriever:
        """The profile's :class:`~retrieval_lib.retrievers.QuestionRetriever` (the collection itself by default),
        counted: :meth:`finish` records whether a team's retriever answered every question (opened once)."""
        if self._asker is None:
            spec = self.retriever_spec
            inner = (CollectionRetriever(self.collection_retriever) if spec.kind == "collection"
                     else open_retriever(spec))
            self._asker = TalliedRetriever(inner, self._asked)
            self.report.context["retriever"] = inner.describe()
        return self._asker

    @property
    def retriever(self) -> Retriever:
        """What the query notebooks search: the collection's :class:`~retrieval_lib.search.Retriever`, or, when
        the profile names a team's retriever, an :class:`~retrieval_lib.retrievers.AnsweringSearch` over it (the
        same ``search`` / ``search_many``; the rest, ``store``, ``embedder``..., is the collection's)."""
        if self.retriever_spec.kind != "collection":
            # duck-typed: AnsweringSearch answers search/search_many and hands the rest to the collection
            if self._answering is None:
                self._answering = AnsweringSearch(self.asker, lambda: self.collection_retriever)
            return cast(Retriever, self._answering)
        return self.collection_retriever

    @property
    def collection_retriever(self) -> Retriever:
        """The :class:`~retrieval_lib.search.Retriever` for the configured store and embedder (opened once)."""
        if self._retriever is None:
            if self._cache is None:
                self._cache = QueryCache(self._cache_path)
            # the run's query cache, unless this notebook measures the embedding service itself
            embedder = CachedEmbedder(make_embedder(self.settings), self._cache,
                                      bypass=_bypass(self.report.notebook))
            self._embedders.append(embedder)
            settings = self.settings
            self._retriever = Retriever(self.store, embedder, settings.collection_name,
                                        query_max_chars=settings.query_max_chars)
            e = embedder
            self.report.context.update(provider=e.provider, model=e.model, dimension=e.dimension)
        return self._retriever

    @property
    def store(self) -> CollectionView:
        """The collection's store, read through the collection's payload roles (never written); opened without
        the embedder, so a check of stored vectors alone (11's ANN recall) runs with no embedding key."""
        if self._store is None:
            self._store = open_collection(self.settings)
            self.report.context = {"collection": self.collection, "location": self._store.location,
                                   "store": self._store.kind}
        return self._store

    @property
    def collection(self) -> str:
        return str(self.settings.collection_name)

    @property
    def shared_dir(self) -> Path | None:
        """The run folder where this run's notebooks share a scan of the collection
        (:func:`retrieval_lib.stores.scan.shared`), or None in an interactive kernel (nothing shared)."""
        return self.report.run_dir if self._cache_path else None

    def collection_absent(self, *, judges_empty: bool = False) -> str | None:
        """Why a check that reads the collection itself cannot judge here, or None (it can).

        When the profile names a team's retriever and the collection cannot be opened (not there, or no store
        configured): the questions still go to the retriever, the collection's own checks are not applicable.
        Without a team's retriever a missing collection is an error, raised as before. A collection that holds
        no points has nothing to judge either, unless the check ``judges_empty`` (notebook 07, whose ``min_points``
        gate fails on it).
        """
        if self.retriever_spec.kind != "collection":
            try:
                self.collection_retriever  # noqa: B018 - opening it is the test
            except (CollectionNotFoundError, StoreUnavailableError, ConfigurationError) as err:
                return (f"only the chatbot's retriever is configured ({self.asker.describe()}); this check reads the "
                        f"collection itself, which cannot be opened: {err.message}")
        return None if judges_empty else self._empty()

    def _empty(self) -> str | None:
        """Why nothing in the collection can be judged: it holds no points. None when it holds some.

        Raises:
            CollectionNotFoundError: the collection is not there (and no team's retriever stands in).
        """
        if self.store.count(self.collection):
            return None
        return (f"collection {self.collection!r} holds no points, so there is nothing in it to judge (notebook 07's "
                "min_points gate fails on it): ingest the book, or name the collection that holds it")

    def no_text(self) -> str | None:
        """Why a check that reads the chunks' text cannot judge: no payload key of the collection holds it (a
        pipeline that stores only ids and URLs). None when one does."""
        if self.store.roles_for(self.collection).has("content"):
            return None
        return (f"no payload key of collection {self.collection!r} holds the chunk's text (`inspect` shows its keys; "
                "a profile's `payload_fields` names the one that does), so there is no text to judge")

    def describe(self) -> str:
        """One line naming what is validated: collection, store location, embedder (or the team's retriever)."""
        if self.retriever_spec.kind != "collection":
            return (f"the chatbot's retriever: {self.asker.describe()}; collection {self.collection!r} where a "
                    "notebook reads the collection itself")
        r = self.collection_retriever
        return (f"collection {r.collection!r} at {r.store.location} ({r.store.kind}); "
                f"embedder {r.embedder.provider} / {r.embedder.model} ({r.embedder.dimension} dimensions)")

    def close(self) -> None:
        """Release the store (and the embedded folder's lock), and the team's retriever (its child, its client)."""
        if self._asker is not None:
            self._asker.close()
            self._asker = None
            self._answering = None
        if self._retriever is not None:
            self._retriever.close()  # its store is self._store
            self._retriever = None
        elif self._store is not None:
            self._store.close()
        self._store = None

    def embed_usage(self) -> EmbedUsage:
        """The embed calls and texts this notebook has sent so far, and the queries its run's cache answered."""
        return total_usage(e.usage() for e in self._embedders)

    def _record_usage(self) -> None:
        usage = self.embed_usage()
        self.report.metric("embed_calls", usage.calls, "calls")
        self.report.metric("embed_texts", usage.texts, "texts")
        self.report.metric("embed_texts_cached", usage.cached, "texts")
        if self._embedders:
            self.report.context["embed_cache"] = f"bypassed: {usage.bypass}" if usage.bypass else (
                "the run's query cache" if self._cache_path else "this kernel's query cache")

    def finish(self) -> str:
        """Save the report, close the store, and return the gates and findings as text.

        When the questions went to a team's retriever, a gate ``retriever.answered`` says whether it answered
        every one (failing with the count and the first error)."""
        self._record_answered()
        self._record_usage()
        self.report.save()
        self.finished = True
        self.close()
        self._unregister_hook()
        return self.report.summary()

    def _record_answered(self) -> None:
        tally = self._asked
        if self.retriever_spec.kind == "collection" or not tally.asked:
            return
        failed = tally.failed
        self.report.context["retriever"] = tally.describe
        detail = f"{tally.asked - failed} of {tally.asked} questions answered by {tally.describe}"
        if failed:
            kinds = ", ".join(f"{k} x{n}" for k, n in tally.kinds.most_common())
            detail += f"; {failed} failed ({kinds}); the first: {tally.first_error}"
        self.report.gate("the chatbot's retriever answered every question", failed == 0,
                         value=tally.asked - failed, threshold=tally.asked, rule=">=", unit="questions",
                         detail=detail, gate_id="retriever.answered",
                         hint=None if not failed else "see the first error: start the endpoint, fix the URL, the "
                         "function or the mapping (python -m retrieval_lib retriever --params P probes it)")

    # ------------------------------------------------------------------ kernel hook
    def _on_cell(self, result: Any) -> None:
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        if error is None or self.finished:
            return
        reason = f"{type(error).__name__}: {error}".splitlines()[0][:500]
        try:
            self._record_usage()
            self.report.save(status="error", error=reason)
        finally:
            self.close()

    def _register_hook(self) -> bool:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is None:
            return False
        shell.events.register("post_run_cell", self._on_cell)
        return True

    def _unregister_hook(self) -> None:
        if not self._hooked:
            return
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            try:
                shell.events.unregister("post_run_cell", self._on_cell)
            except ValueError:
                pass
        self._hooked = False


def _display_for_reports() -> None:
    """Tables in a notebook kernel show whole paths and titles (wrapped by the page, never cut with "...")."""
    import pandas as pd

    pd.set_option("display.max_colwidth", None)
    # a `$` in a chunk's text is text: JupyterLab would typeset `$...$` in a table's HTML as mathematics
    pd.set_option("display.html.use_mathjax", False)
    pd.set_option("styler.html.mathjax", False)


def open_run(notebook: str, run_dir: str | os.PathLike[str] | None = None, *, title: str | None = None) -> NotebookRun:
    """Open a notebook's run (see :class:`NotebookRun`): the one set-up every notebook starts with.

    Args:
        notebook: its file name without ``.ipynb``, e.g. ``"03_source_coverage"``; the registry
            (:mod:`retrieval_lib.workbook.registry`) gives its question and specification codes.
        run_dir: the run folder papermill passes; empty for interactive runs (``outputs/interactive``).
        title: the question of a notebook the registry does not know.

    Raises:
        ValidationError: the notebook is not in the registry and no ``title`` is given.
    """
    record = spec_for_stem(notebook)
    if record is None and title is None:
        raise ValidationError(f"notebook {notebook!r} is not in the registry: add its record to "
                              "retrieval_lib/workbook/registry.py (or pass title=)", field="notebook")
    question = title if title is not None else record.question  # type: ignore[union-attr]
    return NotebookRun(notebook, question, run_dir, spec=record.codes if record else ())
