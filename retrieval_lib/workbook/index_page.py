"""The run's ``index.html``: what was validated, what failed and what to do, then every notebook's figures.

Read by people: failures come first, each with a hint; numbers carry units and
significant digits; nothing is shown as Python text. The words come from
:mod:`retrieval_lib.workbook.summary`, the same as the terminal summary.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from retrieval_lib.workbook.gates import gate_key
from retrieval_lib.workbook.glossary import definition_of, unit_of
from retrieval_lib.workbook.registry import notebook_spec
from retrieval_lib.workbook.report import gate_state
from retrieval_lib.workbook.specs import explain
from retrieval_lib.workbook.summary import (
    data_text,
    duration_text,
    embedding_text,
    format_value,
    gate_hint,
    provenance_text,
    rule_text,
    verdict,
)

__all__ = ["render_index"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#1d2330;padding:0 1rem}
h1{margin-bottom:.2rem}.sub{color:#5b6478;margin-top:0}
.verdict{display:inline-block;padding:.4rem .9rem;border-radius:6px;font-weight:600;color:#fff}
.ok{background:#1f8a4c}.bad{background:#c0392b}.err{background:#8e44ad}.warn{background:#b9770e}
table{border-collapse:collapse;width:100%;margin:.6rem 0 1.4rem;font-size:.92rem}
th,td{border-bottom:1px solid #e3e6ec;padding:.35rem .5rem;text-align:left;vertical-align:top;
overflow-wrap:break-word}
th{background:#f4f6fa}.pass{color:#1f8a4c;font-weight:600}.fail{color:#c0392b;font-weight:600}.na{color:#6b7280;font-weight:600}
table.facts th{width:12rem;background:none;color:#5b6478;font-weight:500}
section{border:1px solid #e3e6ec;border-radius:8px;padding:.8rem 1.1rem;margin:1rem 0}
section h2{margin:.2rem 0 .4rem;font-size:1.15rem}
.figs img{display:block;max-width:100%;margin:.6rem 0;border:1px solid #e3e6ec}
.problems{border:2px solid #c0392b;background:#fdf3f2}.problems h2{color:#c0392b}
.problems li{margin:.5rem 0}.hint{color:#5b6478}
code{background:#f4f6fa;padding:0 .25rem;border-radius:3px}
"""

_E = html.escape
_METRIC_HEAD = "<table><tr><th>figure</th><th>value</th><th>what it is</th></tr>"


def _facts(summary: dict[str, Any]) -> str:
    v = summary.get("validated") or {}
    ran = summary.get("notebooks", [])
    available = summary.get("notebooks_available") or ran
    not_run = summary.get("notebooks_not_run") or []
    numbers = ", ".join(n[:2] for n in ran)
    embedder = " / ".join(str(x) for x in (v.get("provider"), v.get("model")) if x) or "unknown"
    if v.get("dimension"):
        embedder += f" ({v['dimension']} dimensions)"
    rows = [
        ("Parameters", f"<code>{_E(str(summary.get('params_file', '')))}</code> (profile "
                       f"<code>{_E(str(summary.get('profile', '')))}</code>)"),
        ("Collection", f"<code>{_E(str(v.get('collection') or 'unknown'))}</code>"),
        ("Qdrant", _E(f"{v.get('location') or 'unknown'}" + (f" ({v['store']})" if v.get("store") else ""))),
        ("Embedding model", _E(embedder)),
        ("Notebooks run", _E(f"{len(ran)} of {len(available)}: {numbers}")
         + (f" · <b>not run:</b> {_E(', '.join(not_run))}" if not_run else "")),
        ("Embed calls", _E(embedding_text(summary.get("embedding")))),
        *([("Validation data", _E(data_text(summary)))] if data_text(summary) else []),
        ("When", _E(f"started {summary.get('started')} · {duration_text(summary.get('duration_s'))}")),
        ("Workbook", _E(str(summary.get("version") or "unknown"))),
    ]
    return '<table class="facts">' + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def _problems(summary: dict[str, Any]) -> str:
    items = []
    for o in summary.get("outcomes", []):
        if o.get("status") == "error":
            items.append(f"<li><b>{_E(o['notebook'])} raised an error</b>: {_E(o.get('error') or '')}<br>"
                         '<span class="hint">Open its executed notebook (linked below) for the traceback; its gates '
                         "after the error were not judged.</span></li>")
    for g in summary.get("gates", []):
        if gate_state(g) != "failed":
            continue
        items.append(f"<li data-gate=\"{_E(gate_key(g))}\"><b>{_E(g['notebook'][:2])} · {_E(g['name'])}</b>"
                     f": {_E(g.get('detail') or '')} "
                     f"<code>{_E(rule_text(g))}</code><br><span class=\"hint\">What to do: "
                     f"{_E(gate_hint(g, summary.get('params_file')))}</span></li>")
    if not items:
        return ""
    return f'<section class="problems"><h2>Needs attention ({len(items)})</h2><ul>{"".join(items)}</ul></section>'


def _gate_rows(gates: list[dict[str, Any]]) -> str:
    order = {"failed": 0, "not applicable": 1, "passed": 2}
    ordered = sorted(gates, key=lambda g: order[gate_state(g)])  # failures first, otherwise in run order
    rows = []
    drafted = any(g.get("provenance") for g in gates)  # a "data" column only when some data carries origins
    for g in ordered:
        mark = {"passed": '<span class="pass">PASS</span>', "failed": '<span class="fail">FAIL</span>',
                "not applicable": '<span class="na">N/A</span>'}[gate_state(g)]
        data = f"<td>{_E(provenance_text(g) or 'hand-written or none')}</td>" if drafted else ""
        # rows are keyed by the gate's stable id (its name in a run written before ids): the same gate, whatever
        # its threshold, has the same key in every run's page
        rows.append(f"<tr data-gate=\"{_E(gate_key(g))}\"><td>{_E(g['notebook'])}</td><td>{_E(g['name'])}</td>"
                    f"<td>{mark}</td>"
                    f"<td>{_E(rule_text(g))}</td><td>{_E(g.get('detail') or '')}</td>{data}</tr>")
    return "".join(rows) or '<tr><td colspan="5">no gates recorded</td></tr>'


def _section(o: dict[str, Any]) -> str:
    status_cls = {"passed": "ok", "failed": "bad", "error": "err"}.get(o["status"], "warn")
    links = []
    if o.get("html"):
        links.append(f'<a href="{_E(o["html"])}">report (HTML)</a>')
    if o.get("executed"):
        links.append(f'<a href="{_E(o["executed"])}">executed notebook (with code)</a>')
    links += [f'<a href="{_E(t)}">{_E(Path(t).name)}</a>' for t in o.get("tables", [])]
    units = o.get("units") or {}
    metrics = "".join(
        f'<tr><td title="{_E(definition_of(k))}">{_E(k.replace("_", " "))}</td>'
        f"<td>{_E(format_value(v, units.get(k) or unit_of(k)))}</td><td class=\"sub\">{_E(definition_of(k))}</td></tr>"
        for k, v in o.get("metrics", {}).items())
    findings = "".join(f"<li>{_E(f)}</li>" for f in o.get("findings", []))
    figs = "".join(f'<a href="{_E(f)}"><img src="{_E(f)}" alt="{_E(Path(f).stem)}"></a>' for f in o.get("figures", []))
    error = f'<p class="fail">Error: {_E(o["error"])}</p>' if o.get("error") else ""
    spec = o.get("specification") or []
    spec_line = (f'<p class="sub">Specification: {_E(", ".join(spec))} (see the glossary below)</p>'
                 if spec else "")
    title = o.get("title") or ("(the notebook stopped before saying what it checks)" if o["status"] == "error" else "")
    return (
        f'<section><h2>{_E(o["notebook"])} <span class="verdict {status_cls}" style="font-size:.75rem">'
        f'{_E(o["status"])}</span></h2><p class="sub">{_E(title)} · {duration_text(o.get("seconds"))}</p>'
        f"{spec_line}{error}{'<ul>' + findings + '</ul>' if findings else ''}"
        f"{_METRIC_HEAD + metrics + '</table>' if metrics else ''}"
        f'<div class="figs">{figs}</div><p>{" · ".join(links)}</p></section>'
    )


def _compared(summary: dict[str, Any]) -> str:
    """"Compared with <run>": notebook 14's verdict and findings, when it found a baseline."""
    for o in summary.get("outcomes", []):
        ours = o["notebook"] == notebook_spec("compare").stem
        baseline = (o.get("metrics") or {}).get("baseline_run") if ours else None
        if baseline:
            items = "".join(f"<li>{_E(f)}</li>" for f in o.get("findings", [])[1:6])
            return f"<section><h2>Compared with {_E(str(baseline))}</h2><ul>{items}</ul></section>"
    return ""


def render_index(summary: dict[str, Any]) -> str:
    """The run's index.html from its summary (see :mod:`retrieval_lib.workbook.runner` for the summary's fields)."""
    v = verdict(summary)
    data_head = "<th>data</th>" if any(g.get("provenance") for g in summary.get("gates", [])) else ""
    sections = "".join(_section(o) for o in summary.get("outcomes", []))
    codes = list(dict.fromkeys(c for o in summary.get("outcomes", []) for c in o.get("specification") or []))
    glossary = ("<h2>Specification glossary</h2><table><tr><th>code</th><th>what it asks</th></tr>"
                + "".join(f"<tr><td>{_E(c)}</td><td>{_E(explain(c))}</td></tr>" for c in codes) + "</table>"
                if codes else "")
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Retrieval validation · {_E(str(summary.get('profile', '')))} · {_E(v.word)}</title><style>{_CSS}</style></head>
<body><h1>Retrieval validation report</h1>
<p><span class="verdict {v.css}">{_E(v.sentence)}</span></p>
{_facts(summary)}
{_problems(summary)}
{_compared(summary)}
<h2>Gates</h2><table><tr><th>notebook</th><th>gate</th><th>result</th><th>measured</th><th>evidence</th>{data_head}</tr>
{_gate_rows(summary.get('gates', []))}</table>
<h2>Notebooks</h2>{sections}
{glossary}
<p class="sub"><a href="summary.json">summary.json</a></p></body></html>"""
