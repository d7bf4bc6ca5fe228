"""What a finished run says to a person: the verdict, the failed gates with a hint each, figures in words.

The terminal summary (:func:`terminal_lines`) and the report page
(:mod:`retrieval_lib.workbook.index_page`) read the same ``summary.json`` and say the same
things in the same words, so a CI log and the HTML never disagree.
"""

from __future__ import annotations

import math
from typing import Any

from retrieval_lib.workbook.report import gate_state

__all__ = ["Verdict", "verdict", "notebooks_text", "format_value", "rule_text", "gate_hint", "terminal_lines",
           "embedding_text", "duration_text", "provenance_text", "data_text"]

_AT_LEAST = {">=": "at least", ">": "more than"}
_AT_MOST = {"<=": "at most", "<": "less than"}


class Verdict:
    """The run's overall outcome: a word, a sentence, the exit code, and a CSS class for the page."""

    def __init__(self, word: str, sentence: str, exit_code: int, css: str) -> None:
        self.word, self.sentence, self.exit_code, self.css = word, sentence, exit_code, css


def verdict(summary: dict[str, Any]) -> Verdict:
    """The outcome of a run from its summary: interrupted, errored, failed, not judged (no gate could be judged) or
    passed (in that precedence)."""
    outcomes = summary.get("outcomes", [])
    gates = summary.get("gates", [])
    failed = [g for g in gates if gate_state(g) == "failed"]
    errored = [o for o in outcomes if o.get("status") == "error"]
    status = summary.get("status")
    if status != "complete":
        return Verdict(str(status or "incomplete").upper(), f"Run {status}: {notebooks_text(summary)}; "
                       "results are partial", 2, "warn")
    if errored:
        names = ", ".join(o["notebook"] for o in errored)
        return Verdict("ERROR", f"{len(errored)} notebook(s) raised an error ({names}); their gates were not all "
                                f"judged · {len(failed)} of {len(gates)} recorded gates failed", 2, "err")
    na = sum(gate_state(g) == "not applicable" for g in gates)
    judged = len(gates) - na
    tail = f" · {na} not applicable" if na else ""
    if failed:
        return Verdict("FAILED", f"{len(failed)} of {judged} gates failed{tail}", 1, "bad")
    if not judged:  # every gate not applicable, or none recorded: nothing was validated, so nothing passed
        return Verdict("NOT JUDGED", f"No gate could be judged{tail}: each gate says why", 1, "warn")
    return Verdict("PASSED", f"All {judged} gates passed{tail}", 0, "ok")


def notebooks_text(summary: dict[str, Any]) -> str:
    """``15 notebooks`` for a finished run; ``3 of 15 notebooks finished`` for one stopped midway."""
    selected = len(summary.get("notebooks", []))
    if summary.get("status") == "complete":
        return f"{selected} notebooks"
    return f"{len(summary.get('outcomes', []))} of {selected} notebooks finished"


def format_value(value: Any, unit: str = "") -> str:
    """A figure as a person reads it: significant digits, MiB for bytes, "none" for nothing, lists as text."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if unit == "bytes" and isinstance(value, (int, float)):
        return f"{value / 2**20:.3g} MiB"
    if unit == "share" and isinstance(value, (int, float)):  # a fraction of 1, read as a percentage
        return f"{value * 100:.4g} %"
    if isinstance(value, float):
        if math.isnan(value):
            return "not measured"
        text = f"{value:.4g}" if abs(value) >= 1e-4 or value == 0 else f"{value:.2e}"
    elif isinstance(value, int):
        text = f"{value:,}"
    elif isinstance(value, (list, tuple, dict)):
        if not value:
            return "none"
        shown = [f"{k}: {format_value(v)}" for k, v in value.items()] if isinstance(value, dict) else [
            format_value(v) for v in value]
        return ", ".join(shown[:8]) + (f" … ({len(shown)} in all)" if len(shown) > 8 else "")
    else:
        text = str(value)
    return f"{text} {unit}" if unit else text


def rule_text(gate: dict[str, Any]) -> str:
    """``value ≥ threshold unit`` for a comparison gate, else the bare value."""
    symbols = {">=": "≥", "<=": "≤", "==": "=", ">": ">", "<": "<"}
    unit = gate.get("unit") or ""
    value = format_value(gate.get("value"), unit)
    rule = gate.get("rule") or ""
    if not rule:
        return value
    return f"{value} {symbols[rule]} {format_value(gate.get('threshold'), unit)}"


def docs_reference(gate: dict[str, Any]) -> str:
    """Where docs/gates.md explains ``gate``: "When a gate fails", and its row by id when the gate has one."""
    gid = gate.get("id")
    return 'docs/gates.md, "When a gate fails"' + (f", gate `{gid}`" if gid else "")


def gate_hint(gate: dict[str, Any], params_file: str | None = None) -> str:
    """What to change when ``gate`` failed: the check's own hint, else one computed from its rule and parameter.

    For a comparison with a parameter, the hint names the nearest threshold that
    would pass (the measured value itself) and the file that sets it; whether to
    change the threshold or the collection is the reader's call, so both are said.
    """
    if gate.get("hint"):
        return str(gate["hint"])
    rule, param = gate.get("rule") or "", gate.get("parameter")
    value, threshold, unit = gate.get("value"), gate.get("threshold"), gate.get("unit") or ""
    where = f" in {params_file}" if params_file else " in the params file"
    numeric = isinstance(value, (int, float)) and isinstance(threshold, (int, float))
    if rule and param and numeric:
        if rule in _AT_LEAST:
            need, direction = _AT_LEAST[rule], "lower"
        elif rule in _AT_MOST:
            need, direction = _AT_MOST[rule], "raise"
        else:
            need, direction = "exactly", "set"
        return (f"measured {format_value(value, unit)} where `{param}` asks for {need} "
                f"{format_value(threshold, unit)}: fix the collection ({docs_reference(gate)}), or, if "
                f"{format_value(value, unit)} is acceptable, {direction} `{param}` to {format_value(value)}{where}")
    if param:
        return f"see {docs_reference(gate)}; the bar is set by `{param}`{where}"
    return f"see {docs_reference(gate)}, for what this gate means and what usually causes it"


def duration_text(seconds: float | None) -> str:
    """``1 min 08 s`` / ``42 s``."""
    if seconds is None:
        return "unknown duration"
    seconds = int(round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def validated_text(summary: dict[str, Any]) -> str:
    """``collection physicalai @ /path/.qdrant (all-MiniLM-L6-v2)``."""
    v = summary.get("validated") or {}
    if not v.get("collection"):
        return "collection unknown"
    return f"collection {v['collection']} @ {v.get('location', '?')} ({v.get('model', '?')})"


def embedding_text(embedding: dict[str, Any] | None) -> str:
    """The embed calls a run actually made: in total, the prefetch, and each notebook that sent any."""
    if not embedding:
        return "not recorded"
    pre = embedding.get("prefetch") or {}
    calls, texts = embedding.get("calls", 0), embedding.get("texts", 0)
    parts = [f"{calls} call{'' if calls == 1 else 's'} for {texts} text{'' if texts == 1 else 's'}"]
    if pre:
        parts.append(f"prefetch {pre.get('calls', 0)} for the run's {pre.get('queries', 0)} distinct queries"
                     + (f" (failed: {pre['error']})" if pre.get("error") else ""))
    sent = [f"{name[:2]} {n['calls']}" for name, n in (embedding.get("notebooks") or {}).items() if n.get("calls")]
    parts.append("notebooks: " + (", ".join(sent) if sent else "none sent any"))
    cached = embedding.get("cached") or 0
    return " · ".join(parts) + (f" · {cached} queries answered from the run's cache" if cached else "")


def provenance_text(gate: dict[str, Any]) -> str:
    """``64 drafted · 0 reviewed`` for a gate computed on data that carries origins, else ""."""
    p = gate.get("provenance")
    return f"{p.get('drafted', 0)} drafted · {p.get('reviewed', 0)} reviewed" if p else ""


def data_text(summary: dict[str, Any]) -> str:
    """Which gates were judged on drafted data, apart from reviewed: "" when no gate's data carries origins."""
    marked = [g for g in summary.get("gates", []) if g.get("provenance")]
    if not marked:
        return ""
    on_drafts = [g for g in marked if g["provenance"].get("drafted")]
    names = ", ".join(dict.fromkeys(str(g.get("notebook", ""))[:2] for g in on_drafts)) or "none"
    return (f"{len(on_drafts)} of {len(marked)} gates with drafted or reviewed data were judged on drafted entries "
            f"(notebooks {names}): drafted = nobody has reviewed them yet (review in notebook 13)")


def terminal_lines(summary: dict[str, Any], *, quiet: bool = False) -> list[str]:
    """The end-of-run summary for a terminal or a CI log; the first line is the verdict.

    With ``quiet`` only the verdict line is returned.
    """
    v = verdict(summary)
    gates = summary.get("gates", [])
    failed = [g for g in gates if gate_state(g) == "failed"]
    na = [g for g in gates if gate_state(g) == "not applicable"]
    judged = len(gates) - len(na)
    head = (f"{v.word} {len(failed)} of {judged} gates failed" if gates else f"{v.word} no gates recorded")
    if v.word == "PASSED":
        head = f"PASSED {judged} gates" if na else f"PASSED all {judged} gates"
    elif v.word == "NOT JUDGED":
        head = "NOT JUDGED no gate could be judged" if gates else "NOT JUDGED no gates recorded"
    if na:
        head += f" · {len(na)} not applicable"
    line = (f"{head} · {notebooks_text(summary)} · {duration_text(summary.get('duration_s'))} · "
            f"{validated_text(summary)}")
    if quiet:
        return [line]
    lines = [line]
    for o in summary.get("outcomes", []):
        if o.get("status") == "error":
            lines.append(f"  {o['notebook']} raised an error: {o.get('error') or 'unknown error'}")
    for g in failed:
        nb = str(g.get("notebook", ""))[:2]
        named = f" [{g['id']}]" if g.get("id") else ""  # the id finds the gate in docs/gates.md and in compare
        lines.append(f"  {nb} {g['name']}{named}: {g.get('detail') or rule_text(g)}")
    if data_text(summary):
        lines.append(f"  data: {data_text(summary)}")
    skipped = summary.get("notebooks_not_run") or []
    if skipped:
        lines.append(f"  not run: {', '.join(skipped)}")
    if summary.get("embedding"):
        lines.append(f"  embed calls: {embedding_text(summary['embedding'])}")
    return lines
