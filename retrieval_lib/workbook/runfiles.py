"""Run files: what each notebook that runs queries keeps so that two runs can be compared.

A notebook that runs queries writes ``runs/<notebook>.json`` under its run folder (one small JSON file)::

    {"format": "retrieval_lib.runfile/1", "notebook": "05_golden_set",
     "settings": {"collection": "...", "provider": "local", "model": "...", "dimension": 384, "top_k": 5},
     "query_set": "fixed",            # "fixed": from a params file; "derived": made from the collection
     "qrels_level": "source_url",     # what the qrels' document ids are (a page, a file), or null
     "queries": {"q1a2b3c4d5e": {"text": "What is ROS2?", "kind": "extra"}},
     "run":     {"q1a2b3c4d5e": {"<chunk id>": 0.734211, ...}},    # the TREC/ranx run, in rank order
     "chunks":  {"<chunk id>": ["<source_file>", "<source_url>"]},  # each retrieved chunk's file and page, once
     "qrels":   {"q1a2b3c4d5e": {"/docs/module-01-ros2/what-is-ros2": 1}}}   # the TREC/ranx qrels

``run`` and ``qrels`` are exactly ranx's dict forms (``ranx.Run(doc["run"])``, ``ranx.Qrels(doc["qrels"])``);
each query's chunks are listed in rank order (JSON keeps it), and ``chunks`` names each one's source file and
page once for all queries, which keeps the file small. A query id is derived from the query text alone
(:func:`retrieval_lib.models.query_id`, the one rule), so the same query has the same id in every run, every
notebook and the judgments' qrels.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrieval_lib.errors import ConfigurationError, ValidationError
from retrieval_lib.files import write_text_atomic
from retrieval_lib.models import SearchResponse, query_id

__all__ = ["FORMAT", "RUNS_FOLDER", "RunFile", "query_id", "write_run", "read_run", "read_runs"]

FORMAT = "retrieval_lib.runfile/1"
#: The folder of a run that holds its run files.
RUNS_FOLDER = "runs"
_QUERY_SETS = ("fixed", "derived")


@dataclass
class RunFile:
    """One notebook's run file (see the module docstring for the fields)."""

    notebook: str
    settings: dict[str, Any]
    queries: dict[str, dict[str, str]]
    run: dict[str, dict[str, float]]
    chunks: dict[str, list[str | None]]
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    qrels_level: str | None = None
    query_set: str = "fixed"

    @property
    def results(self) -> dict[str, list[list[Any]]]:
        """Each query's results in rank order as ``[chunk id, score, source_file, source_url]`` rows."""
        return {q: [[c, s, *self.chunks.get(c, [None, None])] for c, s in docs.items()] for q, docs in self.run.items()}

    def text(self, qid: str) -> str:
        """The query text of ``qid``."""
        return self.queries[qid]["text"]

    def of_kind(self, *kinds: str) -> list[str]:
        """Query ids whose kind is one of ``kinds``, in file order."""
        return [q for q, meta in self.queries.items() if meta.get("kind") in kinds]

    def top1(self, qid: str) -> float | None:
        """The top result's score of ``qid`` (None when it returned nothing)."""
        top = next(iter((self.run.get(qid) or {}).values()), None)
        return None if top is None else float(top)

    def as_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "notebook": self.notebook, "settings": self.settings, "query_set": self.query_set,
                "qrels_level": self.qrels_level, "queries": self.queries, "run": self.run, "chunks": self.chunks,
                "qrels": self.qrels}


def write_run(report: Any, responses: Sequence[SearchResponse], *, kinds: Sequence[str] | str, top_k: int,
              qrels: Mapping[str, Mapping[str, int]] | Iterable[tuple[str, str]] | None = None,
              qrels_level: str | None = None,
              query_set: str = "fixed") -> Path:
    """Write ``runs/<report.notebook>.json`` under ``report.run_dir`` and return its path.

    Args:
        report: the notebook's :class:`~retrieval_lib.workbook.report.NotebookReport` (its ``run_dir``, ``notebook`` and
            ``context``: collection, provider, model, dimension).
        responses: one response per query, in the order asked. A query asked twice is kept once (the first).
        kinds: each query's kind (``"golden"``, ``"in_domain"`` ...), one per response, or one kind for all.
        top_k: results asked per query.
        qrels: query TEXT to {document id: relevance}, or (query text, document id) pairs (relevance 1);
            the document ids are at ``qrels_level``. Queries not asked are ignored.
        qrels_level: ``"source_url"``, ``"source_file"`` or ``"chunk_id"``: what a document of ``qrels`` is.
        query_set: ``"fixed"`` (from a params file: two runs must ask the same queries) or ``"derived"``
            (made from the collection, e.g. its headings: compared on the queries both runs asked).

    Raises:
        ValidationError: ``kinds`` of the wrong length, or ``query_set`` or ``qrels_level`` unknown.
    """
    kind_list = [kinds] * len(responses) if isinstance(kinds, str) else list(kinds)
    if len(kind_list) != len(responses):
        raise ValidationError(f"kinds has {len(kind_list)} entries for {len(responses)} responses", field="kinds")
    if query_set not in _QUERY_SETS:
        raise ValidationError(f"query_set must be one of {_QUERY_SETS} (got {query_set!r})", field="query_set")
    if qrels_level not in (None, "source_url", "source_file", "chunk_id"):
        raise ValidationError(f"unknown qrels_level {qrels_level!r}", field="qrels_level")
    context = dict(getattr(report, "context", {}) or {})
    settings = {k: context.get(k) for k in ("collection", "provider", "model", "dimension")}
    settings["top_k"] = top_k
    doc = RunFile(notebook=report.notebook, settings=settings, queries={}, run={}, chunks={},
                  qrels_level=qrels_level if qrels else None, query_set=query_set)
    for response, kind in zip(responses, kind_list):
        qid = query_id(response.query_text)
        if qid in doc.queries:
            continue
        doc.queries[qid] = {"text": response.query_text, "kind": kind}
        run: dict[str, float] = {}
        for r in response.results:  # a chunk listed twice keeps its first (higher) score
            chunk = str(r.chunk_id or r.point_id)
            run.setdefault(chunk, round(float(r.similarity_score), 6))
            doc.chunks.setdefault(chunk, [r.source_file, r.source_url])
        doc.run[qid] = run
    pairs = ([(t, d, r) for t, judged in qrels.items() for d, r in judged.items()] if isinstance(qrels, Mapping)
             else [(t, d, 1) for t, d in qrels or ()])
    for text, doc_id, rel in pairs:
        qid = query_id(text)
        if qid in doc.queries:
            doc.qrels.setdefault(qid, {})[str(doc_id)] = int(rel)
    path = Path(report.run_dir) / RUNS_FOLDER / f"{report.notebook}.json"
    return write_text_atomic(path, json.dumps(doc.as_dict(), ensure_ascii=False, separators=(",", ":")), fsync=False)


def read_run(path: str | os.PathLike[str]) -> RunFile:
    """Read one run file.

    Raises:
        ConfigurationError: the file is missing, not JSON, or not a run file of this format.
    """
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ConfigurationError(f"cannot read run file {p}: {err}; re-run its notebook to write it again",
                                 path=str(p)) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ConfigurationError(f"{p} is not a run file ({FORMAT}); re-run its notebook", path=str(p))
    return RunFile(notebook=doc["notebook"], settings=doc.get("settings") or {}, queries=doc["queries"],
                   run=doc["run"], chunks=doc.get("chunks") or {}, qrels=doc.get("qrels") or {},
                   qrels_level=doc.get("qrels_level"), query_set=doc.get("query_set", "fixed"))


def read_runs(run_dir: str | os.PathLike[str]) -> dict[str, RunFile]:
    """Every run file of a run folder, by notebook name (empty when the run wrote none).

    Raises:
        ConfigurationError: ``run_dir`` is not a folder, or one of its run files is unreadable.
    """
    folder = Path(run_dir)
    if not folder.is_dir():
        raise ConfigurationError(f"run folder {folder} does not exist; pass a folder under outputs/",
                                 path=str(folder))
    return {p.stem: read_run(p) for p in sorted((folder / RUNS_FOLDER).glob("*.json"))}
