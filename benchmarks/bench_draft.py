"""Drafted against hand-written: how good, and how flattering, is a validation set that `draft` writes?

On the sample book (the demo collection ``physicalai``, MiniLM), three query sets are judged the same way
(``retrieval_lib.checks.retrieval.golden_set.evaluate_golden``: page-level hit@5, MRR, nDCG@5) and by notebook 02's
threshold study (``retrieval_lib.checks.retrieval.score_distributions``):

- **drafted**: what ``draft`` writes (titles, headings, lead sentences with their expected pages), against the
  kept drafted negatives;
- **hand-written**: ``params/golden/sample_book.yaml`` (5 golden + 3 extra queries with their pages) and
  ``params/query_sets/sample_book.yaml`` (30 in-domain, 12 out-of-domain), written by a person;
- **paraphrased**: the 30 page titles ``draft`` asks, re-asked as a person would, without the title's words
  where the language allows (:data:`PARAPHRASES`, written by hand for this benchmark, one per page).

The **bias**: a drafted query repeats the words of the chunk that answers it, so it is easier than a person's
question. The table shows it three ways: drafted titles against the same pages' paraphrases (same pages, other
words); the share of a query's words found in its expected page's text; and the median top-1 score.

    QDRANT_PATH=<store> python benchmarks/bench_draft.py [--collection physicalai] [--out DIR]

Prints the table (Markdown); the figures are quoted in README.md and docs/drafting.md.

**Cost** (``--scale N``): builds a team-shaped collection of N points in a temporary embedded store
(``bench_inspect.build``: md5 ids, ``text/url/title/chunk_index``, 300 pages) and times, the median of
``--repeat`` rounds: the floor, ONE scroll of the roles draft reads; draft's read and drafting (target: at most
x2 the floor, issue 23); and, apart, its one batched search pass (the embedding through a stand-in embedder
without a model's cost, so the figure is the workbook's own).

    python benchmarks/bench_draft.py --scale 100000
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from retrieval_lib.checks.retrieval import golden_set as golden
from retrieval_lib.checks.retrieval import score_distributions as scores
from retrieval_lib.config import load_settings
from retrieval_lib.drafting import draft_collection, write_draft
from retrieval_lib.embedding import make_embedder
from retrieval_lib.params import GoldenQuery, GoldenSet, load_golden_set, load_query_sets
from retrieval_lib.search import Retriever, open_collection

#: Each drafted page title, asked as a person would (other words where the language allows), with its page.
PARAPHRASES: dict[str, tuple[str, str]] = {
    "Appendix A: Glossary": ("where are the robotics terms defined?", "/docs/glossary"),
    "Appendix B: Sensor and Compute Hardware Reference": ("which cameras and boards should I buy for my robot?",
                                                          "/docs/appendices/b-hardware-reference"),
    "Appendix C: Troubleshooting Common Problems": ("my setup is broken, how do I fix typical errors?",
                                                    "/docs/appendices/c-troubleshooting"),
    "What Is Physical AI?": ("what does it mean for AI to act in the real world?", "/docs/intro"),
    "The Humanoid Robotics Landscape": ("which companies build human-shaped robots today?",
                                        "/docs/introduction/humanoid-robotics-landscape"),
    "Prerequisites and Lab Setup": ("what do I need to know and install before the course?",
                                    "/docs/introduction/prerequisites-and-lab-setup"),
    "What Is ROS 2?": ("what is the robot operating system middleware?", "/docs/module-01-ros2/what-is-ros2"),
    "ROS 2 Installation and Setup on Ubuntu": ("how do I get ROS onto my Linux machine?",
                                               "/docs/module-01-ros2/installation-and-setup"),
    "Nodes, Topics and Services": ("how do programs in ROS talk to each other?",
                                   "/docs/module-01-ros2/nodes-topics-services"),
    "Actions, Parameters and Lifecycle Nodes": ("how do I run a long task with progress feedback in ROS?",
                                                "/docs/module-01-ros2/actions-and-parameters"),
    "Launch Files for ROS 2 Systems": ("how can I start many ROS programs with one command?",
                                       "/docs/module-01-ros2/launch-files"),
    "URDF for Humanoid Robots": ("how do I describe a humanoid's body so ROS can load it?",
                                 "/docs/module-01-ros2/urdf-for-humanoids"),
    "Coordinate Transforms and tf2": ("how do I convert a point from the camera frame to the base frame?",
                                      "/docs/module-01-ros2/coordinate-transforms-tf2"),
    "Forward and Inverse Kinematics": ("which joint angles put the hand at a given position?",
                                       "/docs/module-01-ros2/kinematics-and-inverse-kinematics"),
    "Robot Arm Control and Motion Planning": ("how does a manipulator move to a goal without hitting things?",
                                              "/docs/module-01-ros2/arm-control-and-motion-planning"),
    "Why Simulate Humanoid Robots": ("why test a robot in a virtual world first?",
                                     "/docs/module-02-simulation/why-simulate"),
    "Gazebo Simulation Fundamentals": ("how do I build a world and spawn a robot in the open-source simulator?",
                                       "/docs/module-02-simulation/gazebo-fundamentals"),
    "Connecting Gazebo to ROS 2": ("how do simulator messages reach my ROS nodes?",
                                   "/docs/module-02-simulation/gazebo-ros2-integration"),
    "Simulating Sensors in Gazebo": ("how do I get fake camera and laser data with noise?",
                                     "/docs/module-02-simulation/simulating-sensors"),
    "Unity for Robotics Simulation": ("can a game engine be used to simulate robots?",
                                      "/docs/module-02-simulation/unity-for-robotics"),
    "The NVIDIA Isaac Platform": ("what tools does the GPU maker offer for robot development?",
                                  "/docs/module-03-isaac/isaac-platform-overview"),
    "Installing and Setting Up Isaac Sim": ("what hardware and steps does the Omniverse simulator need?",
                                            "/docs/module-03-isaac/isaac-sim-setup"),
    "Synthetic Data Generation with Isaac Sim Replicator": ("how do I produce labelled training images "
                                                            "automatically?",
                                                            "/docs/module-03-isaac/synthetic-data-generation"),
    "Isaac ROS Perception and Navigation on Jetson": ("how do I run accelerated vision and mapping on an "
                                                      "embedded board?", "/docs/module-03-isaac/isaac-ros-perception"),
    "Reinforcement Learning for Humanoid Locomotion with Isaac Lab": (
        "how can a biped learn to walk by trial and error?", "/docs/module-03-isaac/reinforcement-learning-isaac-lab"),
    "What Are Vision-Language-Action Models?": ("how do models that see, read and act work?",
                                                "/docs/module-04-vla/vla-overview"),
    "Perception and Sensor Fusion for Humanoid Robots": (
        "how does a robot combine its camera, IMU and joint readings?",
        "/docs/module-04-vla/perception-and-sensor-fusion"),
    "Language Grounding and LLM Task Planning": ("how can a chatbot turn an instruction into robot steps?",
                                                 "/docs/module-04-vla/language-grounding-and-task-planning"),
    "VLA Model Architectures": ("how are RT-2 and similar policies built inside?",
                                "/docs/module-04-vla/vla-model-architectures"),
    "Capstone: Voice-to-Action Humanoid": ("final project: a robot that obeys spoken commands",
                                           "/docs/module-04-vla/capstone-voice-to-action"),
}
_WORDS = re.compile(r"[a-z0-9]+")
_STOP = set("a an the and or of to in on for with is are what how do does i my can be by it its as at from this "
            "that which why when where who".split())


def _golden(name: str, items: list[tuple[str, str]], k: int = 5, min_score: float = 0.35) -> GoldenSet:
    qs = tuple(GoldenQuery(q, (page,), min_score) for q, page in items)
    return GoldenSet(name=name, top_k=k, min_score=min_score, required_passes=0, queries=qs)


def _overlap(query: str, text: str) -> float:
    """Share of the query's content words that its expected page's text holds."""
    words = [w for w in _WORDS.findall(query.lower()) if w not in _STOP]
    have = set(_WORDS.findall(text.lower()))
    return sum(w in have for w in words) / len(words) if words else 0.0


def _page_texts(view, collection: str) -> dict[str, str]:
    from urllib.parse import urlsplit

    out: dict[str, list[str]] = {}
    for p in view.scroll(collection, with_payload=["content", "source_url"], batch_size=2000):
        page = urlsplit((p.payload or {}).get("source_url") or "").path.rstrip("/")
        out.setdefault(page, []).append((p.payload or {}).get("content") or "")
    return {k: "\n".join(v) for k, v in out.items()}


def scale(points: int, repeat: int) -> None:
    """Draft's read and drafting against one scroll of what it reads, at ``points`` points (module docstring)."""
    import warnings

    from bench_inspect import COLLECTION, WordEmbedder, build

    from retrieval_lib.collection import CollectionView
    from retrieval_lib.stores import VectorStore

    warnings.filterwarnings("ignore", message=".*Local mode is not recommended.*")
    with tempfile.TemporaryDirectory() as tmp:
        store = VectorStore.at_path(Path(tmp) / "store")
        build(store, points)
        floor_t, read_t, search_t = [], [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            store.client.scroll(COLLECTION, limit=points + 1, with_payload=["text", "url", "title", "chunk_index"])
            floor_t.append(time.perf_counter() - t0)
            d = draft_collection(CollectionView(store), COLLECTION, WordEmbedder())
            read_t.append(d.seconds["scroll"] + d.seconds["draft"])
            search_t.append(d.seconds["search"])
        store.close()
    floor, spent = statistics.median(floor_t), statistics.median(read_t)
    print(f"{'points':>8} {'floor s':>8} {'draft read+draft s':>19} {'ratio':>6} {'search pass s':>14} "
          f"{'queries':>8}  (target: ratio <= 2.0)")
    print(f"{points:>8} {floor:>8.2f} {spent:>19.2f} {spent / floor:>6.2f} {statistics.median(search_t):>14.2f} "
          f"{d.embedded:>8}  ({len(d.known)} drafted, {d.pages} pages, {len(d.top1)} searched for the median)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--collection", default="physicalai")
    ap.add_argument("--out", type=Path, default=None, help="where to write the draft (default: a temporary folder)")
    ap.add_argument("--scale", type=int, default=None, metavar="N", help="time draft's cost at N points instead")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    if args.scale:
        scale(args.scale, args.repeat)
        return 0
    settings = load_settings().with_overrides(collection_name=args.collection)
    embedder = make_embedder(settings)
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-draft-"))
    with open_collection(settings) as view:
        t0 = time.perf_counter()
        d = draft_collection(view, args.collection, embedder)
        seconds = time.perf_counter() - t0
        files = write_draft(d, out)
        retriever = Retriever(view, embedder, args.collection)
        count = view.count(args.collection)
        texts = _page_texts(view, args.collection)

        drafted = load_golden_set(files["golden"])
        hand = load_golden_set("params/golden/sample_book.yaml")
        hand_all = GoldenSet(name="hand", top_k=5, min_score=hand.min_score, required_passes=0,
                             queries=hand.queries + hand.extra_queries)
        titles = [(k.query, k.expected) for k in d.known if k.kind == "title" and k.query in PARAPHRASES]
        para = [(PARAPHRASES[q][0], PARAPHRASES[q][1]) for q, _ in titles]
        sets = {"drafted (all)": drafted, "hand-written golden + extra": hand_all,
                "drafted titles": _golden("titles", titles), "paraphrases of those titles": _golden("para", para)}
        # hand-written queries on the same pages as drafted ones: the drafted queries of those pages
        hand_pages = {p for q in hand_all.queries for p in q.expected_url_patterns}
        same = [(k.query, k.expected) for k in d.known if k.expected in hand_pages]
        sets["drafted, on the hand-written queries' pages"] = _golden("same", same)
        rows = []
        for label, g in sets.items():
            v = golden.evaluate_golden(retriever, g, vector_count=count, metadata_completeness=100.0)
            top1 = [r.results[0].similarity_score for r in v.responses[:len(g.queries)] if r.results]
            pages = [q.expected_url_patterns[0] for q in g.queries]
            overlap = statistics.mean(_overlap(q.query, texts.get(p.rstrip("/"), "")) for q, p in
                                      zip(g.queries, pages))
            rows.append((label, len(g.queries), v.hit_at_k, v.mrr, v.ndcg_at_k, statistics.median(top1), overlap))

        hand_sets = load_query_sets("params/query_sets/sample_book.yaml")
        drafted_sets = load_query_sets(files["queries"])
        thresholds_rows = []
        for label, ins, oods in (("hand-written query sets", hand_sets["in_domain"], hand_sets["out_of_domain"]),
                                 ("drafted query sets", drafted_sets["in_domain"], drafted_sets["out_of_domain"]),
                                 ("hand-written in-domain, drafted negatives", hand_sets["in_domain"],
                                  drafted_sets["out_of_domain"])):
            study = scores.measure(retriever, ins, oods, top_k=5)
            gap = study.gap
            rec = scores.recommend(study.in_top1, study.ood_top1)
            thresholds_rows.append((label, len(ins), len(oods), gap.lowest_in_domain, gap.highest_ood, gap.width,
                                    rec))

    print(f"# Drafted against hand-written, collection {args.collection!r} ({count} points), "
          f"model {embedder.model}\n")
    print(f"draft: {len(d.known)} known-item queries for {d.files_with_query} of {d.pages} files, "
          f"{len(d.dropped)} dropped, {len(d.topics)} topics; {len(d.kept_negatives)} of {len(d.negatives)} "
          f"negatives kept (in-domain median {d.median:.3f}; highest kept negative "
          f"{max(n.best_score or 0 for n in d.kept_negatives):.3f}); {seconds:.1f} s\n")
    print("| query set | queries | hit@5 | MRR | nDCG@5 | median top-1 | words found in the expected page |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, n, hit, mrr, ndcg, med, ov in rows:
        print(f"| {label} | {n} | {hit:.3f} | {mrr:.3f} | {ndcg:.3f} | {med:.3f} | {ov:.0%} |")
    print("\n| threshold study (02) | in-domain | OOD | lowest in-domain top-1 | highest OOD top-1 | gap | "
          "recommended threshold |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, ni, no, lo, hi, width, rec in thresholds_rows:
        print(f"| {label} | {ni} | {no} | {lo:.3f} | {hi:.3f} | {width:.3f} | {rec:.3f} |")
    dropped = [n for n in d.negatives if not n.kept]
    print(f"\nnegatives: {len(d.kept_negatives)} kept, {len(dropped)} dropped"
          + (": " + "; ".join(f"{n.query!r} {n.best_score:.3f}" for n in dropped) if dropped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
