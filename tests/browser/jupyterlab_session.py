"""JupyterLab and headless Chromium for the real-browser tests: one place that starts, drives and stops them.

``notebook_copy`` writes notebook 13 under a test folder with extra parameters; ``running_lab`` serves that folder
(the project kernel, 127.0.0.1, a private token, a copy of the embedded store) and stops it afterwards; ``chromium``
is a Selenium driver with the flags this machine's closed network needs. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_lib.config import PROJECT_ROOT

NOTEBOOK = "13_judgments.ipynb"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
RUN_TIMEOUT = 420  # seconds for one "run all" of notebook 13 (the model loads, 30 queries run)


def notebook_copy(root: Path, extra_parameters: str) -> Path:
    """Notebook 13 under ``root/notebooks``, outputs cleared, ``extra_parameters`` appended to its parameters."""
    nb = json.loads((PROJECT_ROOT / "notebooks" / NOTEBOOK).read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell.update(outputs=[], execution_count=None)
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = "".join(cell["source"]) + "\n" + extra_parameters
    nb["metadata"].pop("widgets", None)
    (root / "notebooks").mkdir(exist_ok=True)
    path = root / "notebooks" / NOTEBOOK
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def code_cells() -> int:
    nb = json.loads((PROJECT_ROOT / "notebooks" / NOTEBOOK).read_text(encoding="utf-8"))
    return sum(c["cell_type"] == "code" for c in nb["cells"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    raise TimeoutError(f"JupyterLab did not answer at {url} within {timeout:.0f} s")


@contextlib.contextmanager
def running_lab(root: Path) -> Iterator[tuple[str, str]]:
    """(base URL, token) of JupyterLab serving ``root`` on a copy of the embedded store; stopped afterwards."""
    for exe in (CHROMIUM, CHROMEDRIVER):
        if not Path(exe).exists():
            pytest.fail(f"{exe} is missing: apt-get install -y chromium chromium-driver")
    store = Path(os.environ.get("QDRANT_PATH") or PROJECT_ROOT / ".qdrant")
    if not store.is_dir():
        pytest.fail(f"no embedded store at {store}: build it with `make sample`")
    shutil.copytree(store, root / ".qdrant", ignore=shutil.ignore_patterns(".lock"))
    port, token = _free_port(), secrets.token_hex(16)
    # every cell in the page (JupyterLab 4 renders only the cells in view by default): the tests read all prompts
    settings = root / "lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    news = root / "lab-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    env = {**os.environ, "QDRANT_PATH": str(root / ".qdrant"), "JUPYTERLAB_SETTINGS_DIR": str(root / "lab-settings")}
    with open(root / "lab.log", "w") as log:
        proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "jupyter"), "lab", "--ip=127.0.0.1", f"--port={port}", "--no-browser",
             f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}",
             "--KernelSpecManager.allowed_kernelspecs=retrieval-lib", "--KernelSpecManager.ensure_native_kernel=False",
             "--MappingKernelManager.default_kernel_name=retrieval-lib",
             *(["--allow-root"] if os.getuid() == 0 else [])],
            cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_http(f"http://127.0.0.1:{port}/api/status?token={token}", 120)
        yield f"http://127.0.0.1:{port}", token
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


@contextlib.contextmanager
def chromium(profile: Path) -> Iterator[object]:
    """A headless Chromium driven by Selenium, with a new profile folder; quit afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1300", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


def open_notebook(driver, base: str, token: str) -> None:
    """Open the copied notebook 13 and wait (bounded) until its cells are in the page and the kernel is there."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{base}/lab/tree/notebooks/{NOTEBOOK}?token={token}")
    WebDriverWait(driver, 120).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".jp-Notebook .jp-Cell")))
    WebDriverWait(driver, 120).until(ec.presence_of_element_located(
        (By.XPATH, "//*[contains(@class,'jp-Notebook-ExecutionIndicator') or contains(@class,'jp-KernelStatus')]")))
    WebDriverWait(driver, 60).until(lambda d: len(prompts(d)) == code_cells())
    time.sleep(5)  # let the kernel connect before Run All (a run queued earlier is sometimes dropped)


def menu(driver, name: str, item: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 60)
    wait.until(ec.element_to_be_clickable(
        (By.XPATH, f"//li[contains(@class,'lm-MenuBar-item')][.//div[normalize-space()='{name}']]"))).click()
    wait.until(ec.element_to_be_clickable(
        (By.XPATH, f"//li[contains(@class,'lm-Menu-item')][.//div[starts-with(normalize-space(),'{item}')]]"))).click()


def prompts(driver) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')).map(e => e.textContent)")


def wait_run_finished(driver) -> list[int]:
    """Wait (bounded) until every code cell shows an execution count and none runs; returns the counts."""
    cells = code_cells()
    deadline = time.monotonic() + RUN_TIMEOUT
    while time.monotonic() < deadline:
        counts = [re.sub(r"\D", "", p) for p in prompts(driver)]
        if len(counts) == cells and all(counts) and not any("*" in p for p in prompts(driver)):
            return [int(c) for c in counts]
        time.sleep(1)
    raise TimeoutError(f"notebook 13 did not finish within {RUN_TIMEOUT} s: prompts {prompts(driver)}")
