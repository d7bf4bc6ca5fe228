"""Writing a draft: ``golden.yaml``, ``queries.yaml``, ``topics.yaml``, ``profile.yaml`` (docs/drafting.md).

Every drafted entry carries ``origin: drafted`` and a ``draft_id``. A re-draft into the same folder **never
overwrites** a person's work: an entry whose ``origin`` is ``reviewed`` (or that has no origin: hand-written) or
whose ``status`` is ``rejected`` is kept as it is, and a fresh draft of the same ``draft_id`` is not added again.
Earlier drafted entries that nobody reviewed are replaced by the new draft. Each file is written to a temporary
name and renamed into place, so the review view (notebook 13) never reads half a file.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.drafting.draft import Draft
from retrieval_lib.files import write_text_atomic
from retrieval_lib.params import read_yaml

__all__ = ["write_draft"]

#: Golden ``min_score`` and negatives' ``max_score`` when the base profile sets no ``candidate_threshold``
#: (notebook 02's default, measured on MiniLM; a profile for another model should set its own).
DEFAULT_THRESHOLD = 0.35
#: Share of the golden queries that must pass (``required_passes``), as seed 004's 4 of 5.
REQUIRED_SHARE = 0.8


class DraftFiles(dict[str, Path]):
    """The files written (``golden``, ``queries``, ``topics``, ``profile``, ``dropped``) and what was kept."""

    kept_reviewed: int = 0
    notes: list[str]


def _kept(items: Any) -> list[dict[str, Any]]:
    """Entries of an earlier file that a re-draft must keep: reviewed, hand-written, or rejected."""
    if not isinstance(items, list):
        return []
    return [i for i in items if isinstance(i, dict)
            and (i.get("origin", "reviewed") != "drafted" or i.get("status") == "rejected")]


def _merge(old: list[dict[str, Any]], new: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    ids = {str(i.get("draft_id")) for i in old if i.get("draft_id")}
    texts = {str(i.get("query") or i.get("topic") or "").lower() for i in old}
    fresh = [n for n in new if n["draft_id"] not in ids and str(n.get("query") or n.get("topic")).lower() not in texts]
    return old + fresh


def _previous(path: Path) -> dict[str, Any]:
    return read_yaml(path, what="drafted file")[0] if path.is_file() else {}


def _write(path: Path, head: str, data: Mapping[str, Any]) -> None:
    write_text_atomic(path, head + yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True, width=120))


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path.resolve())


def write_draft(draft: Draft, out: str | os.PathLike[str], *, base: Mapping[str, Any] | None = None,
                top_k: int = 5) -> DraftFiles:
    """Write the draft's four files (and ``dropped.yaml``, the reasons) into ``out``, keeping reviewed entries.

    Args:
        base: the profile to start from (``--profile``): every key is kept, and ``query_sets``, ``golden_set``
            and ``topics`` point at the drafted files. Its ``candidate_threshold`` becomes the golden
            ``min_score`` and the negatives' ``max_score`` (else :data:`DEFAULT_THRESHOLD`).

    Raises:
        ParamsError: an earlier file in ``out`` is not valid YAML.
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    base = dict(base or {})
    threshold = float(base.get("candidate_threshold") or DEFAULT_THRESHOLD)
    stamp = f"{datetime.now(UTC):%Y-%m-%d}"
    head = (f"# Drafted by `python -m retrieval_lib draft` on {stamp} from collection {draft.collection!r}.\n"
            "# origin: drafted = nobody looked yet; review in notebook 13 (origin: reviewed). A re-draft keeps "
            "reviewed and rejected entries.\n")
    files = DraftFiles()
    files.notes = []

    old = _previous(folder / "golden.yaml")
    queries = _merge(_kept(old.get("queries")), (
        {"query": k.query, "expected_url_patterns": [k.expected], "origin": "drafted", "draft_id": k.draft_id,
         "drafted_from": {"kind": k.kind, "chunk_id": k.chunk_id, "text": k.source_text}} for k in draft.known))
    negatives = _merge(_kept(old.get("negatives")), (
        {"query": n.query, "max_score": threshold, "origin": "drafted",
         "draft_id": _neg_id(n.query)} for n in draft.kept_negatives))
    active = [q for q in queries if q.get("status") != "rejected"]
    golden = {"name": f"{draft.collection}-drafted", "top_k": top_k, "min_score": threshold,
              "required_passes": math.ceil(REQUIRED_SHARE * len(active)), "queries": queries, "negatives": negatives}
    if active:
        _write(folder / "golden.yaml", head, golden)
        files["golden"] = folder / "golden.yaml"
    else:
        files.notes.append("no golden.yaml: no known-item query could be drafted (see dropped.yaml)")

    old = _previous(folder / "queries.yaml")
    in_domain = _merge(_kept(old.get("in_domain")), (
        {"query": k.query, "origin": "drafted", "draft_id": k.draft_id, "source": k.expected} for k in draft.known))
    ood = _merge(_kept(old.get("out_of_domain")), (
        {"query": n.query, "origin": "drafted", "draft_id": _neg_id(n.query)} for n in draft.kept_negatives))
    if in_domain and ood:
        _write(folder / "queries.yaml", head, {"in_domain": in_domain, "out_of_domain": ood})
        files["queries"] = folder / "queries.yaml"
    else:
        files.notes.append("no queries.yaml: " + ("no in-domain query" if not in_domain else "no negative kept"))

    old = _previous(folder / "topics.yaml")
    topics = _merge(_kept(old.get("topics")), (
        {"topic": t.topic, "expected_prefix": t.expected_prefix, "origin": "drafted", "draft_id": t.draft_id}
        for t in draft.topics))
    if topics:
        _write(folder / "topics.yaml", head, {"topics": topics})
        files["topics"] = folder / "topics.yaml"
    else:
        files.notes.append("no topics.yaml: " + "; ".join(d.reason for d in draft.topics_dropped))

    _write(folder / "dropped.yaml", "# What `draft` left out, and why (not read by any notebook).\n", {
        "known_items": [{"text": d.text, "page": d.page, "kind": d.kind, "reason": d.reason} for d in draft.dropped],
        "topics": [{"text": d.text, "prefix": d.page, "reason": d.reason} for d in draft.topics_dropped],
        "negatives": [{"query": n.query, "best_score": None if n.best_score is None else round(n.best_score, 3),
                       "reason": n.reason} for n in draft.negatives if not n.kept]})
    files["dropped"] = folder / "dropped.yaml"

    profile = dict(base)
    profile.setdefault("profile", f"{draft.collection}-drafted")
    profile.setdefault("collection", draft.collection)
    for key, name in (("golden_set", "golden"), ("query_sets", "queries"), ("topics", "topics")):
        if name in files:
            profile[key] = _shown(files[name])
    _write(folder / "profile.yaml", head + "# golden_set, query_sets and topics point at the drafted files; every "
           "other key is the base profile's.\n", profile)
    files["profile"] = folder / "profile.yaml"
    files.kept_reviewed = sum(1 for items in (queries, negatives, in_domain, ood, topics) for i in items
                              if i.get("origin") != "drafted" or i.get("status") == "rejected")
    return files


def _neg_id(query: str) -> str:
    from retrieval_lib.drafting.known_items import draft_id

    return draft_id("negative", "", query)
