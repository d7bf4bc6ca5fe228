"""The parameter files and the notebooks agree, and no profile carries a secret."""

from __future__ import annotations

import json

import papermill as pm
import pytest

from retrieval_lib.config import PROJECT_ROOT
from retrieval_lib.params import load_golden_set, load_query_sets
from retrieval_lib.workbook.runner import list_notebooks, load_profile

NOTEBOOKS = list_notebooks()
PROFILES = sorted((PROJECT_ROOT / "params").glob("*.yaml"))


def test_the_numbered_notebooks_exist():
    assert [nb.stem[:2] for nb in NOTEBOOKS] == [f"{n:02d}" for n in range(0, 15)]


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_every_profile_loads_and_supplies_every_notebook_parameter(profile):
    params = load_profile(profile).values
    for nb in NOTEBOOKS:
        declared = set(pm.inspect_notebook(str(nb))) - {"run_dir"}
        missing = declared - set(params)
        assert not missing, f"{profile.name} lacks {sorted(missing)} for {nb.stem}"


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_golden_sets_and_query_sets_named_by_profiles_are_valid(profile):
    params = load_profile(profile).values
    golden = load_golden_set(params["golden_set"])
    assert len(golden.queries) >= golden.required_passes >= 1 and golden.negatives
    sets = load_query_sets(params["query_sets"])
    assert sets["in_domain"] and sets["out_of_domain"]


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_conventions(nb):
    data = json.loads(nb.read_text(encoding="utf-8"))
    assert data["metadata"]["kernelspec"]["name"] == "retrieval-lib"
    tagged = [c for c in data["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "exactly one parameters cell"
    source = "".join(tagged[0]["source"])
    assert 'run_dir = ""' in source
    assert data["cells"][0]["cell_type"] == "markdown" and "".join(data["cells"][0]["source"]).startswith("# ")
    code = "\n".join("".join(c["source"]) for c in data["cells"] if c["cell_type"] == "code")
    assert "sys.path" not in code and "os.chdir" not in code
    # one helper opens the run (report, retriever, saved whatever happens) and one call ends it
    assert "open_run(" in code and "run.finish()" in code
    assert "NotebookReport(" not in code and "report.save()" not in code and "Retriever.from_settings" not in code
