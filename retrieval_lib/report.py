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
from typing import Any

from .config import PROJECT_ROOT
from .embed_cache import SERVICE_MEASUREMENTS, CachedEmbedder, EmbedUsage, QueryCache, cache_file, total_usage

__all__ = ["Gate", "NotebookReport", "NotebookRun", "open_run", "resolve_run_dir"]


def resolve_run_dir(run_dir: str | os.PathLike[str] | None) -> Path:
    """The folder a notebook writes into.

    An empty ``run_dir`` (the notebooks' default, used in JupyterLab and by
    nbval) means ``outputs/interactive``; a relative one is taken from the
    project root, never from the kernel's working folder.
    """
    if not run_dir:
        path = PROJECT_ROOT / "outputs" / "interactive"
    else:
        path = Path(run_dir)
        if not path.is_absolute():
            path = PROJECT_ROOT / path
    path.mkdir(parents=True, exist_ok=True)
    return path


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
        passed: whether it held.
        value, threshold: the figure measured and the bar it was held to.
        detail: one sentence with the evidence.
        rule: how value meets threshold (one of :data:`RULES`), or "" when it is not a comparison.
        unit: the unit of value and threshold ("ms", "files", "share" ...), "" for none.
        parameter: the params key that sets ``threshold``, so a failed gate can say what to change.
        hint: what to do when the gate fails, when the check knows better than the generic hint.
    """

    name: str
    passed: bool
    value: Any = None
    threshold: Any = None
    detail: str = ""
    rule: str = ""
    unit: str = ""
    parameter: str | None = None
    hint: str | None = None

    def __str__(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        return f"[{mark}] {self.name}: {self.detail}"


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
        #: The specification codes this notebook answers (see :mod:`retrieval_lib.specs`).
        self.specification: list[str] = []

    def gate(self, name: str, passed: bool, *, value: Any = None, threshold: Any = None, detail: str = "",
             rule: str = "", unit: str = "", parameter: str | None = None, hint: str | None = None) -> Gate:
        """Record a pass/fail check; returns it (its ``str`` is a one-line verdict).

        Raises:
            ValidationError: ``rule`` is not one of :data:`RULES` (or empty).
        """
        if rule and rule not in RULES:
            from .errors import ValidationError

            raise ValidationError(f"gate rule must be one of {', '.join(RULES)} (got {rule!r})", field="rule")
        g = Gate(name=name, passed=bool(passed), value=_jsonable(value), threshold=_jsonable(threshold), detail=detail,
                 rule=rule, unit=unit, parameter=parameter, hint=hint)
        self.gates.append(g)
        return g

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
        """Save a matplotlib figure as PNG under ``figures/``, show it inline, and close it."""
        import matplotlib.pyplot as plt

        if show:
            try:
                from IPython import get_ipython
                from IPython.display import display

                if get_ipython() is not None:
                    display(fig)
            except ImportError:  # pragma: no cover - IPython ships with the notebook stack
                pass
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
        return all(g.passed for g in self.gates)

    def save(self, *, status: str = "complete", error: str | None = None) -> Path:
        """Write ``metrics/<notebook>.json``; returns its path.

        ``status`` is ``"complete"`` when the notebook ran to its end, ``"error"``
        when a cell raised (``error`` then holds the one-line reason).
        """
        folder = self.run_dir / "metrics"
        folder.mkdir(exist_ok=True)
        path = folder / f"{self.notebook}.json"
        data = {
            "notebook": self.notebook,
            "title": self.title,
            "status": status,
            "error": error,
            "passed": self.passed and status == "complete",
            "gates": [asdict(g) for g in self.gates],
            "metrics": self.metrics,
            "figures": self.figures,
            "tables": self.tables,
            "findings": self.findings,
            "context": self.context,
            "units": self.units,
            "specification": self.specification,
        }
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)  # atomic: a reader never sees half a file
        return path

    def summary(self) -> str:
        """The gates and findings as lines of text: what the notebook's last cell prints."""
        lines = [str(g) for g in self.gates] + [f"- {f}" for f in self.findings]
        verdict = "ALL GATES PASSED" if self.passed else "SOME GATES FAILED"
        return "\n".join(lines + [verdict if self.gates else "no gates"])


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
                 settings: Any = None, spec: Sequence[str] = ()) -> None:
        self.report = NotebookReport(notebook, title, run_dir)
        self.report.specification = list(spec)
        self._settings = settings
        self._retriever: Any = None
        self._embedders: list[Any] = []  # every embedder this run made (04 reopens its retriever)
        self._cache: Any = None
        self._cache_path = cache_file(self.report.run_dir) if run_dir else None  # interactive: this kernel only
        self.finished = False
        self._hooked = self._register_hook()
        if self._hooked:
            _display_for_reports()

    @property
    def settings(self) -> Any:
        """The :class:`~retrieval_lib.config.Settings` this run uses (environment and ``.env``)."""
        if self._settings is None:
            from .config import load_settings

            self._settings = load_settings()
        return self._settings

    @property
    def retriever(self) -> Any:
        """The :class:`~retrieval_lib.search.Retriever` for the configured store and embedder (opened once)."""
        if self._retriever is None:
            from .embedders import make_embedder
            from .search import Retriever

            if self._cache is None:
                self._cache = QueryCache(self._cache_path)
            # the run's query cache, unless this notebook measures the embedding service itself
            embedder = CachedEmbedder(make_embedder(self.settings), self._cache,
                                      bypass=SERVICE_MEASUREMENTS.get(self.report.notebook))
            self._embedders.append(embedder)
            self._retriever = Retriever.from_settings(self.settings, embedder=embedder)
            r = self._retriever
            self.report.context = {
                "collection": r.collection, "location": r.store.location, "store": r.store.kind,
                "provider": r.embedder.provider, "model": r.embedder.model, "dimension": r.embedder.dimension,
            }
        return self._retriever

    @property
    def store(self) -> Any:
        """The retriever's :class:`~retrieval_lib.store.VectorStore`."""
        return self.retriever.store

    @property
    def collection(self) -> str:
        return str(self.settings.collection_name)

    def describe(self) -> str:
        """One line naming what is validated: collection, store location, embedder."""
        r = self.retriever
        return (f"collection {r.collection!r} at {r.store.location} ({r.store.kind}); "
                f"embedder {r.embedder.provider} / {r.embedder.model} ({r.embedder.dimension} dimensions)")

    def close(self) -> None:
        """Release the store (and the embedded folder's lock)."""
        if self._retriever is not None:
            self._retriever.close()
            self._retriever = None

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
        """Save the report, close the store, and return the gates and findings as text."""
        self._record_usage()
        self.report.save()
        self.finished = True
        self.close()
        self._unregister_hook()
        return self.report.summary()

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
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover - IPython ships with the notebook stack
            return False
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
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a pinned dependency
        return
    pd.set_option("display.max_colwidth", None)


def open_run(notebook: str, title: str, run_dir: str | os.PathLike[str] | None = None, *,
             settings: Any = None, spec: Sequence[str] = ()) -> NotebookRun:
    """Open a notebook's run (see :class:`NotebookRun`): the one set-up every notebook starts with.

    Args:
        notebook: short name, e.g. ``"03_source_coverage"``.
        title: the question the notebook answers.
        run_dir: the run folder papermill passes; empty for interactive runs (``outputs/interactive``).
        settings: explicit settings (tests); default :func:`~retrieval_lib.config.load_settings`.
        spec: the specification codes the notebook answers, e.g. ``("seed 000 SC-003", "seed 000 SC-007")``;
            the report explains each one (:mod:`retrieval_lib.specs`).
    """
    return NotebookRun(notebook, title, run_dir, settings=settings, spec=spec)
