"""Out-of-domain negatives: generic questions no book about anything else should answer.

The shipped list (``params/negatives/generic.yaml``, at least 40 questions across unrelated topics, each in
English, Spanish and German) is asked **in the book's own language** when the list has it: a Spanish question to
a Spanish book tests topic, where an English question to a Spanish book would also test language, and pass for
the wrong reason. A book in a language the list lacks gets the English questions, and the draft says so.

A negative is **kept** only where the collection's best score for it stays below the median best score of the
book's own drafted questions (:func:`keep_negatives`): a negative the book does answer (a cooking question to a
cookbook) is dropped, with its score.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.errors import ParamsError
from retrieval_lib.params import read_yaml

__all__ = ["NEGATIVES_FILE", "NegativeDraft", "load_negatives", "keep_negatives", "MIN_NEGATIVES"]

NEGATIVES_FILE = PROJECT_ROOT / "params" / "negatives" / "generic.yaml"
#: The shipped list holds at least this many questions (issue 23).
MIN_NEGATIVES = 40


@dataclass(frozen=True)
class NegativeDraft:
    """A generic question in one language, its topic, its best score on the collection, and the verdict."""

    query: str
    topic: str
    language: str
    best_score: float | None = None
    kept: bool = False
    reason: str = ""


def load_negatives(language: str, path: str | Path = NEGATIVES_FILE) -> tuple[list[NegativeDraft], str]:
    """The shipped negatives in ``language`` (or English when the list lacks it), and the language used.

    Raises:
        ParamsError: the file is missing, malformed, has an entry without one of its listed languages, or holds
            fewer than :data:`MIN_NEGATIVES` questions.
    """
    data, p = read_yaml(path, what="negatives file")
    languages = data.get("languages")
    items: Any = data.get("negatives")
    if not isinstance(languages, list) or "en" not in languages or not isinstance(items, list):
        raise ParamsError(f"{p.name}: needs 'languages' (with en) and a list 'negatives'", path=str(p),
                          key="negatives")
    if len(items) < MIN_NEGATIVES:
        raise ParamsError(f"{p.name}: holds {len(items)} negatives, fewer than {MIN_NEGATIVES}", path=str(p),
                          key="negatives")
    lang = language if language in languages else "en"
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not all(isinstance(item.get(code), str) and item[code].strip()
                                                 for code in languages):
            raise ParamsError(f"{p.name}: negatives[{i}] needs a question in each of {', '.join(languages)}",
                              path=str(p), key=f"negatives[{i}]")
        out.append(NegativeDraft(item[lang].strip(), str(item.get("topic") or ""), lang))
    return out, lang


def keep_negatives(negatives: Sequence[NegativeDraft], best_scores: Sequence[float | None],
                   in_domain_top1: Sequence[float]) -> tuple[list[NegativeDraft], float | None]:
    """Judge each negative by its best score against the median in-domain top-1; returns (judged, median).

    With no in-domain score (no drafted question) nothing can be compared, and no negative is kept.
    """
    scores = [s for s in in_domain_top1 if s is not None]
    median = statistics.median(scores) if scores else None
    out = []
    for neg, best in zip(negatives, best_scores):
        if median is None:
            kept, reason = False, "no drafted in-domain question to compare with"
        elif best is not None and best >= median:
            kept, reason = False, f"the book answers it: best score {best:.3f} >= in-domain median {median:.3f}"
        else:
            kept, reason = True, f"best score {0.0 if best is None else best:.3f} < in-domain median {median:.3f}"
        out.append(replace(neg, best_score=best, kept=kept, reason=reason))
    return out, median
