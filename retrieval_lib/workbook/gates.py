"""A gate's definition, written once: its stable id, its label, the parameter that sets its bar, its doc text.

A check records a gate through its :class:`GateDef` (``PASSES.record(report, ok, value=..., ...)``), so the
id, the wording and the parameter live in one place: the catalogue :mod:`retrieval_lib.checks.gates`, from
which ``docs/gates.md`` is generated (:mod:`retrieval_lib.checks.gate_docs`).

**The id** (``"<check>.<what>"``, e.g. ``"golden.passes"``) never contains a threshold and never changes with
the wording, so ``compare``, the summary and the report page key on it: a threshold changed between two runs is
the same gate with a new threshold. A gate emitted once per item (one per topic, one per concurrency level) has
``per`` set and gets the item as a last part: ``"coverage.topic.gazebo_simulation"``, ``"api.concurrent.10"``
(:func:`slug`).

**The label** may hold the figures it is judged on (``"p95 latency <= {target} ms"``): it is what a notebook
prints (``[PASS] p95 latency <= 1500 ms: ...``), filled from ``fill`` at record time.

Run folders written before ids existed have gates without one: :func:`gate_key` falls back to the name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from retrieval_lib.errors import ValidationError

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import Gate, NotebookReport

__all__ = ["GateDef", "gate_key", "slug", "ID_PATTERN"]

#: A gate id: lowercase dotted words (letters, digits, ``_``), two parts at least; never a threshold.
ID_PATTERN = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")
_FIELD = re.compile(r"\{(\w+)(![rsa])?(:[^}]*)?\}")


def slug(item: Any) -> str:
    """An item (a topic, a concurrency level, a phase) as an id part: lowercase words joined by ``_``.

    >>> slug("Gazebo simulation"), slug(10)
    ('gazebo_simulation', '10')
    """
    text = re.sub(r"[^a-z0-9]+", "_", str(item).lower()).strip("_")
    return text or "_"


def gate_key(gate: Mapping[str, Any]) -> str:
    """The key a gate of ``metrics.json``/``summary.json`` is known by: its ``id``, else (a run written before
    ids existed) its ``name``."""
    return str(gate.get("id") or gate.get("name") or "")


@dataclass(frozen=True)
class GateDef:
    """One gate of one check, defined once.

    Attributes:
        id: the stable id (module docstring); with ``per``, the prefix each item's id extends.
        label: the name the gate is recorded and printed with; ``{field}`` parts are filled at record time.
        notebooks: the notebooks that record it, by registry name (``"golden_set"``).
        meaning: what it means, one sentence (docs/gates.md).
        causes: its usual causes and what to do (docs/gates.md).
        parameter: the params key that sets its threshold, if any.
        per: what one such gate is emitted per (``"topic"``, ``"concurrency"``), or None for one gate.
        unjudged_label: the label of a not-applicable gate whose figures are unknown (no golden set: no count of
            queries that must pass), when ``label`` needs them.
    """

    id: str
    label: str
    notebooks: tuple[str, ...]
    meaning: str
    causes: str
    parameter: str | None = None
    per: str | None = None
    unjudged_label: str | None = None

    def __post_init__(self) -> None:
        if not ID_PATTERN.match(self.id):
            raise ValidationError(f"gate id {self.id!r} is not a dotted lowercase slug such as 'golden.passes'",
                                  field="id")

    @property
    def fields(self) -> list[str]:
        """The names of the label's ``{field}`` parts."""
        return [m.group(1) for m in _FIELD.finditer(self.label)]

    @property
    def shown_label(self) -> str:
        """The label as the docs show it: each ``{field}`` as its name in code font
        (``p95 latency <= `latency_p95_target_ms` ms``)."""
        return _FIELD.sub(lambda m: f"`{m.group(1)}`", self.label)

    def gate_id(self, item: Any = None) -> str:
        """The id of the gate recorded (for a ``per`` gate, of the one about ``item``).

        Raises:
            ValidationError: an item for a single gate, or none for a ``per`` gate.
        """
        if (item is None) != (self.per is None):
            raise ValidationError(f"gate {self.id}: " + (f"one gate per {self.per}: pass item=" if self.per else
                                                          "a single gate takes no item"), field="item")
        return self.id if item is None else f"{self.id}.{slug(item)}"

    def name(self, fill: Mapping[str, Any] | None = None) -> str:
        """The label with its ``{field}`` parts filled from ``fill``.

        Raises:
            ValidationError: a field of the label is not in ``fill``.
        """
        try:
            return self.label.format(**(fill or {}))
        except (KeyError, IndexError) as err:
            raise ValidationError(f"gate {self.id}: its label needs {self.fields} (missing {err})",
                                  field="fill") from None

    def record(self, report: NotebookReport, passed: bool | None, *, fill: Mapping[str, Any] | None = None,
               item: Any = None, **kwargs: Any) -> Gate:
        """Record this gate on ``report`` (:meth:`~retrieval_lib.workbook.report.NotebookReport.gate`): its id,
        its label filled from ``fill``, its parameter unless ``kwargs`` names another; ``kwargs`` as for
        ``report.gate`` (value, threshold, rule, unit, detail, hint, provenance, noun)."""
        kwargs.setdefault("parameter", self.parameter)
        return report.gate(self.name(fill), passed, gate_id=self.gate_id(item), **kwargs)

    def not_applicable(self, report: NotebookReport, reason: str, *, fill: Mapping[str, Any] | None = None,
                       item: Any = None, parameter: str | None = None) -> Gate:
        """Record this gate as not applicable, and why (``parameter``: the key to set, default the gate's).

        Without ``fill`` a gate whose label needs figures takes its ``unjudged_label``.
        """
        name = self.unjudged_label if fill is None and self.unjudged_label else self.name(fill)
        return report.not_applicable(name, reason, parameter=parameter or self.parameter,
                                     gate_id=self.gate_id(item))
