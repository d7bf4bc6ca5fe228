"""The batch runner: every notebook through papermill into a new run folder.

``outputs/<UTC timestamp>-<profile>/`` holds::

    notebooks/   executed notebooks          html/     their nbconvert HTML renders
    figures/     PNG figures                 tables/   CSV tables
    metrics/     one metrics.json per notebook
    summary.json the run: status, every gate, every notebook's outcome
    index.html   what a person reads first

``summary.json`` is written with ``"status": "incomplete"`` before the first
notebook starts and rewritten as ``"complete"`` only at the end, so a run that
is killed is marked as such. A folder is never reused: an earlier run is
never overwritten.

Exit codes (:func:`~retrieval_lib.workbook.summary.verdict`): 0 all gates passed, 1 a gate failed or no gate
could be judged, 2 a notebook raised an error (or the parameters are invalid), or the run was stopped.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retrieval_lib.config import DOTENV_VARIABLE, PROJECT_ROOT, dotenv_file
from retrieval_lib.embedding.cache import cache_file, embedding_totals, prefetch_run
from retrieval_lib.errors import ConfigurationError, RetrievalError, ValidationError
from retrieval_lib.files import write_text_atomic
from retrieval_lib.params import DEFAULT_PROFILE, RESERVED_KEYS, Profile, anchored
from retrieval_lib.params import load_profile as _load_profile
from retrieval_lib.retrievers import parse_spec
from retrieval_lib.workbook.index_page import render_index
from retrieval_lib.workbook.registry import spec_for_stem
from retrieval_lib.workbook.summary import verdict

__all__ = ["RunResult", "NotebookOutcome", "run_workbook", "list_notebooks", "load_profile"]

NOTEBOOK_DIR = PROJECT_ROOT / "notebooks"
KERNEL_NAME = "retrieval-lib"


@dataclass
class NotebookOutcome:
    """How one notebook went."""

    notebook: str
    status: str  # "passed", "failed" (a gate), "error" (an exception), "skipped"
    seconds: float
    title: str = ""
    error: str | None = None
    gates: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    html: str | None = None
    executed: str | None = None
    context: dict[str, Any] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    specification: list[str] = field(default_factory=list)


@dataclass
class RunResult:
    """The outcome of :func:`run_workbook`."""

    run_dir: Path
    index_html: Path
    exit_code: int
    outcomes: list[NotebookOutcome]


def list_notebooks(selection: str | Sequence[str] | None = None, notebook_dir: Path | None = None) -> list[Path]:
    """The numbered notebooks, optionally filtered by number or name (``"01,03"``)."""
    found = sorted(Path(notebook_dir or NOTEBOOK_DIR).glob("[0-9][0-9]_*.ipynb"))
    if not selection:
        return found
    tokens = [t.strip() for t in (selection.split(",") if isinstance(selection, str) else selection) if t.strip()]
    chosen: list[Path] = []
    for token in tokens:
        matches = [p for p in found
                   if p.stem == token or p.stem.startswith(f"{token}_") or p.stem.split("_", 1)[0] == token]
        if not matches:
            names = ", ".join(p.stem for p in found)
            raise ValidationError(f"no notebook matches {token!r} (notebooks: {names})", field="notebooks")
        chosen.extend(m for m in matches if m not in chosen)
    return sorted(chosen)


def declared_parameters(notebooks: Sequence[Path]) -> dict[str, set[str]]:
    """Each notebook's declared parameters (its ``parameters`` cell), by notebook name."""
    import papermill as pm

    return {nb.stem: set(pm.inspect_notebook(str(nb))) for nb in notebooks}


def load_profile(params_file: str | os.PathLike[str] | None, notebook_dir: Path | None = None) -> Profile:
    """Read a parameter profile for a run; every key must be declared by some notebook of the workbook.

    A key is checked against *every* numbered notebook, not only the selected
    ones, so one profile serves a full run and a ``--notebooks 02`` run alike,
    while a misspelt key (declared nowhere) still stops the run before it starts.

    Raises:
        ParamsError: the file is missing or invalid, holds a secret, or has an unknown key.
    """
    every = list_notebooks(None, notebook_dir)
    # the registry knows each notebook's parameters; a notebook it does not know is asked (papermill reads it)
    known = [spec_for_stem(nb.stem) for nb in every]
    declared = {p for spec in known if spec for p in spec.params}
    unknown = [nb for nb, spec in zip(every, known) if spec is None]
    if unknown:
        declared |= set().union(*declared_parameters(unknown).values())
    profile = _load_profile(params_file or DEFAULT_PROFILE, declared=declared)
    if profile.values.get("retriever") is not None:  # a bad retriever stops the run before it starts
        parse_spec(profile.values["retriever"], profile=str(profile.path))
    # the kernels start in the project folder: a file the profile names from another working folder is passed whole
    here = Path.cwd()
    return profile if here.resolve() == PROJECT_ROOT.resolve() else replace(profile,
                                                                           values=anchored(profile.values, here))


def _new_run_dir(parent: Path, profile: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", profile).strip("-") or "run"
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        candidate = parent / (f"{stamp}-{slug}" if n == 1 else f"{stamp}-{slug}-{n}")
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise ConfigurationError(f"cannot create a new run folder under {parent}", option="--out")


def _ipc_kernel_manager(metrics_file: Path | None = None, stopping: threading.Event | None = None) -> type:
    """An asynchronous KernelManager that talks to its kernel over Unix sockets in the temp folder.

    Kernels inherit the environment, API keys included; over IPC they listen on
    no TCP port at all (and do not warn about unencrypted TCP on every start).

    Asynchronous, as papermill's own default is: nbclient then waits for a cell's output on the event loop, which
    checks every second that the kernel is alive and keeps the cell timeout. With a synchronous manager it waited
    in a blocking read with no timeout: a kernel that died in a cell (killed for memory, a crash in native code)
    hung the run for good, and a SIGTERM or Ctrl-C to the run waited for the cell to end.

    Given the notebook's ``metrics_file``, the kernel is shut down at once (killed,
    not asked to exit) when that file says the notebook completed: ``run.finish()``
    has saved everything and closed the store, and a graceful exit only waits for
    the kernel (1-3 s a notebook). A notebook that failed gets the graceful exit, so
    its ``atexit`` hooks (e.g. stopping the service 08 started) still run.

    Given ``stopping``, set when the run is stopped (SIGTERM, Ctrl-C) in the middle of a cell, the kernel is
    killed at once too, with its process group (anything its notebook started, such as 08's service): a graceful
    exit would close its sockets under the running cell, which it reports with a traceback on the run's stderr.
    """
    import tempfile
    import uuid

    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    def completed() -> bool:
        try:
            data = json.loads(metrics_file.read_text(encoding="utf-8")) if metrics_file else {}
        except (OSError, ValueError):
            return False
        return isinstance(data, dict) and data.get("status") == "complete"

    class IPCKernelManager(AsyncKernelManager):
        @default("transport")
        def _default_transport(self) -> str:
            return "ipc"

        @default("ip")
        def _default_ip(self) -> str:
            return os.path.join(tempfile.gettempdir(), f"retrieval-lib-kernel-{uuid.uuid4().hex[:12]}")

        async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:  # type: ignore[override]
            stopped = stopping is not None and stopping.is_set()
            await super().shutdown_kernel(now=now or stopped or (not restart and completed()), restart=restart)

    return IPCKernelManager


def _kernel_name() -> str:
    from jupyter_client.kernelspec import KernelSpecManager

    return KERNEL_NAME if KERNEL_NAME in KernelSpecManager().find_kernel_specs() else "python3"


@functools.cache
def _exporter() -> Any:
    """One HTML exporter per process: building one (its templates and filters) costs five times one render."""
    from nbconvert import HTMLExporter

    return HTMLExporter(exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)


def _render_html(executed: Path, target: Path, parameters: dict[str, Any]) -> None:
    """A report view of an executed notebook: no code, the parameters once as a table, text left-aligned.

    The executed notebook with its code stays beside it (``notebooks/``) for whoever wants it.
    """
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    # papermill's "injected-parameters" cell and the defaults cell are code; a table says the same once
    rows = "".join(f"| `{k}` | `{v!r}` |\n" for k, v in sorted(parameters.items()) if k != "run_dir")
    if rows:
        table = nbformat.v4.new_markdown_cell("**Parameters of this run**\n\n| parameter | value |\n|---|---|\n" + rows)
        first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
        nb.cells.insert(first_code, table)
    body, _ = _exporter().from_notebook_node(nb)
    # a long cell (a URL, a chunk's text) wraps anywhere; a column's name and a row's number stay whole
    style = ("<style>.jp-RenderedHTMLCommon td,.jp-RenderedHTMLCommon th{text-align:left!important;"
             "white-space:normal;overflow-wrap:anywhere}.jp-RenderedHTMLCommon th{overflow-wrap:normal}"
             ".jp-RenderedHTMLCommon tbody th{white-space:nowrap}</style>")
    body = _MISSING_CELL.sub("<td>—</td>", body.replace("</head>", style + "</head>", 1))
    body = body.replace("<td>True</td>", "<td>yes</td>").replace("<td>False</td>", "<td>no</td>")
    target.write_text(body, encoding="utf-8")


# pandas' renderings of a missing value in an HTML table cell; a reader sees a dash
_MISSING_CELL = re.compile(r"<td>(?:NaN|None|nan|&lt;NA&gt;|NaT)</td>")


def _version() -> str:
    """The workbook's version, with the git commit when it runs from a checkout."""
    import subprocess

    from retrieval_lib.config import VERSION as __version__

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                                text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"retrieval-lib {__version__}"
    return f"retrieval-lib {__version__} (git {commit})"


def _validated(outcomes: list[NotebookOutcome]) -> dict[str, Any]:
    """What the run validated: the first notebook context that names a collection, else the settings."""
    for o in outcomes:
        if o.context.get("collection"):
            return dict(o.context)
    try:
        from retrieval_lib.config import load_settings

        s = load_settings()
    except RetrievalError:
        return {}
    return {"collection": s.collection_name, "location": s.store_location, "store": s.profile,
            "provider": s.embedding_provider, "model": s.embedding_model}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False, default=str), fsync=False)


class _Terminated(BaseException):
    """SIGTERM during a run; a BaseException so no notebook-level handler swallows it."""


def run_workbook(
    params_file: str | os.PathLike[str] | None = None,
    notebooks: str | Sequence[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    progress: bool = True,
    timeout_per_cell: int = 900,
    notebook_dir: str | os.PathLike[str] | None = None,
    prefetch: Callable[[dict[str, Any], list[Path], Any], Sequence[str]] | None = None,
) -> RunResult:
    """Execute the notebooks with papermill into a new run folder.

    Args:
        params_file: YAML parameter profile (default ``params/demo.yaml``).
        notebooks: numbers or names to run (default: all).
        out_dir: parent of the run folder (default ``outputs/``).
        progress: show a progress bar over notebooks.
        timeout_per_cell: seconds one cell may run before it is an error.
        notebook_dir: where the numbered notebooks are (default ``notebooks/``).
        prefetch: ``(params, notebooks, settings) -> queries``: the distinct queries the notebooks will ask
            (:func:`retrieval_lib.cli.commands.plan.prefetch_queries`), embedded into the run's query cache
            before the first notebook, in as few calls as the service allows. None: each notebook embeds
            its own queries.

    Returns:
        RunResult with the run folder, its index.html and the exit code.
    """
    folder = Path(notebook_dir) if notebook_dir else None
    selected = list_notebooks(notebooks, folder)
    if not selected:
        raise ConfigurationError(f"no notebooks found in {notebook_dir or NOTEBOOK_DIR}", option="--notebooks")
    loaded = load_profile(params_file, folder)
    # the kernels start in the project folder: they read the .env this command read (the working folder's)
    dotenv = dotenv_file()
    read = {DOTENV_VARIABLE: str(dotenv.resolve())} if dotenv.is_file() else {}
    if os.environ.get("QDRANT_PATH", "").strip():  # kernels start in the project folder: a relative path goes whole
        read["QDRANT_PATH"] = str(Path(os.environ["QDRANT_PATH"].strip()).expanduser().resolve())
    with _environment({**loaded.environment(), **read}):
        return _run(loaded, selected, folder, out_dir, progress=progress, timeout_per_cell=timeout_per_cell,
                    prefetch=prefetch)


@contextlib.contextmanager
def _environment(variables: dict[str, str]) -> Iterator[None]:
    """``variables`` set for the run (its plan, its prefetch and every notebook's kernel), restored after."""
    saved = {k: os.environ.get(k) for k in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run(loaded: Profile, selected: list[Path], folder: Path | None, out_dir: str | os.PathLike[str] | None, *,
         progress: bool, timeout_per_cell: int,
         prefetch: Callable[[dict[str, Any], list[Path], Any], Sequence[str]] | None) -> RunResult:
    import papermill as pm
    from tqdm import tqdm

    params, params_path, profile = loaded.values, loaded.path, loaded.name
    parent = Path(out_dir) if out_dir else PROJECT_ROOT / "outputs"
    if not parent.is_absolute():
        parent = Path.cwd() / parent
    run_dir = _new_run_dir(parent, profile)
    for sub in ("notebooks", "html", "figures", "tables", "metrics"):
        (run_dir / sub).mkdir()
    started = datetime.now(UTC)
    summary: dict[str, Any] = {
        "status": "incomplete", "profile": profile, "params_file": str(params_path),
        "started": started.isoformat(timespec="seconds"), "finished": None,
        "notebooks": [nb.stem for nb in selected], "outcomes": [], "gates": [], "passed": None,
        "notebooks_available": [nb.stem for nb in list_notebooks(None, folder)],
        "version": _version(), "validated": {}, "duration_s": None,
    }
    summary["notebooks_not_run"] = [n for n in summary["notebooks_available"] if n not in summary["notebooks"]]
    _write_json(run_dir / "summary.json", summary)

    outcomes: list[NotebookOutcome] = []
    stopping = threading.Event()  # set by SIGTERM or Ctrl-C: the running notebook's kernel is killed at once
    # (a signal the parent set to be ignored, as a shell does for a background job's Ctrl-C, stays ignored)
    previous = {sig: handler for sig in (signal.SIGTERM, signal.SIGINT)
                if (handler := signal.getsignal(sig)) is not signal.SIG_IGN}

    def _on_stop(signum, frame):  # a polite kill ends the run like Ctrl-C, from the prefetch on
        stopping.set()
        raise KeyboardInterrupt() if signum == signal.SIGINT else _Terminated()

    try:
        for sig in previous:
            signal.signal(sig, _on_stop)
    except ValueError:  # not the main thread
        previous = {}
    bar = None
    try:
        if prefetch is not None:
            summary["embedding_prefetch"] = prefetch_run(prefetch, params, selected, run_dir, progress=progress)
            _write_json(run_dir / "summary.json", summary)
        kernel = _kernel_name()
        bar = tqdm(selected, desc="notebooks", unit="nb", disable=not progress)
        for nb in bar:
            bar.set_postfix_str(nb.stem)
            outcomes.append(_run_one(pm, nb, params, run_dir, kernel, timeout_per_cell, stopping))
            summary["validated"] = _validated(outcomes)
            summary["outcomes"] = [asdict(o) for o in outcomes]
            _write_json(run_dir / "summary.json", summary)
        summary["status"] = "complete"
    except (KeyboardInterrupt, _Terminated):
        summary["status"] = "interrupted"
    finally:
        if bar is not None:
            bar.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        finished = datetime.now(UTC)
        summary["finished"] = finished.isoformat(timespec="seconds")
        summary["duration_s"] = round((finished - started).total_seconds(), 1)
        summary["validated"] = _validated(outcomes)  # the settings when no notebook said what it validated
        summary["gates"] = [{"notebook": o.notebook, **g} for o in outcomes for g in o.gates]
        summary["embedding"] = embedding_totals(outcomes, summary.get("embedding_prefetch"))
        cache_file(run_dir).unlink(missing_ok=True)  # the run's query cache lives as long as the run
        if cache_file(run_dir).parent.is_dir() and not any(cache_file(run_dir).parent.iterdir()):
            cache_file(run_dir).parent.rmdir()
        summary["outcomes"] = [asdict(o) for o in outcomes]
        outcome = verdict(summary)  # the one rule: interrupted, errored, failed, not judged or passed
        summary["passed"] = outcome.exit_code == 0
        _write_json(run_dir / "summary.json", summary)
        (run_dir / "index.html").write_text(render_index(summary), encoding="utf-8")
    exit_code = outcome.exit_code
    return RunResult(run_dir=run_dir, index_html=run_dir / "index.html", exit_code=exit_code, outcomes=outcomes)


#: What an outcome takes from its notebook's ``metrics.json``.
_FROM_METRICS = ("title", "gates", "metrics", "findings", "figures", "tables", "context", "units", "specification")


def _run_one(pm, nb: Path, params: dict[str, Any], run_dir: Path, kernel: str, timeout: int,
             stopping: threading.Event | None = None) -> NotebookOutcome:
    declared = set(pm.inspect_notebook(str(nb)))
    nb_params = {k: v for k, v in params.items() if k in declared and k not in RESERVED_KEYS}
    if "run_dir" in declared:
        nb_params["run_dir"] = str(run_dir)
    executed = run_dir / "notebooks" / nb.name
    t0 = time.perf_counter()
    error = None
    try:
        pm.execute_notebook(
            str(nb), str(executed), parameters=nb_params, kernel_name=kernel, cwd=str(PROJECT_ROOT),
            progress_bar=False, log_output=False, execution_timeout=timeout,
            kernel_manager_class=_ipc_kernel_manager(run_dir / "metrics" / f"{nb.stem}.json", stopping),
        )
    except pm.PapermillExecutionError as err:
        error = f"cell {err.exec_count}: {err.ename}: {err.evalue}".splitlines()[0][:500]
    except Exception as err:  # noqa: BLE001 - a kernel that dies is an error of this notebook, not of the run
        error = f"{type(err).__name__}: {err}".splitlines()[0][:500]
    seconds = time.perf_counter() - t0
    outcome = NotebookOutcome(notebook=nb.stem, status="error" if error else "passed", seconds=round(seconds, 1),
                              error=error)
    if executed.exists():
        outcome.executed = str(executed.relative_to(run_dir))
        target = run_dir / "html" / f"{nb.stem}.html"
        try:
            _render_html(executed, target, nb_params)
            outcome.html = str(target.relative_to(run_dir))
        except Exception:  # noqa: BLE001 - a missing render must not hide the notebook's own result
            outcome.html = None
    metrics_file = run_dir / "metrics" / f"{nb.stem}.json"
    if metrics_file.exists():
        data = json.loads(metrics_file.read_text(encoding="utf-8"))
        for name in _FROM_METRICS:
            if data.get(name):  # absent or empty: the outcome's own default
                setattr(outcome, name, data[name])
        if not error and not data.get("passed", False):
            outcome.status = "failed"
    elif not error:
        outcome.status = "error"
        outcome.error = "the notebook finished without saving its metrics.json"
    return outcome
