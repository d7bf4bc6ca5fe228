"""``docs/gates.md``, generated from the gate definitions (:mod:`retrieval_lib.checks.gates`) and the registry.

Regenerate it after changing a gate::

    python -m retrieval_lib.checks.gate_docs > docs/gates.md

``tests/workbook/test_gates.py`` fails while the page on disk differs from what this prints.
"""

from __future__ import annotations

from retrieval_lib.checks.gates import GATES
from retrieval_lib.workbook.gates import GateDef
from retrieval_lib.workbook.registry import NOTEBOOKS, notebook_spec
from retrieval_lib.workbook.specs import GLOSSARY, SEEDS, explain

__all__ = ["render"]

_INTRO = """\
# Gates

<!-- Generated from retrieval_lib/checks/gates.py by `python -m retrieval_lib.checks.gate_docs > docs/gates.md`:
edit the gate definitions, not this page. -->

Every notebook ends in gates: a measured value against a threshold from the parameter file (`params/demo.yaml`
or your own profile). A run's `index.html` lists them, failures first (see
[Reading a report](reports.md#reading-a-report)); this page says what each gate means and what to do when one fails.

Every gate has a stable **id**, `<check>.<what>` (`golden.passes`, `latency.p95`): it never changes with the
threshold or the wording, so `compare`, a run's `summary.json` and its report page know a gate by it, and a threshold
changed between two runs shows as the same gate with a new threshold. A gate recorded once per item ends in the item:
`coverage.topic.gazebo_simulation`, `api.concurrent.10`. A label's `name` in code font is filled in from the
parameters when the gate is recorded ("p95 latency <= 1500 ms").

## When a gate fails

The report's **Needs attention** box gives each failed gate a hint computed from the data (the measured
value, the threshold, the parameter that sets it and the file). This table says what each gate means and
what usually causes a failure.

| notebook · gate | id | what it means | usual causes, and what to do |
|---|---|---|---|
"""

_DEPTH = """
Some checks need more than a table row:

- 02's threshold: [Choosing thresholds](notebooks.md#choosing-thresholds)
- 04's other languages: [Other languages](notebooks.md#other-languages-notebook-04)
- 08 (the retrieval API): [Validating your own deployment](api.md#validating-your-own-deployment-notebook-08)
- 09: [Embedding contract](notebooks.md#embedding-contract-notebook-09-probe)
- 10: [Reachability](notebooks.md#reachability-anti-hubs-hubs-off-topic-files-notebook-10-reach)
- 11: [ANN recall](notebooks.md#ann-recall-notebook-11-ann)
- 12: [Chunk quality](notebooks.md#chunk-quality-notebook-12-chunks)
- 13: [Human relevance judgments](judgments.md)
- 14: [Comparing two runs](reports.md#did-retrieval-get-worse-comparing-two-runs-notebook-14-compare)

## Specification glossary

The notebooks cite the specifications in `shared/seeds/` once each, in a "Specification" line; the report
explains every code it shows. The codes:

| code | what it asks |
|---|---|
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _row(gate: GateDef) -> str:
    numbers = " / ".join(notebook_spec(name).number for name in gate.notebooks)
    gid = f"`{gate.id}.<{gate.per}>`" if gate.per else f"`{gate.id}`"
    return f"| {numbers} · {_cell(gate.shown_label)} | {gid} | {_cell(gate.meaning)} | {_cell(gate.causes)} |"


def render() -> str:
    """The whole page, as ``docs/gates.md`` holds it."""
    codes = {c for spec in NOTEBOOKS for c in spec.codes if c in GLOSSARY or c in SEEDS}
    glossary = [f"| {c} | {_cell(explain(c))} |" for c in sorted(codes)]
    return _INTRO + "\n".join(_row(g) for g in GATES) + "\n" + _DEPTH + "\n".join(glossary) + "\n"


if __name__ == "__main__":  # python -m retrieval_lib.checks.gate_docs > docs/gates.md
    print(render(), end="")
