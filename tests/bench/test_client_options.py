"""How ``bench run`` reaches and prices a hosted model, over real HTTP to a loopback server: ``--api-key-env``,
``--header`` (repeatable), ``--extra-body`` (e.g. vLLM's ``chat_template_kwargs``), ``--prices`` (cost in every
result and in the leaderboard) and ``--task-ids``; the key never lands in the run folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from brick_gym.bench.cli import main as bench_main
from brick_gym.bench.runner import read_marker

pytest.importorskip("openai")

KEY = "sk-brickgym-options-secret"
SCRIPT = [[("add_part", json.dumps({"part": "3958", "colour": "green"}))], [("finish", "{}")]]


def _reply(completion):
    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn = sum(m["role"] == "assistant" for m in body["messages"]) + 1
        return 200, completion(SCRIPT[min(turn, len(SCRIPT)) - 1], turn)

    return reply


def test_endpoint_options_reach_the_server_and_price_every_result(
    tmp_path: Path, loopback, completion, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("BRICK_TEST_KEY", KEY)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai:priced": {"input": 2.0, "output": 8.0}}))
    body = {"chat_template_kwargs": {"enable_thinking": False}}
    runs = tmp_path / "runs"
    with loopback(_reply(completion)) as (url, received):
        argv = ["run", "--setting", "model", "--agent", f"openai:priced@{url}/v1", "--out", str(runs)]
        flags = ["--api-key-env", "BRICK_TEST_KEY", "--header", "X-Team: bricks", "--header", "X-Trace:7"]
        flags += ["--extra-body", json.dumps(body), "--prices", str(prices), "--task-ids", "model-002,model-001"]
        assert bench_main([*argv, *flags, "--no-render", "--no-progress"]) == 0
        headers = received.headers
    assert all(h["authorization"] == f"Bearer {KEY}" for h in headers)
    assert all(h["x-team"] == "bricks" and h["x-trace"] == "7" for h in headers)
    assert all(b["chat_template_kwargs"] == {"enable_thinking": False} for b in received)

    (folder,) = [p for p in runs.iterdir() if p.is_dir()]
    summary = json.loads((folder / "summary.json").read_text())
    assert list(summary["tasks"]) == ["model-001", "model-002"]  # the ids asked for, in task-file order
    assert summary["client"]["extra_body"] == body and summary["client"]["headers"] == ["X-Team", "X-Trace"]
    costs = []
    for task in ("model-001", "model-002"):
        marker = read_marker(folder / task)
        tokens = marker["tokens"]
        expected = (tokens["prompt_tokens"] * 2.0 + tokens["completion_tokens"] * 8.0) / 1e6
        assert marker["cost_usd"] == pytest.approx(expected) and expected > 0
        costs.append(expected)
    assert summary["cost_usd"] == pytest.approx(sum(costs))
    assert not any(KEY in p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())

    capsys.readouterr()
    score = ["score", str(folder), "--setting", "model", "--judge", "scripted-yes", "--out", str(tmp_path / "s")]
    assert bench_main([*score, "--boot", "0"]) == 0
    scores = json.loads((tmp_path / "s" / "scores.json").read_text())
    assert scores["systems"][folder.name]["cost_usd_per_task"] == pytest.approx(sum(costs) / 2)
    row = next(line for line in (tmp_path / "s" / "leaderboard.md").read_text().splitlines() if folder.name in line)
    assert f"${sum(costs) / 2:.4f}" in row


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--api-key-env", "BRICK_TEST_UNSET_KEY"], "the API key variable $BRICK_TEST_UNSET_KEY is not set"),
        (["--header", "no colon"], "--header 'no colon': give NAME:VALUE"),
        (["--extra-body", "[1, 2]"], "--extra-body must be a JSON object"),
        (["--extra-body", "{nope"], "--extra-body"),
        (["--task-ids", "model-001,nope"], "no task with id 'nope'"),
        (["--prices", "PRICES"], "no price for model 'unpriced'"),
    ],
)
def test_bad_endpoint_options_are_refused_before_anything_runs(
    tmp_path: Path, capsys, monkeypatch, flags: list[str], message: str
) -> None:
    monkeypatch.delenv("BRICK_TEST_UNSET_KEY", raising=False)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"other": {"input": 1, "output": 1}}))
    flags = [str(prices) if f == "PRICES" else f for f in flags]
    argv = ["run", "--setting", "model", "--agent", "openai:unpriced@http://127.0.0.1:9/v1", "--out", str(tmp_path)]
    assert bench_main([*argv, *flags, "--no-progress"]) == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.glob("*/*/done.json"))
