"""One core, three faces: the same scripted model delivers byte-identical ``model.mpd`` files, with the same
validity verdict, through ``brick-gym bench run``, through Inspect (in process with ``mockllm``, and as a user runs
it: ``inspect eval brick_gym/brickbench`` found through the package's entry point, against an OpenAI-compatible
server) and through verifiers; and patching the one tool session, prompt builder or check changes both faces."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")
pytest.importorskip("verifiers")

import verifiers as vf
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from openai import AsyncOpenAI

import brick_gym
from brick_gym.bench.cli import main as bench_main
from brick_gym.faces.inspect_task import MODEL_KEY, brickbench
from brick_gym.faces.verifiers_env import load_environment

ROOT = Path(brick_gym.__file__).resolve().parents[1]


def declared_entry_points() -> str:
    """The ``inspect_ai`` entry points pyproject.toml declares, as an ``entry_points.txt``."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["inspect_ai"]
    return "[inspect_ai]\n" + "".join(f"{name} = {target}\n" for name, target in declared.items())


def inspect_cli(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    """``inspect eval ...`` in a fresh process that sees this checkout and its declared entry points (a
    distribution on PYTHONPATH carrying them), with an ``openai-api`` provider named ``loopback`` at ``url``."""
    dist = tmp_path / "entry-points" / "brick_gym_faces-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: brick-gym-faces\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text(declared_entry_points())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(dist.parent)]),
        "LOOPBACK_BASE_URL": url,
        "LOOPBACK_API_KEY": "test",
        "INSPECT_LOG_DIR": str(tmp_path / "cli-logs"),
    }
    command = [sys.executable, "-m", "inspect_ai", "eval", *args, "--display", "none"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def test_pyproject_registers_the_inspect_task() -> None:
    assert declared_entry_points() == "[inspect_ai]\nbrick_gym = brick_gym.faces.inspect_task\n"
    from inspect_ai._util.registry import registry_lookup

    assert registry_lookup("task", "brick_gym/brickbench") is not None  # the module imported above registered it


def bench_run(url: str, out: Path) -> Path:
    """``brick-gym bench run`` of the first Model task against ``url``: the delivered ``model.mpd``."""
    argv = ["run", "--setting", "model", "--agent", f"openai:loopback-builder@{url}", "--limit", "1"]
    assert bench_main([*argv, "--out", str(out), "--no-render", "--no-progress"]) == 0
    (model,) = out.glob("*/model-001/model.mpd")
    return model


def same_model_and_verdict(models: dict[str, Path], verdicts: dict[str, bool], brick_check: Any) -> None:
    """Every face delivered the same bytes, ``brick-gym check`` passes them, and every face says valid."""
    contents = {face: path.read_bytes() for face, path in models.items()}
    assert len(set(contents.values())) == 1, {face: len(c) for face, c in contents.items()}
    code, report = brick_check(next(iter(models.values())), "model")
    assert code == 0 and report["valid"] is True
    assert all(verdicts.values()), verdicts


def test_the_same_script_delivers_the_same_model_everywhere(
    tmp_path: Path, script, scripted_server, inspect_model, brick_check
) -> None:
    with scripted_server(script) as (url, _):
        bench_model = bench_run(url, tmp_path / "bench")
        env = load_environment(setting="model", out=str(tmp_path / "verifiers"))
        client = vf.OpenAIChatCompletionsClient(AsyncOpenAI(base_url=url, api_key="test", max_retries=0))
        (rollout,) = env.evaluate_sync(
            client=client, model="loopback-builder", num_examples=1, state_columns=["brick_gym"]
        )["outputs"]
    (log,) = inspect_eval(
        brickbench(setting="model", render=False, out=str(tmp_path / "inspect")),
        model=inspect_model(script),
        log_dir=str(tmp_path / "logs"),
        display="none",
        limit=1,
    )
    (sample,) = read_eval_log(log.location).samples
    assert sample.store[MODEL_KEY].encode("utf-8") == bench_model.read_bytes()
    models = {
        "bench run": bench_model,
        "inspect (mockllm)": tmp_path / "inspect" / "model-001" / "model.mpd",
        "verifiers": Path(rollout["brick_gym"]["folder"]) / "model.mpd",
    }
    verdicts = {
        "bench run": json.loads((bench_model.parent / "verification.json").read_text())["valid"],
        "inspect (mockllm)": sample.scores["validity"].value == 1.0,
        "verifiers": rollout["metrics"]["validity"] == 1.0,
    }
    same_model_and_verdict(models, verdicts, brick_check)


@pytest.mark.slow
def test_inspect_eval_on_the_command_line_delivers_the_same_model(
    tmp_path: Path, script, scripted_server, brick_check
) -> None:
    """``inspect eval brick_gym/brickbench`` as a user runs it (a fresh process: ~30 s), against the server."""
    with scripted_server(script) as (url, _):
        bench_model = bench_run(url, tmp_path / "bench")
        cli = inspect_cli(
            tmp_path,
            url,
            "brick_gym/brickbench",
            "-T",
            "setting=model",
            "-T",
            "render=false",
            "-T",
            f"out={tmp_path / 'inspect-cli'}",
            "--model",
            "openai-api/loopback/loopback-builder",
            "--limit",
            "1",
        )
    assert cli.returncode == 0, cli.stderr[-3000:]
    (cli_log,) = (tmp_path / "cli-logs").glob("*.eval")
    (cli_sample,) = read_eval_log(str(cli_log)).samples
    models = {
        "bench run": bench_model,
        "inspect eval (openai-api)": tmp_path / "inspect-cli" / "model-001" / "model.mpd",
    }
    verdicts = {
        "bench run": json.loads((bench_model.parent / "verification.json").read_text())["valid"],
        "inspect eval (openai-api)": cli_sample.scores["validity"].value == 1.0,
    }
    same_model_and_verdict(models, verdicts, brick_check)


def test_patching_the_one_session_prompt_or_check_changes_both_faces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script, scripted_server, inspect_model
) -> None:
    from brick_gym.core import validity
    from brick_gym.llm import adapter
    from brick_gym.llm.tools import ToolSession

    call, prompt, check = ToolSession.call, adapter.system_prompt, validity.check

    def patched_call(self: ToolSession, name: str, arguments: Any = None) -> Any:
        result = call(self, name, arguments)
        result.text += " [patched session]"
        return result

    monkeypatch.setattr(ToolSession, "call", patched_call)
    monkeypatch.setattr(adapter, "system_prompt", lambda *a, **k: prompt(*a, **k) + "\n[patched prompt]")
    monkeypatch.setattr(validity, "check", lambda *a, **k: dataclasses.replace(check(*a, **k), valid=False))

    (log,) = inspect_eval(
        brickbench(setting="model", render=False),
        model=inspect_model(script),
        log_dir=str(tmp_path),
        display="none",
        limit=1,
    )
    (sample,) = read_eval_log(log.location).samples
    assert sample.messages[0].text.endswith("\n[patched prompt]")
    tools = [m.text for m in sample.messages if m.role == "tool"]
    assert tools and all("[patched session]\n[budget: " in t for t in tools)
    assert sample.scores["validity"].value == 0.0

    env = load_environment(setting="model")
    with scripted_server(script) as (url, received):
        client = vf.OpenAIChatCompletionsClient(AsyncOpenAI(base_url=url, api_key="test", max_retries=0))
        (rollout,) = env.evaluate_sync(client=client, model="loopback-builder", num_examples=1)["outputs"]
    assert received[0]["messages"][0]["content"].endswith("\n[patched prompt]")
    tools = [m["content"] for m in received[-1]["messages"] if m["role"] == "tool"]
    assert tools and all("[patched session]\n[budget: " in t for t in tools)
    assert rollout["metrics"]["validity"] == 0.0 and rollout["reward"] == 0.0


def test_every_face_shows_the_judge_views_at_one_size() -> None:
    """One judge image size everywhere (BrickBench's 1024²): Inspect's VQA scorer, the verifiers environment and
    ``bench score`` ask the judge about the same pixels, so their VQA numbers compare."""
    import inspect

    from brick_gym.bench.scoring import score
    from brick_gym.faces.inspect_task import vqa
    from brick_gym.faces.scoring import vqa_score
    from brick_gym.faces.verifiers_env import BrickBenchEnv
    from brick_gym.judges.requests import JUDGE_IMAGE_SIZE

    defaults = {
        "inspect task": inspect.signature(brickbench).parameters["judge_size"].default,
        "inspect scorer": inspect.signature(vqa).parameters["size"].default,
        "verifiers": inspect.signature(load_environment).parameters["judge_size"].default,
        "verifiers env": inspect.signature(BrickBenchEnv).parameters["judge_size"].default,
        "faces": inspect.signature(vqa_score).parameters["size"].default,
        "bench score": inspect.signature(score).parameters["image_size"].default,
    }
    assert defaults == dict.fromkeys(defaults, JUDGE_IMAGE_SIZE) and JUDGE_IMAGE_SIZE == 1024
