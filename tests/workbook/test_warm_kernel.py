"""The suite's warm notebook kernel (``tests/warm_kernel.py``) is the project's kernel: a notebook gives the same
outputs warm as cold (tables as a kernel shows them, inline figures, its folder and environment, progress bars),
and the kernel manager's interrupt and kill reach the kernel, as they reach a kernel it started itself."""

from __future__ import annotations

import os
import sys
import time

import nbformat
import pytest

pytestmark = pytest.mark.timeout(300)

KERNEL = "retrieval-lib"
CELLS = [
    "import os, sys\nprint(os.getcwd() == os.environ['EXPECT_CWD'], os.environ['EXPECT_VAR'])\n"
    "print(os.path.basename(sys.argv[0]), sys._xoptions, sys.path[0] == os.getcwd() or sys.path[0])",
    "import pandas as pd\npd.DataFrame({f'column_{i}': [i * 1.5, i] for i in range(30)})",
    "import tqdm.auto\ntype(tqdm.auto.tqdm).__module__, tqdm.auto.tqdm.__module__",
    "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2]);",
    "from sentence_transformers import SentenceTransformer\nSentenceTransformer.__module__",
]


def _warm_env() -> bool:
    return bool(os.environ.get("WARM_KERNEL_DIR")) and os.environ.get("WARM_KERNEL") != "0"


def _run(tmp_path, name: str, warm: bool):
    """The notebook of CELLS run by papermill in ``tmp_path``, warm or cold; its code cells' outputs."""
    import papermill as pm

    source = tmp_path / "probe.ipynb"
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": KERNEL, "display_name": KERNEL,
                                                           "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell(code) for code in CELLS]
    nbformat.write(nb, source)
    saved = dict(os.environ)
    os.environ.update(EXPECT_CWD=str(tmp_path), EXPECT_VAR="from-the-run")
    if not warm:
        os.environ["WARM_KERNEL"] = "0"  # the launcher becomes the project kernelspec's own command
    try:
        pm.execute_notebook(source, tmp_path / f"{name}.ipynb", kernel_name=KERNEL, cwd=str(tmp_path),
                            progress_bar=False)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    done = nbformat.read(tmp_path / f"{name}.ipynb", as_version=4)
    return [[{k: v for k, v in out.items() if k != "execution_count"} for out in cell.outputs]
            for cell in done.cells if cell.cell_type == "code"]


@pytest.mark.slow
@pytest.mark.skipif(not _warm_env(), reason="the suite runs its kernels cold (WARM_KERNEL=0)")
def test_a_notebook_gives_the_same_outputs_warm_and_cold(tmp_path):
    warm, cold = _run(tmp_path, "warm", warm=True), _run(tmp_path, "cold", warm=False)
    assert warm == cold
    assert warm[0][0]["text"].startswith("True from-the-run")  # its own folder and environment
    assert "image/png" in warm[3][-1]["data"]  # the inline backend, chosen as the kernel starts
    assert "..." in warm[1][0]["data"]["text/plain"]  # a kernel's table width (pandas: 20 columns), not a terminal's


def _kernel_pid(kc) -> int:
    """The kernel's process id. Right after an interrupt, ipykernel aborts the requests queued behind the
    interrupted one (an "aborted" reply, no expressions): asked again then, a few times at most."""
    for _ in range(5):
        reply = kc.execute("", user_expressions={"pid": "__import__('os').getpid()"}, reply=True, timeout=60)
        if reply["content"]["status"] != "aborted":
            break
        time.sleep(0.5)
    assert reply["content"]["status"] == "ok", reply["content"]
    return int(reply["content"]["user_expressions"]["pid"]["data"]["text/plain"])


#: What the interrupted cell prints before it sleeps: seen on iopub, the cell's own code is running.
RUNNING = "cell running"


def _wait_until_running(kc, msg_id: str, timeout: float = 60) -> None:
    """Until the cell of request ``msg_id`` prints :data:`RUNNING`. Not its ``execute_input``: the kernel publishes
    that before it runs the code, and an interrupt in between is caught by the kernel itself ("KeyboardInterrupt
    caught in kernel"), with no reply to the request (seen once on a fresh clone)."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"the kernel did not start running the cell within {timeout:g} s"
        msg = kc.get_iopub_msg(timeout=remaining)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream"
                and RUNNING in msg["content"].get("text", "")):
            return


def _parent_cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
        ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
    with open(f"/proc/{ppid}/cmdline", "rb") as cmd:
        return cmd.read().replace(b"\0", b" ").decode()


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.skipif(not _warm_env() or not sys.platform.startswith("linux"), reason="warm kernels on Linux only")
def test_the_managers_interrupt_and_kill_reach_the_warm_kernel():
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name=KERNEL)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)
        pid = _kernel_pid(kc)
        assert "kernel_zygote.py" in _parent_cmdline(pid)  # the warm path served it
        started = time.monotonic()
        msg_id = kc.execute(f"import time; print({RUNNING!r}, flush=True); time.sleep(60)")
        _wait_until_running(kc, msg_id)  # the event, not a pause: an interrupt before it would find no cell to stop
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=30)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        assert time.monotonic() - started < 30
        assert _kernel_pid(kc) == pid  # interrupted, not restarted
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)  # the kernel manager's kill: its launcher's group, SIGKILL
    assert _gone(pid, 10), "the kernel outlived its launcher"
