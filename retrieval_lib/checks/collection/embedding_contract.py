"""Embedding contract: does the configured embedder still make the vectors the collection holds?

The dimension and the ``model_version`` string can both match while the vectors come from another model, another
``input_type`` or another text. This check asks the vectors themselves:

1. a seeded sample of stored points, stratified by ``source_file``
   (:func:`~retrieval_lib.checks.collection._contract_sample.sample_points`), is read with its vectors;
2. each point's text is re-embedded *as a document*, the way ingest embedded it (the title line, then ``content``:
   :func:`~retrieval_lib.collection.ours.embedded_text`), and compared with the stored vector by cosine similarity
   ``cos(u, v) = u·v / (|u| |v|)``: with the same model, input type and text it is 1 up to float noise;
3. self-retrieval: each chunk's first sentence (:func:`probe_query`) is embedded *as a query* and searched; the
   share of chunks whose own point (and own file) is in the top k of the collection is reported, with its Wilson
   interval. That share is a property of the book (on a real book first sentences are often generic: "In this
   chapter we will ..."), so it is shown, not gated. What a contract fault changes is gated instead: the same
   queries rank each chunk among the sample twice, once by its stored vector and once by a fresh re-embedding of
   the same text. A sound collection ranks them alike; vectors from another model, input type or text rank their
   own chunk lower (:attr:`ProbeResult.self_retrieval_drop`).

When a cosine falls below the gate, the failing texts are re-embedded under every other input type the provider
has (Cohere's ``search_query``, ``classification``, ``clustering``; Gemini's task types; a sentence-transformers
model's prompts; "query" for the rest) and :func:`~retrieval_lib.checks.collection._contract_diagnosis.diagnose`
says why: which input type the stored vectors match best, with the cosines ("documents embedded as queries"). A
collection whose dimension is a reduced one of the configured model is named as such before anything is embedded,
and stored vectors that are not unit length are reported.

:func:`run` is the check (notebook 09, ``check embedding_contract`` and its older name ``probe``): it measures with
:func:`probe` (which the scale benchmark also times) and its :class:`EmbeddingContract` records the gates, findings,
metrics, figures and tables. :func:`plan_cost` says what it costs before anything is embedded.
"""

from __future__ import annotations

import hashlib
import math
import re
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval_lib.checks.collection._contract_diagnosis import Diagnosis, diagnose
from retrieval_lib.checks.collection._contract_sample import sample_points
from retrieval_lib.checks.gates import CONTRACT_COSINE, CONTRACT_SELF_RETRIEVAL
from retrieval_lib.checks.statistics import wilson
from retrieval_lib.collection.ours import embedded_form, row_cosines
from retrieval_lib.embedding.base import embed_as, input_types_of, request_size
from retrieval_lib.embedding.providers import Embedder, batch_limit
from retrieval_lib.errors import ModelMismatchError
from retrieval_lib.search import ensure_compatible
from retrieval_lib.stores import ReadableStore
from retrieval_lib.stores.base import require_vector
from retrieval_lib.validation import number_in, whole_number
from retrieval_lib.workbook.check import NotApplicable
from retrieval_lib.workbook.plots import plain_figure

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport, NotebookRun

__all__ = ["run", "EmbeddingContract", "cost_line", "plan_cost", "check_args", "probe", "ProbeResult", "probe_query",
           "sample_points"]

#: The gates this check records.
GATES = (CONTRACT_COSINE, CONTRACT_SELF_RETRIEVAL)

#: Default gate on the lowest cosine between a stored vector and its re-embedding. Measured on the sample book
#: (MiniLM, 462 chunks): min 0.99999992, median 1.0000000; torch's CPU kernels move the last digits only. A model
#: of the same dimension gives cosines near 0 (a random rotation: median -0.03), a swapped Cohere input type well
#: below 0.99; 0.99 is far from both and far above float noise.
DEFAULT_MIN_COSINE = 0.99
#: Default gate on how much lower the sampled chunks' self-retrieval is with their stored vectors than with fresh
#: re-embeddings of the same texts (the share of first sentences that rank their own chunk in the top k among the
#: sample, fresh minus stored). Measured with MiniLM on our sample book and five public course books built by our
#: ingest (benchmarks/bench_calibration.py): 0.000 on all six sound collections, where the raw share of chunks
#: finding their own file in the whole collection ranged from 0.67 to 0.97 (the old fixed gate of 0.85 failed two of
#: them); the same collections with their vectors rotated (another model of the same size) drop by 0.69 to 0.89.
#: 0.05 (3 chunks of 64) leaves room for a tie broken the other way by float noise.
DEFAULT_MAX_SELF_RETRIEVAL_DROP = 0.05
#: A stored vector whose length differs from 1 by more than this is "not normalised" (float32 noise is ~1e-7).
NORM_TOLERANCE = 1e-3

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_MARKUP = re.compile(r"[*_`#>|]+|\[([^\]]*)\]\([^)]*\)")
_PSEUDO_HEADING = re.compile(r"^(\*\*|__)[^*_]+(\*\*|__)[.:]?$")  # a bold line standing for a heading
_LIST_MARK = re.compile(r"^\s*(?:[-+*]|\d+[.)])\s+")


def probe_query(payload: dict[str, Any], max_chars: int = 200) -> str:
    """A chunk's first sentence as a reader would type it: the first prose line of ``content`` (headings, code
    fences, tables and bold pseudo-headings skipped, markdown marks removed) cut at its first sentence end; the
    section title when the chunk has no prose line."""
    in_code = False
    for raw in str(payload.get("content") or "").splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            in_code = not in_code
            continue
        if in_code or not line or line.startswith(("#", "|", "<", "import ", "---")) or _PSEUDO_HEADING.match(line):
            continue
        text = _MARKUP.sub(lambda m: m.group(1) or "", _LIST_MARK.sub("", line)).strip()
        if len(text.split()) >= 3:
            return _SENTENCE_END.split(text, maxsplit=1)[0][:max_chars].strip()
    return str(payload.get("section_title") or payload.get("title") or "")[:max_chars]


@dataclass(frozen=True)
class ProbeCost:
    """What a probe costs the embedding service, said before it runs.

    ``calls`` counts embed calls at the sizes ingest and ``plan`` count (a provider's request: Cohere 96 texts,
    Gemini 100, OpenAI 2,048 at the vendor's URL, 16 elsewhere, or what a timeout halved it to; a model on this
    machine: its provider's batch). The diagnosis embeds the failing texts once per other input type
    (``diagnosis_types``).
    """

    provider: str
    batch_size: int
    document_texts: int
    query_texts: int
    diagnosis_texts: int
    diagnosis_types: int = 1

    def calls(self, texts: int) -> int:
        return math.ceil(texts / self.batch_size) if texts else 0

    @property
    def texts(self) -> int:
        return self.document_texts + self.query_texts

    @property
    def diagnosis_calls(self) -> int:
        """Calls of the diagnosis at most: every sampled text under each other input type."""
        per_type = self.diagnosis_texts // self.diagnosis_types if self.diagnosis_types else 0
        return self.diagnosis_types * self.calls(per_type)

    @property
    def run_calls(self) -> int:
        """Calls of a probe whose gate holds (one pass of documents, one of queries)."""
        return self.calls(self.document_texts) + self.calls(self.query_texts)

    def line(self) -> str:
        return (f"cost: {self.texts} texts in {self.run_calls} embed calls ({self.document_texts} documents, "
                f"{self.query_texts} queries; {self.provider}, batches of {self.batch_size}); if the cosine gate "
                f"fails, up to {self.diagnosis_texts} more texts in {self.diagnosis_calls} calls to diagnose"
                + (f" ({self.diagnosis_types} other input types)" if self.diagnosis_types > 1 else ""))


def plan_cost(embedder: Embedder, sample: int) -> ProbeCost:
    """The embedding cost of :func:`probe` with ``sample`` points (see :class:`ProbeCost`)."""
    batch = request_size(embedder) or batch_limit(embedder.provider)  # the texts per call ingest and plan count
    others = len(input_types_of(embedder)) - 1
    return ProbeCost(embedder.provider, batch, sample, sample, sample * others, max(others, 0))


def check_args(sample: int = 1, top_k: int = 1, min_cosine: float = 0.0, max_self_retrieval_drop: float = 0.0) -> None:
    """Refuse an argument of :func:`probe` or :func:`run` out of range, before anything is read or embedded (an
    argument not given is not checked).

    Raises:
        ValidationError: the argument named, with its range.
    """
    whole_number(sample, "sample", low=1, unit="points")
    whole_number(top_k, "top_k", low=1, high=100)
    number_in(min_cosine, "min_cosine", -1, 1)
    number_in(max_self_retrieval_drop, "max_self_retrieval_drop", 0, 1)


def in_sample_ranks(queries: np.ndarray, candidates: np.ndarray) -> list[int]:
    """For each row ``i``, the rank (1 = best) of candidate ``i`` among all candidates by cosine with query ``i``
    (ties counted in its favour)."""
    q = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
    c = candidates / np.maximum(np.linalg.norm(candidates, axis=1, keepdims=True), 1e-12)
    scores = q @ c.T
    own = np.diag(scores)
    return [int(x) + 1 for x in (scores > own[:, None]).sum(axis=1)]


@dataclass
class ProbeRow:
    """One sampled point: its cosine to its re-embedding, its tokens, and whether its first sentence found it."""

    point_id: str
    source_file: str
    chunk_id: str
    cosine: float
    tokens: int
    over_limit: bool
    hash_ok: bool | None
    query: str
    chunk_rank: int | None
    file_hit: bool
    stored_rank: int | None = None  # rank of its stored vector among the sample's, by its first sentence
    fresh_rank: int | None = None  # the same, among the sample's fresh re-embeddings
    query_cosine: float | None = None  # the text embedded as a query (diagnosis only)
    type_cosines: dict[str, float] = field(default_factory=dict)  # input type -> cosine (diagnosis only)


@dataclass
class ProbeResult:
    """What :func:`probe` measured. Shares are in [0, 1]; cosines in [-1, 1]."""

    collection: str
    provider: str
    model: str
    dimension: int
    points: int
    models_found: list[str]
    seed: int
    top_k: int
    min_cosine: float
    token_limit: int | None
    cost: ProbeCost
    rows: list[ProbeRow] = field(default_factory=list)
    diagnosis: Diagnosis | None = None
    input_types: tuple[str, ...] = ("document", "query")
    stored_norms: list[float] = field(default_factory=list)  # |v| of each sampled stored vector

    @property
    def unnormalised(self) -> bool:
        """The stored vectors are not unit length (a Dot-distance collection then ranks by length too)."""
        return bool(self.stored_norms) and max(abs(n - 1.0) for n in self.stored_norms) > NORM_TOLERANCE

    @property
    def sample(self) -> int:
        return len(self.rows)

    @property
    def cosine_values(self) -> list[float]:
        return [r.cosine for r in self.rows]

    @property
    def median_cosine(self) -> float:
        return statistics.median(self.cosine_values) if self.rows else math.nan

    @property
    def lowest_cosine(self) -> float:
        return min(self.cosine_values) if self.rows else math.nan

    @property
    def passed(self) -> bool:
        return bool(self.rows) and self.lowest_cosine >= self.min_cosine

    @property
    def chunk_share(self) -> float:
        return self._share("chunk_share")

    @property
    def file_share(self) -> float:
        return self._share("file_share")

    @property
    def over_limit(self) -> int:
        return sum(r.over_limit for r in self.rows)

    @property
    def sample_judged(self) -> bool:
        """Ranking within the sample tells something only when the sample is larger than k."""
        return len(self.rows) > self.top_k

    def hits(self, share: str) -> int:
        """How many sampled chunks count toward ``share``: ``chunk_share`` (own chunk in the collection's top k),
        ``file_share`` (own file there), ``stored_share`` / ``fresh_share`` (own chunk in the sample's top k by its
        stored vector / by its fresh re-embedding)."""
        k = self.top_k
        found = {"chunk_share": lambda r: r.chunk_rank is not None, "file_share": lambda r: r.file_hit,
                 "stored_share": lambda r: r.stored_rank is not None and r.stored_rank <= k,
                 "fresh_share": lambda r: r.fresh_rank is not None and r.fresh_rank <= k}[share]
        return sum(bool(found(r)) for r in self.rows)

    def _share(self, share: str) -> float:
        return self.hits(share) / len(self.rows) if self.rows else math.nan

    @property
    def stored_share(self) -> float:
        """Share of sampled chunks whose first sentence ranks their stored vector in the top k of the sample's."""
        return self._share("stored_share")

    @property
    def fresh_share(self) -> float:
        """The same with fresh re-embeddings of the same texts in place of the stored vectors."""
        return self._share("fresh_share")

    @property
    def self_retrieval_drop(self) -> float:
        """``fresh_share - stored_share``: what the stored vectors lose against the configured embedder's own."""
        return self.fresh_share - self.stored_share

    def interval(self, share: str) -> tuple[float, float]:
        """The Wilson 95% interval of one of the shares (``file_share``, ``chunk_share``, ``stored_share`` ...)."""
        return wilson(self.hits(share), len(self.rows))

    @property
    def files(self) -> int:
        return len({r.source_file for r in self.rows})


def probe(store: ReadableStore, collection: str, embedder: Embedder, *, sample: int = 64, seed: int = 0,
          top_k: int = 5, min_cosine: float = DEFAULT_MIN_COSINE) -> ProbeResult:
    """Re-embed a stratified sample of ``collection`` and compare it with the stored vectors (see the module).

    Args:
        sample: points to sample (all when the collection holds fewer).
        seed: the sample's seed (the same seed and collection give the same sample).
        top_k: depth of the self-retrieval search.
        min_cosine: a point whose cosine is below this is a contract failure; then the failing texts are also
            embedded as queries and :func:`diagnose` names the likely cause.

    Returns:
        A :class:`ProbeResult` (``diagnosis`` set when some cosine is below ``min_cosine``).

    Raises:
        ValidationError: an argument out of range.
        CollectionNotFoundError, ModelMismatchError: the collection is missing, or its dimension or
            ``model_version`` does not match the embedder (the checks that come before this one).
        VectorStoreError, EmbeddingError: a dependency failed.
    """
    check_args(sample, top_k, min_cosine)
    try:
        found = ensure_compatible(store, collection, embedder)
    except ModelMismatchError as err:
        raise _reduced_dimension(err, embedder) from None
    points = sample_points(store, collection, sample=sample, seed=seed)
    result = ProbeResult(collection, embedder.provider, embedder.model, embedder.dimension,
                         store.count(collection), found, seed, top_k, float(min_cosine),
                         embedder.max_tokens, plan_cost(embedder, len(points)),
                         input_types=input_types_of(embedder))
    if not points:
        return result
    payloads = [dict(p.payload or {}) for p in points]
    stored = [np.asarray(require_vector(p, "the embedding contract"), dtype=float) for p in points]
    result.stored_norms = [float(np.linalg.norm(v)) for v in stored]
    form = embedded_form(payloads, stored, embedder.embed_documents, ours_first=True,
                         accept=lambda c: min(c) >= float(min_cosine))
    texts, cos, fresh = form.texts, form.cosines, form.vectors
    queries = [probe_query(p) or t[:200] for p, t in zip(payloads, texts)]
    query_vectors = embedder.embed_queries(queries)
    hits = store.query_batch(collection, query_vectors, limit=top_k)
    stored_ranks = in_sample_ranks(np.asarray(query_vectors, dtype=float), np.asarray(stored, dtype=float))
    fresh_ranks = in_sample_ranks(np.asarray(query_vectors, dtype=float), fresh)
    for point, payload, text, c, query, found_points, s_rank, f_rank in zip(points, payloads, texts, cos, queries,
                                                                            hits, stored_ranks, fresh_ranks):
        ids = [str(h.id) for h in found_points]
        content, digest = str(payload.get("content") or ""), payload.get("content_hash")
        tokens = embedder.count_tokens(text)
        result.rows.append(ProbeRow(
            point_id=str(point.id), source_file=str(payload.get("source_file")),
            chunk_id=str(payload.get("chunk_id") or point.id), cosine=c, tokens=tokens,
            over_limit=tokens > embedder.max_tokens,
            hash_ok=None if not digest else hashlib.sha256(content.encode("utf-8")).hexdigest() == digest,
            query=query, chunk_rank=ids.index(str(point.id)) + 1 if str(point.id) in ids else None,
            file_hit=any((h.payload or {}).get("source_file") == payload.get("source_file") for h in found_points),
            stored_rank=s_rank, fresh_rank=f_rank))
    low = [i for i, r in enumerate(result.rows) if r.cosine < result.min_cosine]
    if low:
        _embed_under_every_type(embedder, result, low, [texts[i] for i in low], [stored[i] for i in low])
        result.diagnosis = diagnose(result.rows, min_cosine=result.min_cosine, token_limit=result.token_limit,
                                    input_types=result.input_types)
    return result


def _embed_under_every_type(embedder: Embedder, result: ProbeResult, low: list[int], texts: list[str],
                            stored: list[np.ndarray]) -> None:
    """Re-embed the failing texts under each other input type and keep every cosine on its row."""
    types = result.input_types
    for i in low:
        result.rows[i].type_cosines[types[0]] = result.rows[i].cosine
    for kind in types[1:]:
        for i, c in zip(low, row_cosines(embed_as(embedder, texts, kind), stored)):
            result.rows[i].type_cosines[kind] = c
    if len(types) > 1:
        for i in low:
            result.rows[i].query_cosine = result.rows[i].type_cosines.get(types[1])


def _reduced_dimension(err: ModelMismatchError, embedder: Embedder) -> ModelMismatchError:
    """``err``, said more precisely when the collection's size is a reduced dimension the model offers."""
    stored, native = err.collection_dimension, getattr(embedder, "native_dimension", None)
    offered = getattr(embedder, "dimensions_offered", ()) or ()
    if not stored or not native or stored == embedder.dimension or err.collection_model not in (None, embedder.model):
        return err
    if stored in offered and stored != native:
        why = (f" The collection's {stored} dimensions are a reduced dimension {embedder.model} offers (it gives "
               f"{native} by default): set EMBEDDING_DIMENSIONS={stored} to embed as the collection was built.")
    elif stored == native:
        why = f" The collection holds {embedder.model}'s full {native} dimensions: unset EMBEDDING_DIMENSIONS."
    else:
        return err
    return ModelMismatchError(err.message + why, collection_dimension=stored,
                              embedder_dimension=err.embedder_dimension, collection_model=err.collection_model,
                              configured_model=err.configured_model)


def cost_line(ctx: NotebookRun, contract_sample: int) -> str:
    """What :func:`run` will cost the embedding service (:func:`plan_cost`), said before it runs; or why it will not
    run (only a team's retriever configured)."""
    if reason := ctx.collection_absent() or ctx.no_text():
        return f"nothing embedded: {reason}"
    return plan_cost(ctx.collection_retriever.embedder, contract_sample).line()


def run(ctx: NotebookRun, *, contract_sample: int, contract_seed: int, top_k: int, contract_min_cosine: float,
        max_self_retrieval_drop: float) -> EmbeddingContract | NotApplicable:
    """Notebook 09's check: :func:`probe` the collection with the configured embedder (``contract_sample`` points,
    seeded by ``contract_seed``, self-retrieval in the top ``top_k``), judged by ``contract_min_cosine`` and
    ``max_self_retrieval_drop``.

    Raises:
        ValidationError: an argument out of range (before anything is read or embedded).
        CollectionNotFoundError, ModelMismatchError, VectorStoreError, EmbeddingError: as :func:`probe`.
    """
    check_args(contract_sample, top_k, contract_min_cosine, max_self_retrieval_drop)
    if reason := ctx.collection_absent() or ctx.no_text():  # re-embedding "" would read as another model
        return NotApplicable(reason, GATES)
    result = probe(ctx.store, ctx.collection, ctx.collection_retriever.embedder, sample=contract_sample,
                   seed=contract_seed, top_k=top_k, min_cosine=contract_min_cosine)
    return EmbeddingContract(result, max_self_retrieval_drop)


@dataclass
class EmbeddingContract:
    """Notebook 09's result: what :func:`probe` measured, and the bar on the self-retrieval drop."""

    probe: ProbeResult
    max_self_retrieval_drop: float

    def __str__(self) -> str:
        r, d = self.probe, self.probe.diagnosis
        return "\n".join([
            f"{r.sample} points sampled from {r.files} files of {r.points}; cosine median {r.median_cosine:.3f}, "
            f"lowest {r.lowest_cosine:.3f} (gate {r.min_cosine:g})",
            f"in the sample's top {r.top_k}: {r.stored_share:.0%} by stored vectors, {r.fresh_share:.0%} by fresh "
            f"re-embeddings (drop {r.self_retrieval_drop:.2f}, gate {self.max_self_retrieval_drop:g}); in the "
            f"collection: own chunk {r.chunk_share:.0%}, own file {r.file_share:.0%}",
            f"{d.cause}: {' '.join(d.evidence)}\nwhat to do: {d.hint}" if d else
            f"no diagnosis needed: every sampled cosine is at or above {r.min_cosine:g}"])

    def tables(self) -> dict[str, Any]:
        """``points``: every sampled point (cosines to 6 decimals); the notebook's views ``lowest_cosines`` (the 8
        lowest) and ``not_found`` (chunks whose first sentence did not bring them back in the collection's top k);
        and, as ``probe --json`` always gave them, the ``collection``, the ``cost`` and the ``diagnosis``."""
        r = self.probe
        points = rows_frame(r, decimals=6)
        shown = rows_frame(r, decimals=3)
        lowest = not_found = shown
        if len(shown):
            lowest = shown.sort_values(["cosine", "source_file"]).head(8)[
                ["source_file", "chunk_id", "cosine", "tokens", "hash_ok"]]
            not_found = shown[shown["chunk_rank"].isna()][["source_file", "probe_query", "file_hit"]]
        return {"points": points.astype(object).where(points.notna(), None), "lowest_cosines": lowest,
                "not_found": not_found, "collection": r.collection, "cost": r.cost.__dict__,
                "diagnosis": None if r.diagnosis is None else r.diagnosis.__dict__}

    def record(self, report: NotebookReport, *, show: bool = True) -> None:
        """The two figures, the sampled points' table, then the gates, findings and metrics.

        Gates: the lowest cosine >= ``min_cosine`` (hint: the diagnosis); the sampled chunks' self-retrieval with
        their stored vectors is at most ``max_self_retrieval_drop`` below the same with fresh re-embeddings of their
        texts (not applicable when the sample is no larger than k). The raw self-retrieval share in the whole
        collection is a finding and a metric with its Wilson interval, not a gate: it is a property of the book.

        Raises:
            ValidationError: ``max_self_retrieval_drop`` outside [0, 1].
        """
        r, d, max_drop = self.probe, self.probe.diagnosis, self.max_self_retrieval_drop
        report.figure(cosine_figure(r), "cosines", show=show)
        report.figure(self_retrieval_figure(r), "self_retrieval", show=show)
        report.table(rows_frame(r, decimals=3), "sampled_points")
        check_args(max_self_retrieval_drop=max_drop)
        CONTRACT_COSINE.record(
            report, r.passed, value=round(r.lowest_cosine, 4), threshold=r.min_cosine, rule=">=", unit="cosine",
            hint=d.hint if d else "no sampled point could be read: is the collection empty?",
            detail=f"lowest cosine {r.lowest_cosine:.3f}, median {r.median_cosine:.3f} over {r.sample} points of "
                   f"{r.files} files" + (f"; diagnosis: {d.cause}" if d else "")
                   + (f" ({d.mistake})" if d and d.mistake else ""))
        if not r.sample_judged:
            CONTRACT_SELF_RETRIEVAL.not_applicable(report, f"{r.sample} sampled chunks, no more than the top "
                                                           f"{r.top_k}: every chunk is in every top k of the sample")
        else:
            stored, fresh = r.hits("stored_share"), r.hits("fresh_share")
            CONTRACT_SELF_RETRIEVAL.record(
                report, r.self_retrieval_drop <= max_drop, value=round(r.self_retrieval_drop, 4), threshold=max_drop,
                rule="<=", unit="share",
                hint="the stored vectors do not meet the queries the configured embedder makes: another model, "
                     "input type or text built them (see the cosine gate and its diagnosis)",
                detail=f"{stored}/{r.sample} first sentences rank their chunk's stored vector in the top "
                       f"{r.top_k} of the sample, {fresh}/{r.sample} its fresh re-embedding")
        report.finding(f"dimension {r.dimension} and model_version {', '.join(r.models_found) or '(none)'} match the "
                       f"embedder ({r.provider} / {r.model}); the vectors themselves: median cosine "
                       f"{r.median_cosine:.3f}, lowest {r.lowest_cosine:.3f} (gate {r.min_cosine:g})")
        if d:
            report.finding(f"diagnosis: {d.cause}" + (f" ({d.mistake})" if d.mistake else "") + ". "
                           + " ".join(d.evidence))
        if r.unnormalised:
            report.finding(f"the stored vectors are not unit length (|v| from {min(r.stored_norms):.3f} to "
                           f"{max(r.stored_norms):.3f}, e.g. a reduced Gemini dimension): cosine scores are "
                           "unaffected, but a Dot-distance collection ranks by length as well as direction")
        (f_lo, f_hi), (c_lo, c_hi) = r.interval("file_share"), r.interval("chunk_share")
        report.finding(f"self-retrieval in the whole collection (a property of the book, not gated): "
                       f"{r.file_share:.0%} of sampled chunks found their file in the top {r.top_k} (95% interval "
                       f"{f_lo:.0%}-{f_hi:.0%}), {r.chunk_share:.0%} themselves ({c_lo:.0%}-{c_hi:.0%}); generic "
                       "first sentences (\"In this chapter we will ...\") find other files")
        if r.token_limit and r.over_limit:
            report.finding(f"{r.over_limit}/{r.sample} sampled chunks (title line included) are longer than the "
                           f"{r.token_limit} tokens the model reads: their tails are not in their vectors")
        for name, value, unit in (("contract_sample", r.sample, "points"), ("contract_points", r.points, "points"),
                                  ("contract_median_cosine", r.median_cosine, "cosine"),
                                  ("contract_min_cosine", r.lowest_cosine, "cosine"),
                                  ("self_retrieval_chunk_share", r.chunk_share, "share"),
                                  ("self_retrieval_file_share", r.file_share, "share"),
                                  ("self_retrieval_file_share_low", f_lo, "share"),
                                  ("self_retrieval_file_share_high", f_hi, "share"),
                                  ("self_retrieval_stored_share", r.stored_share, "share"),
                                  ("self_retrieval_fresh_share", r.fresh_share, "share"),
                                  ("self_retrieval_drop", r.self_retrieval_drop, "share"),
                                  ("chunks_over_token_limit", r.over_limit, "chunks"),
                                  ("probe_embed_texts", r.cost.texts, "texts"),
                                  ("contract_diagnosis", d.cause if d else "sound", "")):
            report.metric(name, value, unit)


def rows_frame(result: ProbeResult, *, decimals: int = 3):
    """One row per sampled point: file, chunk, cosine (rounded), tokens, hash check, probe query and its ranks."""
    import pandas as pd

    rows = [{"source_file": r.source_file, "chunk_id": r.chunk_id, "cosine": round(r.cosine, decimals),
             "query_cosine": None if r.query_cosine is None else round(r.query_cosine, decimals),
             "tokens": r.tokens, "over_limit": r.over_limit, "hash_ok": r.hash_ok, "probe_query": r.query,
             "chunk_rank": r.chunk_rank, "file_hit": r.file_hit, "stored_rank": r.stored_rank,
             "fresh_rank": r.fresh_rank} for r in result.rows]
    frame = pd.DataFrame(rows)
    if len(frame):
        frame["chunk_rank"] = frame["chunk_rank"].astype("Int64")
    return frame


@plain_figure
def self_retrieval_figure(result: ProbeResult):
    """The self-retrieval shares with their Wilson 95% intervals: in the sample by stored vectors and by fresh
    re-embeddings (the gated pair), and in the whole collection (own chunk, own file: the book's own property)."""
    import matplotlib.pyplot as plt

    r = result
    bars = [(f"own chunk in the sample's top {r.top_k}\n(stored vectors)", "stored_share", "tab:blue"),
            (f"own chunk in the sample's top {r.top_k}\n(fresh re-embeddings)", "fresh_share", "tab:cyan"),
            (f"own chunk in the collection's top {r.top_k}", "chunk_share", "tab:grey"),
            (f"own file in the collection's top {r.top_k}", "file_share", "tab:grey")]
    fig, ax = plt.subplots(figsize=(9, 3.2))
    for y, (_label, share, colour) in enumerate(bars):
        value, (low, high) = getattr(r, share), r.interval(share)
        ax.barh(y, value, color=colour)
        ax.errorbar(value, y, xerr=[[value - low], [high - value]], color="black", capsize=4)
        ax.text(0.015, y, f"{value:.2f}  [{low:.2f}-{high:.2f}]", va="center", color="white", fontweight="bold")
    ax.set_yticks(range(len(bars)), [b[0] for b in bars])
    ax.invert_yaxis()
    ax.set(xlim=(0, 1.05), xlabel=f"share of {r.sample} sampled chunks (95% Wilson interval)",
           title="self-retrieval by first sentence: the first two bars are the gated pair")
    fig.tight_layout()
    return fig


@plain_figure
def cosine_figure(result: ProbeResult):
    """Left: the distribution of cosines, the gate marked. Right: cosine against the tokens embedded, the model's
    token limit marked (low cosines only past the limit point at truncation)."""
    import matplotlib.pyplot as plt

    cos = np.asarray(result.cosine_values, dtype=float)
    tokens = [r.tokens for r in result.rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    low = min(float(cos.min()) if len(cos) else 1.0, result.min_cosine)
    bins = np.linspace(low - 0.01 * max(1e-3, 1 - low), 1.0 + 1e-6, 30)
    left.hist(cos, bins=bins, color="tab:blue")
    left.axvline(result.min_cosine, color="tab:red", ls="--", label=f"gate {result.min_cosine:g}")
    left.set(xlabel="cosine(stored vector, re-embedded document)", ylabel="sampled points",
             title=f"{result.sample} points, median {result.median_cosine:.3f}")
    left.legend(loc="upper left")
    right.scatter(tokens, cos, s=14, color=["tab:red" if c < result.min_cosine else "tab:blue" for c in cos])
    if result.token_limit:
        right.axvline(result.token_limit, color="grey", ls=":", label=f"model reads {result.token_limit} tokens")
        right.legend(loc="lower left")
    right.set(xlabel="tokens embedded (title line + content)", ylabel="cosine", title="cosine against length")
    fig.tight_layout()
    return fig
