"""The one contract every check keeps, so that its notebook and its command run it the same way.

A check is the module of :mod:`retrieval_lib.checks` named like its notebook, in its family's folder
(``checks/collection/chunk_quality.py`` for ``12_chunk_quality``; the registry's
:attr:`~retrieval_lib.workbook.registry.NotebookSpec.module`), with one entry::

    def run(ctx: NotebookRun, **params) -> CheckResult

- ``ctx`` is the notebook's :class:`~retrieval_lib.workbook.report.NotebookRun`: in a notebook the one
  :func:`~retrieval_lib.workbook.open_run` gives, in the CLI the one :func:`open_check` gives. A check reads through
  it and nothing else: the collection (``ctx.store``, ``ctx.collection``), the search the questions go to
  (``ctx.retriever``: the team's retriever when the profile names one), the collection's own search
  (``ctx.collection_retriever``) and its embedder.
- ``params`` are the notebook's parameters, by the names its ``parameters`` cell declares (``run_dir`` aside).
- The result owns its record: ``result.record(report)`` writes its gates, findings, metrics and figures;
  ``result.tables()`` gives its tables by name (the notebook displays them, ``check NAME --json`` prints them).

A check that needs the collection itself and finds only a team's retriever configured returns
:class:`NotApplicable` (``ctx.collection_absent()`` says why), so its notebook says so instead of failing.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from retrieval_lib.errors import ValidationError

if TYPE_CHECKING:
    from retrieval_lib.config import Settings
    from retrieval_lib.workbook.gates import GateDef
    from retrieval_lib.workbook.registry import NotebookSpec
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["CheckResult", "NotApplicable", "open_check", "run_check", "check_params", "show"]


class CheckResult(Protocol):
    """What a check's ``run`` returns."""

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """Write the check's gates, findings, metrics, figures and tables on ``report`` (``show``: display the
        figures, as a notebook does; the CLI saves them only)."""

    def tables(self) -> Mapping[str, Any]:
        """The check's tables (pandas frames) by name."""


@dataclass
class NotApplicable:
    """The result of a check that cannot judge: each of its gates is recorded not applicable, with the reason."""

    reason: str
    gates: tuple[GateDef, ...]
    #: the figures the gates' labels name (``{"k": 10, "ann_min_recall": 0.95}``), when they name any; a gate whose
    #: figures are not all here is recorded with its unjudged label
    fill: Mapping[str, Any] | None = None

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        for gate in self.gates:
            if gate.per is None:  # a gate per item (per topic, per level) has no item to name here
                # a label whose figures are not all in ``fill`` takes the gate's unjudged label
                whole = self.fill is not None and set(gate.fields) <= set(self.fill)
                gate.not_applicable(report, self.reason, fill=self.fill if whole else None)
        report.finding(f"Not applicable: {self.reason}")

    def tables(self) -> Mapping[str, Any]:
        return {}

    def __str__(self) -> str:
        return f"not applicable: {self.reason}"


def check_params(spec: NotebookSpec, values: Mapping[str, Any], *, path: str = "") -> dict[str, Any]:
    """The values of ``spec``'s parameters (``run_dir`` aside) out of a profile's ``values`` (read from ``path``).

    Raises:
        ParamsError: a parameter is missing (named, with the notebook's section of params/demo.yaml).
    """
    from retrieval_lib.errors import ParamsError

    keys = [k for k in spec.params if k != "run_dir"]
    missing = [k for k in keys if k not in values]
    if missing:
        raise ParamsError(f"the profile lacks {', '.join(missing)}: add them (see params/demo.yaml, section "
                          f"'{spec.number} {spec.name.replace('_', ' ')}')", path=path, key=missing[0])
    return {k: values[k] for k in keys}


def run_check(spec: NotebookSpec, ctx: NotebookRun, params: Mapping[str, Any]) -> CheckResult:
    """Run ``spec``'s check on ``ctx`` with ``params`` (its module's ``run``).

    Raises:
        ValidationError: the notebook has no check module (it is not a check, e.g. a comparison of runs).
    """
    if not spec.module:
        raise ValidationError(f"notebook {spec.stem} has no check to run alone", field="check")
    module = importlib.import_module(spec.module)
    result: CheckResult = module.run(ctx, **params)
    return result


@contextmanager
def open_check(spec: NotebookSpec, run_dir: str | os.PathLike[str], *,
               settings: Settings | None = None) -> Iterator[NotebookRun]:
    """A headless :class:`~retrieval_lib.workbook.report.NotebookRun` for ``spec``'s check (the CLI's ``ctx``):
    its report writes into ``run_dir``; the store and the team's retriever are closed on exit."""
    from retrieval_lib.workbook.report import NotebookRun

    ctx = NotebookRun(spec.stem, spec.question, run_dir, settings=settings, spec=spec.codes)
    try:
        yield ctx
    finally:
        ctx.close()


def show(result: CheckResult, *names: str, max_colwidth: int | None = None) -> None:
    """Display ``result``'s tables called ``names`` (every table when none is named), in a notebook.

    A table the result does not have (a not-applicable check has none) is skipped: the result's own line says why.
    An empty table is one line, ``**name**: none``, not a header row over nothing; where a cell shows several
    tables, each is titled with its name.
    """
    import pandas as pd
    from IPython.display import Markdown, display

    tables = result.tables()
    shown = [name for name in names or tuple(tables) if name in tables]
    with pd.option_context("display.max_colwidth", max_colwidth):
        for name in shown:
            table = tables[name]
            if len(table) == 0:
                display(Markdown(f"**{name}**: none"))
                continue
            if len(shown) > 1:
                display(Markdown(f"**{name}**"))
            display(table)
