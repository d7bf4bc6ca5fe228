"""The query log never loses a request: hostile text is escaped into one line, and a log file that
cannot be written is reported once on stderr while its lines go there instead; no traceback anywhere.
"""

from __future__ import annotations

import io
import json
import logging
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from service_fixtures import small_retriever, sqlite_db

from retrieval_lib import load_settings
from retrieval_lib.service import ServiceOptions, create_app
from retrieval_lib.service.querylog import LOG_FIELDS, QueryLog

#: One body per hostile query class: (name, raw JSON body, the status it gets).
HOSTILE: list[tuple[str, bytes, int]] = [
    ("lone high surrogate", b'{"query": "ROS2 \\ud800"}', 400),
    ("lone low surrogate", b'{"query": "ROS2 \\udc80 nodes"}', 400),
    ("control characters", b'{"query": "ROS2 \\u0000\\u0007\\u001b[31m\\r\\n\\t nodes"}', 200),
    ("unicode line breaks", b'{"query": "ROS2\\u2028nodes\\u2029topics\\u0085end"}', 200),
    ("zero-width only", b'{"query": "\\u200b\\u200c\\ufeff"}', 400),
    ("a forged log line", b'{"query": "ok\\"}\\n{\\"status\\": 200, \\"query\\": \\"forged"}', 200),
    ("non-ASCII", '{"query": "ROS 2 とは何ですか? Ünïcødé 🤖"}'.encode(), 200),
    ("one megabyte", b'{"query": "' + b"a" * (1 << 20) + b'"}', 413),
    ("not JSON at all", b"\xff\xfe\x00garbage", 400),
]


@pytest.fixture(scope="module")
def retriever():
    return small_retriever()


def _app(retriever, tmp_path: Path, **kwargs):
    return create_app(load_settings(env={}), retriever=retriever, metadata=sqlite_db(tmp_path),
                      options=kwargs.pop("options", ServiceOptions()), **kwargs)


def _post(client: TestClient, body: bytes):
    return client.post("/search", content=body, headers={"content-type": "application/json"})


def _lines(path: Path) -> list[dict]:
    raw = path.read_bytes()
    raw.decode("utf-8")  # the file is valid UTF-8, whatever the queries held
    return [json.loads(line) for line in raw.split(b"\n") if line]


def test_every_hostile_query_class_leaves_exactly_one_line(retriever, tmp_path, caplog, capfd):
    log_file = tmp_path / "queries.jsonl"
    with caplog.at_level(logging.WARNING), TestClient(_app(retriever, tmp_path, log_path=log_file),
                                                       raise_server_exceptions=False) as client:
        for name, body, status in HOSTILE:
            assert _post(client, body).status_code == status, name
    lines = _lines(log_file)
    # one line per request, also for a reader that splits on every Unicode line break
    assert len(lines) == len(HOSTILE) == len(log_file.read_text(encoding="utf-8").splitlines())
    assert [line["status"] for line in lines] == [status for _, _, status in HOSTILE]
    assert all(list(line) == list(LOG_FIELDS) for line in lines)
    by_name = {name: line for (name, _, _), line in zip(HOSTILE, lines)}
    assert by_name["lone high surrogate"]["query"] == "ROS2 \ud800"  # written escaped, read back exactly
    assert by_name["lone low surrogate"]["error_type"] == "ValidationError"
    assert by_name["unicode line breaks"]["query"] == "ROS2\u2028nodes\u2029topics\x85end"
    assert by_name["non-ASCII"]["query"] == "ROS 2 とは何ですか? Ünïcødé 🤖"
    assert "ROS 2 とは何ですか" in log_file.read_text(encoding="utf-8")  # readable, not escaped, when it can be
    assert by_name["one megabyte"]["error_type"] == "RequestTooLargeError"
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err + caplog.text


def test_a_one_megabyte_query_under_a_larger_body_limit_is_one_bounded_line(retriever, tmp_path):
    log_file = tmp_path / "queries.jsonl"
    options = ServiceOptions(max_body_bytes=2 << 20)
    with TestClient(_app(retriever, tmp_path, log_path=log_file, options=options)) as client:
        answer = _post(client, b'{"query": "' + b"a" * (1 << 20) + b'\\ud800"}')
        assert answer.status_code == 400 and "at most 500" in answer.json()["error"]["message"]
    (line,) = _lines(log_file)
    assert len(line["query"]) == 1001 and line["query"].endswith("…")  # the first 1,000 characters
    assert log_file.stat().st_size < 2000


def test_a_full_disk_is_reported_once_and_every_line_goes_to_stderr(retriever, tmp_path, capsys, caplog):
    if not os.path.exists("/dev/full"):  # pragma: no cover - Linux has it
        pytest.fail("/dev/full is needed: it fails every write with ENOSPC, as a full disk does")
    with TestClient(_app(retriever, tmp_path, log_path="/dev/full"), raise_server_exceptions=False) as client:
        for i in range(3):
            assert client.post("/search", json={"query": f"ROS2 {i}"}).status_code == 200
        assert _post(client, b'{"query": "ROS2 \\ud800"}').status_code == 400
    err = capsys.readouterr().err
    said = err.splitlines()
    reports = [s for s in said if s.startswith("query log:")]
    assert len(reports) == 1 and "No space left on device" in reports[0]
    assert "Traceback" not in err + caplog.text
    lines = [json.loads(s) for s in said if s.startswith("{")]
    assert [line["query"] for line in lines] == ["ROS2 0", "ROS2 1", "ROS2 2", "ROS2 \ud800"]


def test_the_log_survives_removal_and_a_missing_folder(tmp_path):
    stderr = io.StringIO()
    folder = tmp_path / "logs"
    folder.mkdir()
    path = folder / "q.jsonl"
    log = QueryLog(path=path, fallback=stderr)
    log.write({"query": "one"})
    path.unlink()  # removed (or rotated away): the next line goes to a new file at the same path
    log.write({"query": "two"})
    assert [line["query"] for line in _lines(path)] == ["two"]
    path.unlink()
    folder.rmdir()  # the folder is gone: reported once, lines go to stderr
    log.write({"query": "three"})
    log.write({"query": "four"})
    folder.mkdir()  # back: the next line is written to the file again, and that is said once
    log.write({"query": "five"})
    log.close()
    said = stderr.getvalue().splitlines()
    assert [s for s in said if s.startswith("query log:")] == [
        "query log: cannot write to the log file 'q.jsonl' (No such file or directory); its lines go to stderr "
        "until it can be written again",
        "query log: writing to the log again"]
    assert [json.loads(s)["query"] for s in said if s.startswith("{")] == ["three", "four"]
    assert [line["query"] for line in _lines(path)] == ["five"]
