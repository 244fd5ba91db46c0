"""The Inspect AI task end to end with Inspect's ``mockllm/model`` playing a scripted model: a valid model built
through brick_gym's tools in Inspect's agent loop, its log read back with ``read_eval_log`` and its score checked
against ``brick-gym check`` on the delivered file; the project's suite (one sample and one validity score per
task), official task files and inventories, budgets as Inspect limits, nudges, and VQA by a judge model role."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from brick_gym.bench.runner import default_tasks
from brick_gym.faces.episodes import benchmark_samples, start_episode
from brick_gym.faces.inspect_task import MODEL_KEY, VERIFICATION_KEY, VIEWS_KEY, brickbench
from brick_gym.llm.adapter import NUDGE, EpisodeConfig


def run_eval(task: Any, model: Any, tmp_path: Path, **kwargs: Any) -> EvalLog:
    (log,) = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none", **kwargs)
    assert log.status == "success", log.error
    return read_eval_log(log.location)


def placed(script: list) -> int:
    """Pieces the build script places (the second attach of turn 2 is refused)."""
    return sum(1 for turn in script for name, _ in turn if name in ("add_part", "place_parts", "run_python")) + 1


def test_a_scripted_model_builds_a_valid_model_and_the_log_says_so(
    tmp_path: Path, script, inspect_model, brick_check
) -> None:
    out = tmp_path / "out"
    log = run_eval(brickbench(setting="model", render=False, out=str(out)), inspect_model(script), tmp_path, limit=1)
    (sample,) = log.samples
    assert sample.id == "model-001" and sample.scores["validity"].value == 1.0

    model = out / "model-001" / "model.mpd"
    code, report = brick_check(model, "model")
    assert code == 0 and report["valid"] is True and report["pieces"] == placed(script)
    assert sample.scores["validity"].metadata["report"]["pieces"] == report["pieces"]
    assert sample.store[MODEL_KEY].encode("utf-8") == model.read_bytes()
    verification = sample.store[VERIFICATION_KEY]
    assert verification == json.loads((out / "model-001" / "verification.json").read_text())
    assert verification["valid"] is True and sample.store[VIEWS_KEY] is None  # render=False
    episode = verification["episode"]
    assert episode["stop_reason"] == "finish" and episode["turns"] == len(script)
    assert episode["tool_calls"] == sum(len(t) for t in script) and episode["tool_errors"] == {"occupied": 1}

    # the conversation is the adapter's: its system prompt and first message, tool results with the budget line
    (task_sample,) = benchmark_samples("model")[:1]
    system, user = start_episode(task_sample, EpisodeConfig(render=False)).opening()
    assert (sample.messages[0].role, sample.messages[0].text) == ("system", system.text)
    assert (sample.messages[1].role, sample.messages[1].text) == ("user", user.text)
    tools = [m for m in sample.messages if m.role == "tool"]
    assert len(tools) == episode["tool_calls"] and all("\n[budget: turn " in m.text for m in tools)
    assert sum("REFUSED (occupied)" in m.text for m in tools) == 1
    assert tools[-1].function == "finish" and "finished: the model with" in tools[-1].text
    first_request = next(e for e in sample.events if e.event == "model")
    assert sorted(t.name for t in first_request.tools) == sorted(
        t["name"] for t in start_episode(task_sample, EpisodeConfig()).tools
    )  # the adapter's tool set (program tools where the sandbox runs)


def suite_log_has_one_scored_sample_per_task(log: EvalLog, setting: str) -> None:
    ids = [t["id"] for t in json.loads(default_tasks(setting).read_text())]
    assert sorted(s.id for s in log.samples) == sorted(ids) and len(ids) == 10
    assert all(s.scores["validity"].value == 1.0 for s in log.samples)
    (scores,) = log.results.scores
    assert scores.name == "validity" and scores.metrics["mean"].value == 1.0


def test_the_project_suite_gives_one_sample_and_one_validity_score_per_task(tmp_path: Path, inspect_model) -> None:
    script = [[("add_part", {"part": "3001", "colour": "red"})], [("finish", {})]]
    log = run_eval(brickbench(setting="model", render=False), inspect_model(script), tmp_path)
    suite_log_has_one_scored_sample_per_task(log, "model")


@pytest.mark.slow
def test_the_project_suite_built_with_the_whole_script(tmp_path: Path, script, inspect_model) -> None:
    """The suite with the build script (joints, a refusal, bulk placement, a sandboxed program) on every task."""
    log = run_eval(brickbench(setting="model", render=False), inspect_model(script), tmp_path)
    suite_log_has_one_scored_sample_per_task(log, "model")


def test_official_task_files_and_an_inventory(
    tmp_path: Path, inspect_model, shared_data: Path, altbuild_inventory_path: Path, brick_check
) -> None:
    tasks = shared_data / "sample-alt-build-tasks.json"
    script = [[("inventory_left", {})], [("finish", {})]]
    out = tmp_path / "out"
    task = brickbench(
        setting="alt-build", tasks=str(tasks), inventory=str(altbuild_inventory_path), render=False, out=str(out)
    )
    log = run_eval(task, inspect_model(script), tmp_path, limit=1)
    (sample,) = log.samples
    first = json.loads(tasks.read_text())[0]
    assert sample.id == first["id"] and sample.metadata["inventory"] == str(altbuild_inventory_path)
    assert "Inventory (part: colour count); nothing else may be used:" in sample.messages[0].text
    left = json.loads(sample.messages[3].text.split("\n")[0])["inventory_left"]
    assert set(left) == set(json.loads(altbuild_inventory_path.read_text()))
    # an empty model breaks the part rule: invalid, as brick-gym check says
    code, report = brick_check(out / first["id"] / "model.mpd", "alt-build", altbuild_inventory_path)
    assert code == 1 and report["valid"] is False
    assert sample.scores["validity"].value == 0.0


def test_budgets_are_inspect_limits_and_end_the_loop_like_the_adapter(tmp_path: Path, script, inspect_model) -> None:
    task = brickbench(setting="model", render=False, max_turns=2, max_tokens=50_000, max_seconds=900.5)
    assert (task.turn_limit, task.token_limit, task.time_limit) == (2, 50_000, 901)
    log = run_eval(task, inspect_model(script), tmp_path, limit=1)
    (sample,) = log.samples
    episode = sample.store[VERIFICATION_KEY]["episode"]
    assert episode["stop_reason"] == "max_turns" and episode["turns"] == 2 and episode["pieces"] == 2
    assert sum(m.role == "assistant" for m in sample.messages) == 2  # no third request
    assert sample.limit is None  # stopped by the loop before Inspect's own limit tripped

    tight = brickbench(setting="model", render=False, max_tool_calls=2)
    (sample,) = run_eval(tight, inspect_model(script), tmp_path, limit=1).samples
    episode = sample.store[VERIFICATION_KEY]["episode"]
    assert episode["stop_reason"] == "max_tool_calls" and episode["tool_calls"] == 2
    assert "ERROR (budget): not run: the budget of 2 tool calls is spent" in sample.messages[-1].text


def judge_model(calls: list[int]) -> Any:
    """A judge role answering yes to every question of a VQA request (counting the requests in ``calls``)."""

    def policy(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        calls.append(1)
        n = max(int(k) for k in re.findall(r"^(\d+)\. ", messages[-1].text, re.M))
        reply = "\n".join(f"{i}: yes" for i in range(1, n + 1))
        output = ModelOutput.from_content("mockllm/judge", reply)
        output.usage = ModelUsage(input_tokens=1000, output_tokens=50, total_tokens=1050)
        return output

    return get_model("mockllm/model", custom_outputs=policy)


def test_a_judge_role_adds_the_gated_vqa_score(tmp_path: Path, script, inspect_model) -> None:
    calls: list[int] = []
    args = {"setting": "model", "render": False, "judge_views": 2, "judge_size": 64}
    log = run_eval(
        brickbench, inspect_model(script), tmp_path, task_args=args, model_roles={"judge": judge_model(calls)}, limit=1
    )
    (sample,) = log.samples
    assert sample.scores["validity"].value == 1.0 and sample.scores["vqa"].value == 1.0
    assert calls == [1] and sample.scores["vqa"].metadata["parsed"] is True
    assert {s.name for s in log.results.scores} == {"validity", "vqa"}

    # without the role there is no vqa scorer; an invalid model scores 0 and the judge is not asked
    (sample,) = run_eval(brickbench, inspect_model([]), tmp_path, task_args=args, limit=1).samples
    assert set(sample.scores) == {"validity"}
    task = brickbench(**args, vqa_judge=True)
    log = run_eval(task, inspect_model([]), tmp_path, model_roles={"judge": judge_model(calls)}, limit=1)
    (sample,) = log.samples
    assert sample.scores["vqa"].value == 0.0 and sample.scores["vqa"].metadata["skipped"] == "invalid"
    assert calls == [1]


def test_forces_go_beside_the_verdict_in_the_score_and_the_delivery(tmp_path: Path, script, inspect_model) -> None:
    """``-T forces=true``: the validity score's report and ``verification.json`` carry the force analysis (the
    same section ``brick-gym check --forces --json`` prints), its summary is in the explanation, the verdict is
    unchanged; without it neither has one."""
    from brick_gym.bench.submission import check_model_text
    from brick_gym.faces.scoring import sample_rules

    log = run_eval(brickbench(setting="model", render=False, forces=True), inspect_model(script), tmp_path, limit=1)
    (sample,) = log.samples
    score = sample.scores["validity"]
    forces = score.metadata["report"]["forces"]
    assert score.value == 1.0 and forces["max_utilisation"] >= 0 and isinstance(forces["weakest"], list)
    (task_sample,) = benchmark_samples("model")[:1]
    expected = check_model_text(sample.store[MODEL_KEY], "model-001/model.mpd", sample_rules(task_sample), forces=True)
    timeless = {k: v for k, v in forces.items() if k != "seconds"}
    assert timeless == {k: v for k, v in expected["forces"].items() if k != "seconds"}
    assert "forces: max utilisation" in score.explanation
    assert sample.store[VERIFICATION_KEY]["report"]["forces"]["max_utilisation"] == forces["max_utilisation"]
    (plain,) = run_eval(brickbench(setting="model", render=False), inspect_model(script), tmp_path, limit=1).samples
    assert "forces" not in plain.scores["validity"].metadata["report"]
    assert "forces" not in plain.store[VERIFICATION_KEY]["report"]


def test_turns_without_tool_calls_are_nudged_then_end_the_sample(tmp_path: Path, inspect_model) -> None:
    (sample,) = run_eval(brickbench(setting="model", render=False), inspect_model([]), tmp_path, limit=1).samples
    assert [m.role for m in sample.messages[2:]] == ["assistant", "user", "assistant", "user", "assistant"]
    assert sample.messages[3].text == NUDGE
    assert sample.store[VERIFICATION_KEY]["episode"]["stop_reason"] == "no_tool_calls"
    assert sample.scores["validity"].value == 0.0


def test_views_go_into_the_store_and_an_info_event(tmp_path: Path, inspect_model) -> None:
    script = [[("add_part", {"part": "3001", "colour": "red"})], [("finish", {})]]
    task = brickbench(setting="model", views=2, view_size=64)
    (sample,) = run_eval(task, inspect_model(script), tmp_path, limit=1).samples
    sheet = sample.store[VIEWS_KEY]
    assert sheet.startswith("data:image/png;base64,")
    (info,) = [e for e in sample.events if e.event == "info" and e.source == "brick_gym"]
    text = sample.attachments[info.data.removeprefix("attachment://")]  # the log keeps big content as attachments
    assert "delivered 1 piece(s), valid" in text and f"![views]({sheet})" in text


def test_a_schema_invalid_argument_is_answered_by_the_session_and_counted(tmp_path: Path, inspect_model) -> None:
    """Issue 34, finding 11: Inspect's own schema message quoted a 1 MB argument back in full, and the call did not
    count against the tool-call budget."""
    huge = ["x" * 1_000_000]  # a list where a colour name is expected
    script = [
        [("add_part", {"part": "3958", "colour": huge})],
        [("add_part", {"part": "3958", "colour": "green"})],
        [("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[0]"})],
    ]
    task = brickbench(setting="model", render=False, max_tool_calls=2)
    (sample,) = run_eval(task, inspect_model(script), tmp_path, limit=1).samples
    tool_texts = [m.text + (m.error.message if m.error else "") for m in sample.messages if m.role == "tool"]
    assert max(len(t) for t in tool_texts) < 20_000, [len(t) for t in tool_texts]
    assert "colour" in tool_texts[0] and "xxxxxxxxxx" * 1000 not in tool_texts[0]
    episode = sample.store[VERIFICATION_KEY]["episode"]
    assert episode["stop_reason"] == "max_tool_calls" and episode["tool_calls"] == 2 and episode["pieces"] == 1


def test_mockllm_counts_tokens_offline_with_the_bundled_encoding(tmp_path: Path, monkeypatch) -> None:
    """``inspect eval ... --model mockllm/model``: mockllm counts every reply with tiktoken's o200k_base, which
    tiktoken would download; the task seeds tiktoken's cache from bpe-openai's copy, and nothing is fetched."""
    import tiktoken.load
    import tiktoken.registry

    def no_network(url: str) -> bytes:
        raise AssertionError(f"tiktoken tried to download {url}")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # nothing loaded earlier in this process
    (sample,) = run_eval(brickbench(setting="model", render=False), "mockllm/model", tmp_path, limit=1).samples
    assert sample.scores["validity"].value == 0.0 and sample.model_usage["mockllm/model"].input_tokens > 0
    assert len(list((tmp_path / "tiktoken").iterdir())) == 2  # o200k_base and cl100k_base, verified copies
