"""Every gate of every check, defined once: id, label, parameter, what it means and what to do when it fails.

A check records its gates through these definitions (``golden_set.py``: ``GOLDEN_PASSES.record(report, ...)``), and
``docs/gates.md`` is generated from them (:mod:`retrieval_lib.checks.gate_docs`), so a gate's wording and its id
are written here and nowhere else. Ids are ``"<check>.<what>"`` and never hold a threshold
(:mod:`retrieval_lib.workbook.gates`); a gate emitted once per item (per topic, per concurrency level) has
``per`` set, and each one's id ends in the item.

Notebooks are named as in the registry (:mod:`retrieval_lib.workbook.registry`), in the order of :data:`GATES`.
"""

from __future__ import annotations

from retrieval_lib.workbook.gates import GateDef

__all__ = ["GATES", "by_id"]

# ---------------------------------------------------------------- 01 query
QUERY_ORDERED = GateDef(
    "query.ordered", "results ordered by score, highest first", ("query",),
    "every answer lists its chunks best first (seed 000 FR-004)",
    "a custom backend or proxy re-sorting results; check `QDRANT_URL` points at Qdrant itself")
QUERY_METADATA = GateDef(
    "query.metadata", "every result carries full metadata", ("query",),
    "each chunk carries every payload field the collection holds (seed 000 FR-007)",
    "a collection built by another ingest that stores fewer fields; re-ingest, or accept the listed fields as missing")
QUERY_LIMITS = GateDef(
    "query.limits", "top_k and threshold respected", ("query",),
    "never more than `top_k` results, none below the threshold",
    "a server-side default limit or score threshold; check the collection and the proxy")
QUERY_NO_MATCH = GateDef(
    "query.no_match", "no-match threshold gives an empty result, not an error", ("query",),
    "an impossible threshold answers \"nothing\", with a warning, not an error",
    "`no_match_threshold` set below the best score: raise it to 0.95")

# ---------------------------------------------------------------- 02 score distributions
SCORES_RANGE = GateDef(
    "scores.range", "similarity scores within [0, 1]", ("score_distributions",),
    "scores are normalised (seed 000 SC-008)",
    "a collection with dot or Euclid distance instead of cosine; recreate it with cosine")
SCORES_SEPARATION = GateDef(
    "scores.separation", "in-domain and out-of-domain separate by score", ("score_distributions",),
    "the lowest in-domain top-1 score is above the highest out-of-domain one, by `min_separation`",
    "a query set with off-topic \"in-domain\" questions, or a model that does not fit the language of the book; read "
    "the per-query table", parameter="min_separation")
SCORES_THRESHOLD = GateDef(
    "scores.threshold", "threshold {candidate_threshold:g} keeps every in-domain query and rejects every OOD query",
    ("score_distributions",), "`candidate_threshold` sits in the gap between the two sets",
    "the threshold is outside the gap: use the recommended threshold the notebook prints "
    "([Choosing thresholds](notebooks.md#choosing-thresholds))", parameter="candidate_threshold")

# ---------------------------------------------------------------- 03 source coverage
COVERAGE_REACHABLE = GateDef(
    "coverage.reachable", "every source file is reachable by a query", ("source_coverage",),
    "each file appears in some query's top-k (seed 000 SC-003); each file is asked its headings, else its title, "
    "else its file name",
    "stub or duplicate pages, or a file whose text the model cannot tell apart; the notebook lists unreachable files "
    "and where their headings went", parameter="min_reachable_share")
COVERAGE_TOPIC = GateDef(
    "coverage.topic", "{topic} lands in {prefix}", ("source_coverage",),
    "one topic query (the profile's `primary_query`, \"Gazebo simulation\") finds its module (seed 000 SC-007)",
    "`primary_prefix` not matching your paths (use the `source_file` prefix or the URL path)",
    parameter="min_primary_share", per="topic")
COVERAGE_TOPICS = GateDef(
    "coverage.topics", "{topics} topic queries land in their own section", ("source_coverage",),
    "a topics file's (drafted or reviewed) queries find their sections: the mean share of each top k under its prefix",
    "topics whose prefix is not how your sources are named, or sections the model cannot tell apart; the findings name "
    "the lowest topic", parameter="min_primary_share", unjudged_label="topic queries land in their own section")

# ---------------------------------------------------------------- 04 consistency
_SAME = ("the same query gives the same ids in the same order, scores within `score_tolerance` (seed 000 SC-004)")
_NONDETERMINISTIC = ("a nondeterministic backend (approximate search with changing segments, a load balancer over "
                     "unequal replicas), or a tolerance below the noise of your store")
CONSISTENCY_REPEATS = GateDef(
    "consistency.repeats", "identical across {repeats} repeats", ("consistency",), _SAME, _NONDETERMINISTIC)
CONSISTENCY_FRESH_CLIENT = GateDef(
    "consistency.fresh_client", "identical through a fresh client", ("consistency",),
    "a newly opened client gives the first client's answers", _NONDETERMINISTIC)
CONSISTENCY_SEARCH_MANY = GateDef(
    "consistency.search_many", "search_many agrees with search", ("consistency",),
    "one batched pass gives the answers of single searches", _NONDETERMINISTIC)
CONSISTENCY_PHASE = GateDef(
    "consistency.phase", "identical: {phase}", ("consistency",),
    "any other phase a caller adds gives the first run's answers", _NONDETERMINISTIC, per="phase")
#: The gate each standard phase of :func:`retrieval_lib.checks.stability.consistency.phase_runs` answers.
CONSISTENCY_PHASES = {"repeat": CONSISTENCY_REPEATS, "fresh client": CONSISTENCY_FRESH_CLIENT,
                      "search_many": CONSISTENCY_SEARCH_MANY}
LANGUAGES_CROSS_LINGUAL = GateDef(
    "languages.cross_lingual", "questions in other languages find what English finds", ("consistency",),
    "the lowest language's mean Jaccard@k with the English answers reaches `min_cross_lingual_jaccard` (no gate when "
    "it is null, the default)",
    "an English-only model: use a multilingual one for documents and queries "
    "([Other languages](notebooks.md#other-languages-notebook-04))", parameter="min_cross_lingual_jaccard")

# ---------------------------------------------------------------- 05 golden set (and 07: completeness)
GOLDEN_PASSES = GateDef(
    "golden.passes", "at least {required_passes} golden queries pass", ("golden_set",),
    "golden queries find an expected page in the top k with `min_score` (seed 004)",
    "wrong `expected_url_patterns` for your routes, or `min_score` above what your model scores; the chart puts every "
    "score beside its bar", unjudged_label="the golden queries pass")
GOLDEN_NEGATIVES = GateDef(
    "golden.negatives", "every negative returns nothing relevant", ("golden_set",),
    "out-of-domain questions stay below `max_score`",
    "a threshold set too low, or generic chunks (glossaries, index pages) that match anything")
HEALTH_COMPLETENESS = GateDef(
    "health.completeness", "metadata completeness >= {min_metadata_completeness:g}%",
    ("golden_set", "collection_health"), "the share of points with every payload field the collection holds",
    "see 01's metadata gate", parameter="min_metadata_completeness")

# ---------------------------------------------------------------- 06 latency
LATENCY_P95 = GateDef(
    "latency.p95", "p95 latency <= {latency_p95_target_ms} ms", ("latency",),
    "95% of searches (embed + search) finish within `latency_p95_target_ms` (seed 000 SC-002)",
    "a cold or remote embedding service, a loaded machine, or a filtered query on an unindexed field",
    parameter="latency_p95_target_ms")
LATENCY_ERRORS = GateDef(
    "latency.concurrent_errors", "concurrent run has zero errors", ("latency",),
    "`concurrent_queries` on `concurrency` threads all succeed",
    "rate limits (Cohere trial keys), a store that is not thread-safe, too short `concurrent_timeout_s`")
LATENCY_RANKINGS = GateDef(
    "latency.concurrent_rankings", "concurrent rankings identical to sequential", ("latency",),
    "under load every answer is the sequential one (ids, order, scores within `score_tolerance`)",
    "a store or embedder that is not thread-safe, or scores that move by more than `score_tolerance`")

# ---------------------------------------------------------------- 07 collection health
HEALTH_MIN_POINTS = GateDef(
    "health.min_points", "at least {min_points} points", ("collection_health",),
    "the collection holds `min_points` points",
    "an ingest that stopped early, or the wrong `QDRANT_COLLECTION_NAME`", parameter="min_points")
HEALTH_DUPLICATES = GateDef(
    "health.duplicates", "duplicate share <= {max_duplicate_share:g}", ("collection_health",),
    "points that repeat another's text (`content_hash`, else the text itself)",
    "the same page ingested under two paths, or a chunker that emits identical chunks",
    parameter="max_duplicate_share")
HEALTH_MODEL = GateDef(
    "health.model", "every point embedded with the configured model", ("collection_health",),
    "every `model_version` equals the embedder's model (seed 000 FR-012); not applicable when no point names one",
    "a collection mixing two models; re-ingest with `--recreate`")
HEALTH_DIMENSION = GateDef(
    "health.dimension", "collection dimension == embedder dimension", ("collection_health",),
    "the vectors fit the embedder", "the wrong `EMBEDDING_MODEL` for this collection")

# ---------------------------------------------------------------- 08 the retrieval API
API_HEALTH = GateDef(
    "api.health", "/health answers 200 and names its dependencies", ("api",),
    "`GET /health` answers 200 and says whether the vector store and the database are up (seed 003 SC-001)",
    "a dependency down, or a health route that names none: make it report Qdrant and the database")
API_FIELDS = GateDef(
    "api.fields", "every result carries the seed-003 fields", ("api",),
    "chunk_id, snippet, source_path, slug, title and score in every result (seed 003 SC-004)",
    "a service that reads payload keys your ingest never wrote; the detail lists what is missing")
API_GOLDEN = GateDef(
    "api.golden_rankings", "the golden queries rank as the library does", ("api",),
    "over HTTP the golden queries give the library's chunk ids in its order (ours only; not applicable without a "
    "golden set)", "the service embeds or filters differently from the library (another model, input type, threshold)")
API_TOP_K = GateDef(
    "api.top_k", "top_k: 5 by default, 3 when asked, capped at 20", ("api",),
    "the seed's `top_k` rules (seed 003 FR-012)", "a service whose default or cap differs from the seed's")
API_INVALID = GateDef(
    "api.invalid_input", "invalid input is 400 with an error type and message", ("api",),
    "six invalid requests each get a 400 with a type and a message (seed 003 SC-006)",
    "unvalidated input reaching the embedder (a 500), or an error body without a type")
API_REPEATS = GateDef(
    "api.repeats", "repeated queries give identical answers", ("api",),
    "the same search always returns the identical answer (seed 003 SC-005)",
    "a nondeterministic store or a cache that serves stale answers")
API_CONCURRENT = GateDef(
    "api.concurrent", "{n} concurrent requests: no error, the serial answers", ("api",),
    "each level of `api_concurrency` (10, 100) completes without errors, with the serial answers (seed 003 SC-008)",
    "rate limits of the embedding service, or a service that is not thread-safe", per="concurrency")
API_OVERHEAD = GateDef(
    "api.overhead", "the HTTP layer adds little to the library's latency (p50)", ("api",),
    "HTTP p50 minus the library's in-process p50 stays within `api_max_overhead_ms` (ours only)",
    "blocking work in the request path (a database join per result, no connection reuse)",
    parameter="api_max_overhead_ms")
API_METADATA = GateDef(
    "api.metadata", "metadata rows and vector points agree", ("api",),
    "every point has its metadata row, every row its point, and the fields agree (not applicable without "
    "`DATABASE_URL`, or when the database holds no table this workbook reads: our ingest's `chunks`, compared only "
    "for the collections it wrote, or seed 003's `documents`)",
    "rows and points written apart: for a collection this workbook's ingest wrote, run `python -m retrieval_lib "
    "ingest` to bring the rows in line; a team's collection and rows are its own pipeline's: re-run its metadata "
    "step (the workbook writes neither)")

# ---------------------------------------------------------------- 09 embedding contract
CONTRACT_COSINE = GateDef(
    "contract.cosine", "re-embedded chunks match their stored vectors", ("embedding_contract",),
    "the lowest cosine of a stored vector and its text re-embedded as a document reaches `contract_min_cosine`",
    "another model, a swapped input type, text changed since ingest or truncation: the hint follows the diagnosis "
    "([Embedding contract](notebooks.md#embedding-contract-notebook-09-probe))", parameter="contract_min_cosine")
CONTRACT_SELF_RETRIEVAL = GateDef(
    "contract.self_retrieval", "stored vectors retrieve their chunks as well as fresh re-embeddings",
    ("embedding_contract",),
    "the sample's self-retrieval by stored vectors is at most `max_self_retrieval_drop` below the same by fresh "
    "re-embeddings", "the stored vectors do not meet the queries the configured embedder makes: see the cosine gate",
    parameter="max_self_retrieval_drop")

# ---------------------------------------------------------------- 10 reachability
REACH_ANTIHUBS = GateDef(
    "reach.antihubs", "few chunks are unreachable (anti-hubs)", ("reachability",),
    "the share of chunks in no other chunk's top k stays within `max_antihub_share`",
    "chunks too short, boilerplate or duplicated text: fix the chunking or the pages", parameter="max_antihub_share")
REACH_HUBS = GateDef(
    "reach.hubs", "no hubs crowd the answers (N_k skewness)", ("reachability",),
    "the skewness of the chunks' k-occurrence stays within `max_nk_skewness`",
    "generic chunks (glossaries, index pages, boilerplate): cut them down or drop them", parameter="max_nk_skewness")
REACH_OFFTOPIC = GateDef(
    "reach.offtopic", "no off-topic files", ("reachability",),
    "at most `max_offtopic_files` files far from the rest of the book or recognised as a generator's stock page",
    "template pages, changelogs, stray pages: remove them and re-ingest, or raise `offtopic_max_z` if they belong",
    parameter="max_offtopic_files")

# ---------------------------------------------------------------- 11 ANN recall
_ANN_CAUSES = ("raise `hnsw_ef` at query time, or rebuild the index with a larger `m` / `ef_construct`; for a filtered "
               "slice, index the filtered field")
ANN_RECALL_MEAN = GateDef(
    "ann.recall_mean", "ANN mean recall@{k} >= {ann_min_recall:g}", ("ann_recall",),
    "HNSW finds on average `ann_min_recall` of what exact search finds (no gate where nothing is indexed)",
    _ANN_CAUSES, parameter="ann_min_recall")
ANN_RECALL_P5 = GateDef(
    "ann.recall_p5", "ANN P5 recall@{k} >= {ann_min_recall_p5:g}", ("ann_recall",),
    "the 5th percentile of per-query recall reaches `ann_min_recall_p5`", _ANN_CAUSES, parameter="ann_min_recall_p5")
ANN_SLICES = GateDef(
    "ann.slices", "every filtered slice's mean recall@{k} >= {ann_min_recall:g}", ("ann_recall",),
    "under each source prefix's filter the mean recall reaches `ann_min_recall`", _ANN_CAUSES,
    parameter="ann_min_recall")

# ---------------------------------------------------------------- 12 chunk quality
CHUNKS_UNSEEN = GateDef(
    "chunks.unseen", "share of text past the model window", ("chunk_quality",),
    "text past the model's window is cut before embedding: at most `max_unseen_share` of it",
    "re-chunk so every chunk fits the window minus its title line (split long code and lists)",
    parameter="max_unseen_share")
CHUNKS_FRAGMENTS = GateDef(
    "chunks.fragments", "fragment share", ("chunk_quality",),
    "chunks too short or mostly heading: at most `max_fragment_share`",
    "fold heading-only and lead-in chunks into their neighbours when chunking", parameter="max_fragment_share")
CHUNKS_FRAGMENT_WINS = GateDef(
    "chunks.fragment_wins", "fragment win rate", ("chunk_quality",),
    "how often a fragment beats its own section's full chunk to top-1: at most `max_fragment_win_rate`",
    "merge the fragments in the wins table with their section's text", parameter="max_fragment_win_rate")

# ---------------------------------------------------------------- 13 judgments
JUDGED_PRECISION = GateDef(
    "judged.precision", "at least {min_precision_at_3:.0%} of top-{cutoff} results are topically related (human "
    "judgments)", ("judgments",),
    "the lower bound of precision@3 over a person's grades reaches `min_precision_at_3` (seed 000 SC-006)",
    "unjudged or stale results: judge them first; else improve the chunks or the embedder for the queries graded 0 "
    "([Human relevance judgments](judgments.md))", parameter="min_precision_at_3")
JUDGED_COVERAGE = GateDef(
    "judged.coverage", "the top {cutoff} of every query is judged", ("judgments",),
    "the judged share of every query's top 3 reaches `min_judged_coverage`",
    "open notebooks/13_judgments.ipynb in JupyterLab (`make lab`), set `judge`, and grade the unjudged results",
    parameter="min_judged_coverage")

# ---------------------------------------------------------------- 14 compare
COMPARE_REGRESSION = GateDef(
    "compare.regression", "no metric significantly worse than the baseline", ("compare",),
    "no metric worse with p < `compare_alpha` and a drop of at least `compare_min_effect` (no gate without an earlier "
    "complete run)", "read the worse queries side by side; if the change is intended, make this run the new baseline "
    "([Comparing two runs](reports.md#did-retrieval-get-worse-comparing-two-runs-notebook-14-compare))",
    parameter="min_effect")

# ---------------------------------------------------------------- 15 side by side (a team's retriever: retriever:)
SIDE_BY_SIDE_ERRORS = GateDef(
    "side_by_side.errors", "the retriever answers every question without an error", ("side_by_side",),
    "every golden question asked of the profile's `retriever:` got an answer; a failure is counted with its status "
    "or exception and the first message (secrets redacted), never taken for an empty answer",
    "the endpoint down or at another URL, a 4xx/5xx, an answer that is not JSON, a function that raises, hangs past "
    "`timeout_s` or exits: make it answer every question (`python -m retrieval_lib retriever --params P` probes it)")
SIDE_BY_SIDE_HIT_RATE = GateDef(
    "side_by_side.hit_rate", "the retriever finds the golden pages as often as the collection (paired test)",
    ("side_by_side",),
    "hit@k through the retriever is not significantly lower than through the collection's own search (the paired "
    "t-test of compare, at `compare_alpha`)",
    "read the named causes below it: each says what in the retriever's code differs from the collection's own search")
SIDE_BY_SIDE_COMPLETE_ANSWERS = GateDef(
    "side_by_side.complete_answers",
    "the retriever returns as many results as asked where the collection has them", ("side_by_side",),
    "no empty or cut answer where the collection returns `top_k` results; the evidence gives the score where the "
    "answers stop",
    "a similarity threshold or a limit in the retriever's code (a threshold copied from another model's tutorial): "
    "lower it below the scores shown, or pass top_k through as the limit")
SIDE_BY_SIDE_TEXT_AND_SOURCE = GateDef(
    "side_by_side.text_and_source", "every result carries its text and its source", ("side_by_side",),
    "no result with an empty or missing text or source",
    "the retriever's reader asks the payload for a key the ingest never wrote: read the key the evidence names (the "
    "one the collection holds), or map `fields` to it")
SIDE_BY_SIDE_QUERY_EMBEDDING = GateDef(
    "side_by_side.query_embedding", "the retriever embeds questions as the collection's queries", ("side_by_side",),
    "where the retriever returns scores for chunks of this collection (by their ids, or found by their text), its "
    "scores match the cosine of the question embedded as a query (not as a document, not by another model)",
    "embed the question as a query with the model that embedded the documents (Cohere input_type='search_query', "
    "e5's 'query: ' prefix, the same model name)")
SIDE_BY_SIDE_SOURCES = GateDef(
    "side_by_side.sources", "the retriever answers from every source the collection answers from", ("side_by_side",),
    "the retriever's results come from the sources the collection's own answers come from, not a subset",
    "a filter in the retriever (a chapter, a module, a source): drop it or make it depend on the question")
#: Recorded by every query notebook whose questions went to a team's retriever (NotebookRun.finish).
RETRIEVER_ANSWERED = GateDef(
    "retriever.answered", "the chatbot's retriever answered every question",
    ("query", "score_distributions", "source_coverage", "consistency", "golden_set", "latency", "judgments",
     "side_by_side", "book"),
    "every question the notebook asked the profile's `retriever:` got an answer (failures by kind, the first one "
    "in one line)",
    "see the first error: start the endpoint, fix the URL, the function or the mapping "
    "(`python -m retrieval_lib retriever --params P` probes it)")

# ---------------------------------------------------------------- 16 book (the book is the source of truth)
BOOK_MISSING = GateDef(
    "book.missing", "pages never ingested", ("book",),
    "at most `max_missing_pages` of the book's own pages have no chunk (site generators' stock pages and \"Coming "
    "soon\" stubs are listed apart and not counted)",
    "the ingest skipped them: its glob (`.mdx`?), the folders it walks, a sitemap that lists half the site, pages "
    "that failed to parse; the table ranks them by words", parameter="max_missing_pages")
BOOK_GONE = GateDef(
    "book.gone", "sources gone from the book", ("book",),
    "at most `max_gone_sources` of the collection's sources name no page of the book (renamed or deleted since the "
    "ingest); each is listed with its chunks and the golden or drafted queries that still retrieve them",
    "re-ingest, deleting the old pages' chunks: they still answer with text the book no longer holds; a source the "
    "mapping misread shows a hint (another base path: set `book_base_url` / `book_route_base`)",
    parameter="max_gone_sources")
BOOK_CHANGED = GateDef(
    "book.changed", "pages changed since the ingest", ("book",),
    "no page has more than `changed_max_share` of its chunks no longer found in it (a chunk is stale when fewer "
    "than half its 4-word shingles are in the page), nor more than 10% of its chunks' words not found in it (a "
    "word is found when a 4-word shingle of its chunk that holds it is in the page; summed over its chunks, whatever "
    "their size: a fifth of a page rewritten leaves big chunks each mostly found)",
    "the page was edited after the ingest: re-ingest it, or its chunks answer with the old text",
    parameter="changed_max_share")
BOOK_THIN = GateDef(
    "book.thin", "thin ingest", ("book",),
    "every unchanged ingested page has at least `thin_min_coverage` of its shingles in its chunks",
    "the ingest cut these pages short: a size limit, a parser that stops at a table, a code block or MDX; the table "
    "gives chunks per 1,000 words", parameter="thin_min_coverage")
BOOK_NEAR_DUPLICATES = GateDef(
    "book.near_duplicates", "near-duplicate chunks' share of top-k places", ("book",),
    "pairs at cosine >= `near_duplicate_cosine` from different pages, or far apart in one, take at most "
    "`max_near_duplicate_share` of the neighbour lists' top-k places",
    "the same text under two pages or URLs, copied boilerplate: drop one copy, or de-duplicate at ingest",
    parameter="max_near_duplicate_share")

#: Every gate, in notebook order.
GATES: tuple[GateDef, ...] = tuple(v for v in dict(globals()).values() if isinstance(v, GateDef))
_BY_ID = {g.id: g for g in GATES}


def by_id(gate_id: str) -> GateDef | None:
    """The definition a recorded gate's id comes from (a ``per`` gate's id names its item last), or None."""
    return _BY_ID.get(gate_id) or _BY_ID.get(gate_id.rpartition(".")[0])
