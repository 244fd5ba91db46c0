"""What both faces share: samples from task files (validated as the runner validates them) and from the fidelity
generator, the episode each starts, the folder it delivers into and the deliverables read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brick_gym.bench.runner import BenchError, default_inventory, default_tasks
from brick_gym.faces.episodes import (
    FIDELITY,
    OPTIONS,
    FaceSample,
    benchmark_samples,
    deliverables,
    face_config,
    fidelity_samples,
    start_episode,
    task_folder,
)
from brick_gym.faces.scoring import validity_report
from brick_gym.io.paths import UnsafePath
from brick_gym.llm.adapter import EpisodeConfig


def test_benchmark_samples_are_the_task_files_tasks() -> None:
    samples = benchmark_samples("model")
    tasks = json.loads(default_tasks("model").read_text())
    assert [s.task.id for s in samples] == [t["id"] for t in tasks]
    assert [s.task.questions for s in samples] == [t["questions"] for t in tasks]
    assert {s.setting for s in samples} == {"model"} and {s.inventory for s in samples} == {None}
    assert all(FaceSample.from_metadata(json.loads(json.dumps(s.metadata()))) == s for s in samples)


def test_alt_build_takes_the_given_inventory_else_the_projects(monkeypatch, altbuild_inventory_path: Path) -> None:
    monkeypatch.delenv("BRICKAGENT_SET", raising=False)
    assert {s.inventory for s in benchmark_samples("altbuild")} == {str(default_inventory())}
    given = benchmark_samples("alt-build", inventory=altbuild_inventory_path)
    assert {s.inventory for s in given} == {str(altbuild_inventory_path)}
    episode = start_episode(given[0], EpisodeConfig())
    assert episode.rules.inventory is not None and episode.rules.setting.name == "alt-build"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "malformed task file"),
        ('[{"id": "x-1", "prompt": "a duck", "questions": [{"key": "q"}]}]', "malformed task file"),
        ('{"id": "x-1"}', "malformed task file"),
    ],
)
def test_bad_task_files_are_refused_naming_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(content)
    with pytest.raises(BenchError, match=message) as info:
        benchmark_samples("model", path)
    assert str(path) in str(info.value)


def test_unknown_settings_and_bad_inventories_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="unknown setting 'lego'"):
        benchmark_samples("lego")
    bad = tmp_path / "inventory.json"
    bad.write_text('{"3001": {"no such colour": 2}}')
    with pytest.raises(BenchError, match="unusable inventory"):
        benchmark_samples("alt-build", inventory=bad)


def test_fidelity_samples_are_deterministic_and_start_from_their_base_plate() -> None:
    samples = fidelity_samples(3, seed=7, kinds=["wall", "house"])
    again = fidelity_samples(3, seed=7, kinds=["wall", "house"])
    assert [s.task.prompt for s in samples] == [s.task.prompt for s in again]
    assert [s.target.kind for s in samples] == ["wall", "house", "wall"] and {s.setting for s in samples} == {FIDELITY}
    episode = start_episode(samples[0], EpisodeConfig())
    assert len(episode.session.assembly) == 1 and episode.rules.setting.name == "free"
    with pytest.raises(ValueError, match="positive integer"):
        fidelity_samples(0)


def test_task_folders_and_deliverables(tmp_path: Path) -> None:
    sample = benchmark_samples("model")[0]
    episode = start_episode(sample, EpisodeConfig(render=False))
    episode.call("add_part", {"part": "3001", "colour": "red"}, turns=1, tokens=0)
    with task_folder(tmp_path, "model-001", "run-1") as folder:
        episode.deliver(folder, stop_reason="finish", turns=1, tokens={})
        delivered = deliverables(folder)
    assert folder == tmp_path / "model-001" / "run-1" and (folder / "model.mpd").is_file()
    assert delivered["model_mpd"].encode("utf-8") == (folder / "model.mpd").read_bytes()
    assert delivered["verification"]["valid"] is True and delivered["contact_sheet"] is None
    assert validity_report(delivered["model_mpd"], sample)["valid"] is True
    with task_folder(None, "model-001", "run-2") as temporary:
        assert temporary.is_dir()
    assert not temporary.exists()


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", "a\\b", "/etc", "nul\0"])
def test_names_that_would_leave_the_folder_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(UnsafePath, match="folder name"), task_folder(tmp_path, "ok", name):
        pass
    assert list(tmp_path.iterdir()) == []
    if name:  # (an empty id the task file check refuses itself)
        first = json.loads(default_tasks("model").read_text())[0]
        tasks = tmp_path / "tasks.json"
        tasks.write_text(json.dumps([first, {**first, "id": name}]))
        with pytest.raises(BenchError, match=r"tasks.json: task #1: id .* a safe id is one path component"):
            benchmark_samples("model", tasks)


def test_both_faces_take_every_episode_option_by_name() -> None:
    import inspect

    pytest.importorskip("inspect_ai")
    pytest.importorskip("verifiers")
    from brick_gym.faces.inspect_task import brickbench
    from brick_gym.faces.verifiers_env import load_environment

    for face in (brickbench, load_environment):
        assert set(OPTIONS) <= set(inspect.signature(face).parameters), face
    options = {name: getattr(EpisodeConfig(), name) for name in OPTIONS} | {"max_turns": 7, "setting": "set"}
    assert face_config(options) == EpisodeConfig(max_turns=7)  # the setting is each sample's
