"""A bounded, honest episode over the real HTTP path: the official SDKs against servers on 127.0.0.1 that replay a
scripted model.

- A 300-turn episode whose every turn adds thousands of tokens (long replies, 300-row tool results, renders) never
  sends a request above the configured context (128k tokens by default), measured on what crossed the wire.
- ``brick-gym bench run`` turns its budget, context and sampling flags into what the server receives and what the
  run records; the run folder carries a hash of the spec and endpoint, so another endpoint is another folder.
- A server that reports no ``usage`` still meets the token budget (tokens are estimated).
- ``anthropic:MODEL@URL`` reaches that URL and records it.
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from brick_gym.bench.cli import main as bench_main
from brick_gym.bench.runner import read_marker
from brick_gym.llm.adapter import BenchTask, EpisodeConfig, run_episode
from brick_gym.llm.clients import OpenAIChatClient
from brick_gym.llm.specs import make_client
from brick_gym.llm.tokens import MESSAGE_OVERHEAD, default_counter, image_tokens

PROSE = (
    "I will keep adding bricks along the front wall, then check the free studs near the corner tower and decide "
    "where the next course should go; the model so far looks balanced. "
)


def wire_tokens(body: dict[str, Any], seen: dict[str, int]) -> int:
    """Tokens of a chat-completions request as sent: every text part, tool call and image, with framing (``seen``
    memoises messages already counted: most of a request is the previous one)."""
    counter = default_counter()
    total = sum(MESSAGE_OVERHEAD + counter.text(json.dumps(t, separators=(",", ":"))) for t in body.get("tools", []))
    for m in body["messages"]:
        key = json.dumps(m, sort_keys=True)
        if key not in seen:
            seen[key] = _message_tokens(m)
        total += seen[key]
    return total


def _message_tokens(m: dict[str, Any]) -> int:
    from PIL import Image

    counter = default_counter()
    total = MESSAGE_OVERHEAD
    content = m.get("content")
    for part in content if isinstance(content, list) else [{"type": "text", "text": content or ""}]:
        if part["type"] == "text":
            total += counter.text(part["text"])
        else:
            data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
            total += image_tokens(*Image.open(io.BytesIO(data)).size)
    for call in m.get("tool_calls", []):
        total += MESSAGE_OVERHEAD + counter.text(call["function"]["name"] + call["function"]["arguments"])
    return total


def long_turn(turn: int) -> tuple[list[tuple[str, str]], str]:
    """A heavy turn: ~2,500 characters of reply, a 250-row connector listing, a render every 7th turn."""
    if turn == 1:
        return [("add_part", json.dumps({"part": "baseplate 16x16", "colour": "green"}))], PROSE
    calls = [("free_connectors", json.dumps({"kind": "stud", "limit": 250, "near": [turn, 0, 0]}))]
    if turn % 7 == 0:
        calls.append(("render_views", json.dumps({"views": 1, "size": 64})))
    return calls, f"turn {turn}: " + PROSE * 16


@pytest.mark.parametrize(
    ("turns", "window"),
    [(60, 32_000), pytest.param(300, 128_000, marks=pytest.mark.slow)],
    ids=["60-turns-32k", "300-turns-128k"],
)
def test_long_episodes_never_exceed_the_context(tmp_path: Path, loopback, completion, turns: int, window: int) -> None:
    """Every request of a heavy episode fits the context window, and the episode did press against it (the
    default suite runs 60 turns against a 32k window; the 300-turn, 128k run is slow)."""
    pytest.importorskip("openai")
    sizes: list[int] = []
    seen: dict[str, int] = {}

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        sizes.append(wire_tokens(body, seen))
        turn = len(sizes)
        calls, text = long_turn(turn)
        response = completion(calls, turn, text=text)
        del response["usage"]  # no usage: the adapter must estimate
        return 200, response

    with loopback(reply) as (url, received):
        client = OpenAIChatClient("loopback-long", base_url=f"{url}/v1", api_key="test", retry_base_delay=0.01)
        config = EpisodeConfig(render=False, max_turns=turns, context_tokens=window)
        res = run_episode(BenchTask("long-1", "a castle"), client, tmp_path, config)
        last = received[-1]

    print(f"{turns} turns: largest request on the wire {max(sizes)} tokens, context {res.context}")
    assert res.stop_reason == "max_turns" and res.turns == turns and len(sizes) == turns
    assert max(sizes) <= window, max(sizes)
    assert max(sizes) > 0.75 * window  # the episode did press against the limit: the test is not vacuous
    context = res.context
    assert context["context_tokens"] == window and context["largest_request_estimate"] <= window - 4096
    assert context["turns_dropped"] > 0 and context["images_evicted"] > 0
    assert context["results_truncated"] > turns * 2 // 3
    assert res.usage_estimated_turns == turns and res.tokens["prompt_tokens"] > turns * window // 10
    # the latest render is still there, older ones are notes; every tool result says what is left
    tool_messages = [m for m in last["messages"] if m["role"] == "tool"]
    budget = f"[budget: turn {turns - 1} of {turns} (1 left after this one); tool calls "
    assert budget in tool_messages[-1]["content"]
    images = [p for m in last["messages"] if isinstance(m["content"], list) for p in m["content"]]
    assert sum(p["type"] == "image_url" for p in images) == 1
    if window >= 128_000:  # in a small window the turns whose renders were evicted are dropped as well
        assert any("image(s) removed from this turn-" in m["content"] for m in tool_messages)
    assert f"were removed from the conversation to keep it within {window} tokens" in last["messages"][1]["content"]


def test_bench_run_flags_reach_the_server_and_the_records(tmp_path: Path, loopback, completion, capsys) -> None:
    pytest.importorskip("openai")
    script = [
        [("add_part", json.dumps({"part": "3958", "colour": "green"}))],
        [("attach_part", json.dumps({"part": "3001", "colour": "red", "to": "0.stud[0]"}))],
        [("finish", "{}")],
    ]

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn = sum(m["role"] == "assistant" for m in body["messages"]) + 1
        return 200, completion(script[min(turn, len(script)) - 1], turn)

    flags = [
        "--max-turns",
        "7",
        "--max-tool-calls",
        "9",
        "--max-tokens",
        "90000",
        "--max-seconds",
        "120",
        "--context-tokens",
        "32000",
        "--keep-images-turns",
        "1",
        "--temperature",
        "0.3",
        "--max-completion-tokens",
        "777",
        "--reasoning-effort",
        "low",
    ]
    with loopback(reply) as (url, received):
        spec = f"openai:loopback-model@{url}/v1"
        argv = ["run", "--setting", "model", "--agent", spec, "--out", str(tmp_path), "--limit", "1", "--no-render"]
        assert bench_main([*argv, "--no-progress", *flags]) == 0
        first = received[0]
    assert (first["temperature"], first["max_tokens"], first["reasoning_effort"]) == (0.3, 777, "low")
    assert "max_completion_tokens" not in first  # only OpenAI itself gets that name
    system = first["messages"][0]["content"]
    assert "You have 7 turns in all and 9 tool calls" in system

    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert re.fullmatch(r"openai-loopback-model-[0-9a-f]{8}", folder.name)
    summary = json.loads((folder / "summary.json").read_text())
    marker = read_marker(folder / "model-001")
    verification = json.loads((folder / "model-001" / "verification.json").read_text())
    for record in (summary, marker):
        assert record["client"] == {
            "kind": "openai",
            "model": "loopback-model",
            "endpoint": f"{url}/v1",
            "sampling": {"temperature": 0.3, "max_completion_tokens": 777, "reasoning_effort": "low"},
        }
        assert record["sampling"] == {"temperature": 0.3, "max_completion_tokens": 777, "reasoning_effort": "low"}
        config = record["config"]
        assert (config["max_turns"], config["max_tool_calls"], config["max_tokens"]) == (7, 9, 90000)
        assert (config["max_seconds"], config["context_tokens"], config["keep_images_turns"]) == (120.0, 32000, 1)
    assert verification["config"]["context_tokens"] == 32000 and verification["episode"]["client"]["endpoint"]
    assert verification["episode"]["context"]["reply_tokens"] == 777  # the reply's room is the completion cap

    # the same spec against another endpoint is another folder, never credited with the first one's results
    with loopback(reply) as (url2, _):
        argv2 = ["run", "--setting", "model", "--agent", f"openai:loopback-model@{url2}/v1", "--out", str(tmp_path)]
        assert bench_main([*argv2, "--limit", "1", "--no-render", "--no-progress"]) == 0
    assert len([p for p in tmp_path.iterdir() if p.is_dir()]) == 2
    # bad flag values are refused before anything runs
    capsys.readouterr()
    assert bench_main([*argv, "--temperature", "5"]) == 2 and "temperature must be" in capsys.readouterr().err
    assert bench_main([*argv, "--context-tokens", "0"]) == 2
    assert "--context-tokens: must be a whole number >= 1" in capsys.readouterr().err


def test_token_budget_bites_without_server_usage(tmp_path: Path, loopback, completion) -> None:
    pytest.importorskip("openai")

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn = sum(m["role"] == "assistant" for m in body["messages"]) + 1
        response = completion([("find_parts", json.dumps({"query": "brick", "limit": 20}))], turn, text=PROSE)
        del response["usage"]
        return 200, response

    with loopback(reply) as (url, received):
        client = OpenAIChatClient("no-usage", base_url=f"{url}/v1", api_key="test", retry_base_delay=0.01)
        res = run_episode(BenchTask("tok-1", "x"), client, tmp_path, EpisodeConfig(max_tokens=20_000, render=False))
    assert res.stop_reason == "max_tokens" and 2 <= res.turns < 300 and len(received) == res.turns
    assert res.usage_estimated_turns == res.turns and sum(res.tokens.values()) >= 20_000
    records = [json.loads(line) for line in (tmp_path / "transcript.jsonl").read_text().splitlines()]
    counted = [r["usage_counted"] for r in records if r["type"] == "message" and r.get("role") == "assistant"]
    assert all(c["estimated"] == ["prompt_tokens", "completion_tokens"] for c in counted)
    assert "tokens " in records[-3]["text"] and "of 20000 used" in records[-3]["text"]  # the budget line says so


def test_anthropic_spec_with_url_reaches_it_and_records_it(tmp_path: Path, loopback) -> None:
    pytest.importorskip("anthropic")

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        assert path == "/v1/messages"
        return 200, {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-loop",
            "content": [{"type": "tool_use", "id": "tu1", "name": "finish", "input": {}}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 50, "output_tokens": 5},
        }

    with loopback(reply) as (url, received):
        from brick_gym.llm.messages import Sampling

        client = make_client(f"anthropic:claude-loop@{url}", Sampling(reasoning_effort="high"))
        res = run_episode(BenchTask("a-1", "x"), client, tmp_path, EpisodeConfig(render=False))
    assert res.stop_reason == "finish" and received[0]["model"] == "claude-loop"
    assert received[0]["output_config"] == {"effort": "high"}
    header = json.loads((tmp_path / "transcript.jsonl").read_text().splitlines()[0])
    assert header["client"]["endpoint"] == url and header["client"]["kind"] == "anthropic"
