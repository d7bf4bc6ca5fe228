"""``python -m retrieval_lib plan`` (and ``run --dry-run``): the embed calls and texts a run will make, per notebook.

The plan is worked out from the same inputs the notebooks read: the profile's values over each notebook's own
defaults (its ``parameters`` cell), the golden set, the query sets, and the collection itself (03's heading
queries and 09's probe sample come from stored chunks; reading them embeds nothing). It is not an estimate:
``tests/whole/test_run_bill.py`` runs the whole workbook against the loopback Cohere fake and asserts that every
notebook sends exactly the calls planned here.

How a run spends its calls:

- **Prefetch.** Before the first notebook, :func:`~retrieval_lib.workbook.runner.run_workbook` embeds every
  distinct query the cache-reading notebooks will ask (:attr:`RunPlan.prefetch`) into the run's query cache,
  at the provider's own request limit (Cohere 96, Gemini 100, OpenAI 2,048 texts per call: ⌈distinct/limit⌉ calls,
  the floor; a model on this machine: one call). Those notebooks then send nothing for their queries.
- **Declared.** The checks that measure the embedding service bypass the cache by name
  (:attr:`~retrieval_lib.workbook.registry.NotebookSpec.bypass`) and make the calls stated in :class:`NotebookPlan`'s
  ``formula``; 09 re-embeds stored chunks as documents, which are never cached.
- **The service under test** (08) embeds HTTP requests with its own embedder: stated apart, as
  ``service_calls``, an upper bound (one call per request): the service embeds requests that arrive together in
  one call, so concurrent ones cost fewer.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from retrieval_lib.cli.commands import print_json
from retrieval_lib.params import DEFAULT_PROFILE, load_golden_set, load_profile, load_query_sets
from retrieval_lib.workbook.registry import NotebookPlan, spec_for_stem

__all__ = ["RunPlan", "plan_run", "prefetch_queries", "register", "run", "lines"]

NAME = "plan"


@dataclass
class RunPlan:
    """A run's embedding bill before it is run: prefetch, then each notebook."""

    provider: str
    model: str
    batch: int
    notebooks: list[NotebookPlan]
    prefetch: list[str]

    @property
    def prefetch_calls(self) -> int:
        return self.calls_for(len(self.prefetch))

    @property
    def remote(self) -> bool:
        """The provider is an API (Cohere, OpenAI, Gemini): calls are requests of at most ``batch`` texts."""
        from retrieval_lib.embedding.providers import provider_info

        return provider_info(self.provider).remote

    def calls_text(self, texts: int) -> str:
        """How :meth:`calls_for` counts, in words: ``⌈30/96⌉`` for Cohere (``⌈30/100⌉`` Gemini, ``⌈30/2048⌉``
        OpenAI), ``1`` for a local model."""
        return f"⌈{texts}/{self.batch}⌉" if self.remote else str(self.calls_for(texts))

    def calls_for(self, texts: int) -> int:
        """Requests needed for ``texts`` texts sent together, at the provider's batch size (local models: one
        encode call)."""
        if not texts:
            return 0
        return math.ceil(texts / self.batch) if self.remote else 1

    @property
    def declared_calls(self) -> int:
        return sum(n.calls for n in self.notebooks)

    @property
    def total_calls(self) -> int:
        """Calls this workbook's process makes: prefetch plus every notebook's own (the service's apart)."""
        return self.prefetch_calls + self.declared_calls

    def as_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "batch": self.batch,
                "prefetch": {"queries": len(self.prefetch), "calls": self.prefetch_calls},
                "notebooks": [{k: v for k, v in asdict(n).items() if k != "queries"} | {"queries": len(n.queries)}
                              for n in self.notebooks],
                "declared_calls": self.declared_calls, "total_calls": self.total_calls,
                "service_calls": sum(n.service_calls for n in self.notebooks)}


# --------------------------------------------------------------------------- what each notebook embeds

class _Inputs:
    """:class:`~retrieval_lib.workbook.registry.PlanInputs` for a run: the parameter files, and the collection
    read once (a store it opens is closed again before any notebook runs)."""

    def __init__(self, plan: RunPlan, open_store: Callable[[], Any], collection: str, store: Any = None) -> None:
        self._plan = plan
        self._open, self.collection = open_store, collection
        self._sources: Any = None
        self._store: Any = store
        self._owned = store is None

    def calls_for(self, texts: int) -> int:
        return self._plan.calls_for(texts)

    def calls_text(self, texts: int) -> str:
        return self._plan.calls_text(texts)

    def golden(self, path: str, *, negatives: bool = True) -> list[str]:
        g = load_golden_set(path)
        return ([q.query for q in g.queries] + [q.query for q in g.extra_queries]
                + ([n.query for n in g.negatives] if negatives else []))

    def golden_count(self, path: str) -> int:
        return len(load_golden_set(path).queries)

    def query_sets(self, path: str, *names: str) -> list[str]:
        sets = load_query_sets(path, required=names[:1])
        return [q for name in names for q in sets.get(name, [])]

    def language_questions(self, path: Any) -> int:
        if not path:
            return 0
        from retrieval_lib.checks.stability.consistency import load_language_queries

        return sum(len(x) for x in load_language_queries(path).values())

    def store(self) -> Any:
        if self._store is None:
            self._store = self._open()
        return self._store

    def headings(self, per_file: int) -> list[str]:
        from retrieval_lib.checks.retrieval.source_coverage import build_queries, scan_sources

        if self._sources is None:
            self._sources = scan_sources(self.store(), self.collection)
        return [q.text for q in build_queries(self._sources, per_file)]

    def probe_queries(self, sample: int, seed: int) -> list[str]:
        from retrieval_lib.checks.collection.embedding_contract import probe_query, sample_points
        from retrieval_lib.collection.ours import embedded_text

        points = sample_points(self.store(), self.collection, sample=sample, seed=seed)
        return [probe_query(p.payload or {}) or embedded_text(p.payload or {})[:200] for p in points]

    def close(self) -> None:
        if self._store is not None and self._owned:
            self._store.close()
            self._store = None


def _notebook(stem: str, values: dict[str, Any], inputs: _Inputs) -> NotebookPlan:
    n = NotebookPlan(stem)
    spec = spec_for_stem(stem)
    if spec is None:
        n.known, n.formula = False, "not planned: a notebook this workbook does not know"
        return n
    spec.plan(n, values, inputs)
    if n.queries:
        n.formula = f"{len(n.queries)} queries from the run's query cache (prefetched)" + (
            f"; {n.formula}" if n.calls else "")
    return n


def plan_run(params: dict[str, Any], notebooks: Sequence[Path], settings: Any, *, store: Any = None) -> RunPlan:
    """The embedding bill of running ``notebooks`` with the profile values ``params`` under ``settings``.

    ``store``: an open store to read the collection from (left open); default: the configured one, opened
    only if a notebook needs it and closed before returning (an embedded folder allows one process).

    Raises:
        ParamsError: a golden set or query set named by the params cannot be read.
        CollectionNotFoundError, VectorStoreError: the collection cannot be read (03's headings, 09's sample).
    """
    from retrieval_lib.embedding.providers import planned_batch
    from retrieval_lib.retrievers import team_retriever
    from retrieval_lib.stores import open_store

    # the retriever the kernel will ask: the profile's, else RETRIEVER_SPEC (the environment or .env); one rule
    retriever = team_retriever(params, settings)
    if retriever is not None and not params.get("retriever"):
        params = {**params, "retriever": retriever.public()}
    provider, model = settings.embedding_provider, settings.embedding_model
    # the size the configured embedder starts with (EMBEDDING_BATCH_SIZE, a local server's batch, or the vendor's)
    plan = RunPlan(provider, str(model), planned_batch(settings), [], [])
    inputs = _Inputs(plan, lambda: open_store(settings), settings.collection_name, store)
    # a known notebook's parameters cell holds the default profile's values (tests/params/test_params.py holds them
    # equal); a notebook the registry does not know is not planned
    defaults = load_profile(DEFAULT_PROFILE, secrets=set()).values
    try:
        for nb in notebooks:
            plan.notebooks.append(_notebook(nb.stem, {**defaults, **params}, inputs))
    finally:
        inputs.close()
    plan.prefetch = list(dict.fromkeys(q for n in plan.notebooks for q in n.queries))
    return plan


def prefetch_queries(params: dict[str, Any], notebooks: Sequence[Path], settings: Any) -> list[str]:
    """The distinct queries a run should embed into its cache before the first notebook (the runner's hook)."""
    return plan_run(params, notebooks, settings).prefetch


# --------------------------------------------------------------------------- the command

def lines(plan: RunPlan) -> list[str]:
    """The plan as a table a person reads: one row per notebook, then the totals."""
    from retrieval_lib.embedding.providers import batch_limit

    own = "'s limit" if plan.batch == batch_limit(plan.provider) else "'s batch here (EMBEDDING_BATCH_SIZE or its URL)"
    per_call = (f"at most {plan.batch} texts per call, {plan.provider}{own}" if plan.remote
                else "one call per batch of texts, any number")
    bill = "an API bill" if plan.remote else "a model on this machine: no API bill"
    out = [f"embedding plan: {plan.provider} / {plan.model} ({bill}); {per_call}",
           f"{'':24} {'calls':>5} {'texts':>6}  how",
           f"{'prefetch (run start)':24} {plan.prefetch_calls:>5} {len(plan.prefetch):>6}  "
           "every distinct query of the cache-reading notebooks, once"
           + (f": {plan.calls_text(len(plan.prefetch))}" if plan.remote else "")]
    for n in plan.notebooks:
        calls = str(n.calls) if n.known else "?"
        out.append(f"{n.notebook:24} {calls:>5} {n.texts if n.known else '?':>6}  {n.formula}"
                   + (f" ({n.conditional})" if n.conditional else ""))
    service = sum(n.service_calls for n in plan.notebooks)
    out.append(f"total: {plan.total_calls} calls for {len(plan.prefetch) + sum(n.texts for n in plan.notebooks)} "
               f"texts = {plan.prefetch_calls} prefetch (the floor for {len(plan.prefetch)} distinct queries) + "
               f"{plan.declared_calls} declared by the checks that measure the service or re-embed documents"
               + (f"; the service under test makes at most {service} more with its own embedder (fewer when it "
                  "batches concurrent requests)" if service else ""))
    unknown = [n.notebook for n in plan.notebooks if not n.known]
    if unknown:
        out.append(f"not planned (calls unknown): {', '.join(unknown)}")
    out.append(draft_line(plan))
    return out


def draft_line(plan: RunPlan) -> str:
    """What ``draft`` (a command of its own, not part of a run) embeds: at most the median sample of its drafted
    questions plus the shipped negatives, once each, through DIR/cache/ (a re-draft sends nothing again)."""
    from retrieval_lib.drafting.draft import MEDIAN_SAMPLE
    from retrieval_lib.drafting.negatives import load_negatives

    most = MEDIAN_SAMPLE + len(load_negatives("en")[0])
    return (f"draft (its own command, not part of a run): one scroll of the roles it reads, then at most {most} "
            f"texts ({MEDIAN_SAMPLE} drafted questions + the shipped negatives) in "
            + (f"at most {plan.calls_text(most)} = {plan.calls_for(most)} calls" if plan.remote else "one call")
            + ", once (cached in DIR/cache/)")


# --------------------------------------------------------------------------- what a run asks of a Qdrant server

#: Requests each notebook sends a Qdrant server, measured with params/demo.yaml on the sample collection (470 points,
#: so every whole-collection pass is one page) over the loopback server (``tests/fakes/qdrant_rest.py``), one
#: notebook per run: (other reads: collection info, counts, facets, retrieves; whole-collection passes; searches:
#: query and batched-query requests), by the registry's notebook name. The API notebook counts what the workbook
#: and the service it starts send together. Measured
#: 2026-11-27: 541 requests and 69 MB of bodies in all (``benchmarks/bench_http.py --full-run`` measures a whole run).
QDRANT_REQUESTS: dict[str, tuple[int, int, int]] = {
    "collection": (4, 2, 0),
    "query": (4, 1, 3),
    "score_distributions": (4, 1, 2),
    "source_coverage": (8, 3, 2),
    "consistency": (8, 2, 50),
    "golden_set": (15, 2, 1),
    "latency": (4, 1, 227),  # one query at a time: it times them
    "collection_health": (18, 2, 0),
    "api": (10, 2, 66),
    "embedding_contract": (6, 3, 1),
    "reachability": (7, 4, 9),
    "ann_recall": (9, 2, 14),
    "chunk_quality": (8, 4, 6),
    "judgments": (9, 2, 2),
    "compare": (0, 0, 0),  # compares two run folders: it opens no store (checks/comparison/)
    "side_by_side": (0, 0, 0),  # no retriever of the team's in params/demo.yaml: nothing asked
    "book": (2, 3, 8),
}


def qdrant_estimate(plan: RunPlan, points: int) -> list[dict[str, Any]]:
    """Each planned notebook's Qdrant requests on a server holding ``points`` points, an estimate:
    ``other + passes x ceil(points / SERVER_PAGE) + searches`` from :data:`QDRANT_REQUESTS` (measured on the sample
    collection). Searches are batched, so they do not grow with the collection; passes do, a page per
    ``SERVER_PAGE`` points. A notebook not measured has ``requests`` None."""
    from retrieval_lib.stores.scan import SERVER_PAGE

    pages = max(1, math.ceil(points / SERVER_PAGE))
    out: list[dict[str, Any]] = []
    for n in plan.notebooks:
        spec = spec_for_stem(n.notebook)
        known = QDRANT_REQUESTS.get(spec.name) if spec is not None else None
        if known is None:
            out.append({"notebook": n.notebook, "requests": None, "formula": "not measured"})
            continue
        other, passes, searches = known
        out.append({"notebook": n.notebook, "requests": other + passes * pages + searches,
                    "formula": f"{other} reads + {passes} pass(es) x {pages} page(s) + {searches} searches"})
    return out


def qdrant_lines(estimate: list[dict[str, Any]], points: int, location: str) -> list[str]:
    """:func:`qdrant_estimate` as lines beside the embedding plan."""
    from retrieval_lib.stores.scan import SERVER_PAGE

    total = sum(e["requests"] or 0 for e in estimate)
    out = [f"Qdrant requests (a server, {location}: {points:,} points, pages of {SERVER_PAGE:,}), an estimate "
           "measured per notebook on the sample collection over HTTP; a whole-collection pass grows with the "
           "collection, batched searches do not; a facet on a field without a keyword index becomes a pass"]
    out += [f"{e['notebook']:24} {e['requests'] if e['requests'] is not None else '?':>5}  {e['formula']}"
            for e in estimate]
    unknown = [e["notebook"] for e in estimate if e["requests"] is None]
    out.append(f"total: about {total} Qdrant requests" + (f" (not measured: {', '.join(unknown)})" if unknown
                                                          else ""))
    return out


def _server_estimate(plan: RunPlan, settings: Any) -> tuple[list[dict[str, Any]], int, str] | None:
    """The Qdrant estimate when the settings name a server (one count request), else None."""
    if not getattr(settings, "qdrant_url", None):
        return None
    from retrieval_lib.stores import open_store

    with open_store(settings) as store:
        points = store.count(settings.collection_name)
        return qdrant_estimate(plan, points), points, store.location


def register(sub: Any, add: Any, common: argparse.ArgumentParser) -> None:
    p = add(sub, NAME, "the embed calls and texts a run will make, per notebook, without making them",
            "Work out, for a parameter profile and the configured embedding provider, the embed calls and texts "
            "each notebook will send: the run's prefetch of every distinct query (the floor), and the calls the "
            "service-measuring checks declare. Nothing is embedded; the collection is read for its headings.",
            "  python -m retrieval_lib plan\n"
            "  EMBEDDING_PROVIDER=cohere python -m retrieval_lib plan --params params/cloud.yaml\n"
            "  python -m retrieval_lib run --dry-run --notebooks 01,05     # the same", common)
    p.add_argument("--params", type=Path, help="parameter file (default params/demo.yaml)")
    p.add_argument("--notebooks", help="comma-separated numbers or names, e.g. 01,03 (default all)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from retrieval_lib.config import load_settings
    from retrieval_lib.workbook.runner import list_notebooks, load_profile

    selected = list_notebooks(args.notebooks)
    profile = load_profile(args.params)
    settings = load_settings()
    plan = plan_run(profile.values, selected, settings)
    server = _server_estimate(plan, settings)
    if getattr(args, "json", False):
        print_json(plan.as_dict() | ({"qdrant": {"points": server[1], "notebooks": server[0],
                                                  "total": sum(e["requests"] or 0 for e in server[0])}}
                                     if server else {}))
    else:
        print("\n".join(lines(plan) + (qdrant_lines(*server) if server else [])), file=sys.stdout)
    return 0
