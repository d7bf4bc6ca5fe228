"""Topic landing (notebook 03, seed 000 SC-007): does a topic query land in the section that covers it?

A topic is a phrase and the source prefix its results should carry: the profile's one ``primary_query`` /
``primary_prefix`` ("Gazebo simulation" -> ``module-02-simulation/``), or every topic of a ``topics`` file that
``draft`` wrote from the book's own top-level sections (docs/drafting.md). Each topic is searched unfiltered,
top ``k``; its **share** is the fraction of its results under its prefix (:func:`prefix_hits`, the one rule; 0.0 when
it has no result).

- one topic: the gate is its share >= ``min_primary_share``, as seed 000 SC-007 words it;
- several: the gate is their **mean share** >= ``min_primary_share``, and the table shows each one.

A topic whose prefix no source file carries describes another book: it is not applicable, never failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from retrieval_lib.checks.gates import COVERAGE_TOPIC, COVERAGE_TOPICS
from retrieval_lib.models import SearchResponse
from retrieval_lib.params import TopicSet

if TYPE_CHECKING:
    from retrieval_lib.workbook.report import NotebookReport

__all__ = ["under_prefix", "prefix_hits", "TopicLanding", "TopicStudy", "measure"]


def under_prefix(path: str | None, prefix: str) -> bool:
    """Whether a source file (or a URL's path) is under ``prefix``: it starts with it, or holds it after folders of
    its own (``docs/module-02/x.md``, ``/home/me/site/docs/module-02/x.md`` are under ``module-02/``: a team's
    ingest keeps its own folders in front). A leading ``/`` counts on neither side. The one rule."""
    if not path or not prefix.strip("/"):
        return False
    path, prefix = path.lstrip("/"), prefix.lstrip("/")
    return path.startswith(prefix) or f"/{prefix}" in path


def prefix_hits(response: SearchResponse, prefix: str) -> int:
    """How many results' ``source_file``, or ``source_url`` path, is under ``prefix`` (:func:`under_prefix`)."""
    return sum(under_prefix(r.source_file, prefix) or under_prefix(urlsplit(r.source_url or "").path, prefix)
               for r in response.results)


@dataclass(frozen=True)
class TopicLanding:
    """One topic's answer: its results under the prefix, of all its results."""

    topic: str
    prefix: str
    origin: str
    response: SearchResponse
    hits: int
    results: int
    known_prefix: bool  # some source file of the collection is under the prefix

    @property
    def share(self) -> float:
        return self.hits / self.results if self.results else 0.0


@dataclass(frozen=True)
class TopicStudy:
    """Every topic's landing, and where the topics came from."""

    topics: TopicSet
    landings: list[TopicLanding]
    top_k: int

    @property
    def judged(self) -> list[TopicLanding]:
        """Topics whose prefix the collection holds (the others describe another book)."""
        return [t for t in self.landings if t.known_prefix or t.hits]

    @property
    def mean_share(self) -> float:
        judged = self.judged
        return sum(t.share for t in judged) / len(judged) if judged else 0.0

    def record(self, report: NotebookReport, *, min_primary_share: float) -> float:
        """Record the topic gate (module docstring) and its findings; returns the share judged."""
        k, prov = self.top_k, self.topics.provenance
        if len(self.landings) == 1 and not self.topics.marked:
            t = self.landings[0]
            fill = {"topic": repr(t.topic), "prefix": t.prefix}
            if not t.known_prefix and not t.hits:
                COVERAGE_TOPIC.not_applicable(
                    report, f"no source file of this collection is under {t.prefix!r}: the topic query and its "
                            "module describe another book (set primary_query and primary_prefix for this one, or "
                            "draft topics: python -m retrieval_lib draft)", fill=fill, item=t.topic,
                    parameter="primary_prefix")
            else:
                COVERAGE_TOPIC.record(report, t.share >= min_primary_share, fill=fill, item=t.topic,
                                      value=round(t.share, 4), threshold=min_primary_share, rule=">=", unit="share",
                                      detail=f"{t.hits}/{t.results} results from {t.prefix}")
            report.finding(f"{t.topic!r}: {t.share:.0%} of the top {k} from {t.prefix}")
            return t.share
        judged = self.judged
        counted = {"topics": len(self.landings)}
        if not judged:
            COVERAGE_TOPICS.not_applicable(report, "no topic's prefix is a source prefix of this collection: the "
                                                   "topics file describes another book", fill=counted,
                                           parameter="topics")
            return 0.0
        each = "; ".join(f"{t.topic!r} {t.hits}/{t.results} in {t.prefix}" for t in self.landings)
        COVERAGE_TOPICS.record(
            report, self.mean_share >= min_primary_share, fill=counted, value=round(self.mean_share, 4),
            threshold=min_primary_share, rule=">=", unit="share",
            detail=f"mean share of the top {k} under each topic's prefix: {each}", provenance=prov, noun="topics")
        worst = min(judged, key=lambda t: (t.share, t.topic))
        report.finding(f"{len(judged)} topics: mean {self.mean_share:.0%} of each top {k} from its own section; "
                       f"lowest {worst.topic!r} {worst.share:.0%} (top result from "
                       f"{worst.response.results[0].source_file if worst.response.results else 'nothing'})")
        return self.mean_share

    def describe(self) -> str:
        """One line: how many topics, from where, drafted or reviewed, and the mean share."""
        prov, source = self.topics.provenance, self.topics.path.name if self.topics.path else "primary_query"
        return (f"{len(self.landings)} topic queries from {source} ({prov.drafted} drafted, {prov.reviewed} "
                f"reviewed); mean share {self.mean_share:.0%} of each top {self.top_k} under its own prefix")

    def frame(self, *, decimals: int = 3):
        """One row per topic: phrase, prefix, origin, results under the prefix, share, and the top source."""
        import pandas as pd

        return pd.DataFrame([{"topic": t.topic, "expected_prefix": t.prefix, "origin": t.origin,
                              "in_prefix": f"{t.hits}/{t.results}", "share": round(t.share, decimals),
                              "top1_source": t.response.results[0].source_file if t.response.results else None}
                             for t in self.landings],
                            columns=["topic", "expected_prefix", "origin", "in_prefix", "share", "top1_source"])


def measure(retriever: Any, topics: TopicSet, *, top_k: int) -> TopicStudy:
    """Search every topic (one batch, unfiltered) and count its results under its prefix.

    Raises:
        Anything :meth:`~retrieval_lib.search.Retriever.search_many` raises.
    """
    responses = retriever.search_many([t.topic for t in topics.topics], top_k=top_k)
    files = list(retriever.store.distinct_values(retriever.collection, "source_file"))
    landings = [TopicLanding(t.topic, t.expected_prefix, t.origin, r, prefix_hits(r, t.expected_prefix),
                             len(r.results), any(under_prefix(f, t.expected_prefix) for f in files))
                for t, r in zip(topics.topics, responses)]
    return TopicStudy(topics, landings, top_k)
