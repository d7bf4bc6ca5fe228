"""The named causes of a difference between a team's retriever and the collection (notebook 15).

Each takes the paired answers of :class:`~retrieval_lib.checks.retrieval._pairs.SideBySide` and returns a
:class:`~retrieval_lib.checks.retrieval._pairs.Cause`: found or not (or not judgeable, and why), with a small table of
evidence.

=============== ==================================================================================================
``errors``      questions the retriever failed: how many, each error kind, its first message (already redacted)
``cut``         empty answers and fewer results than asked where the collection has them; where they stop,
                from the collection's scores at the same ranks: a similarity threshold, or a cap on the count
``missing``     results without text or without source; the payload key the collection holds them under
``embedding``   the retriever's scores against the cosine of each chunk's stored vector with the question embedded
                as a query and as a document: the same embedding, queries embedded as documents, or another model
                or a transformed query
``order``       the same chunks in another order (a reranker, or fusion): not a fault by itself
``filter``      answers from a subset of the sources the collection answers from, confined to one folder or to at
                most half of the sources (a filter on a chapter or module)
=============== ==================================================================================================
"""

from __future__ import annotations

import math
import os
import statistics
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.retrieval._pairs import Cause, QueryPair, Row, SideBySide, norm_id
from retrieval_lib.stores.base import stored_vector

if TYPE_CHECKING:
    from retrieval_lib.search import Retriever

__all__ = ["name_causes"]

#: Largest median difference at which the retriever's scores count as a cosine the workbook computed: a score
#: rounded to 2 decimals is off by 0.005 at most, one model on two machines differs in the 6th. MiniLM with a
#: 57-character instruction prefix on the question moves the cosines by 0.02 (median;
#: tests/checks/retrieval/test_side_by_side.py): twice this, so queries embedded with and without their prefix are
#: told apart.
SCORE_MATCH = 0.01
#: Two chunks whose collection scores differ by less than this are a tie: their order is nobody's choice.
DISORDER_MARGIN = 1e-4
#: Share of answered questions with a subset-of-sources miss at which a filter is named (and at least 2).
FILTER_SHARE = 0.2
#: Largest share of the sources either side answered from that the retriever's answers may span for a filter to be
#: named (unless they all lie under one folder the collection's do not): a filter confines the answers to a chapter or
#: a module; another model spreads them over most of the book (team #3's e5 queries: 23 of 30 sources).
FILTER_SOURCES_SHARE = 0.5


def name_causes(study: SideBySide, collection: Retriever) -> dict[str, Cause]:
    """Every cause, by key (``collection``: its payload keys, its stored vectors and its embedder)."""
    embedding = embedding_cause(study, collection)
    causes = [errors_cause(study), cut_cause(study), missing_cause(study, _content_keys(collection)),
              embedding, order_cause(study, embedding), filter_cause(study)]
    return {c.key: c for c in causes}


def _content_keys(collection: Retriever) -> dict[str, tuple[str, ...]]:
    roles = collection.store.roles_for(collection.collection)
    return {role: roles.keys_of(role) for role in ("content", "source_url", "source_file")}


# --------------------------------------------------------------------------- errors

def errors_cause(study: SideBySide) -> Cause:
    """Questions the retriever failed, by error kind, with the first message of each kind."""
    failed = [p for p in study.pairs if p.team.failed]
    kinds = Counter(p.team.error_kind or "error" for p in failed)
    first: dict[str, tuple[str, str]] = {}
    for p in failed:
        first.setdefault(p.team.error_kind or "error", (p.query, p.team.error or ""))
    evidence: list[dict[str, Any]] = [{"error_kind": kind, "questions": n, "first_question": first[kind][0],
                                       "first_message": first[kind][1][:300]} for kind, n in kinds.most_common()]
    n = len(study.pairs)
    if not failed:
        return Cause("errors", False, f"all {n} questions answered without an error")
    shown = "; ".join(f"{e['questions']} {e['error_kind']} (first: {str(e['first_message'])[:120]})"
                      for e in evidence)
    return Cause("errors", True, f"{len(failed)} of {n} questions failed: {shown}", evidence)


# --------------------------------------------------------------------------- empty and cut answers

def _score_at(rows: Sequence[Row], rank: int) -> float | None:
    return rows[rank - 1].score if 0 < rank <= len(rows) else None


def cut_cause(study: SideBySide) -> Cause:
    """Empty answers and answers with fewer results than asked, where the collection returned them.

    Where they stop: the collection's score at the last rank the retriever kept and at the first it dropped. When
    every kept score is above every dropped one, a similarity threshold between them explains the cut; when every
    cut answer holds the same number of results, a cap.
    """
    k = study.top_k
    evidence: list[dict[str, Any]] = []
    kept: list[float] = []
    dropped: list[float] = []
    counts: list[int] = []
    for p in study.answered:
        got, has = len(p.team.rows), min(k, len(p.collection.rows))
        if got >= has:
            last = _score_at(p.collection.rows, got)
            if last is not None and got:
                kept.append(last)  # a full answer keeps its lowest score too: a threshold lies below it
            continue
        at_last, at_first = _score_at(p.collection.rows, got), _score_at(p.collection.rows, got + 1)
        if at_last is not None:
            kept.append(at_last)
        if at_first is not None:
            dropped.append(at_first)
        counts.append(got)
        evidence.append({"query": p.query, "asked": k, "returned": got, "collection_returned": len(p.collection.rows),
                         "collection_score_last_kept": None if at_last is None else round(at_last, 4),
                         "collection_score_first_dropped": None if at_first is None else round(at_first, 4)})
    n = len(study.answered)
    if not n:
        return Cause("cut", None, "no question was answered (see the errors gate)")
    if not evidence:
        return Cause("cut", False, f"all {n} answered questions returned the {k} results asked (or all the collection "
                                   "has)")
    empty = sum(1 for e in evidence if e["returned"] == 0)
    head = f"{empty} empty and {len(evidence) - empty} cut answers of {n}"
    if dropped and kept and max(dropped) < min(kept):
        why = (f"the answers stop where the collection's scores fall below a threshold between "
               f"{max(dropped):.3f} and {min(kept):.3f} (every result scoring above it kept, every one below dropped): "
               "a similarity threshold")
    elif dropped and not kept:
        why = (f"every answer is empty, though the collection's best scores reach {max(dropped):.3f}: a threshold "
               "above that, or a reader that drops every result")
    elif len(set(counts)) == 1 and counts[0] > 0:
        why = f"every cut answer holds exactly {counts[0]} results whatever the scores: a cap (a limit that ignores " \
              "top_k)"
    else:
        why = "neither one threshold nor one cap explains where they stop"
    return Cause("cut", True, f"{head}; {why}", evidence)


# --------------------------------------------------------------------------- text and source

def missing_cause(study: SideBySide, keys: dict[str, tuple[str, ...]]) -> Cause:
    """Results whose text or source is empty or missing, and the key the collection holds each under."""
    rows = [(p, t) for p in study.answered for t in p.team.rows]
    if not rows:
        return Cause("missing", None, "the retriever returned no result to read")
    no_text = [(p, t) for p, t in rows if not (t.content or "").strip()]
    no_source = [(p, t) for p, t in rows if not (t.source_url or t.source_file)]
    evidence = []
    for what, role, lacking, other in (("text", "content", no_text, ()),
                                       ("source", "source_url", no_source, ("source_file",))):
        if not lacking:
            continue
        held = keys.get(role, ()) + tuple(k for r in other for k in keys.get(r, ()))
        matched = sum(1 for p, t in lacking if _collection_has(p, t, role, other))
        evidence.append({"field": what, "results_without": len(lacking), "of_results": len(rows),
                         "matched_in_collection_with_it": matched,
                         "collection_payload_key": ", ".join(held) or "(none: the collection holds no "
                                                                       f"{what} either)"})
    if not evidence:
        return Cause("missing", False, f"all {len(rows)} results carry their text and their source")
    parts = []
    for e in evidence:
        key = str(e["collection_payload_key"])
        said = (f"the collection holds it under payload key {key!r}: the retriever's reader asks for a key the "
                "ingest never wrote" if not key.startswith("(none") else key)
        parts.append(f"{e['results_without']} of {e['of_results']} results have no {e['field']}; {said}")
    return Cause("missing", True, "; ".join(parts), evidence)


def _collection_has(p: QueryPair, t: Row, role: str, other: Sequence[str]) -> bool:
    for team_rank, ours_rank in p.matched:
        if team_rank == t.rank:
            row = p.collection.rows[ours_rank - 1]
            values = {"content": row.content, "source_url": row.source_url, "source_file": row.source_file}
            return any(values.get(r) for r in (role, *other))
    return False


# --------------------------------------------------------------------------- the query embedding

def _point_key(value: str) -> Any:
    """A chunk id as a Qdrant point id (an unsigned integer or a UUID), or None when it cannot be one."""
    text = value.strip()
    if text.isdigit():
        return int(text)
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return None


def stored_vectors(collection: Retriever, ids: Sequence[str]) -> dict[str, list[float]]:
    """The stored vector of each chunk id (:func:`norm_id`) the collection holds: by point id where the id is one,
    else through the collection's chunk id key (one filtered read); ids it does not hold are left out."""
    from qdrant_client import models

    view, name = collection.store, collection.collection
    out: dict[str, list[float]] = {}
    wanted = [key for key in map(_point_key, ids) if key is not None]
    if wanted:
        for point in view.retrieve(name, wanted, with_vectors=True):
            vector = stored_vector(point)
            if vector is not None:
                out[norm_id(point.id)] = vector
    rest = [i for i in ids if norm_id(i) not in out]
    if rest and view.roles_for(name).filter_key("chunk_id") is not None:
        condition = models.FieldCondition(key="chunk_id", match=models.MatchAny(any=list(rest)))
        for point in view.scroll(name, with_payload=["chunk_id"], with_vectors=True, batch_size=len(rest) + 1,
                                 query_filter=models.Filter(must=[condition])):
            vector = stored_vector(point)
            chunk = (point.payload or {}).get("chunk_id")
            if vector is not None and chunk is not None:
                out[norm_id(chunk)] = vector
    return out


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else math.nan


#: Texts asked of the collection in one filtered read when results without an id are looked up by their text.
TEXT_BATCH = 64


def chunks_by_text(collection: Retriever, texts: Sequence[str]) -> dict[str, str]:
    """The point id of the collection's chunk holding each text exactly (its content payload key), keyed by
    :attr:`~retrieval_lib.checks.retrieval._pairs.Row.text_key`; texts it does not hold are left out (nothing when
    the collection names no content key). One filtered read per :data:`TEXT_BATCH` texts."""
    from qdrant_client import models

    view, name = collection.store, collection.collection
    wanted = list(dict.fromkeys(t for t in texts if t and t.strip()))
    if not wanted or not view.roles_for(name).keys_of("content"):
        return {}
    out: dict[str, str] = {}
    for start in range(0, len(wanted), TEXT_BATCH):
        batch = wanted[start:start + TEXT_BATCH]
        condition = models.FieldCondition(key="content", match=models.MatchAny(any=batch))
        for point in view.scroll(name, with_payload=["content"], batch_size=2 * len(batch) + 1,
                                 query_filter=models.Filter(must=[condition])):
            text = (point.payload or {}).get("content")
            if isinstance(text, str):
                out.setdefault(" ".join(text.split())[:300], norm_id(point.id))
    return out


def _chunk_ids(scored: Sequence[tuple[QueryPair, Row]], collection: Retriever) -> dict[tuple[int, int], str]:
    """Each result's chunk as the collection knows it, by (``id`` of its question pair, its rank): the chunk it was
    matched to (:func:`~retrieval_lib.checks.retrieval._pairs.same_chunk`: by id, or by its text) in the
    collection's top k, else the retriever's own chunk id, else the chunk anywhere in the collection with its text
    (:func:`chunks_by_text`). Results none of these identify are left out."""
    ids: dict[tuple[int, int], str] = {}
    pending: list[tuple[QueryPair, Row]] = []
    for p, t in scored:
        ours = next((p.collection.rows[c - 1] for tr, c in p.matched if tr == t.rank), None)
        if ours is not None and ours.point_id:
            ids[(id(p), t.rank)] = ours.point_id
        elif t.chunk_id:
            ids[(id(p), t.rank)] = str(t.chunk_id)
        elif t.text_key:
            pending.append((p, t))
    if pending:
        by_text = chunks_by_text(collection, [t.content or "" for _, t in pending])
        for p, t in pending:
            if t.text_key in by_text:
                ids[(id(p), t.rank)] = by_text[t.text_key]
    return ids


def embedding_cause(study: SideBySide, collection: Retriever) -> Cause:
    """Compare the retriever's scores with the cosine of each chunk's stored vector and the question embedded as a
    query, and as a document, by the configured embedder.

    A result's chunk is known by its id, or, for a result without one (most backends return text, source and
    score only), by its text (:func:`_chunk_ids`). The scores match the query cosine: the same embedding. They match
    the document cosine (and the two differ for this model): queries embedded as documents. Neither: another model
    or a transformed query (a missing prefix, a rewritten question), unless the chunks are the collection's own and
    only re-scored (a reranker), which scores cannot judge.
    """
    candidates = [(p, t) for p in study.answered for t in p.team.rows[:study.top_k]]
    scored = [(p, t) for p, t in candidates if t.score is not None and math.isfinite(t.score)]
    if not scored:
        return Cause("embedding", None, "the retriever returns no scores, so its query embedding cannot be compared"
                     if candidates else "the retriever returned no result")
    ids = _chunk_ids(scored, collection)
    if not ids:
        return Cause("embedding", None, f"none of the {len(scored)} scored results carries a chunk id or the text "
                                        "of a chunk of this collection, so their stored vectors cannot be read")
    vectors = stored_vectors(collection, list(dict.fromkeys(ids.values())))
    found = [(p, t) for p, t in scored if (p_id := ids.get((id(p), t.rank))) is not None and norm_id(p_id) in vectors]
    if not found:
        return Cause("embedding", None, f"none of the {len(ids)} chunk ids of the retriever's results is a point or "
                                        "chunk id of this collection")
    questions = list(dict.fromkeys(p.query for p, _ in found))
    embedder = collection.embedder
    as_query = dict(zip(questions, embedder.embed_queries(questions)))
    as_document = dict(zip(questions, embedder.embed_documents(questions)))
    rows = []
    for p, t in found:
        stored = vectors[norm_id(ids[(id(p), t.rank)])]
        rows.append((p.query, t.rank, float(t.score or 0.0), _cosine(as_query[p.query], stored),
                     _cosine(as_document[p.query], stored)))
    study.scores = rows
    return _judge_scores(rows, study, len(scored))


def _judge_scores(rows: list[tuple[str, int, float, float, float]], study: SideBySide, asked: int) -> Cause:
    off_query = statistics.median(abs(s - q) for _, _, s, q, _ in rows)
    off_document = statistics.median(abs(s - d) for _, _, s, _, d in rows)
    off_distance = statistics.median(abs(s - (1 - q)) for _, _, s, q, _ in rows)
    apart = statistics.median(abs(q - d) for _, _, _, q, d in rows)
    evidence = [{"compared_with": what, "median_abs_difference": round(value, 4)}
                for what, value in (("the question embedded as a query", off_query),
                                    ("the question embedded as a document", off_document),
                                    ("1 - cosine as a query (a distance)", off_distance))]
    head = (f"{len(rows)} results of {asked} with a score and a chunk this collection holds (by id or by text); "
            f"the retriever's scores differ from the cosine with the question embedded as a query by {off_query:.3f} "
            f"(median), as a document by {off_document:.3f}")
    alike = apart < SCORE_MATCH  # the model embeds a question alike as a query and as a document
    if off_query <= SCORE_MATCH:
        said = ("the same query embedding" + (" (this model embeds queries and documents alike, so the input type "
                                              "cannot be told apart here)" if alike else ""))
        return Cause("embedding", False, f"{head}: {said}", evidence)
    if not alike and off_document <= SCORE_MATCH:
        return Cause("embedding", True, f"{head}: queries embedded as documents (the document input type or prefix "
                                        "where the query's belongs)", evidence, "queries embedded as documents")
    if off_distance <= SCORE_MATCH:
        return Cause("embedding", False, f"{head}; they are 1 - cosine of the query embedding: the same query "
                                         "embedding, its scores a distance", evidence)
    overlaps = [p.overlap for p in study.answered if p.overlap is not None]
    if overlaps and statistics.mean(overlaps) >= 0.8:
        return Cause("embedding", None,
                     f"{head}, yet it returns the collection's own chunks (mean overlap "
                     f"{statistics.mean(overlaps):.2f}): "
                     "its scores are on another scale (a reranker's or fusion's), which cannot judge the embedding",
                     evidence)
    return Cause("embedding", True,
                 f"{head}: another model or a transformed query (a missing or extra prefix, a rewritten question)",
                 evidence, "another model or a transformed query")


# --------------------------------------------------------------------------- order and filters

def _disordered(p: QueryPair) -> int:
    """Pairs of chunks both sides returned that the retriever ranks the other way round (collection ties aside)."""
    scores = {c: p.collection.rows[c - 1].score for _, c in p.matched}
    swaps = 0
    for i, (t1, c1) in enumerate(p.matched):
        for t2, c2 in p.matched[i + 1:]:
            s1, s2 = scores[c1], scores[c2]
            if s1 is None or s2 is None or abs(s1 - s2) < DISORDER_MARGIN:
                continue
            if (c1 - c2) * (t1 - t2) < 0:
                swaps += 1
    return swaps


def order_cause(study: SideBySide, embedding: Cause | None = None) -> Cause:
    """The same chunks in another order: questions where most chunks are shared but ranked differently; a reranker
    or fusion, unless ``embedding`` (the query embedding's cause) was found: another query embedding ranks the same
    chunks otherwise too, so the order is then put down to it."""
    evidence = []
    for p in study.answered:
        if p.overlap is None or p.overlap < 0.6 or len(p.matched) < 2:
            continue
        swaps = _disordered(p)
        if swaps:
            evidence.append({"query": p.query, "shared_chunks": len(p.matched), "swapped_pairs": swaps,
                             "rank_shifts": " ".join(f"{s:+d}" for s in p.rank_shifts)})
    n = len(study.answered)
    if not n:
        return Cause("order", None, "no question was answered")
    if not evidence:
        return Cause("order", False, f"no answered question ranks the collection's chunks in another order ({n} "
                                     "questions)")
    head = f"{len(evidence)} of {n} questions rank the collection's chunks in another order"
    if embedding is not None and embedding.found:
        return Cause("order", True, f"{head}: explained by the query embedding's cause ({embedding.title}), not "
                                    "necessarily a reranker",
                     evidence)
    return Cause("order", True,
                 f"{head}: a reranker or fusion (not a fault by itself; the hit-rate gate says whether it helps)",
                 evidence)


def _common_prefix(pages: Sequence[str]) -> str:
    prefix = os.path.commonprefix(list(pages))
    return prefix[:prefix.rfind("/") + 1] if "/" in prefix else prefix


def filter_cause(study: SideBySide) -> Cause:
    """Answers from a subset of the sources: the collection's best source for a question is one the retriever never
    returns for any question, while it answers that question from elsewhere; and the sources it does answer from
    are confined as a filter confines them: all under one folder the collection's answers are not all under, or at
    most :data:`FILTER_SOURCES_SHARE` of the sources either side answered from.

    Missed best sources alone are what another model leaves too (its answers are spread over most of the book, just
    not the collection's best pages): without the confinement a filter is not named."""
    answered = [p for p in study.answered if p.team.rows]
    ours = {r.page for p in study.answered for r in p.collection.rows[:study.top_k] if r.page}
    theirs = {r.page for p in answered for r in p.team.rows if r.page}
    if not answered or not theirs:
        return Cause("filter", None, "the retriever returned no result with a source")
    # the team's source spelling may differ from the collection's: compare only where they share spellings
    if not theirs & ours:
        return Cause("filter", None, "the retriever's sources are spelled unlike the collection's (none in common), "
                                     "so they cannot be compared")
    missed = [p for p in answered
              if p.collection.rows and p.collection.rows[0].page and p.collection.rows[0].page not in theirs]
    evidence = [{"query": p.query, "collection_top_source": p.collection.rows[0].page,
                 "retriever_top_source": p.team.rows[0].page} for p in missed]
    either = ours | theirs
    prefix = _common_prefix(sorted(theirs))
    under = len(prefix) > len(_common_prefix(sorted(either)))
    confined = under or len(theirs) <= FILTER_SOURCES_SHARE * len(either)
    if len(missed) < max(2, math.ceil(FILTER_SHARE * len(answered))):
        return Cause("filter", False, f"the retriever answers from {len(theirs)} sources; the collection's best "
                                      f"source for {len(answered) - len(missed)} of {len(answered)} questions is "
                                      "among them")
    if not confined:
        return Cause("filter", False,
                     f"for {len(missed)} of {len(answered)} questions the collection's best source is never "
                     f"returned, but the retriever's answers span {len(theirs)} of the {len(either)} sources either "
                     "side answered from, under no one folder: the other results a different ranking gives (see the "
                     "query embedding), not a filter")
    where = f", all under {prefix!r}" if under else ""
    return Cause("filter", True,
                 f"every result comes from {len(theirs)} of the {len(either)} sources either side answered "
                 f"from{where}; for {len(missed)} of {len(answered)} questions the collection's best source is never "
                 "returned: a filter (a chapter, a module, a source)", evidence)
