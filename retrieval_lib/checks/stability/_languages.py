"""Notebook 04's other languages (:mod:`.consistency`): does a question asked in Spanish, German, Chinese or Arabic
find what its English original finds?

The query-set file (``params/query_sets/languages.yaml``) holds the same questions in several languages, line by
line, written by a person (never translated at run time); ``en`` is the reference. Every question runs once, all
in one ``search_many`` batch, and each translation's top k is compared with the English top k of the same question:

- Jaccard@k of the point ids: ``|A ∩ B| / |A ∪ B|`` (1 = the same chunks, 0 = none shared);
- top-1 file agreement: 1 when the best chunk comes from the same ``source_file`` as the English best chunk.

For scale, the *chance* overlap is the mean Jaccard@k between the English top k of two *different* questions.

A language is *served* when its top-1 file agreement is at least :data:`SERVED_TOP1_AGREEMENT` and its mean
Jaccard@k is at least :data:`SERVED_JACCARD`: a reader asking in it lands on the page an English reader lands on,
with most of the same chunks. The gate (``min_cross_lingual_jaccard``) is optional: None records no gate.
"""

from __future__ import annotations

import itertools
import math
import os
import statistics
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from retrieval_lib.checks.gates import LANGUAGES_CROSS_LINGUAL
from retrieval_lib.errors import ParamsError, ValidationError
from retrieval_lib.params import load_query_sets, resolve_path
from retrieval_lib.validation import number_in
from retrieval_lib.workbook.plots import plain_figure

if TYPE_CHECKING:
    from retrieval_lib.search import Retriever
    from retrieval_lib.workbook.report import NotebookReport

__all__ = ["REFERENCE", "LanguageComparison", "load_language_queries", "compare_languages", "overlap_figure"]

#: The language every other one is compared with.
REFERENCE = "en"
#: Top-1 file agreement a served language reaches (its first answer comes from the English answer's page for at
#: least 4 questions in 5).
SERVED_TOP1_AGREEMENT = 0.8
#: Mean Jaccard@k a served language reaches: at least half the union of chunks shared on average.
SERVED_JACCARD = 0.5


def jaccard(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Jaccard similarity of the id sets: ``|A ∩ B| / |A ∪ B|`` (1.0 when both are empty); notebook 04 compares its
    runs with it too."""
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def load_language_queries(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """The language query sets: language code -> questions, aligned line by line with ``en``.

    Raises:
        ParamsError: no ``en`` list, another list of a different length, or no other language.
    """
    sets = load_query_sets(path, required=(REFERENCE,))
    name = resolve_path(path).name
    n = len(sets[REFERENCE])
    for lang, questions in sets.items():
        if len(questions) != n:
            raise ParamsError(f"{name}: {lang!r} holds {len(questions)} questions but {REFERENCE!r} holds {n}; "
                              "every language lists the same questions in the same order",
                              path=str(resolve_path(path)), key=lang)
    if len(sets) < 2:
        raise ParamsError(f"{name}: needs at least one language besides {REFERENCE!r}", path=str(resolve_path(path)),
                          key=None)
    return sets


@dataclass
class LanguageSummary:
    """One language's overlap with English over all questions."""

    language: str
    questions: int
    mean_jaccard: float
    min_jaccard: float
    top1_agreement: float
    mean_top1_score: float

    @property
    def served(self) -> bool:
        return self.top1_agreement >= SERVED_TOP1_AGREEMENT and self.mean_jaccard >= SERVED_JACCARD


@dataclass
class LanguageComparison:
    """Per (question, language) rows and per-language summaries (see the module for the measures)."""

    top_k: int
    model: str
    chance_jaccard: float
    rows: list[dict[str, Any]] = field(default_factory=list)
    summaries: list[LanguageSummary] = field(default_factory=list)

    @property
    def worst(self) -> LanguageSummary | None:
        return min(self.summaries, key=lambda s: (s.mean_jaccard, s.language), default=None)

    def pairs(self):
        """One row per (language, question): the translation, Jaccard@k, and both top-1 files."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    def summary(self):
        """One row per language: mean and min Jaccard@k, top-1 file agreement, mean top-1 score, served."""
        import pandas as pd

        k = self.top_k
        return pd.DataFrame([{"language": s.language, "questions": s.questions,
                              f"mean_jaccard@{k}": round(s.mean_jaccard, 3),
                              f"min_jaccard@{k}": round(s.min_jaccard, 3),
                              "top1_file_agreement": round(s.top1_agreement, 3),
                              "mean_top1_score": round(s.mean_top1_score, 3), "served": s.served}
                             for s in self.summaries])

    def record(self, report: NotebookReport, *, min_cross_lingual_jaccard: float | None) -> None:
        """Record the cross-lingual findings and metrics; with ``min_cross_lingual_jaccard`` set, also the gate:
        every language's mean Jaccard@k against English >= it (None: no gate, as in the demo profile).

        Raises:
            ValidationError: ``min_cross_lingual_jaccard`` outside [0, 1].
        """
        k, worst = self.top_k, self.worst
        if min_cross_lingual_jaccard is not None:
            number_in(min_cross_lingual_jaccard, "min_cross_lingual_jaccard", 0, 1)
            value = worst.mean_jaccard if worst else math.nan
            LANGUAGES_CROSS_LINGUAL.record(
                report, value >= min_cross_lingual_jaccard, value=round(value, 4), threshold=min_cross_lingual_jaccard,
                rule=">=", unit="Jaccard",
                hint=f"{self.model} does not map these languages onto English: use a multilingual model for documents "
                     "and queries (Cohere embed-multilingual-v3.0; offline, EMBEDDING_PROVIDER=e5 and "
                     "params/e5.yaml), or set the gate to null",
                detail=f"lowest mean Jaccard@{k}: {worst.language if worst else '-'} {value:.3f}")
        for s in self.summaries:
            report.finding(f"{s.language}: mean Jaccard@{k} with English {s.mean_jaccard:.2f} (min "
                           f"{s.min_jaccard:.2f}), top-1 file agreement {s.top1_agreement:.0%} over {s.questions} "
                           "questions")
            report.metric(f"jaccard_{s.language}", s.mean_jaccard, "Jaccard")
            report.metric(f"top1_agreement_{s.language}", s.top1_agreement, "share")
        served = [s.language for s in self.summaries if s.served]
        unserved = [s.language for s in self.summaries if not s.served]
        report.finding(f"chance overlap (two different English questions) is {self.chance_jaccard:.2f}; {self.model} "
                       + (f"serves {', '.join(served)} readers" if served else "serves no language besides English")
                       + (f"; it does not serve {', '.join(unserved)} readers (top-1 agreement < "
                          f"{SERVED_TOP1_AGREEMENT:.0%} or mean Jaccard < {SERVED_JACCARD:g})" if unserved else ""))
        report.metric("languages_served", len(served), "languages")


def compare_languages(retriever: Retriever, sets: dict[str, list[str]], *, top_k: int = 5,
                      model: str | None = None) -> LanguageComparison:
    """Run every question of ``sets`` (one ``search_many`` batch) and compare each language with English.

    ``model``: what answered, as the findings name it (default the retriever's embedding model; a team's
    retriever is named by its description).

    Raises:
        ValidationError: ``sets`` has no ``en`` list or lists of different lengths; whatever search raises.
    """
    english = sets.get(REFERENCE)
    if not english or any(len(q) != len(english) for q in sets.values()):
        raise ValidationError(f"language sets need an {REFERENCE!r} list and lists of its length", field="sets")
    langs = list(sets)
    responses = retriever.search_many([q for lang in langs for q in sets[lang]], top_k=top_k)
    n = len(english)
    by_lang = {lang: responses[i * n:(i + 1) * n] for i, lang in enumerate(langs)}
    ids = {lang: [[r.point_id for r in resp.results] for resp in by_lang[lang]] for lang in langs}
    top = {lang: [resp.results[0] if resp.results else None for resp in by_lang[lang]] for lang in langs}
    pairs = list(itertools.combinations(range(n), 2))
    chance = statistics.fmean(jaccard(ids[REFERENCE][i], ids[REFERENCE][j]) for i, j in pairs) if pairs else math.nan
    out = LanguageComparison(top_k=top_k, model=model or retriever.embedder.model, chance_jaccard=chance)
    for lang in langs:
        if lang == REFERENCE:
            continue
        jac, agree, scores = [], [], []
        for i in range(n):
            en_top, l_top = top[REFERENCE][i], top[lang][i]
            j = jaccard(ids[REFERENCE][i], ids[lang][i])
            same = en_top is not None and l_top is not None and en_top.source_file == l_top.source_file
            jac.append(j)
            agree.append(same)
            scores.append(l_top.similarity_score if l_top else 0.0)
            out.rows.append({"language": lang, "question": english[i], "translation": sets[lang][i],
                             f"jaccard@{top_k}": round(j, 3), "same_top1_file": same,
                             "english_top1": en_top.source_file if en_top else None,
                             "top1": l_top.source_file if l_top else None,
                             "top1_score": round(scores[-1], 3)})
        out.summaries.append(LanguageSummary(lang, n, statistics.fmean(jac), min(jac), sum(agree) / n,
                                             statistics.fmean(scores)))
    return out


@plain_figure
def overlap_figure(comparison: LanguageComparison):
    """Per language: mean Jaccard@k and top-1 file agreement with English, the chance overlap marked."""
    import matplotlib.pyplot as plt
    import numpy as np

    s = comparison.summaries
    x = np.arange(len(s))
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.bar(x - 0.2, [v.mean_jaccard for v in s], 0.4, label=f"mean Jaccard@{comparison.top_k}")
    ax.bar(x + 0.2, [v.top1_agreement for v in s], 0.4, label="top-1 file agreement")
    ax.axhline(comparison.chance_jaccard, color="grey", ls=":", label="chance Jaccard")
    ax.set(xticks=x, xticklabels=[v.language for v in s], ylim=(0, 1.05), ylabel="share (1 = as in English)",
           title=f"Each language against English ({comparison.model})")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig
