"""Paths a team names from its own folder are read from that folder, by every command and by a run's kernels.

A team's book folder is most often called ``docs``, as the project's own documentation folder is: ``book --docs docs``
from the team's folder read the project's 16 documentation pages ("16 of 16 pages never ingested"). And a profile
that ``inspect --book book --write-profile`` wrote from the team's folder named ``book_docs: book``, which the run's
kernels (they start in the project folder) could not find: every book gate not applicable, while ``check book``
from the same folder judged them.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from retrieval_lib.book import SAMPLE_DOCS, resolve_docs
from retrieval_lib.cli.commands.inspect import book_keys
from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.params import PATH_PARAMETERS, NotebookParameters, anchored
from retrieval_lib.workbook.runner import load_profile


def _team_folder(tmp_path: Path) -> Path:
    team = tmp_path / "team"
    (team / "docs" / "intro").mkdir(parents=True)
    (team / "docs" / "intro" / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    (team / "drafted").mkdir()
    (team / "drafted" / "golden.yaml").write_text("name: x\nqueries: []\n", encoding="utf-8")
    return team


def test_a_docs_folder_named_from_the_team_folder_is_the_teams_not_the_projects(tmp_path, monkeypatch):
    assert (PROJECT_ROOT / "docs").is_dir()  # the project has a folder of that name too
    team = _team_folder(tmp_path)
    monkeypatch.chdir(team)
    assert Path(resolve_docs("docs")).resolve() == (team / "docs").resolve()
    # what is not in the working folder is still read from the project; the sample book keeps its name
    assert resolve_docs("params") == str(PROJECT_ROOT / "params")
    assert resolve_docs("sample_book") == str(SAMPLE_DOCS)


def test_a_profile_written_and_run_from_the_team_folder_names_whole_paths(tmp_path, monkeypatch):
    team = _team_folder(tmp_path)
    monkeypatch.chdir(team)
    # inspect --book docs --write-profile: the book is written whole, as draft writes its files
    assert book_keys("docs") == {"book_docs": str((team / "docs").resolve()), "book_sitemap": ""}
    # a profile that names files from the team folder reaches the kernels (started in the project) whole
    (team / "team.yaml").write_text(yaml.safe_dump({
        "profile": "team", "book_docs": "docs", "golden_set": "drafted/golden.yaml",
        "query_sets": "params/query_sets/sample_book.yaml", "top_k": 5}), encoding="utf-8")
    values = load_profile(team / "team.yaml").values
    assert values["book_docs"] == str((team / "docs").resolve())
    assert values["golden_set"] == str((team / "drafted" / "golden.yaml").resolve())
    assert values["query_sets"] == "params/query_sets/sample_book.yaml"  # the project's, read from there
    assert values["top_k"] == 5


def test_anchored_touches_only_relative_paths_that_are_there(tmp_path):
    team = _team_folder(tmp_path)
    values = {"agreement_files": ["drafted/golden.yaml", "elsewhere.yaml"], "book_docs": str(team / "docs"),
              "golden_set": "", "book_sitemap": None, "judge": "docs", "topics": "drafted/golden.yaml"}
    assert anchored(values, team) == {
        "agreement_files": [str((team / "drafted/golden.yaml").resolve()), "elsewhere.yaml"],
        "book_docs": str(team / "docs"), "golden_set": "", "book_sitemap": None,
        "judge": "docs",  # not a path parameter, even when a folder of that name is there
        "topics": str((team / "drafted/golden.yaml").resolve())}
    assert PATH_PARAMETERS <= set(NotebookParameters.model_fields)
