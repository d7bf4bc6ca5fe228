"""Runs a team's retrieval function in a child process, speaking JSON lines. Standard library only.

Started by :mod:`retrieval_lib.retrievers.child` as ``python _shim.py FD FUNCTION PATHS TOP_K_ARG`` with the team's
interpreter, so it must import nothing from retrieval_lib. It imports FUNCTION (``path/to/file.py:name`` or
``package.module:name``, with the PATHS folders first on sys.path), finds its top-k argument by name (or uses
TOP_K_ARG), then reads questions as JSON lines (``{"query": ..., "top_k": ...}``) on stdin and writes one JSON line
per answer on file descriptor FD: ``{"ok": <results, made JSON-safe>, "call_ms": ...}`` or
``{"error": "first line", "type": "ValueError"}``.
The first line on FD is ``{"ready": ...}`` or ``{"fatal": ...}`` (the import failed). The team's ``print`` s go to
stderr: file descriptor 1 is pointed there, so nothing they print can corrupt an answer.
"""

import os
import sys

# Run by path, Python puts this file's folder first on sys.path, where our own modules (http.py...) would shadow
# the standard library's for the team's imports: take it off before anything else is imported.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import asyncio  # noqa: E402
import collections.abc  # noqa: E402
import dataclasses  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

TOP_K_NAMES = ("top_k", "limit", "k", "n", "n_results", "num_results", "max_results")


def _first_line(err):
    text = str(err).strip().splitlines()
    return type(err).__name__ + (": " + text[0][:300] if text else "")


def plain(value, depth=0):
    """``value`` as JSON-safe data: dataclasses, pydantic models, numpy scalars and arrays, objects' attributes."""
    if depth > 12:
        return repr(value)[:200]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset, collections.abc.Iterator)):  # a generator's results too
        return [plain(v, depth + 1) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value), depth + 1)
    for method in ("model_dump", "dict", "to_dict", "tolist"):  # pydantic 2, pydantic 1, others, numpy arrays
        fn = getattr(value, method, None)
        if callable(fn):
            try:
                return plain(fn(), depth + 1)
            except Exception:  # noqa: BLE001 - a converter that fails: try the next one
                pass
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        try:
            return plain(item(), depth + 1)
        except Exception:  # noqa: BLE001 - not a numpy scalar after all
            pass
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        return {k: plain(v, depth + 1) for k, v in attrs.items() if not k.startswith("_")}
    return str(value)


def load(target, paths):
    where, _, name = target.rpartition(":")
    for folder in reversed(paths):
        sys.path.insert(0, folder)
    if where.endswith(".py") or os.sep in where or "/" in where:
        sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
        spec = importlib.util.spec_from_file_location("team_retriever", where)
        if spec is None or spec.loader is None:
            raise ImportError("cannot import " + where)
        module = importlib.util.module_from_spec(spec)
        sys.modules["team_retriever"] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    fn = module
    for part in name.split("."):
        fn = getattr(fn, part)
    if not callable(fn):
        raise TypeError(target + " is not callable")
    return fn


def top_k_name(fn, given):
    if given:
        return given
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    return next((n for n in TOP_K_NAMES if n in params), None)


def main():
    fd, target, paths, given = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
    channel = os.fdopen(fd, "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # the team's prints (Python's and C's) go to stderr, never onto the channel
    sys.stdout = sys.stderr

    def send(message):
        channel.write(json.dumps(message, allow_nan=False) + "\n")
        channel.flush()

    try:
        fn = load(target, paths)
    except BaseException as err:  # noqa: BLE001 - anything the team's import does becomes a line, not a crash
        send({"fatal": _first_line(err)})
        return 2
    k_name = top_k_name(fn, given)
    send({"ready": True, "top_k_arg": k_name})
    for line in sys.stdin:
        if not line.strip():
            continue
        ask = json.loads(line)
        try:
            kwargs = {k_name: ask["top_k"]} if k_name else {}
            started = time.perf_counter()
            result = fn(ask["query"], **kwargs)
            if inspect.isawaitable(result):
                result = asyncio.run(_await(result))
            call_ms = (time.perf_counter() - started) * 1000
            try:  # plain JSON data (the usual answer) goes as it is; anything else is made JSON-safe first
                line = json.dumps({"ok": result, "call_ms": call_ms}, allow_nan=False)
            except (TypeError, ValueError):
                line = json.dumps({"ok": plain(result), "call_ms": call_ms}, allow_nan=False)
            channel.write(line + "\n")
            channel.flush()
        except Exception as err:  # noqa: BLE001 - a raise answers this question, the next one still runs
            send({"error": _first_line(err).partition(": ")[2] or "(no message)", "type": type(err).__name__})
    return 0


async def _await(awaitable):
    return await awaitable


if __name__ == "__main__":
    sys.exit(main())
