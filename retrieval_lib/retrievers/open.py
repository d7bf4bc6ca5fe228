"""Build a retriever from a spec, and probe one: ask once, infer the mapping, say it with its evidence."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from retrieval_lib.config import Settings
from retrieval_lib.errors import ConfigurationError, ParamsError
from retrieval_lib.retrievers.as_search import RANKS_ONLY
from retrieval_lib.retrievers.base import MappedRetriever, QuestionRetriever
from retrieval_lib.retrievers.child import PythonRetriever
from retrieval_lib.retrievers.collection import CollectionRetriever
from retrieval_lib.retrievers.http import HttpRetriever
from retrieval_lib.retrievers.mapping import COSINE_ASSUMED, ResultMapping, infer_score, score_order
from retrieval_lib.retrievers.spec import Hit, RetrieverSpec, redact
from retrieval_lib.search import Retriever

__all__ = ["parse_spec", "team_retriever", "open_retriever", "probe_retriever", "ProbeReport", "PROBE_TRIES"]

#: Questions a probe asks at most, in turn, while the answers are empty.
PROBE_TRIES = 4


def parse_spec(spec: RetrieverSpec | Mapping[str, Any] | str | None, *, where: str = "RETRIEVER_SPEC",
               profile: str | None = None) -> RetrieverSpec:
    """A validated :class:`RetrieverSpec` from a spec, a mapping, its JSON text, or None (the collection).

    Args:
        where: the variable the spec came from (for the error).
        profile: the profile file it came from; its errors are then :class:`ParamsError` s naming the key.

    Raises:
        ConfigurationError: the mapping is not a valid retriever (the message names the key and what to write).
        ParamsError: the same, for a spec read from ``profile``.
    """
    if isinstance(spec, RetrieverSpec):
        return spec
    if spec is None or spec == "" or spec == {}:
        return RetrieverSpec()
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError:
            raise ConfigurationError(f"{where} must be a JSON object (a profile's `retriever:` mapping)",
                                     variable=where) from None
    if not isinstance(spec, Mapping):
        if profile is not None:
            raise ParamsError(f"{Path(profile).name}: `retriever` must be a mapping (kind: http | python | "
                              "collection; docs/retrievers.md)", path=profile, key="retriever")
        raise ConfigurationError(f"{where}: `retriever` must be a mapping (kind: http | python | collection)",
                                 variable=where)
    try:
        return RetrieverSpec.model_validate(dict(spec))
    except pydantic.ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(p) for p in first.get("loc", ())) or "retriever"
        if profile is not None:
            raise ParamsError(f"{Path(profile).name}: retriever.{key}: {first.get('msg')} (see docs/retrievers.md)",
                              path=profile, key=f"retriever.{key}") from None
        raise ConfigurationError(f"{where}: retriever.{key}: {first.get('msg')} (see docs/retrievers.md)",
                                 variable=where) from None


def team_retriever(*sources: Settings | Mapping[str, Any] | None) -> RetrieverSpec | None:
    """The team's retriever a run asks, or None when the collection answers the questions itself: the one rule for
    "a team retriever is configured", which the plan (notebook 15's queries) and the kernel both read.

    Each source is a profile's values (its ``retriever:`` key) or :class:`~retrieval_lib.config.Settings` (its
    ``retriever``: ``RETRIEVER_SPEC`` from the environment or ``.env``, which ``run --params P`` sets from the
    profile's ``retriever:``). The first source that names a retriever decides, ``kind: collection`` included (a
    profile that says the collection is not overridden by the environment); None and empty ones are skipped.

    Raises:
        ConfigurationError: the retriever named is not a valid one (the message names the key and what to write).
    """
    for source in sources:
        if source is None:
            continue
        value = source.get("retriever") if isinstance(source, Mapping) else getattr(source, "retriever", None)
        if value:
            spec = parse_spec(value)
            return None if spec.kind == "collection" else spec
    return None


def open_retriever(spec: RetrieverSpec | Mapping[str, Any] | str | None, *, settings: Settings | None = None,
                   collection_retriever: Retriever | None = None) -> QuestionRetriever:
    """The :class:`QuestionRetriever` a spec describes.

    Args:
        spec: the profile's ``retriever:`` (None or ``kind: collection``: the collection itself).
        settings: used to open the collection when ``kind`` is collection and no ``collection_retriever`` is given.
        collection_retriever: an open :class:`~retrieval_lib.search.Retriever` to wrap (not closed by ours).

    Raises:
        ConfigurationError: an invalid spec.
    """
    parsed = parse_spec(spec)
    if parsed.kind == "http":
        return HttpRetriever(parsed)
    if parsed.kind == "python":
        return PythonRetriever(parsed)
    if collection_retriever is not None:
        return CollectionRetriever(collection_retriever)
    return CollectionRetriever(Retriever.from_settings(settings), owned=True)


@dataclass
class ProbeReport:
    """One probe of a retriever: what it answered, the mapping inferred from it, and a spec that holds it."""

    question: str
    describe: str
    raw: Any = None
    error: str | None = None
    error_kind: str | None = None
    results: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    hits: list[dict[str, Any]] = field(default_factory=list)
    spec: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    def lines(self) -> list[str]:
        """What ``retriever --params P`` prints."""
        out = [f"retriever: {self.describe}", f"question: {self.question!r}"]
        if self.error:
            return out + [f"failed: {self.error}"]
        out.append(f"mapping: results at `{self.results}`; "
                   + ", ".join(f"{k}=`{v}`" for k, v in self.fields.items()))
        out += [f"  {line}" for line in self.evidence]
        distance = "distance" in self.fields and "score" not in self.fields
        for hit in self.hits[:3]:
            text = (hit.get("content") or "")[:70].replace("\n", " ")
            score = hit.get("score")
            shown = (f"  distance {1 - score:.3f} -> score {score:.3f}" if distance else f"  score {score:.3f}"
                     ) if isinstance(score, float) else ""
            out.append(f"  #{hit['rank']} {hit.get('source_url') or hit.get('source_file') or '(no source)'}"
                       + shown + f"  {text!r}")
        if self.hits and all(h.get("score") is None for h in self.hits):
            out.append(f"  {RANKS_ONLY}; 1/rank stands in, and the gates that read a score (01's order and no-match, "
                       "02's three, 05's min_score and negatives) are not applicable")
        return out


def _distance_if_rising(mapping: ResultMapping, hits: Sequence[Hit]) -> ResultMapping:
    """The profile's mapping with its ``score`` read as a ``distance`` when the answer's scores rise down the
    ranking (lower is better), with a note that says so; else ``mapping``. (An inferred score never rises:
    :func:`~retrieval_lib.retrievers.mapping.infer_mapping` made the same choice on the same answer.)"""
    expr = mapping.fields.get("score")
    scores = [h.score for h in hits]
    if expr is None or "distance" in mapping.fields or score_order(scores) != "rises":
        return mapping
    fields = {("distance" if k == "score" else k): v for k, v in mapping.fields.items()}
    shown = ", ".join(f"{s:.3g}" for s in scores[:4] if s is not None)
    return ResultMapping(mapping.results, fields, notes=(*mapping.notes, (
        f"distance: `{expr}`, mapped as the score, rises down the ranking ({shown}): a distance, lower is better; "
        f"{COSINE_ASSUMED}; the profile written says `distance: {expr}`")))


def _score_of(mapping: ResultMapping, raw: Any) -> ResultMapping:
    """The profile's mapping with the score (or distance) the answer holds added, when it maps neither, with the
    evidence as a note; else ``mapping``."""
    if "score" in mapping.fields or "distance" in mapping.fields:
        return mapping
    found, evidence = infer_score(mapping.result_list(raw))
    if not found:
        return mapping
    return ResultMapping(mapping.results, {**mapping.fields, **found}, notes=(
        *mapping.notes, *(f"{line} (the profile maps no score: added)" for line in evidence)))


def probe_retriever(spec: RetrieverSpec | Mapping[str, Any] | str, question: str, *, top_k: int = 5,
                    more: Sequence[str] = ()) -> ProbeReport:
    """Ask ``question`` once, infer ``results``/``fields`` from the raw answer where the spec leaves them out.

    An empty answer holds nothing to read the mapping from: each of ``more`` (at most :data:`PROBE_TRIES` questions
    in all) is then asked in turn until one is answered with results; the report's ``question`` is the one that was.
    Empty answers to several questions about the book are named as such: a threshold or a filter in the
    retriever is the usual cause.

    A failure (unreachable, timeout, an HTTP error, no list in the answer...) is in the report's ``error``, one
    line with secrets redacted, never raised.

    Raises:
        ConfigurationError: an invalid spec, or ``kind: collection`` (nothing to probe).
    """
    parsed = parse_spec(spec)
    if parsed.kind == "collection":
        raise ConfigurationError("the profile's retriever is the collection itself: there is nothing to probe; "
                                 "give `retriever:` a kind http or python (docs/retrievers.md)",
                                 variable="RETRIEVER_SPEC")
    retriever: MappedRetriever = HttpRetriever(parsed) if parsed.kind == "http" else PythonRetriever(parsed)
    report = ProbeReport(question=question, describe=retriever.describe())
    asked: list[str] = []
    try:
        for text in list(dict.fromkeys([question, *more]))[:PROBE_TRIES]:
            asked.append(text)
            report.question = text
            answer = retriever.ask(text, top_k)
            # what the team's service echoes back (a debug field with its headers ...) is shown without our secrets
            report.raw = json.loads(redact(json.dumps(retriever.last_raw), retriever._secrets))
            if answer.error:
                report.error, report.error_kind = answer.error, answer.error_kind
                return report
            if retriever.mapping is not None:
                break
        mapping = retriever.mapping
        if mapping is None:  # only empty answers: nothing to infer the mapping from
            report.question = asked[0]
            which = (f"{asked[0]!r}" if len(asked) == 1 else
                     f"all {len(asked)} questions tried ({', '.join(repr(q) for q in asked)})")
            report.error, report.error_kind = (
                f"the retriever answered {which} with no results, so there is nothing to read the mapping from: "
                "probe with a question its book answers (--question)"
                + ("; if those are such questions, its empty answers are themselves a finding (a similarity "
                   "threshold or a filter in its code; notebook 15 names it)" if len(asked) > 1 else "")), \
                "empty answer"
            return report
        hits = answer.hits
        if (fixed := _score_of(_distance_if_rising(mapping, hits), retriever.last_raw)) is not mapping:
            mapping, hits = fixed, fixed.hits(retriever.last_raw, top_k)
        report.results, report.fields = mapping.results, dict(mapping.fields)
        report.evidence = [*(retriever.mapping_evidence or ["the profile gives results and fields"]), *mapping.notes]
        if len(asked) > 1:
            report.evidence.insert(0, f"{len(asked) - 1} question(s) answered with no results first: "
                                      + ", ".join(repr(q) for q in asked[:-1]))
        report.hits = [h.model_dump() for h in hits]
        report.spec = parsed.model_copy(update={"results": mapping.results, "fields": dict(mapping.fields)}).public()
    finally:
        retriever.close()
    return report
