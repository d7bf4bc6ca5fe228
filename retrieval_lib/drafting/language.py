"""The book's own language, and the headings that say nothing in any of the languages drafting knows.

:func:`detect_language` counts each language's commonest function words over a sample of the book's text: the
language whose words make the largest share wins, when that share is clear (a book of code listings is
"unknown", and drafting then says so instead of guessing). No model, no download: the lists below are the
evidence, and a new language is a new list.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["LanguageGuess", "detect_language", "is_generic_heading", "normalise_heading"]

LANGUAGE_NAMES = {"en": "English", "es": "Spanish", "de": "German", "fr": "French", "pt": "Portuguese",
                  "it": "Italian", "nl": "Dutch"}

# The commonest function words of each language (articles, prepositions, pronouns, auxiliaries): they make
# 30-50 % of running prose, whatever the topic. Words shared by two languages are left out of both.
_STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset("the and of to is in that it for with as was on are be this by from or have an which you "
                    "not were but can at they their has been its we will would there how what when".split()),
    "es": frozenset("el los las del se por con una para es al lo como más pero sus le ya o este sí porque esta "
                    "entre cuando muy sin sobre también me hasta hay donde quien desde todo nos durante uno "
                    "les ni contra otros ese eso ante ellos está son puede cómo qué".split()),
    "de": frozenset("der die und den von zu das mit sich des auf für ist im dem nicht ein eine als auch es an "
                    "werden aus er hat dass sie nach wird bei einer um am sind noch wie einem über einen so zum "
                    "war haben nur oder aber vor zur bis mehr durch man kann wir".split()),
    "fr": frozenset("le les des du une est pour qui dans par sur au pas plus ne se ce il sont avec ou mais "
                    "aux cette ces comme elle nous vous leur être été fait peut".split()),
    "pt": frozenset("os das dos um uma não para com mais como mas ao ele das seu sua ou quando muito nos já "
                    "também só pelo pela até isso ela entre depois sem mesmo aos seus quem nas me esse eles "
                    "você essa num nem suas meu às minha numa pelos elas havia seja qual será nós tenho lhe "
                    "deles essas esses pelas este dele".split()),
    "it": frozenset("il di che è per non una sono della gli alla anche nel dei delle ma ha questo ci si più "
                    "come io lo nella dal suo sua essere loro del molto però così perché quando".split()),
    "nl": frozenset("de het een van en dat niet zijn op te voor met hij ook aan er maar om als dan bij nog "
                    "worden door wordt naar heeft wel kan ze zo geen ik".split()),
}
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
#: A language wins when its words are at least this share of all words, and twice the runner-up's share.
MIN_SHARE = 0.08


@dataclass(frozen=True)
class LanguageGuess:
    """The book's language (``"en"``, ``"es"`` ... or ``"unknown"``), and the evidence."""

    code: str
    share: float  # its function words' share of the words read
    runner_up: str | None
    words: int

    @property
    def name(self) -> str:
        return LANGUAGE_NAMES.get(self.code, self.code)

    def describe(self) -> str:
        if self.code == "unknown":
            return (f"language unknown ({self.words} words read; no language's function words make "
                    f"{MIN_SHARE:.0%} of them clearly)")
        return (f"{self.name} ({self.share:.0%} of {self.words} words are its function words"
                + (f"; next {LANGUAGE_NAMES.get(self.runner_up or '', self.runner_up)}" if self.runner_up else "")
                + ")")


def detect_language(texts: Iterable[str], *, max_words: int = 200_000) -> LanguageGuess:
    """Guess the language of ``texts`` from their function words (module docstring)."""
    counts = dict.fromkeys(_STOPWORDS, 0)
    words = 0
    for text in texts:
        for w in _WORD.findall(text.lower()):
            words += 1
            for code, vocab in _STOPWORDS.items():
                if w in vocab:
                    counts[code] += 1
        if words >= max_words:
            break
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    (best, n), (second, m) = ranked[0], ranked[1]
    share = n / words if words else 0.0
    if not words or share < MIN_SHARE or n < 2 * m:
        return LanguageGuess("unknown", share, best if n else None, words)
    return LanguageGuess(best, share, second if m else None, words)


def _phrases(block: str) -> frozenset[str]:
    return frozenset(p.strip() for p in block.split(";") if p.strip())


# Headings a book repeats in every chapter: as a query they name no page. English, Spanish, German, French.
GENERIC_HEADINGS = _phrases(
    "introduction; intro; overview; summary; conclusion; conclusions; exercises; exercise; practice exercises;"
    "review questions; key takeaways; takeaways; next steps; what's next; whats next; prerequisites;"
    "further reading; references; resources; setup; getting started; background; motivation;"
    "learning objectives; objectives; goals; recap; quiz; questions; examples; example; notes; faq; glossary;"
    "appendix; discussion; hands-on; hands-on exercise; hands-on lab; lab; assignment; troubleshooting;"
    "key concepts; wrap-up; wrap up; checklist; common pitfalls; what you will learn; what you'll learn;"
    "try it yourself; challenge; challenges; self-check; self check; further resources; see also;"
    "bibliography; chapter summary; in this chapter;"
    "introducción; resumen; conclusión; conclusiones; ejercicios; ejercicio; referencias; objetivos;"
    "próximos pasos; requisitos previos; lecturas adicionales; ejemplo; ejemplos; preguntas; notas; glosario;"
    "apéndice; descripción general; visión general; bibliografía;"
    "einleitung; einführung; zusammenfassung; fazit; übungen; übung; aufgaben; literatur; referenzen; ziele;"
    "lernziele; nächste schritte; voraussetzungen; weiterführende literatur; beispiel; beispiele; fragen;"
    "hinweise; glossar; anhang; überblick;"
    "résumé; exercices; références; prochaines étapes; prérequis; exemples; glossaire; annexe; aperçu")

_NUMBERING = re.compile(r"^\s*(?:(?:chapter|part|section|step|lesson|module|unit|week|cap[ií]tulo|kapitel|teil|"
                        r"schritt|chapitre|étape)\s+)?(?:\d+(?:\.\d+)*|[ivxlc]+|[a-z])[.):]?\s+", re.I)
_MARKUP = re.compile(r"[*_`]+|\{#[^}]*\}|<[^>]+>")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


def normalise_heading(text: str) -> str:
    """A heading as a phrase: markup, a heading id, numbering ("2.1", "Chapter 3:") and "(continued)" removed."""
    text = _LINK.sub(r"\1", text.strip().lstrip("#"))
    text = _MARKUP.sub("", text)
    text = re.sub(r"\s*\((?:continued|cont\.?|continuación|fortsetzung|suite)\)\s*$", "", text, flags=re.I)
    text = _NUMBERING.sub("", text.strip())
    return " ".join(text.split()).strip(" :-–—#")


def is_generic_heading(text: str) -> bool:
    """True for a heading every chapter has ("Introduction", "Summary", "Übungen" ...)."""
    key = unicodedata.normalize("NFC", normalise_heading(text).lower()).rstrip("?!.")
    return key in GENERIC_HEADINGS
