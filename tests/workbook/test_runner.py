"""The papermill batch runner, on fixture notebooks named for what they do.

tests/fixtures/notebooks/: 01_passes (one gate from parameters), 02_raises (an
exception before saving), 03_gate (same gate, another name), 04_no_metrics
(finishes without writing metrics.json), 07_dies (its kernel is killed in a cell).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import corpus
import pytest
import yaml
from run_progress import wait_for_running_cell
from warm_cli import run_cli

from retrieval_lib.errors import ParamsError, ValidationError
from retrieval_lib.workbook.runner import list_notebooks, load_profile, run_workbook

FIXTURES = corpus.FIXTURES / "notebooks"
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
    # only_in_04 is declared by fixture 04 alone: a full profile may carry it, but 01 never receives it
    result = run(tmp_path, "01", gate_value=1, threshold=1, only_in_04="x-marker")
    executed = (result.run_dir / "notebooks" / "01_passes.ipynb").read_text()
    assert "only_in_04" not in executed and "x-marker" not in executed
    assert str(result.run_dir) in executed  # run_dir is injected so the notebook writes into the run folder


def test_a_misspelt_parameter_stops_the_run_before_it_starts_and_names_the_key(tmp_path):
    with pytest.raises(ParamsError) as err:
        run(tmp_path, "01", gate_valeu=2, threshold=1)
    assert err.value.key == "gate_valeu" and err.value.exit_code == 2
    assert "'gate_valeu'" in str(err.value) and "did you mean 'gate_value'" in str(err.value)
    assert not (tmp_path / "out").exists()  # no run folder was started for a run that cannot be right


def test_cli_run_with_a_misspelt_key_exits_2_naming_it(tmp_path):
    params = write_params(tmp_path, gate_value=1, threshhold=1)
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from retrieval_lib.cli import main; "
         "import retrieval_lib.workbook.runner as r; "
         f"r.NOTEBOOK_DIR = __import__('pathlib').Path({str(FIXTURES)!r}); sys.exit(main(sys.argv[1:]))",
         "run", "--params", str(params), "--out", str(tmp_path / "out"), "-q"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown parameter 'threshhold'" in lines[0] and "'threshold'" in lines[0]


def test_a_notebook_that_raises_after_open_run_still_saves_its_record(tmp_path):
    result = run(tmp_path, "05", gate_value=1, threshold=1)
    assert result.exit_code == 2 and result.outcomes[0].status == "error"
    saved = json.loads((result.run_dir / "metrics" / "05_run_raises.json").read_text())
    assert saved["status"] == "error" and saved["passed"] is False
    assert "RuntimeError: fixture failure after open_run" in saved["error"]
    assert saved["gates"][0]["name"] == "value reaches threshold"  # what was measured before the error is kept


@pytest.mark.parametrize("key", ["cohere_api_key", "QDRANT_API_KEY", "token", "db_password", "hf_token",
                                 "Access-Token"])
def test_secret_like_parameter_names_are_refused(tmp_path, key):
    with pytest.raises(ValidationError, match="secret"):
        load_profile(write_params(tmp_path, **{key: "anything"}), FIXTURES)


def test_a_payload_role_that_counts_tokens_is_no_secret(tmp_path):
    # team #6's `inspect --write-profile` maps the role token_count to its metadata.token_count: the profile it
    # wrote was refused by draft, run and check as "a parameter that looks like a secret"
    path = tmp_path / "team.yaml"
    path.write_text("profile: team\npayload_fields:\n  content: content\n  token_count: metadata.token_count\n",
                    encoding="utf-8")
    assert load_profile(path).values["payload_fields"]["token_count"] == "metadata.token_count"


def test_a_parameter_holding_the_api_key_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("COHERE_API_KEY", "co-RUNNER-KEY-91d2")
    with pytest.raises(ValidationError) as err:
        load_profile(write_params(tmp_path, gate_value="co-RUNNER-KEY-91d2"), FIXTURES)
    assert "co-RUNNER-KEY-91d2" not in str(err.value)


def test_a_parameter_holding_a_key_kept_only_in_dotenv_is_refused(tmp_path, monkeypatch):
    # the check sees what load_settings sees: the environment AND the project's .env
    import retrieval_lib.config as config

    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("QDRANT_API_KEY", raising=False)
    (tmp_path / ".env").write_text("QDRANT_API_KEY=qd-DOTENV-ONLY-5521\n", encoding="utf-8")
    monkeypatch.setattr(config, "PROJECT_ROOT", tmp_path)
    with pytest.raises(ParamsError) as err:
        load_profile(write_params(tmp_path, threshold="qd-DOTENV-ONLY-5521"), FIXTURES)
    assert err.value.key == "threshold" and "qd-DOTENV-ONLY-5521" not in str(err.value)


def test_a_run_from_a_teams_folder_gives_its_kernels_the_dotenv_there(tmp_path, monkeypatch):
    # the kernels start in the project folder; they must read the .env of the folder the command ran in
    import retrieval_lib.config as config

    team, project = tmp_path / "team", tmp_path / "project"
    team.mkdir(), project.mkdir()
    (team / ".env").write_text("QDRANT_COLLECTION_NAME=team_book\n", encoding="utf-8")
    (project / ".env").write_text("QDRANT_COLLECTION_NAME=project_book\n", encoding="utf-8")
    monkeypatch.delenv("QDRANT_COLLECTION_NAME", raising=False)
    monkeypatch.delenv(config.DOTENV_VARIABLE, raising=False)
    monkeypatch.setattr(config, "PROJECT_ROOT", project)
    monkeypatch.chdir(team)
    result = run(tmp_path, "06")
    assert [o.status for o in result.outcomes] == ["passed"]  # it ran (it records no gate: the run is NOT JUDGED)
    findings = json.loads((result.run_dir / "metrics" / "06_settings.json").read_text())["findings"]
    assert "collection team_book" in findings
    assert config.DOTENV_VARIABLE not in os.environ  # set for the run only


def test_unknown_notebook_selection_lists_the_notebooks():
    with pytest.raises(ValidationError, match="01_passes"):
        list_notebooks("99", FIXTURES)


@pytest.mark.slow
def test_interrupted_run_is_marked_and_earlier_runs_stay_intact(tmp_path):
    earlier = run(tmp_path, "01", gate_value=1, threshold=1)
    earlier_summary = (earlier.run_dir / "summary.json").read_text()
    params = write_params(tmp_path, "slow.yaml", gate_value=1, threshold=1, sleep_s=90)
    code = ("import sys; from retrieval_lib.workbook.runner import run_workbook; "
            f"r = run_workbook({str(params)!r}, notebooks='01,03', out_dir={str(tmp_path / 'out')!r}, "
            f"progress=False, notebook_dir={str(FIXTURES)!r}); sys.exit(r.exit_code)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # the event, not a fixed pause: the slow notebook's sleeping cell is running (a fixed 4 s pause would
        # send the signal during the kernel's start wherever that start takes longer)
        new_dir = wait_for_running_cell(proc, tmp_path / "out", "01_passes.ipynb", "time.sleep(sleep_s)",
                                        earlier=[earlier.run_dir], timeout=120)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=90)
        stopped_in = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    # the run stops in the cell, not after it: its 90 s sleep is cut short (a run that waited for the cell, as one
    # with a synchronous kernel client did, would take the rest of the 90 s), and the kernel is killed quietly
    assert stopped_in < 45, f"the run took {stopped_in:.0f} s to stop: it waited for the cell"
    assert "Traceback" not in proc.stderr.read().decode()
    summary = json.loads((new_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert summary["passed"] is False
    assert proc.returncode == 2
    assert "interrupted" in (new_dir / "index.html").read_text()
    assert (earlier.run_dir / "summary.json").read_text() == earlier_summary


def test_a_run_stopped_while_it_embeds_its_queries_is_reported_as_interrupted(tmp_path):
    """SIGTERM during the prefetch (the run's first long step: a model loads, every query is embedded) is caught
    like one during a notebook: the report is written, marked interrupted; the handler is given back after."""
    def stopped_while_embedding(params, notebooks, settings):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # the handler raises in this sleep
        raise AssertionError("the run was not stopped")

    before = signal.getsignal(signal.SIGTERM)
    result = run_workbook(write_params(tmp_path, gate_value=1, threshold=1), notebooks="01", out_dir=tmp_path / "out",
                          progress=False, notebook_dir=FIXTURES, prefetch=stopped_while_embedding)
    assert signal.getsignal(signal.SIGTERM) is before
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert (summary["status"], summary["passed"], summary["outcomes"], result.exit_code) == (
        "interrupted", False, [], 2)
    assert "interrupted" in result.index_html.read_text()


def test_cli_run_with_secret_param_exits_2_with_one_line(tmp_path):
    params = write_params(tmp_path, api_key="x")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QDRANT_", "COHERE_", "EMBEDDING_"))}
    proc = run_cli(["run", "--params", params, "-q"], env=env, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error:")


@pytest.mark.parametrize(("status", "stopped", "killed"),
                         [("complete", False, True), ("error", False, False), (None, False, False), (None, True, True)])
def test_kernel_is_killed_at_once_only_after_its_notebook_completed_or_when_the_run_stops(tmp_path, monkeypatch,
                                                                                          status, stopped, killed):
    import asyncio
    import threading

    from jupyter_client.manager import AsyncKernelManager

    from retrieval_lib.workbook.runner import _ipc_kernel_manager

    metrics = tmp_path / "metrics.json"
    if status:
        metrics.write_text(json.dumps({"status": status}))
    asked: list[bool] = []

    async def shutdown(self, now=False, restart=False):
        asked.append(now)

    monkeypatch.setattr(AsyncKernelManager, "shutdown_kernel", shutdown)
    stopping = threading.Event()
    if stopped:
        stopping.set()
    asyncio.run(_ipc_kernel_manager(metrics, stopping)().shutdown_kernel(now=False))
    # a failed notebook exits gracefully: its atexit hooks (08's service) still run; a stopped run kills its kernel's
    # process group at once (08's service with it), as a graceful exit would close its sockets under a running cell
    assert asked == [killed]


def test_a_notebook_whose_kernel_dies_is_an_error_and_the_run_goes_on(tmp_path):
    """A kernel killed in a cell (out of memory, a crash in native code): the notebook is an error that says so, at
    once, and the next notebook runs. (With a synchronous kernel client the run waited for that cell for good.)"""
    result = run(tmp_path, "07,01", gate_value=1, threshold=1)
    status = {o.notebook: o.status for o in result.outcomes}
    assert status == {"07_dies": "error", "01_passes": "passed"} and result.exit_code == 2
    error = next(o for o in result.outcomes if o.notebook == "07_dies").error
    assert "DeadKernelError" in error and "died" in error, error
