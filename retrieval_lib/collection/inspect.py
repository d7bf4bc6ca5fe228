"""``inspect``: what a collection holds, told to the team that built it, before anything is judged.

One pass over a sample of points (payloads as written, nested keys included) and one scroll of the mapped texts:

- the vectors (unnamed or named, which one is used, sparse ones, dimension, distance) and the ids' forms;
- every payload key with its fill rate, type and an example, and the mapping to roles with its evidence;
- the embedding model checked against the stored vectors: a sample re-embedded as documents with the configured
  embedder, and, when the cosine says "another model", with the other models available offline;
- chunk lengths in that model's tokenizer against its window; duplicate texts; values of the wrong type;
- what the workbook can and cannot check on this collection, each with its reason.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from retrieval_lib.collection.infer import key_stats
from retrieval_lib.collection.ours import embedded_form, tokens_read
from retrieval_lib.collection.roles import ROLE_MEANINGS, ROLES, PayloadRoles
from retrieval_lib.collection.view import CollectionView
from retrieval_lib.embedding import Embedder
from retrieval_lib.embedding.base import tokens_estimated
from retrieval_lib.percentile import percentile
from retrieval_lib.stores.base import stored_vector
from retrieval_lib.stores.scan import page_size

__all__ = ["Inspection", "inspect_collection", "mapping_rows", "MODEL_SAMPLE"]

#: Re-embedded chunks whose stored vectors agree this well on average were made by the same model.
MATCH_COSINE = 0.98
#: Chunks re-embedded to check the model (each costs one text per model tried).
MODEL_SAMPLE = 24
#: Chunks whose length is counted in the model's tokenizer.
LENGTH_SAMPLE = 400

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$")


def id_form(point_id: Any) -> tuple[str, str | None]:
    """(form, UUID version) of a point id: ``("integer", None)``, ``("uuid", "4")`` ... ``("other", None)``."""
    if isinstance(point_id, int):
        return "integer", None
    m = _UUID.match(str(point_id).lower())
    if not m:
        return "other", None
    valid_variant = str(point_id).lower()[19] in "89ab"
    return "uuid", m.group(1) if valid_variant else None


def id_forms(ids: Sequence[Any]) -> dict[str, int]:
    """How a collection's ids were made, counted: ``integer``, ``uuid4``, ``uuid5``, or ``hex hash`` for 32-hex
    digests (md5 or a cut sha) that Qdrant stores as UUIDs: their version digits are random, not one value."""
    forms = [id_form(i) for i in ids]
    uuids = [v for f, v in forms if f == "uuid"]
    common, n = Counter(uuids).most_common(1)[0] if uuids else (None, 0)
    is_uuid = bool(uuids) and common is not None and n >= 0.95 * len(uuids)
    out: Counter[str] = Counter()
    for f, v in forms:
        if f == "uuid":
            out[f"uuid{v}" if is_uuid and v == common else "hex hash (md5 or similar)"] += 1
        else:
            out[f] += 1
    return dict(out)


@dataclass
class Inspection:
    """Everything ``inspect`` found; :meth:`as_dict` is ``--json``."""

    collection: str
    location: str
    points: int
    vectors: dict[str, Any]
    ids: dict[str, int]
    keys: list[dict[str, Any]]
    roles: PayloadRoles
    owned: bool | None
    model: dict[str, Any] = field(default_factory=dict)
    lengths: dict[str, Any] = field(default_factory=dict)
    duplicates: dict[str, Any] = field(default_factory=dict)
    bad_data: dict[str, Any] = field(default_factory=dict)
    checkable: list[dict[str, Any]] = field(default_factory=list)
    #: the sampled chunks' lengths in the model's tokens (the histogram's data; not in ``as_dict``)
    tokens: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("tokens")
        out["roles"] = {"origin": self.roles.origin, "evidence": dict(self.roles.evidence)}
        out["payload_fields"] = self.roles.as_profile()
        return out


def _vectors(view: CollectionView, collection: str) -> dict[str, Any]:
    config = view.info(collection).config.params
    dense = config.vectors
    sparse = sorted((getattr(config, "sparse_vectors", None) or {}).keys())
    if isinstance(dense, dict):
        named = {n: (int(p.size), str(getattr(p.distance, "value", p.distance))) for n, p in dense.items()}
        chosen = getattr(view, "vector_name", None)
        used = chosen if chosen in named else next(iter(named)) if len(named) == 1 else None
        note = ("" if used and not chosen else f"QDRANT_VECTOR_NAME={chosen} picks it" if used else
                f"no vector named {chosen!r}: set QDRANT_VECTOR_NAME to one of these" if chosen else
                "several named vectors: set QDRANT_VECTOR_NAME to the one your chatbot searches (the workbook "
                "validates one vector per point)")
        return {"named": sorted(named), "used": used, "dimension": named[used][0] if used else None,
                "distance": named[used][1] if used else None, "sparse": sparse, "note": note}
    return {"named": [], "used": "(unnamed)", "dimension": int(dense.size) if dense else None,
            "distance": str(getattr(dense.distance, "value", dense.distance)) if dense else None, "sparse": sparse,
            "note": ""}


def _model_check(sample: list[Any], embedder: Embedder, alternatives: Sequence[Callable[[], Embedder]],
                 vector_name: str | None, ours: bool = False) -> dict[str, Any]:
    records: list[dict[str, Any]] = []
    stored: list[list[float]] = []
    for p in sample:
        vector = stored_vector(p, vector_name)
        if (p.payload or {}).get("content") and vector:
            records.append(p.payload)
            stored.append(vector)
    records, stored = records[:MODEL_SAMPLE], stored[:MODEL_SAMPLE]
    pairs = list(zip(records, stored))
    out: dict[str, Any] = {"configured": f"{embedder.provider} / {embedder.model}", "sample": len(pairs),
                           "tried": []}
    if not pairs:
        out["verdict"] = "not checked: no point holds both a text and a vector"
        return out
    stored_dim = len(pairs[0][1])

    def trial(e: Embedder) -> dict[str, Any]:
        if e.dimension != stored_dim:
            return {"model": f"{e.provider} / {e.model}", "dimension": e.dimension, "cosine_mean": None,
                    "cosine_min": None, "why": f"makes {e.dimension}-dimensional vectors, the collection holds "
                                               f"{stored_dim}"}
        cos = embedded_form(records, stored, e.embed_documents, ours_first=ours,
                            accept=lambda c: sum(c) / len(c) >= MATCH_COSINE).cosines
        return {"model": f"{e.provider} / {e.model}", "dimension": e.dimension,
                "cosine_mean": round(sum(cos) / len(cos), 4), "cosine_min": round(min(cos), 4), "why": ""}

    first = trial(embedder)
    out["tried"].append(first)
    if first["cosine_mean"] is not None and first["cosine_mean"] >= MATCH_COSINE:
        out["verdict"] = (f"the configured model made these vectors (mean cosine {first['cosine_mean']:.3f} over "
                          f"{len(pairs)} re-embedded chunks)")
        out["matched"] = first["model"]
        return out
    for make in alternatives:
        try:
            other = make()
        except Exception:  # noqa: BLE001 - an alternative that cannot load is simply not tried
            continue
        if f"{other.provider} / {other.model}" == first["model"]:
            continue
        result = trial(other)
        out["tried"].append(result)
        if result["cosine_mean"] is not None and result["cosine_mean"] >= MATCH_COSINE:
            out["matched"] = result["model"]
            out["verdict"] = (f"another model: {result['model']} matches (mean cosine {result['cosine_mean']:.3f}); "
                              "set EMBEDDING_PROVIDER/EMBEDDING_MODEL to it")
            return out
    out["matched"] = None
    why = first["why"] or f"mean cosine {first['cosine_mean']:.3f} < {MATCH_COSINE}"
    out["verdict"] = (f"another model than the configured one ({why}); none of the models available offline "
                      "matches: set EMBEDDING_PROVIDER/EMBEDDING_MODEL to the model the team's pipeline used")
    return out


def _checkable(roles: PayloadRoles, *, metadata_db: bool, model_matched: bool | None,
               metadata_why: str = "") -> list[dict[str, Any]]:
    def row(what: str, ok: bool, why: str) -> dict[str, Any]:
        return {"check": what, "can": ok, "why": why}

    text = roles.has("content")
    source = roles.has("source_file")
    return [
        row("search and score distributions (01, 02, 06)", text, "chunk texts are mapped" if text
            else "no payload key holds the chunk text: results can be ranked but not read"),
        row("per-source-file coverage and reachability (03, 10)", source,
            "a source file is mapped" + (" (from the URL)" if roles.derive_source_file else "") if source
            else "no key names the source file or URL"),
        row("one embedding model in the collection (07)", roles.has("model_version"),
            "a model field is mapped" if roles.has("model_version")
            else "no model field (as in most pipelines): the model is checked by re-embedding instead (09)"),
        row("stored vectors against the configured model (09)", bool(text),
            ("re-embedding matched" if model_matched else "re-embedding did not match: see the model check")
            if text else "needs the chunk text"),
        row("chunk lengths against the model's window (12)", text, "from the chunk texts" if text
            else "needs the chunk text"),
        row("metadata rows against points (08)", metadata_db, metadata_why or ("a metadata database is configured"
            if metadata_db else "no metadata database for this collection (DATABASE_URL): the service answers from "
            "the payload")),
    ]


def inspect_collection(view: CollectionView, collection: str, embedder: Embedder, *,
                       alternatives: Sequence[Callable[[], Embedder]] = (), metadata_db: bool = False,
                       metadata_why: str = "", progress: Callable[[str], None] | None = None) -> Inspection:
    """Inspect ``collection`` as ``view`` reads it (see the module docstring). Nothing is written.

    Args:
        embedder: the configured embedder (re-embeds :data:`MODEL_SAMPLE` chunks as documents).
        alternatives: the other models available offline, tried when the configured one does not match.
        metadata_db: whether a metadata database is configured (for what can be checked).
        metadata_why: why its rows can or cannot be compared, when known
            (:func:`~retrieval_lib.stores.metadata.metadata_source`); default: from ``metadata_db`` alone.

    Raises:
        CollectionNotFoundError, VectorStoreError: the store cannot be read.
    """
    say = progress or (lambda _: None)
    points = view.count(collection)
    vectors = _vectors(view, collection)
    raw = view.raw_sample(collection)
    n, stats = key_stats([p.payload for p in raw])
    keys = [{"key": s.key, "filled": round(s.fill_rate(n), 3), "type": s.main_type,
             "distinct": len(s.distinct), "example": s.example} for s in sorted(stats.values(), key=lambda s: s.key)]
    roles = view.roles_for(collection)
    say(f"read {n} of {points} points' payloads; {view.describe(collection)}")
    ids = id_forms([p.id for p in raw])

    # the whole collection's texts, once: duplicates and wrong-typed values
    digests: Counter[str] = Counter()
    examples: dict[str, str] = {}
    empty = 0
    for p in view.scroll(collection, with_payload=["content"], batch_size=page_size(view, points)):
        text = (p.payload or {}).get("content")
        if not text:
            empty += 1
            continue
        d = hashlib.blake2b(text.strip().encode("utf-8", "replace"), digest_size=16).hexdigest()
        digests[d] += 1
        examples.setdefault(d, text[:60])
    dup_groups = {d: c for d, c in digests.items() if c > 1}
    duplicates = {"points_with_a_duplicate_text": sum(dup_groups.values()) - len(dup_groups),
                  "groups": len(dup_groups),
                  "examples": [f"{examples[d]!r} x{c}"
                               for d, c in sorted(dup_groups.items(), key=lambda kv: -kv[1])[:3]]}
    say(f"scanned {points} texts for duplicates")

    # the model, on a sample with vectors
    sample_ids = [p.id for p in raw[:MODEL_SAMPLE * 2]]
    with_vectors = view.retrieve(collection, sample_ids, with_vectors=True, with_payload=["content", "title"])
    # several named vectors and none chosen: the first name's (the mapping's note says which setting picks one)
    name = (vectors.get("used") or vectors["named"][0]) if vectors["named"] else None
    missing_vectors = sum(1 for p in with_vectors if stored_vector(p, name) is None)
    model = _model_check(with_vectors, embedder, alternatives, name, ours=view.owned(collection) is True)
    say(f"model check: {model.get('verdict')}")

    # lengths in the configured model's tokenizer, against its window
    records = [r for r in (roles.read(p.payload, p.id) for p in raw) if r["content"]][:LENGTH_SAMPLE]
    texts = [r["content"] for r in records]
    window = embedder.max_tokens
    ours = view.owned(collection) is True
    tokens = [tokens_read(r, embedder.count_tokens, ours=ours) for r in records]
    configured_made_them = bool(model.get("tried")) and model.get("matched") == model["tried"][0]["model"]
    lengths: dict[str, Any] = {"sample": len(tokens), "window": window, "estimated": tokens_estimated(embedder),
                               # counted and judged with a model the check just said did not make these vectors
                               "other_model": bool(model.get("tried")) and not configured_made_them}
    if tokens:
        over = sum(t > window for t in tokens)
        lengths.update({"tokens_p50": percentile(tokens, 50), "tokens_p95": percentile(tokens, 95),
                        "tokens_max": max(tokens), "over_window": over,
                        "over_window_share": round(over / len(tokens), 4),
                        "chars_p50": percentile([len(t) for t in texts], 50)})
    bad = {"wrong_type": dict(view.read_stats.wrong_type), "truncated": dict(view.read_stats.truncated),
           "points_without_text": empty, "sampled_points_without_vector": missing_vectors}
    checkable = _checkable(roles, metadata_db=metadata_db, model_matched=bool(model.get("matched")),
                           metadata_why=metadata_why)
    return Inspection(collection, view.location, points, vectors, dict(ids), keys, roles, view.owned(collection),
                      model, lengths, duplicates, bad, checkable, tokens)


def mapping_rows(inspection: Inspection) -> list[dict[str, str]]:
    """One row per role: the key(s) it reads, what it means, and the evidence (the notebook's table)."""
    roles = inspection.roles
    rows = []
    for role in ROLES:
        keys = roles.keys_of(role)
        where = " / ".join(keys) if keys else ""
        if role == "source_file" and roles.derive_source_file:
            where = (where + " / " if where else "") + f"path of {roles.keys_of('source_url')[0]}"
        missing = "no key found: the point id stands in" if role == "chunk_id" else "no key found"
        rows.append({"role": role, "payload key": where or "-", "meaning": ROLE_MEANINGS[role],
                     "evidence": roles.evidence.get(role, "" if where else missing)})
    return rows
