"""Transcripts as Hugging Face session-trace JSONL (STS-Format): header first, every message in an envelope,
tool results linked to the calls they answer, refusals and the episode's end kept."""

from __future__ import annotations

import json
from pathlib import Path

from brick_gym.cli import main
from brick_gym.llm.adapter import BenchTask, EpisodeConfig, read_transcript, run_episode
from brick_gym.llm.specs import make_client
from brick_gym.llm.trace_export import HARNESS, session_trace

RECORDS = [
    {"seq": 0, "type": "episode", "task_id": "t-1", "setting": "model", "client": {"model": "gpt-x"},
     "config": {"max_turns": 3}},
    {"seq": 1, "type": "message", "role": "system", "text": "rules"},
    {"seq": 2, "type": "message", "role": "assistant", "turn": 1, "text": "",
     "tool_calls": [{"id": "c1", "name": "add_part", "arguments": "{\"part\": \"3001\"}"}]},
    {"seq": 3, "type": "tool_result", "turn": 1, "tool_call_id": "c1", "name": "add_part", "ok": False,
     "error_kind": "collision", "text": "refused", "images": ["images/a.png"]},
    {"seq": 4, "type": "event", "event": "end", "stop_reason": "max_turns", "traceback": "secret frames"},
]  # fmt: skip


def test_mapping_of_every_record_kind() -> None:
    lines = list(session_trace(RECORDS, "agent/t-1"))
    header, system, assistant, tool, end = lines
    assert header == {"type": "session", "harness": HARNESS, "id": "agent/t-1", "name": "t-1", "task_id": "t-1",
                      "setting": "model", "client": {"model": "gpt-x"}, "config": {"max_turns": 3}}  # fmt: skip
    assert all(line["type"] == "message" and set(line) == {"type", "message"} for line in lines[1:])
    assert system["message"] == {"role": "system", "content": "rules"}
    call = assistant["message"]["toolCalls"][0]
    assert call == {"id": "c1", "function": {"name": "add_part", "arguments": '{"part": "3001"}'}}
    assert json.loads(call["function"]["arguments"]) == {"part": "3001"}
    assert assistant["message"]["model"] == "gpt-x"
    assert tool["message"]["toolCallId"] == "c1" and tool["message"]["role"] == "tool"
    assert tool["message"]["content"] == "[error: collision]\nrefused\n[image: images/a.png]"
    assert end["message"]["content"].startswith("[brick_gym event: end]") and "max_turns" in end["message"]["content"]
    assert "secret frames" not in end["message"]["content"]


def test_a_real_episode_exports_with_every_call_answered(tmp_path: Path, capsys) -> None:
    out = tmp_path / "agent" / "t-1"
    run_episode(BenchTask("t-1", "a red tower"), make_client("heuristic"), out, EpisodeConfig(render=False))
    assert main(["bench", "transcript", str(out), "--format", "sts", "--out", str(tmp_path / "t.jsonl")]) == 0
    lines = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["id"] == "agent/t-1"
    calls = [c["id"] for x in lines[1:] for c in x["message"].get("toolCalls", [])]
    answered = [x["message"]["toolCallId"] for x in lines[1:] if x["message"]["role"] == "tool"]
    assert calls and sorted(calls) == sorted(answered)
    records = read_transcript(out / "transcript.jsonl")
    assert len(lines) == 1 + sum(r["type"] != "episode" for r in records)


def test_transcript_command_takes_a_task_folder_and_counts_estimated_tokens(tmp_path: Path, capsys) -> None:
    out = tmp_path / "ep"
    result = run_episode(BenchTask("t-1", "a red tower"), make_client("heuristic"), out, EpisodeConfig(render=False))
    assert main(["bench", "transcript", str(out), "--json"]) == 0  # a folder, not only the file
    summary = json.loads(capsys.readouterr().out)
    assert summary["tokens"] == result.tokens and sum(result.tokens.values()) > 0  # estimated where none reported
    assert main(["bench", "transcript", str(tmp_path)]) == 2
    assert "without transcript.jsonl" in capsys.readouterr().err
