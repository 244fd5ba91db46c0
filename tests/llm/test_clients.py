"""The chat clients: end to end over real HTTP, where the official SDKs talk to loopback servers that speak each
provider's protocol, then message conversion and local-model parsing.

The OpenAI test plays a whole episode through :class:`OpenAIChatClient` against a stdlib server on 127.0.0.1
whose scripted policy makes every kind of mistake (broken JSON, an unknown tool, bad arguments, a collision),
then valid placements (two in one message), renders, and keeps calling tools until the turn budget runs out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from brick_gym.core.modelfile import load
from brick_gym.llm.adapter import BenchTask, EpisodeConfig, run_episode
from brick_gym.llm.clients import (
    AnthropicClient,
    OpenAIChatClient,
    anthropic_messages,
    openai_messages,
    parse_tool_calls,
)
from brick_gym.llm.messages import Message, ToolCall
from brick_gym.llm.tools import tool_names

POLICY: list[list[tuple[str, str]]] = [
    [("add_part", '{"part": "plate 6x6", "colour": ')],  # 1: arguments are not JSON
    [("build_everything", "{}")],  # 2: no such tool
    [("add_part", '{"part": "plate 6x6", "colour": "green", "position": "origin"}')],  # 3: wrong type
    [  # 4: the base, then a brick overlapping it: a collision
        ("add_part", '{"part": "plate 6x6", "colour": "green"}'),
        ("add_part", '{"part": "3001", "colour": "red", "position": [0, 0, 0]}'),
    ],
    [  # 5: two valid placements in one message
        ("attach_part", '{"part": "3001", "colour": "red", "to": "0.stud[0]", "by": "hole[0]"}'),
        ("attach_part", '{"part": "3001", "colour": "white", "to": "0.stud[35]", "by": "hole[0]", "yaw": 90}'),
    ],
    [("render_views", '{"views": 1, "size": 64}')],  # 6: pictures come back as a user message with images
]
MAX_TURNS = 9


def builder_policy(turn: int) -> list[tuple[str, str]]:
    if turn <= len(POLICY):
        return POLICY[turn - 1]
    return [("free_connectors", json.dumps({"piece": 1, "kind": "stud", "limit": 2}))]  # never finishes


def test_openai_sdk_episode_over_loopback(tmp_path: Path, loopback, completion) -> None:
    pytest.importorskip("openai")
    turns = iter(range(1, 100))

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        assert path == "/v1/chat/completions"
        turn = next(turns)
        return 200, completion(builder_policy(turn), turn, text=f"turn {turn}")

    with loopback(reply) as (url, received):
        client = OpenAIChatClient("loopback-builder", base_url=f"{url}/v1", api_key="test", retry_base_delay=0.01)
        config = EpisodeConfig(max_turns=MAX_TURNS, render=False)
        res = run_episode(BenchTask("loop-1", "a red and white wall on a green plate"), client, tmp_path, config)

    assert res.stop_reason == "max_turns" and res.turns == MAX_TURNS and len(received) == MAX_TURNS
    assert res.pieces == 3 and res.valid, res.report
    assert res.tokens["completion_tokens"] == 10 * MAX_TURNS and res.cost_usd is None

    # the transcript records every error as a tool result, in order
    records = [json.loads(line) for line in (tmp_path / "transcript.jsonl").read_text().splitlines()]
    results = [r for r in records if r["type"] == "tool_result"]
    kinds = [r["error_kind"] for r in results]
    assert kinds[:5] == ["malformed_json", "unknown_tool", "wrong_type", None, "collision"]
    assert kinds[5:8] == [None, None, None] and all(k is None for k in kinds[8:])
    assert "not valid JSON" in results[0]["text"] and "build_everything" in results[1]["text"]
    assert "'position' must be a list of numbers" in results[2]["text"] and "overlap" in results[4]["text"]
    assert results[7]["name"] == "render_views" and results[7]["images"] == ["images/turn006_call00_0.png"]

    # the server got the tool results back as role "tool" messages answering its own ids, each exactly once
    issued = set()
    for k, body in enumerate(received):
        assert body["model"] == "loopback-builder"
        assert sorted(t["function"]["name"] for t in body["tools"]) == sorted(tool_names())
        answered = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
        assert len(answered) == len(set(answered)) and set(answered) == issued
        issued |= {f"t{k + 1}_{i}" for i in range(len(builder_policy(k + 1)))}
        for m in body["messages"]:
            for tc in m.get("tool_calls", []):
                json.loads(tc["function"]["arguments"])  # echoed history is always valid JSON
    last = received[-1]["messages"]
    assert [m["role"] for m in last[:2]] == ["system", "user"] and "Design brief" in last[1]["content"]
    tool_msgs = [m for m in last if m["role"] == "tool"]
    assert "not valid JSON" in tool_msgs[0]["content"] and tool_msgs[0]["tool_call_id"] == "t1_0"
    # turn 4's two calls are answered in order, right after the assistant message that made them
    i = next(j for j, m in enumerate(last) if m["role"] == "assistant" and m["content"] == "turn 4")
    assert [(m["role"], m.get("tool_call_id")) for m in last[i + 1 : i + 3]] == [("tool", "t4_0"), ("tool", "t4_1")]
    # the render's image follows its tool message as a user message with a PNG data URL
    j = next(j for j, m in enumerate(last) if m.get("tool_call_id") == "t6_0")
    assert last[j + 1]["role"] == "user"
    image_parts = [p for p in last[j + 1]["content"] if p["type"] == "image_url"]
    assert len(image_parts) == 1 and image_parts[0]["image_url"]["url"].startswith("data:image/png;base64,")

    # the deliverables exist and parse
    ver = json.loads((tmp_path / "verification.json").read_text())
    assert ver["episode"]["stop_reason"] == "max_turns" and ver["valid"] is True and ver["report"]["pieces"] == 3
    assert len(load(tmp_path / "model.mpd").assembly) == 3


def test_openai_client_retries_transient_errors_only(loopback, completion) -> None:
    pytest.importorskip("openai")
    script = iter([(500, {"error": {"message": "boom"}}), (429, {"error": {"message": "slow down"}})])

    def flaky(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return next(script, (200, completion([("finish", "{}")], 1)))

    with loopback(flaky) as (url, received):
        client = OpenAIChatClient("m", base_url=f"{url}/v1", api_key="test", max_retries=3, retry_base_delay=0.01)
        turn = client.complete([Message("user", "hi")], [])
        assert [c.name for c in turn.tool_calls] == ["finish"] and len(received) == 3

    def bad_request(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 400, {"error": {"message": "context too long"}}

    with loopback(bad_request) as (url, received):
        client = OpenAIChatClient("m", base_url=f"{url}/v1", api_key="test", max_retries=3, retry_base_delay=0.01)
        with pytest.raises(Exception, match="context too long"):
            client.complete([Message("user", "hi")], [])
        assert len(received) == 1  # a 4xx is never retried


def test_anthropic_sdk_episode_over_loopback(tmp_path: Path, loopback) -> None:
    pytest.importorskip("anthropic")
    turns = iter(range(1, 10))

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        assert path == "/v1/messages"
        turn = next(turns)
        calls = {
            1: [("add_part", {"part": "plate 4x4", "colour": "green"}), ("nope", {})],
            2: [("attach_part", {"part": "3003", "colour": "red", "to": "0.stud[0]"}), ("finish", {})],
        }.get(turn, [])
        content = [{"type": "text", "text": f"turn {turn}"}] + [
            {"type": "tool_use", "id": f"tu{turn}_{i}", "name": n, "input": a} for i, (n, a) in enumerate(calls)
        ]
        return 200, {
            "id": f"msg_{turn}",
            "type": "message",
            "role": "assistant",
            "model": "loopback",
            "content": content,
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 50, "output_tokens": 5},
        }

    with loopback(reply) as (url, received):
        client = AnthropicClient("loopback", api_key="test", base_url=url, prices=(3.0, 15.0))
        res = run_episode(BenchTask("loop-a", "a red brick"), client, tmp_path, EpisodeConfig(render=False))
    assert res.stop_reason == "finish" and res.pieces == 2 and res.valid
    assert res.cost_usd == pytest.approx(2 * (50 * 3.0 + 5 * 15.0) / 1e6)
    second = received[1]
    assert "LEGO" in second["system"] and second["tools"][0]["input_schema"]["type"] == "object"
    results = [b for m in second["messages"] if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"]
    assert [b["tool_use_id"] for b in results] == ["tu1_0", "tu1_1"]
    assert results[1].get("is_error") is True and "unknown_tool" in results[1]["content"][0]["text"]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]


# ----- message conversion and local-model parsing --------------------------------------------------------------------


def conversation(image: Path) -> list[Message]:
    return [
        Message("system", "rules"),
        Message("user", "build"),
        Message("assistant", "", tool_calls=[ToolCall("a", "render_views", "{}"), ToolCall("b", "add_part", "{oops")]),
        Message("tool", "2 views", [image, image], tool_call_id="a", name="render_views"),
        Message("tool", "ERROR (malformed_json): ...", tool_call_id="b", name="add_part", is_error=True),
        Message("user", "keep going"),
    ]


def test_message_conversion(tmp_path: Path) -> None:
    import numpy as np
    from PIL import Image

    image = tmp_path / "v.png"
    Image.fromarray(np.zeros((4, 4, 3), dtype=np.uint8)).save(image)
    oa = openai_messages(conversation(image))
    assert [m["role"] for m in oa] == ["system", "user", "assistant", "tool", "tool", "user", "user"]
    # broken arguments are echoed as an empty object: no invented key such as "_raw" that reads like an argument
    assert json.loads(oa[2]["tool_calls"][1]["function"]["arguments"]) == {}
    assert [p["type"] for p in oa[5]["content"]] == ["text", "image_url", "image_url"]
    system, an = anthropic_messages(conversation(image))
    assert system == "rules" and [m["role"] for m in an] == ["user", "assistant", "user"]
    blocks = an[2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
    assert [c["type"] for c in blocks[0]["content"]] == ["text", "image", "image"] and blocks[1]["is_error"]
    assert an[1]["content"][1]["input"] == {}
    assert "_raw" not in json.dumps(oa) + json.dumps(an)


def test_parse_tool_calls_formats() -> None:
    text, calls = parse_tool_calls(
        'Sure.<tool_call>\n{"name": "add_part", "arguments": {"part": "3001", "colour": "red"}}\n</tool_call>'
        '<tool_call>{"name": "finish", "arguments": {}}</tool_call>'
    )
    assert text == "Sure." and [n for n, _ in calls] == ["add_part", "finish"]
    assert json.loads(calls[0][1]) == {"part": "3001", "colour": "red"}
    _, broken = parse_tool_calls('<tool_call>{"name": "add_part", "arguments": {"part": }</tool_call>')
    assert broken[0][0] == "add_part" and broken[0][1].startswith("{")
    _, llama = parse_tool_calls('<|python_tag|>{"name": "undo", "parameters": {}}')
    assert llama == [("undo", "{}")]
    _, fenced = parse_tool_calls('I will check.\n```json\n{"name": "check", "arguments": {}}\n```')
    assert fenced == [("check", "{}")]
    assert parse_tool_calls("just thinking") == ("just thinking", [])


def test_transformers_client_with_a_tiny_model(tmp_path: Path) -> None:
    """The real loading path: a random 2-layer Llama and a tokenizer with a tool-aware chat template."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_vlm"
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(fixture / "tokenizer.json"), eos_token="<end_of_turn>", pad_token="<pad>", bos_token="<s>"
    )
    tokenizer.chat_template = (
        "{% if tools %}<start_of_turn>system\nTools: {% for t in tools %}{{ t.function.name }} {% endfor %}"
        "<end_of_turn>\n{% endif %}{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content }}"
        "{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function | tojson }}</tool_call>"
        "{% endfor %}{% endif %}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>assistant\n"
        "{% endif %}"
    )
    tokenizer.save_pretrained(tmp_path)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    from brick_gym.llm.clients import TransformersChatClient
    from brick_gym.llm.tools import tool_definitions

    client = TransformersChatClient(str(tmp_path), max_new_tokens=4)
    messages = conversation(tmp_path / "unused.png")
    rendered = client.load().tokenizer.apply_chat_template(
        client.template_messages(messages),
        tools=[{"type": "function", "function": d} for d in tool_definitions()],
        tokenize=False,
    )
    assert "attach_part" in rendered and '"_raw"' not in rendered and "2 image(s) omitted" in rendered
    turn = client.complete(messages, tool_definitions())
    assert turn.usage["prompt_tokens"] > 50 and 1 <= turn.usage["completion_tokens"] <= 4
    assert turn.cost_usd is None and isinstance(turn.text, str)
