"""Other languages: the query sets are well formed, the overlap measures are right, and the optional gate fires.

A hashed bag-of-words embedder stands in for a model: a "translation" that keeps the English words is served, one
with other words is not. On the sample book, MiniLM (English-only) must not serve Chinese or Arabic readers.
"""

from __future__ import annotations

import tempfile

import pytest
from corpus import DOCS, SAMPLE_COLLECTION
from fakes.embedders import FakeEmbedder

from retrieval_lib import VectorStore
from retrieval_lib.checks.stability import _languages as languages
from retrieval_lib.cli.commands import gate_exit_code
from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.errors import ParamsError, ValidationError
from retrieval_lib.search import Retriever
from retrieval_lib.workbook.report import NotebookReport
from retrieval_lib.workbook.runner import load_profile

SHIPPED = "params/query_sets/languages.yaml"
E5_PROFILE = PROJECT_ROOT / "params" / "e5.yaml"
ENGLISH = ["What is ROS 2 middleware?", "How does Gazebo simulate robots?", "Which battery powers the humanoid?",
           "What do vision-language-action models map?"]
SETS = {"en": ENGLISH,
        "same": [q.upper() for q in ENGLISH],  # the same words: a model would see the same question
        "other": ["Quelle est la recette?", "Wo ist der Bahnhof?", "Combien coûte le pain?", "Wie spät ist es?"]}


@pytest.fixture
def retriever(fill):
    store, fake = VectorStore.in_memory(), FakeEmbedder.hashed()
    fill(store, "c", fake)
    return Retriever(store, fake, "c")


def report() -> NotebookReport:
    return NotebookReport("04_consistency", "t", run_dir=tempfile.mkdtemp())


def test_the_shipped_file_holds_five_languages_of_aligned_questions():
    sets = languages.load_language_queries(SHIPPED)
    assert set(sets) == {"en", "es", "de", "zh", "ar"}
    assert 5 <= len(sets["en"]) <= 8 and len({len(q) for q in sets.values()}) == 1
    assert len({q for qs in sets.values() for q in qs}) > 4 * len(sets["en"]), "translations, not copies"


@pytest.mark.parametrize("text, key", [("en: [a, b]\nes: [a]\n", "es"), ("es: [a]\n", "en"), ("en: [a]\n", None)])
def test_misaligned_or_missing_languages_are_refused_with_the_key(tmp_path, text, key):
    path = tmp_path / "langs.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ParamsError) as err:
        languages.load_language_queries(path)
    assert err.value.key == key


def test_overlap_is_one_for_the_same_words_and_low_for_other_words(retriever):
    c = languages.compare_languages(retriever, SETS, top_k=3)
    by = {s.language: s for s in c.summaries}
    assert by["same"].mean_jaccard == 1.0 and by["same"].top1_agreement == 1.0 and by["same"].served
    assert by["other"].mean_jaccard < 0.5 and not by["other"].served
    assert c.worst is by["other"]
    frame = c.pairs()
    assert len(frame) == 2 * len(ENGLISH) and set(frame["language"]) == {"same", "other"}
    assert list(c.summary()["served"]) == [True, False]


def test_the_gate_is_optional_and_fires_on_the_worst_language(retriever):
    c = languages.compare_languages(retriever, SETS, top_k=3)
    off = report()
    c.record(off, min_cross_lingual_jaccard=None)
    assert off.gates == [] and off.metrics["languages_served"] == 1
    assert any("does not serve other readers" in f for f in off.findings)
    on = report()
    c.record(on, min_cross_lingual_jaccard=0.5)
    assert [g.passed for g in on.gates] == [False] and gate_exit_code(on.gates) == 1
    assert on.gates[0].parameter == "min_cross_lingual_jaccard" and "other" in on.gates[0].detail
    served_only = languages.compare_languages(retriever, {k: SETS[k] for k in ("en", "same")}, top_k=3)
    ok = report()
    served_only.record(ok, min_cross_lingual_jaccard=0.5)
    assert ok.passed
    with pytest.raises(ValidationError):
        c.record(report(), min_cross_lingual_jaccard=1.5)


@pytest.mark.timeout(900)  # the session fixture `book` may ingest the sample book here
def test_minilm_does_not_serve_chinese_or_arabic_readers_of_the_sample_book(book, embedder):
    r = Retriever(book.store, embedder, SAMPLE_COLLECTION)
    c = languages.compare_languages(r, languages.load_language_queries(SHIPPED), top_k=5)
    by = {s.language: s for s in c.summaries}
    assert not by["zh"].served and not by["ar"].served
    assert by["zh"].mean_jaccard < 0.2 and by["ar"].mean_jaccard < 0.2
    assert len(DOCS) and c.chance_jaccard < 0.2
    # the e5 profile's gate is one an English-only model fails, with the hint naming the offline multilingual model
    gated = report()
    c.record(gated, min_cross_lingual_jaccard=load_profile(E5_PROFILE).values["min_cross_lingual_jaccard"])
    assert [g.passed for g in gated.gates] == [False] and "EMBEDDING_PROVIDER=e5" in gated.gates[0].hint


class _Ctx:
    """The parts of a NotebookRun notebook 04's check reads: the search, the profile's retriever, close()."""

    def __init__(self, retriever, kind: str = "collection") -> None:
        from types import SimpleNamespace

        self.retriever = retriever
        self.retriever_spec = SimpleNamespace(kind=kind)
        self.asker = SimpleNamespace(describe=lambda: "the endpoint http://127.0.0.1:9/search (http)")
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


@pytest.mark.parametrize("kind, named", [("collection", "hash-bow-v1"), ("http", "the endpoint http://127.0.0.1:9/search")])
def test_notebook_04_names_what_answered_the_languages(retriever, tmp_path, kind, named):
    from retrieval_lib.checks.stability import consistency

    path = tmp_path / "langs.yaml"
    path.write_text(f"en: {ENGLISH}\nother: {SETS['other']}\n", encoding="utf-8")
    ctx = _Ctx(retriever, kind)
    result = consistency.run(ctx, consistency_queries=ENGLISH[:2], repeats=2, top_k=3, score_tolerance=1e-6,
                             language_queries=str(path), min_cross_lingual_jaccard=0.5)
    assert ctx.closed == 1  # the fresh-client phase reopens the search
    assert result.languages is not None and named in result.languages.model
    r = report()
    result.record(r, show=False)
    assert [g.id for g in r.gates] == ["consistency.repeats", "consistency.fresh_client",
                                            "consistency.search_many", "languages.cross_lingual"]
    assert [g.passed for g in r.gates] == [True, True, True, False]
    assert named in r.findings[-1] and named in r.gates[-1].hint
    assert "language_summary" in result.tables()
