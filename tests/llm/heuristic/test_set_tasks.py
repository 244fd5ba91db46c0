"""The heuristic on the project's Set tasks, through the adapter: all valid, 400+ parts without padding in one 1x1
part, a different build for every task; and its programs place exactly what its single calls would."""

from __future__ import annotations

import collections
import hashlib
import json
from pathlib import Path

import pytest

from brick_gym.bench.runner import default_tasks
from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import part
from brick_gym.core.modelfile import load
from brick_gym.core.rules import Rules
from brick_gym.llm.adapter import BenchTask, EpisodeConfig, run_episode
from brick_gym.llm.heuristic import HeuristicClient, plan_build
from brick_gym.llm.heuristic.blueprints import BLUEPRINTS, FAMILIES
from brick_gym.llm.heuristic.client import placement_program

SET_TASKS = json.loads(default_tasks("set").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def set_runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple]:
    """Episodes of the first two Set tasks (all five with ``--runslow``: ~25 s each)."""
    out = tmp_path_factory.mktemp("set")
    runs = {}
    for task in SET_TASKS if request.config.getoption("--runslow") else SET_TASKS[:2]:
        folder = out / task["id"]
        res = run_episode(
            BenchTask(task["id"], task["prompt"]), HeuristicClient(), folder, EpisodeConfig("set", render=False)
        )
        runs[task["id"]] = (res, load(folder / "model.mpd").assembly)
    return runs


def test_set_tasks_are_valid_with_400_parts(request: pytest.FixtureRequest, set_runs) -> None:
    assert len(set_runs) == (5 if request.config.getoption("--runslow") else 2) and len(SET_TASKS) == 5
    for task_id, (res, asm) in set_runs.items():
        assert res.valid and res.stop_reason == "finish" and res.tool_errors == {}, (task_id, res.report)
        assert 400 <= res.pieces == len(asm) <= 4000


def test_no_set_task_is_padded_with_one_1x1_part(set_runs) -> None:
    for task_id, (_, asm) in set_runs.items():
        counts = collections.Counter(p.part.stem for p in asm)
        singles = {stem: n for stem, n in counts.items() if " 1x1" in part(stem).name}
        worst = max(singles.values(), default=0)
        assert worst <= 0.10 * len(asm), (task_id, singles)


def test_no_two_set_tasks_have_the_same_build(set_runs) -> None:
    def digest(asm: Assembly) -> str:
        rows = sorted((p.part.stem, p.colour, tuple(p.pose.round(3).ravel())) for p in asm)
        return hashlib.sha256(repr(rows).encode()).hexdigest()

    builds = {digest(asm) for _, asm in set_runs.values()}
    assert len(builds) == len(set_runs)
    parts = [collections.Counter(p.part.stem for p in asm) for _, asm in set_runs.values()]
    assert len({tuple(sorted(c.items())) for c in parts}) == len(parts)  # not even the same bag of parts


def test_set_tasks_get_their_own_subjects() -> None:
    rules = Rules.for_setting("set")
    subjects = {t["id"]: plan_build(t["prompt"], rules).blueprints for t in SET_TASKS}
    assert subjects["set-001"][0] == "townhouse" and subjects["set-002"][0] == "train"
    assert subjects["set-003"][:4] == ["house", "car", "pen", "haystack"]  # barn, tractor, pen with pigs, hay
    assert subjects["set-004"][:5] == ["dome", "dome", "mast", "solar", "rover"]  # two domes; no trees on the moon
    assert "tree" not in subjects["set-004"] and subjects["set-005"][0] == "gatehouse"
    assert set(FAMILIES) == set(BLUEPRINTS)
    assert {"vehicle", "building", "creature", "plant", "scene"} <= set(FAMILIES.values())


def test_a_placement_program_places_what_single_calls_place(tmp_path: Path) -> None:
    rules = Rules.for_setting("model")
    plan = plan_build("a red and white lighthouse", rules)
    (base_call, base_args), attach = plan.calls[0], plan.calls[1:]
    assert base_call == "add_part" and all(name == "attach_part" for name, _ in attach)
    import numpy as np

    pose = np.eye(4)
    pose[:3, 3] = base_args["position"]
    by_program = Assembly(rules)
    by_program.add(base_args["part"], base_args["colour"], pose)
    code = placement_program(attach, 1, 1)
    output: list[str] = []
    exec(compile(code, "<program>", "exec"), {"model": by_program, "print": output.append})
    assert output == [f"placed {len(attach)} parts"] and len(by_program) == plan.pieces
    by_calls = Assembly(rules)
    by_calls.add(base_args["part"], base_args["colour"], pose)
    for _, args in attach:
        assert by_calls.attach(args["part"], args["colour"], to=args["to"], by=args["by"], yaw=args["yaw"]).ok
    assert [(p.part.stem, p.colour, p.pose.tobytes()) for p in by_program] == [
        (p.part.stem, p.colour, p.pose.tobytes()) for p in by_calls
    ]
    with pytest.raises(RuntimeError, match=r"on 0\.stud"):  # a refusal stops the program, naming the placement
        exec(compile(code, "<program>", "exec"), {"model": by_program, "print": output.append})


def test_the_heuristic_uses_the_best_tool_it_is_given() -> None:
    from brick_gym.llm.messages import Message

    def calls_with(tools: list[str]) -> list[str]:
        client = HeuristicClient()
        convo = [Message("system", "rules"), Message("user", "Design brief: a blue car\n\nBuild it.")]
        client.complete(convo, [{"name": n} for n in tools])
        info = json.dumps({"setting": "model", "inventory_left": None})
        convo += [Message("assistant", "", tool_calls=[]), Message("tool", info, name="inventory_left")]
        first = client.complete(convo, [{"name": n} for n in tools])
        second = client.complete(convo, [{"name": n} for n in tools])
        return [c.name for c in first.tool_calls] + [c.name for c in second.tool_calls]

    assert calls_with(["add_part", "attach_part", "run_python"])[:2] == ["add_part", "run_python"]
    assert calls_with(["add_part", "attach_part", "place_parts"])[:2] == ["add_part", "place_parts"]
    assert set(calls_with(["add_part", "attach_part"])) == {"add_part", "attach_part"}
