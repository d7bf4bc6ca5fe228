"""Embedding contract: does the configured embedder still make the vectors the collection holds?

The dimension and the ``model_version`` string can both match while the vectors come from another model, another
``input_type`` or another text. This check asks the vectors themselves:

1. a seeded sample of stored points, stratified by ``source_file``
   (:func:`~retrieval_lib.checks.contract_sample.sample_points`), is read with its vectors;
2. each point's text is re-embedded *as a document*, the way ingest embedded it (:func:`document_text`: the title
   line, then ``content``), and compared with the stored vector by cosine similarity
   ``cos(u, v) = u·v / (|u| |v|)``: with the same model, input type and text it is 1 up to float noise;
3. self-retrieval: each chunk's first sentence (:func:`probe_query`) is embedded *as a query* and searched; the
   share of chunks whose own point (and own file) is in the top k is reported.

When a cosine falls below the gate, the failing texts are re-embedded under every other input type the provider
has (Cohere's ``search_query``, ``classification``, ``clustering``; Gemini's task types; a sentence-transformers
model's prompts; "query" for the rest) and :func:`~retrieval_lib.checks.contract_diagnosis.diagnose` says why: which
input type the stored vectors match best, with the cosines ("documents embedded as queries"). A collection whose
dimension is a reduced one of the configured model is named as such before anything is embedded, and stored
vectors that are not unit length are reported.
:func:`probe` is the one entry point (the notebook 09, ``python -m retrieval_lib probe`` and the scale benchmark
call it); :func:`record` writes its gates.
"""

from __future__ import annotations

import hashlib
import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from retrieval_lib.checks.contract_diagnosis import Diagnosis, diagnose
from retrieval_lib.checks.contract_sample import sample_points
from retrieval_lib.collection.ours import embedded_text
from retrieval_lib.embedding.base import embed_as, input_types_of
from retrieval_lib.embedding.providers import Embedder
from retrieval_lib.errors import ModelMismatchError, ValidationError
from retrieval_lib.search import ensure_compatible
from retrieval_lib.stores import ReadableStore

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport

__all__ = ["DEFAULT_MIN_COSINE", "DEFAULT_MIN_FILE_SHARE", "ProbeCost", "ProbeRow", "ProbeResult", "document_text",
           "probe_query", "plan_cost", "sample_points", "probe", "record", "rows_frame", "cosine_figure"]

#: Default gate on the lowest cosine between a stored vector and its re-embedding. Measured on the sample book
#: (MiniLM, 462 chunks): min 0.99999992, median 1.0000000; torch's CPU kernels move the last digits only. A model
#: of the same dimension gives cosines near 0 (a random rotation: median -0.03), a swapped Cohere input type well
#: below 0.99; 0.99 is far from both and far above float noise.
DEFAULT_MIN_COSINE = 0.99
#: Default gate on the share of sampled chunks whose first sentence finds their own file in the top 5. Measured on
#: the sample book: 60/64 (0.94, 470 chunks; 62/64 before the chunker change; the misses are generic sentences such
#: as "The book is organised into modules"); chance is about 0.15 (5 of ~470 chunks, files of ~15). 0.85 leaves
#: room for a few more generic chunks in another seed's sample and fails when queries and documents no longer meet.
DEFAULT_MIN_FILE_SHARE = 0.85
#: A stored vector whose length differs from 1 by more than this is "not normalised" (float32 noise is ~1e-7).
NORM_TOLERANCE = 1e-3

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_MARKUP = re.compile(r"[*_`#>|]+|\[([^\]]*)\]\([^)]*\)")
_PSEUDO_HEADING = re.compile(r"^(\*\*|__)[^*_]+(\*\*|__)[.:]?$")  # a bold line standing for a heading
_LIST_MARK = re.compile(r"^\s*(?:[-+*]|\d+[.)])\s+")


def document_text(payload: dict[str, Any]) -> str:
    """The text our ingest embedded for a chunk (:func:`retrieval_lib.collection.ours.embedded_text`)."""
    return embedded_text(payload)


def _embedded_form(payloads: list[dict[str, Any]], stored: Sequence[Any], embedder: Embedder,
                   min_cosine: float) -> tuple[list[str], list[float]]:
    """The texts the pipeline embedded, and their cosines with the stored vectors.

    Our ingest embeds the title, a newline, then the content (:func:`document_text`); most teams' pipelines
    embed the content alone. When our form leaves a cosine below ``min_cosine`` and the forms differ, the content
    alone is embedded too, and the form whose re-embeddings agree better (by median cosine) is taken: a
    collection is never failed for the form of its text. (A sound collection of ours costs no extra call.)
    """
    ours = [document_text(p) for p in payloads]
    ours_cos = cosines(embedder.embed_documents(ours), stored)
    plain = [str(p.get("content") or "") for p in payloads]
    if plain == ours or min(ours_cos) >= min_cosine:
        return ours, ours_cos
    plain_cos = cosines(embedder.embed_documents(plain), stored)
    return (plain, plain_cos) if statistics.median(plain_cos) > statistics.median(ours_cos) else (ours, ours_cos)


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

    ``calls`` counts embedding requests (each provider's batches: Cohere 96 texts, Gemini 100, OpenAI 2,048; local:
    the model's batches). The diagnosis embeds the failing texts once per other input type (``diagnosis_types``).
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
    batch = int(getattr(embedder, "max_batch", None) or getattr(embedder, "batch_size", None) or 64)
    others = len(input_types_of(embedder)) - 1
    return ProbeCost(embedder.provider, batch, sample, sample, sample * others, max(others, 0))


def _check_args(sample: int, top_k: int, min_cosine: float) -> None:
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
        raise ValidationError(f"sample must be a whole number of points >= 1 (got {sample!r})", field="sample")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 100:
        raise ValidationError(f"top_k must be a whole number from 1 to 100 (got {top_k!r})", field="top_k")
    if not -1.0 <= float(min_cosine) <= 1.0:
        raise ValidationError(f"min_cosine must lie in [-1, 1] (got {min_cosine!r})", field="min_cosine")


def _vector(point: Any) -> np.ndarray:
    v = point.vector
    if isinstance(v, dict):  # a named vector: the collection has one (vector_params refuses several)
        v = next(iter(v.values()))
    return np.asarray(v, dtype=float)


def cosines(a: Sequence[Any], b: Sequence[Any]) -> list[float]:
    """Row-wise ``cos(a_i, b_i) = a_i·b_i / (|a_i| |b_i|)`` (0 for a zero vector)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    norms = np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)
    dots = (x * y).sum(axis=1)
    return [float(d / n) if n else 0.0 for d, n in zip(dots, norms)]


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
        return sum(r.chunk_rank is not None for r in self.rows) / len(self.rows) if self.rows else math.nan

    @property
    def file_share(self) -> float:
        return sum(r.file_hit for r in self.rows) / len(self.rows) if self.rows else math.nan

    @property
    def over_limit(self) -> int:
        return sum(r.over_limit for r in self.rows)

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
    _check_args(sample, top_k, min_cosine)
    try:
        found = ensure_compatible(store, collection, embedder)
    except ModelMismatchError as err:
        raise _reduced_dimension(err, embedder) from None
    points = sample_points(store, collection, sample=sample, seed=seed)
    limit: int | None = getattr(embedder, "max_tokens", None)
    result = ProbeResult(collection, embedder.provider, embedder.model, embedder.dimension,
                         store.count(collection), found, seed, top_k, float(min_cosine),
                         int(limit) if limit else None, plan_cost(embedder, len(points)),
                         input_types=input_types_of(embedder))
    if not points:
        return result
    payloads = [dict(p.payload or {}) for p in points]
    stored = [_vector(p) for p in points]
    result.stored_norms = [float(np.linalg.norm(v)) for v in stored]
    texts, cos = _embedded_form(payloads, stored, embedder, float(min_cosine))
    queries = [probe_query(p) or t[:200] for p, t in zip(payloads, texts)]
    hits = store.query_batch(collection, embedder.embed_queries(queries), limit=top_k)
    for point, payload, text, c, query, found_points in zip(points, payloads, texts, cos, queries, hits):
        ids = [str(h.id) for h in found_points]
        content, digest = str(payload.get("content") or ""), payload.get("content_hash")
        tokens = embedder.count_tokens(text)
        result.rows.append(ProbeRow(
            point_id=str(point.id), source_file=str(payload.get("source_file")),
            chunk_id=str(payload.get("chunk_id") or point.id), cosine=c, tokens=tokens,
            over_limit=limit is not None and tokens > limit,
            hash_ok=None if not digest else hashlib.sha256(content.encode("utf-8")).hexdigest() == digest,
            query=query, chunk_rank=ids.index(str(point.id)) + 1 if str(point.id) in ids else None,
            file_hit=any((h.payload or {}).get("source_file") == payload.get("source_file") for h in found_points)))
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
        for i, c in zip(low, cosines(embed_as(embedder, texts, kind), stored)):
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


def record(report: NotebookReport, result: ProbeResult, *, min_self_retrieval_file_share: float) -> None:
    """Record notebook 09's gates, findings and metrics (also what ``python -m retrieval_lib probe`` prints).

    Gates: the lowest cosine >= ``result.min_cosine`` (hint: the diagnosis); the share of sampled chunks whose
    first sentence finds their own file in the top k >= ``min_self_retrieval_file_share``.

    Raises:
        ValidationError: ``min_self_retrieval_file_share`` outside [0, 1].
    """
    if not 0.0 <= min_self_retrieval_file_share <= 1.0:
        raise ValidationError("min_self_retrieval_file_share must lie in [0, 1] "
                              f"(got {min_self_retrieval_file_share!r})", field="min_self_retrieval_file_share")
    r, d = result, result.diagnosis
    report.gate("re-embedded chunks match their stored vectors", r.passed, value=round(r.lowest_cosine, 4),
                threshold=r.min_cosine, rule=">=", unit="cosine", parameter="contract_min_cosine",
                hint=d.hint if d else "no sampled point could be read: is the collection empty?",
                detail=f"lowest cosine {r.lowest_cosine:.3f}, median {r.median_cosine:.3f} over {r.sample} points of "
                       f"{r.files} files" + (f"; diagnosis: {d.cause}" if d else "")
                       + (f" ({d.mistake})" if d and d.mistake else ""))
    report.gate("chunks find their own file by their first sentence", r.file_share >= min_self_retrieval_file_share,
                value=round(r.file_share, 4), threshold=min_self_retrieval_file_share, rule=">=", unit="share",
                parameter="min_self_retrieval_file_share",
                hint="queries and documents do not meet in one space (see the cosine gate), or chunks are too "
                     "generic to be told apart: read the self-retrieval table's misses",
                detail=f"{sum(x.file_hit for x in r.rows)}/{r.sample} first sentences found their file in the top "
                       f"{r.top_k}; {sum(x.chunk_rank is not None for x in r.rows)}/{r.sample} their own chunk")
    report.finding(f"dimension {r.dimension} and model_version {', '.join(r.models_found) or '(none)'} match the "
                   f"embedder ({r.provider} / {r.model}); the vectors themselves: median cosine {r.median_cosine:.3f}, "
                   f"lowest {r.lowest_cosine:.3f} (gate {r.min_cosine:g})")
    if d:
        report.finding(f"diagnosis: {d.cause}" + (f" ({d.mistake})" if d.mistake else "") + ". "
                       + " ".join(d.evidence))
    if r.unnormalised:
        norms = r.stored_norms
        report.finding(f"the stored vectors are not unit length (|v| from {min(norms):.3f} to {max(norms):.3f}, "
                       "e.g. a reduced Gemini dimension): cosine scores are unaffected, but a Dot-distance collection "
                       "ranks by length as well as direction")
    report.finding(f"self-retrieval: {r.chunk_share:.0%} of sampled chunks found themselves and {r.file_share:.0%} "
                   f"their file in the top {r.top_k}")
    if r.token_limit and r.over_limit:
        report.finding(f"{r.over_limit}/{r.sample} sampled chunks (title line included) are longer than the "
                       f"{r.token_limit} tokens the model reads: their tails are not in their vectors")
    for name, value, unit in (("contract_sample", r.sample, "points"), ("contract_points", r.points, "points"),
                              ("contract_median_cosine", r.median_cosine, "cosine"),
                              ("contract_min_cosine", r.lowest_cosine, "cosine"),
                              ("self_retrieval_chunk_share", r.chunk_share, "share"),
                              ("self_retrieval_file_share", r.file_share, "share"),
                              ("chunks_over_token_limit", r.over_limit, "chunks"),
                              ("probe_embed_texts", r.cost.texts, "texts")):
        report.metric(name, value, unit)
    report.metric("contract_diagnosis", d.cause if d else "sound")


def rows_frame(result: ProbeResult, *, decimals: int = 3):
    """One row per sampled point: file, chunk, cosine (rounded), tokens, hash check, probe query and its ranks."""
    import pandas as pd

    rows = [{"source_file": r.source_file, "chunk_id": r.chunk_id, "cosine": round(r.cosine, decimals),
             "query_cosine": None if r.query_cosine is None else round(r.query_cosine, decimals),
             "tokens": r.tokens, "over_limit": r.over_limit, "hash_ok": r.hash_ok, "probe_query": r.query,
             "chunk_rank": r.chunk_rank, "file_hit": r.file_hit} for r in result.rows]
    frame = pd.DataFrame(rows)
    if len(frame):
        frame["chunk_rank"] = frame["chunk_rank"].astype("Int64")
    return frame


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
