"""Errors are not results: an endpoint that is down, answers 5xx or 429, or times out is retried with backoff; then
the task is left unfinished with the error (naming the URL), ``bench run`` exits non-zero and a rerun resumes it;
``bench score`` refuses to rank a system with unfinished tasks unless told to count them invalid.

Real HTTP: the ``openai`` SDK against a server on 127.0.0.1 started here, with short retry settings.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from brick_gym.bench.cli import main as bench_main
from brick_gym.bench.runner import read_marker

pytest.importorskip("openai")

FAST = ["--max-retries", "2", "--retry-delay", "0.01", "--request-timeout", "2", "--no-render", "--no-progress"]
SCRIPT = [
    [("add_part", json.dumps({"part": "3958", "colour": "green"}))],
    [("finish", "{}")],
]


def _run(url: str, out: Path, *extra: str) -> int:
    argv = ["run", "--setting", "model", "--agent", f"openai:flaky@{url}/v1", "--name", "flaky", "--out", str(out)]
    return bench_main([*argv, "--task-ids", "model-001", *FAST, *extra])


def _builder(completion):
    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn = sum(m["role"] == "assistant" for m in body["messages"]) + 1
        return 200, completion(SCRIPT[min(turn, len(SCRIPT)) - 1], turn)

    return reply


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("status", [500, 503, 429])
def test_server_errors_leave_the_task_unfinished_and_a_rerun_resumes_it(
    tmp_path: Path, loopback, completion, capsys, status: int
) -> None:
    def failing(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return status, {"error": {"message": "overloaded", "type": "server_error"}}

    with loopback(failing) as (url, received):
        assert _run(url, tmp_path) == 1
        assert len(received) == 3  # the first try and two retries
    err = capsys.readouterr().err
    assert f"model-001: UNFINISHED: endpoint {url}/v1 failed after 3 attempt(s): HTTP {status}" in err
    assert "1 task(s) unfinished" in err
    folder = tmp_path / "flaky"
    assert read_marker(folder / "model-001") is None  # no completion marker: not a result
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["tasks"]["model-001"]["status"] == "unfinished"
    assert f"{url}/v1" in summary["tasks"]["model-001"]["error"]
    assert summary["counts"]["unfinished"] == 1

    # the endpoint is back: the rerun resumes the task (the unfinished folder kept aside) and exits 0
    with loopback(_builder(completion)) as (url2, _):
        assert _run(url2, tmp_path) == 0
    marker = read_marker(folder / "model-001")
    assert marker is not None and marker["stop_reason"] == "finish"
    assert (folder / "model-001.partial-1").is_dir()


def test_a_rate_limit_that_clears_is_retried_and_the_task_finishes(tmp_path: Path, loopback, completion) -> None:
    answer = _builder(completion)
    calls: list[int] = []

    def limited(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        calls.append(1)
        if len(calls) <= 2:
            return 429, {"error": {"message": "slow down", "type": "rate_limit"}}
        return answer(path, body)

    with loopback(limited) as (url, _):
        assert _run(url, tmp_path) == 0
    marker = read_marker(tmp_path / "flaky" / "model-001")
    assert marker is not None and marker["stop_reason"] == "finish" and len(calls) >= 4


def test_a_server_that_is_down_or_too_slow_is_named(tmp_path: Path, loopback, capsys) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    assert _run(url, tmp_path / "down") == 1
    err = capsys.readouterr().err
    assert f"UNFINISHED: endpoint {url}/v1 failed after 3 attempt(s): APIConnectionError" in err

    def slow(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        time.sleep(1.0)
        return 500, {}

    with loopback(slow) as (slow_url, _):
        assert _run(slow_url, tmp_path / "slow", "--request-timeout", "0.2", "--max-retries", "0") == 1
    err = capsys.readouterr().err
    assert f"UNFINISHED: endpoint {slow_url}/v1 failed after 1 attempt(s): APITimeoutError" in err


def test_score_refuses_a_system_with_unfinished_tasks_unless_told(tmp_path: Path, loopback, completion, capsys) -> None:
    def failing(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 502, {}

    runs = tmp_path / "runs"
    with loopback(failing) as (url, _):
        assert _run(url, runs) == 1
    with loopback(_builder(completion)) as (url, _):
        argv = ["run", "--setting", "model", "--agent", f"openai:fine@{url}/v1", "--name", "fine", "--out", str(runs)]
        assert bench_main([*argv, "--task-ids", "model-001", *FAST]) == 0
    capsys.readouterr()
    score = ["score", str(runs / "flaky"), str(runs / "fine"), "--setting", "model", "--judge", "scripted-yes"]
    assert bench_main([*score, "--out", str(tmp_path / "s1"), "--boot", "0"]) == 2
    err = capsys.readouterr().err
    assert "unfinished tasks" in err and "flaky: model-001" in err and "--count-unfinished-invalid" in err
    assert not (tmp_path / "s1" / "scores.json").exists()

    assert bench_main([*score, "--out", str(tmp_path / "s2"), "--boot", "0", "--count-unfinished-invalid"]) == 0
    scores = json.loads((tmp_path / "s2" / "scores.json").read_text())
    flaky = scores["systems"]["flaky"]
    assert flaky["unfinished"] == ["model-001"] and flaky["per_task"]["model-001"]["status"] == "unfinished"
    assert scores["systems"]["fine"]["unfinished"] == []
    assert any("unfinished task(s) scored as invalid" in n for n in scores["notes"])


def test_submit_names_unfinished_tasks_and_exits_non_zero(tmp_path: Path, loopback, completion, capsys) -> None:
    def failing(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 503, {}

    with loopback(failing) as (url, _):
        assert _run(url, tmp_path / "runs") == 1
    capsys.readouterr()
    folder = tmp_path / "runs" / "flaky"
    assert bench_main(["submit", str(folder), "--out", str(tmp_path / "s.zip")]) == 1
    out = capsys.readouterr().out
    assert "breaks the submission rules" in out and f"{folder / 'model-001'}: unfinished" in out
