"""The LLM adapter loop with scripted clients: tool calls in order, budgets, errors, renders, transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brick_gym.core.modelfile import load
from brick_gym.core.rules import Inventory
from brick_gym.llm.adapter import NUDGE, BenchTask, EpisodeConfig, load_tasks, run_episode, system_prompt
from brick_gym.llm.clients import ScriptedClient
from brick_gym.llm.messages import AssistantTurn, ToolCall
from brick_gym.llm.specs import make_client

FAST = EpisodeConfig(render=False)


def call(name: str, call_id: str | None = None, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments, **({"id": call_id} if call_id else {})}


def transcript(out: Path) -> list[dict]:
    lines = (out / "transcript.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]  # every line is valid JSON


def tool_results(out: Path) -> list[dict]:
    return [r for r in transcript(out) if r["type"] == "tool_result"]


def delivered(out: Path) -> dict:
    assert load(out / "model.mpd").assembly is not None
    return json.loads((out / "verification.json").read_text(encoding="utf-8"))


# ----- the loop ----------------------------------------------------------------------------------------------------


def test_all_tool_calls_of_a_turn_run_in_order(tmp_path: Path) -> None:
    """The second and third calls depend on the first: they only succeed if run in order, none dropped."""
    client = ScriptedClient(
        [
            {
                "text": "three at once",
                "tool_calls": [
                    call("add_part", "a", part="plate 4x4", colour="green"),
                    call("attach_part", "b", part="3003", colour="red", to="0.stud[0]"),
                    call("attach_part", "c", part="3003", colour="blue", to="1.stud[0]"),
                    call("undo", "d"),
                ],
            },
            {"tool_calls": [call("finish", "e")]},
        ]
    )
    res = run_episode(BenchTask("t1", "a tiny tower"), client, tmp_path, FAST)
    assert res.stop_reason == "finish" and res.turns == 2 and res.tool_calls == 5
    assert res.pieces == 2 and res.valid
    results = tool_results(tmp_path)
    assert [r["tool_call_id"] for r in results] == ["a", "b", "c", "d", "e"]
    assert all(r["ok"] for r in results), [r["text"] for r in results]
    # the client saw one tool message per call, in order, after its assistant message
    second = client.requests[1]
    assert [m.role for m in second[-5:]] == ["assistant", "tool", "tool", "tool", "tool"]
    assert [m.tool_call_id for m in second[-4:]] == ["a", "b", "c", "d"]
    ver = delivered(tmp_path)
    assert ver["valid"] is True and ver["episode"]["stop_reason"] == "finish"
    assert ver["reward_terms"] == {"validity": 1.0, "part_rule": 1.0, "fidelity": 0.0, "fidelity_colour": 0.0}


def test_call_after_finish_is_refused_with_a_message(tmp_path: Path) -> None:
    client = ScriptedClient(
        [
            {
                "tool_calls": [
                    call("add_part", part="3001", colour="red"),
                    call("finish"),
                    call("attach_part", part="3001", colour="red", to="0.stud[0]"),
                ]
            }
        ]
    )
    res = run_episode(BenchTask("t2", "a brick"), client, tmp_path, FAST)
    assert res.stop_reason == "finish" and res.turns == 1 and res.pieces == 1
    late = tool_results(tmp_path)[-1]
    assert late["name"] == "attach_part" and not late["ok"] and late["error_kind"] == "episode_over"
    assert "over" in late["text"]


def test_turn_budget_overrun_still_delivers(tmp_path: Path) -> None:
    def policy(messages, tools):
        n = sum(m.role == "assistant" for m in messages)
        if n == 0:
            return AssistantTurn("base", [ToolCall("c0", "add_part", '{"part": "3958", "colour": "green"}')])
        args = json.dumps({"part": "3005", "colour": "red", "to": f"0.stud[{n}]"})
        return AssistantTurn("more", [ToolCall(f"c{n}", "attach_part", args)])

    res = run_episode(
        BenchTask("t3", "studs"), ScriptedClient(policy), tmp_path, EpisodeConfig(max_turns=5, render=False)
    )
    assert res.stop_reason == "max_turns" and res.turns == 5 and res.pieces == 5
    ver = delivered(tmp_path)
    assert ver["episode"]["stop_reason"] == "max_turns" and ver["episode"]["pieces"] == 5
    assert ver["report"]["pieces"] == 5 and ver["valid"] is True
    assert load(tmp_path / "model.mpd").assembly.__len__() == 5
    assert transcript(tmp_path)[-1]["event"] == "delivered"


def test_client_error_keeps_the_transcript(tmp_path: Path) -> None:
    client = ScriptedClient(
        [
            {"tool_calls": [call("add_part", "x1", part="3958", colour="green")]},
            {"tool_calls": [call("attach_part", "x2", part="3001", colour="red", to="0.stud[0]")]},
            ConnectionResetError("the server hung up"),
        ]
    )
    res = run_episode(BenchTask("t4", "anything"), client, tmp_path, FAST)
    assert res.stop_reason == "client_error" and "the server hung up" in (res.error or "")
    assert res.pieces == 2 and res.turns == 2
    records = transcript(tmp_path)
    kinds = [r.get("event") or r["type"] for r in records]
    assert kinds.count("tool_result") == 2 and "client_error" in kinds
    error = next(r for r in records if r.get("event") == "client_error")
    assert "ConnectionResetError" in error["error"] and "Traceback" in error["traceback"]
    ver = delivered(tmp_path)
    assert ver["episode"]["error"].startswith("ConnectionResetError") and ver["valid"] is True


def test_turns_without_tool_calls_are_nudged_then_stop(tmp_path: Path) -> None:
    client = ScriptedClient(["thinking...", {"tool_calls": [call("add_part", part="3001", colour="red")]}, "hmm"])
    res = run_episode(BenchTask("t5", "a brick"), client, tmp_path, FAST)
    assert res.stop_reason == "no_tool_calls" and res.turns == 5 and res.pieces == 1
    nudges = [r for r in transcript(tmp_path) if r["type"] == "message" and r["role"] == "user" and r["text"] == NUDGE]
    assert len(nudges) == 3  # after turn 1 (reset by turn 2), then turns 3 and 4; turn 5 is the third in a row


def test_tool_call_budget_answers_every_call(tmp_path: Path) -> None:
    calls = [call("find_parts", f"f{i}", query="brick", limit=1) for i in range(5)]
    res = run_episode(
        BenchTask("t6", "x"),
        ScriptedClient([{"tool_calls": calls}]),
        tmp_path,
        EpisodeConfig(max_tool_calls=3, render=False),
    )
    assert res.stop_reason == "max_tool_calls" and res.tool_calls == 3
    results = tool_results(tmp_path)
    assert [r["tool_call_id"] for r in results] == [f"f{i}" for i in range(5)]
    assert [r["error_kind"] for r in results] == [None, None, None, "budget", "budget"]


def test_token_and_time_budgets(tmp_path: Path) -> None:
    turn = {"tool_calls": [call("inventory_left")], "usage": {"prompt_tokens": 90, "completion_tokens": 10}}
    res = run_episode(
        BenchTask("t7", "x"), ScriptedClient([turn] * 10), tmp_path / "a", EpisodeConfig(max_tokens=250, render=False)
    )
    assert (
        res.stop_reason == "max_tokens"
        and res.turns == 3
        and res.tokens == {"prompt_tokens": 270, "completion_tokens": 30}
    )
    res = run_episode(
        BenchTask("t8", "x"), ScriptedClient([turn] * 10), tmp_path / "b", EpisodeConfig(max_seconds=0.0, render=False)
    )
    assert res.stop_reason == "max_seconds" and res.turns == 0
    assert (tmp_path / "b" / "model.mpd").exists() and delivered(tmp_path / "b")["valid"] is False


def test_malformed_calls_become_tool_results(tmp_path: Path) -> None:
    client = ScriptedClient(
        [
            {
                "tool_calls": [
                    {"name": "add_part", "arguments": '{"part": "3001",'},
                    call("nope"),
                    call("add_part", part=3),
                ]
            }
        ]
    )
    run_episode(BenchTask("t9", "x"), client, tmp_path, FAST)
    kinds = [r["error_kind"] for r in tool_results(tmp_path)]
    assert kinds == ["malformed_json", "unknown_tool", "wrong_type"]
    both = tool_results(tmp_path)[2]["text"]
    assert "'part' must be a string" in both and "needs the argument 'colour'" in both  # every problem at once


def test_renders_views_and_tool_images(tmp_path: Path) -> None:
    client = ScriptedClient(
        [
            {"tool_calls": [call("add_part", part="3001", colour="red"), call("render_views", "r", views=2, size=64)]},
            {"tool_calls": [call("finish")]},
        ]
    )
    res = run_episode(BenchTask("t10", "a red brick"), client, tmp_path, EpisodeConfig(views=2, view_size=64))
    assert res.valid and (tmp_path / "views" / "contact_sheet.png").exists()
    assert sorted(p.name for p in (tmp_path / "views").glob("view_*.png")) == [
        "view_0_front_right.png",
        "view_1_back_right.png",
    ]
    image_result = next(r for r in tool_results(tmp_path) if r["tool_call_id"] == "r")
    assert image_result["images"] == ["images/turn001_call01_0.png", "images/turn001_call01_1.png"]
    assert all((tmp_path / p).exists() for p in image_result["images"])
    assert "base64" not in (tmp_path / "transcript.jsonl").read_text()  # referenced by path, not inlined
    tool_msg = next(m for m in client.requests[1] if m.role == "tool" and m.tool_call_id == "r")
    assert [Path(p).name for p in tool_msg.images] == ["turn001_call01_0.png", "turn001_call01_1.png"]


def test_system_prompt_states_setting_rules_and_tools() -> None:
    inv = Inventory.from_mapping({"3001": {"red": 2}})
    text = system_prompt("alt-build", inv, "a red wall", max_turns=300)
    for needle in ("alt-build", "3001 (brick 2x4): red 2", "attach_part", "finish()", "300 turns", "Brief: a red wall"):
        assert needle in text
    assert "at most 400" in system_prompt("model", None, "x") and "at least 400" in system_prompt("set", None, "x")


def test_load_tasks(shared_data: Path) -> None:
    tasks = load_tasks(shared_data / "sample-model-tasks.json")
    assert tasks and tasks[0].id and tasks[0].prompt and tasks[0].questions[0]["key"]


def test_tasks_come_from_the_one_task_file_loader(tmp_path: Path) -> None:
    """adapter.load_tasks and BenchTask.from_json read and check tasks as judges.vqa does (inputs and images too)."""
    from brick_gym.bench.runner import default_tasks
    from brick_gym.judges.vqa import TaskFileError
    from brick_gym.judges.vqa import load_tasks as load_vqa_tasks

    raw = json.loads(default_tasks("model").read_text(encoding="utf-8"))[0]
    (tmp_path / "plan.png").write_bytes(b"png")
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([{**raw, "inputs": "8x8 studs", "images": ["plan.png"]}]))
    (task,) = load_tasks(path)
    assert (task.id, task.prompt, task.questions) == (raw["id"], raw["prompt"], raw["questions"])
    assert task.inputs == "8x8 studs" and task.images == [str(tmp_path / "plan.png")]
    assert BenchTask.from_json(load_vqa_tasks(path)[0].to_json()) == task
    for bad, field in (({**raw, "images": "plan.png"}, "'images'"), ({**raw, "prompt": 3}, "'prompt'")):
        path.write_text(json.dumps([bad]))
        with pytest.raises(TaskFileError, match=f"tasks.json.*{raw['id']}.*{field}"):
            load_tasks(path)
        with pytest.raises(TaskFileError, match=f"{raw['id']}.*{field}"):
            BenchTask.from_json(bad)
    project = BenchTask.from_json({"id": "tram-r1", "prompt": "A tram.", "setting": "free", "inputs": "8 studs"})
    assert project == BenchTask("tram-r1", "A tram.", [], "8 studs", [])  # a project task may have no questions


def test_transcripts_read_back_and_malformed_ones_name_the_line(tmp_path: Path, capsys) -> None:
    from brick_gym.cli import main
    from brick_gym.llm.adapter import read_transcript, summarise_transcript

    out = tmp_path / "ep"
    result = run_episode(BenchTask("t-1", "a red tower"), make_client("heuristic"), out, EpisodeConfig(render=False))
    summary = summarise_transcript(read_transcript(out / "transcript.jsonl"))
    assert summary["stop_reason"] == result.stop_reason == "finish"
    assert summary["tool_calls"] == result.tool_calls and summary["turns"] == result.turns
    assert main(["bench", "transcript", str(out / "transcript.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tool_calls"] == result.tool_calls
    bad = tmp_path / "bad.jsonl"
    lines = (out / "transcript.jsonl").read_text().splitlines()
    bad.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    assert main(["bench", "transcript", str(bad)]) == 2
    assert "bad.jsonl:2" in capsys.readouterr().err
    bad.write_text('{"seq": "x", "type": "message"}\n')
    assert main(["bench", "transcript", str(bad)]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err


def test_the_prompt_says_truly_how_placements_by_coordinates_join() -> None:
    """Coordinates give exact joints when a part's connectors land on free ones (what the prompt says now, in
    place of "attach rather than coordinates"); half a stud off they give none."""
    from brick_gym.core.builder import Builder

    text = system_prompt("model", None, "a wall")
    assert "rather than by coordinates" not in text
    assert "joins wherever its connectors land exactly on free ones" in text and "half a stud off" in text
    m = Builder()
    m.add("3001", "red", (0, 0, 0))
    on_grid = m.add("3001", "blue", (20, -24, 0))
    assert on_grid.ok and len(on_grid.joints) == 6  # the six studs it covers, as attach would make them
    loose = Builder(strict=False)
    loose.add("3001", "red", (0, 0, 0))
    assert loose.add("3001", "blue", (10, -24, 0)).joints == ()
