"""The papermill batch runner, on fixture notebooks named for what they do.

tests/fixtures/notebooks/: 01_passes (one gate from parameters), 02_raises (an
exception before saving), 03_gate (same gate, another name), 04_no_metrics
(finishes without writing metrics.json).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from retrieval_lib.errors import ValidationError
from retrieval_lib.runner import list_notebooks, load_profile, run_workbook

FIXTURES = Path(__file__).parent / "fixtures" / "notebooks"
pytestmark = pytest.mark.timeout(180)


def write_params(tmp_path: Path, name: str = "p.yaml", **values) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"profile": "fixture", **values}), encoding="utf-8")
    return path


def run(tmp_path: Path, notebooks: str, **params):
    return run_workbook(write_params(tmp_path, **params), notebooks=notebooks, out_dir=tmp_path / "out",
                        progress=False, notebook_dir=FIXTURES)


def test_passing_run_writes_every_artifact_and_exits_0(tmp_path):
    result = run(tmp_path, "01", gate_value=2, threshold=1)
    assert result.exit_code == 0
    d = result.run_dir
    assert d.parent == tmp_path / "out" and d.name.endswith("-fixture")
    for rel in ("notebooks/01_passes.ipynb", "html/01_passes.html", "metrics/01_passes.json", "summary.json",
                "index.html"):
        assert (d / rel).is_file(), rel
    summary = json.loads((d / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["passed"] is True
    assert summary["gates"][0]["name"] == "value reaches threshold" and summary["gates"][0]["value"] == 2
    index = (d / "index.html").read_text()
    assert "All 1 gates passed" in index and 'href="html/01_passes.html"' in index


def test_failed_gate_exits_1_and_index_names_the_gate(tmp_path):
    result = run(tmp_path, "03", gate_value=1, threshold=5)
    assert result.exit_code == 1
    assert result.outcomes[0].status == "failed"
    index = result.index_html.read_text()
    assert "1 of 1 gates failed" in index
    assert '<td>value reaches threshold</td><td><span class="fail">FAIL</span>' in index


def test_erroring_notebook_does_not_stop_the_others_and_exits_2(tmp_path):
    result = run(tmp_path, "01,02,03", gate_value=1, threshold=1)
    assert result.exit_code == 2
    status = {o.notebook: o.status for o in result.outcomes}
    assert status == {"01_passes": "passed", "02_raises": "error", "03_gate": "passed"}
    error = next(o for o in result.outcomes if o.notebook == "02_raises").error
    assert "RuntimeError" in error and "fixture failure" in error
    # the failed notebook is still rendered, so a person can read the traceback
    assert (result.run_dir / "html" / "02_raises.html").is_file()
    assert "raised an error" in result.index_html.read_text()


def test_notebook_without_metrics_is_an_error_not_a_pass(tmp_path):
    result = run(tmp_path, "04")
    assert result.exit_code == 2
    assert "without saving its metrics.json" in result.outcomes[0].error


def test_two_runs_leave_two_folders_and_never_overwrite(tmp_path):
    first = run(tmp_path, "01", gate_value=1, threshold=1)
    before = (first.run_dir / "summary.json").read_text()
    second = run(tmp_path, "01", gate_value=1, threshold=1)
    assert first.run_dir != second.run_dir
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted([first.run_dir.name, second.run_dir.name])
    assert (first.run_dir / "summary.json").read_text() == before


def test_only_declared_parameters_are_injected(tmp_path):
    result = run(tmp_path, "01", gate_value=1, threshold=1, not_a_parameter_here="x")
    executed = (result.run_dir / "notebooks" / "01_passes.ipynb").read_text()
    assert "not_a_parameter_here" not in executed
    assert str(result.run_dir) in executed  # run_dir is injected so the notebook writes into the run folder


@pytest.mark.parametrize("key", ["cohere_api_key", "QDRANT_API_KEY", "token", "db_password"])
def test_secret_like_parameter_names_are_refused(tmp_path, key):
    with pytest.raises(ValidationError, match="secret"):
        load_profile(write_params(tmp_path, **{key: "anything"}))


def test_a_parameter_holding_the_api_key_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("COHERE_API_KEY", "co-RUNNER-KEY-91d2")
    with pytest.raises(ValidationError) as err:
        load_profile(write_params(tmp_path, note="co-RUNNER-KEY-91d2"))
    assert "co-RUNNER-KEY-91d2" not in str(err.value)


def test_unknown_notebook_selection_lists_the_notebooks():
    with pytest.raises(ValidationError, match="01_passes"):
        list_notebooks("99", FIXTURES)


def test_interrupted_run_is_marked_and_earlier_runs_stay_intact(tmp_path):
    earlier = run(tmp_path, "01", gate_value=1, threshold=1)
    earlier_summary = (earlier.run_dir / "summary.json").read_text()
    params = write_params(tmp_path, "slow.yaml", gate_value=1, threshold=1, sleep_s=60)
    code = ("import sys; from retrieval_lib.runner import run_workbook; "
            f"r = run_workbook({str(params)!r}, notebooks='01,03', out_dir={str(tmp_path / 'out')!r}, "
            f"progress=False, notebook_dir={str(FIXTURES)!r}); sys.exit(r.exit_code)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        new_dir = None
        while time.monotonic() < deadline and new_dir is None:  # wait until the slow notebook is running
            dirs = [p for p in (tmp_path / "out").iterdir() if p != earlier.run_dir]
            if dirs and (dirs[0] / "summary.json").exists():
                new_dir = dirs[0]
            time.sleep(0.2)
        assert new_dir is not None, "the run never started"
        time.sleep(4)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    summary = json.loads((new_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert summary["passed"] is False
    assert proc.returncode == 2
    assert "interrupted" in (new_dir / "index.html").read_text()
    assert (earlier.run_dir / "summary.json").read_text() == earlier_summary


def test_cli_run_with_secret_param_exits_2_with_one_line(tmp_path):
    params = write_params(tmp_path, api_key="x")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QDRANT_", "COHERE_", "EMBEDDING_"))}
    proc = subprocess.run([sys.executable, "-m", "retrieval_lib", "run", "--params", str(params), "-q"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error:")
