"""Check the labelling notebook in a real browser (not in CI): JupyterLab + headless Chromium + Selenium.

What it does, on a copy (the shipped judgments are never touched):

1. copies ``notebooks/13_judgments.ipynb`` into a temporary root with ``judgments`` pointing to an empty file
   there and ``judge = "browser-check"``;
2. starts JupyterLab with the project kernel on 127.0.0.1 (as ``make lab`` does) with ``QDRANT_PATH`` set to the
   given copy of the collection;
3. opens the notebook in headless Chromium, runs all cells (Run menu), waits for the widget, clicks the
   "2 relevant" button;
4. reads the judgment file and checks that it holds exactly that judgment (judge, grade 2, the first result of
   the first question), and that the widget's progress moved to "1 of m judged";
5. saves a screenshot and prints what it saw; exits 0 when every check held, 1 otherwise.

Usage::

    QDRANT_PATH=/tmp/me/.qdrant .venv/bin/python scripts/check_lab_judging.py --screenshot /tmp/lab.png

Needs Debian's ``chromium`` and ``chromium-driver`` (``apt-get install -y chromium chromium-driver``) and the
pinned ``selenium``. Every wait is bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
NOTEBOOK = "13_judgments.ipynb"
JUDGE = "browser-check"
#: the widget's progress line ("n of m judged"), not the notebook's markdown that mentions it
STATUS = "//div[contains(@class,'widget-html')]//b[contains(text(),' judged')]"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(root: Path) -> Path:
    """The notebook copy with its parameters pointing at a fresh judgments file under ``root``."""
    nb = json.loads((ROOT / "notebooks" / NOTEBOOK).read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell.update(outputs=[], execution_count=None)
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = "".join(cell["source"]) + (f"\njudgments = {str(root / 'judgments.yaml')!r}"
                                                        f"\njudge = {JUDGE!r}\nrun_dir = {str(root / 'run')!r}\n")
    nb["metadata"].pop("widgets", None)
    (root / "notebooks").mkdir()
    path = root / "notebooks" / NOTEBOOK
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    raise TimeoutError(f"JupyterLab did not answer at {url} within {timeout:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--screenshot", type=Path, default=Path("lab_judging.png"))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the notebook to run")
    args = parser.parse_args()
    if not os.environ.get("QDRANT_PATH"):
        print("set QDRANT_PATH to a copy of the collection (the embedded folder admits one process)", file=sys.stderr)
        return 2

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    sys.path.insert(0, str(ROOT))
    from retrieval_lib.judging.judgments import load_judgments

    root = Path(tempfile.mkdtemp(prefix="lab-judging-"))
    prepare(root)
    port, token = free_port(), secrets.token_hex(16)
    lab = subprocess.Popen(
        [str(VENV_BIN / "jupyter"), "lab", "--ip=127.0.0.1", f"--port={port}", "--no-browser",
         f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}",
         "--KernelSpecManager.allowed_kernelspecs=retrieval-lib", "--KernelSpecManager.ensure_native_kernel=False",
         "--MappingKernelManager.default_kernel_name=retrieval-lib", "--ServerApp.open_browser=False",
         *(["--allow-root"] if os.getuid() == 0 else [])],
        cwd=root, stdout=open(root / "lab.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1100"):
        options.add_argument(flag)
    driver = None
    checks: list[tuple[str, bool]] = []
    try:
        wait_http(f"http://127.0.0.1:{port}/api/status?token={token}", 90)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        driver.get(f"http://127.0.0.1:{port}/lab/tree/notebooks/{NOTEBOOK}?token={token}")
        wait = WebDriverWait(driver, 120)
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".jp-Notebook .jp-Cell")))
        wait.until(ec.presence_of_element_located((By.XPATH, "//*[contains(@class,'jp-Notebook-ExecutionIndicator')"
                                                             " or contains(@class,'jp-KernelStatus')]")))
        time.sleep(5)  # let the kernel connect
        menu = wait.until(ec.element_to_be_clickable(
            (By.XPATH, "//li[contains(@class,'lm-MenuBar-item')][.//div[normalize-space()='Run']]")))
        menu.click()
        wait.until(ec.element_to_be_clickable(
            (By.XPATH, "//li[contains(@class,'lm-Menu-item')][.//div[normalize-space()='Run All Cells']]"))).click()
        button = WebDriverWait(driver, args.timeout).until(ec.element_to_be_clickable(
            (By.XPATH, "//button[contains(@class,'jupyter-button')][contains(normalize-space(.),'2 relevant')]")))
        status_before = driver.find_element(By.XPATH, STATUS).text
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
        card = driver.find_element(By.XPATH, "//div[contains(@class,'widget-html')][.//pre]").text
        button.click()
        path = root / "judgments.yaml"
        deadline = time.monotonic() + 60
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        WebDriverWait(driver, 60).until(ec.presence_of_element_located(
            (By.XPATH, "//*[contains(text(),'saved: grade 2')]")))
        status_after = driver.find_element(By.XPATH, STATUS).text
        driver.save_screenshot(str(args.screenshot))
        saved = load_judgments(path).judgments if path.exists() else []
        first_query = card.split("Query:")[1].split("rank")[0].strip() if "Query:" in card else ""
        checks = [
            ("the widget rendered in JupyterLab with its grade buttons", True),
            (f"progress before the click: {status_before.split(' as judge')[0]!r}", status_before.startswith("0 of ")),
            ("the judgment file exists after one click", path.exists()),
            (f"it holds one judgment, grade 2 by {JUDGE}: {[(j.judge, j.grade) for j in saved]}",
             [(j.judge, j.grade) for j in saved] == [(JUDGE, 2)]),
            (f"of the result shown (query {first_query!r})", bool(saved) and saved[0].query == first_query),
            (f"progress after the click: {status_after.split(' as judge')[0]!r}", status_after.startswith("1 of ")),
        ]
        if saved:
            print(f"saved entry: {saved[0].as_entry()}")
    except Exception as err:  # noqa: BLE001 - any failure is reported, with the screenshot of that moment
        checks.append((f"browser run: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}", False))
        if driver is not None:
            driver.save_screenshot(str(args.screenshot))
    finally:
        if driver is not None:
            driver.quit()
        os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)
    for text, ok in checks:
        print(f"[{'ok' if ok else 'FAIL'}] {text}")
    print(f"screenshot: {args.screenshot}")
    shutil.rmtree(root, ignore_errors=True)
    return 0 if checks and all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
