"""The experiments (``experiments/*.toml``: they load, their variants pay what they say) and the engine that runs
them (``brick_gym.rl.experiment``).

The integration tests run the reward ablation at smoke size (2 variants × 1 seed + the baselines) once per module
into a temporary folder with wandb offline, then read the runs back: the wandb run files (parsed record by record
from the ``.wandb`` transaction log with wandb's own protobuf, see ``read_wandb_run``), the summary files, a
re-run for reproducibility and a second invocation through ``experiments/run.py`` that must skip everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sb3_contrib")
pytest.importorskip("wandb")

from brick_gym.rl.experiment import main, run_experiment
from brick_gym.rl.experiment_config import ExperimentConfig, VariantSkipped, load_config, reward_spec, validate
from brick_gym.rl.wandb_log import read_wandb_run

ROOT = Path(__file__).resolve().parents[2]
ABLATION = ROOT / "experiments" / "reward_ablation.toml"
BUILDER = ROOT / "experiments" / "learned_builder.toml"
BUILDER_MEDIUM = ROOT / "experiments" / "learned_builder_medium.toml"
BUILDER_RLLIB = ROOT / "experiments" / "learned_builder_rllib.toml"
STANDARD_TERMS = (
    "valid_placement",
    "new_joints",
    "invalid_action",
    "fidelity_delta",
    "fidelity_colour_delta",
    "validity",
    "part_rule",
    "fidelity",
    "fidelity_colour",
)
JUDGE_TERMS = ("vqa", "pairwise_design")
VARIANTS = ("validity_only", "vlm_terms")


# ----- the experiment files -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [ABLATION, BUILDER, BUILDER_MEDIUM, BUILDER_RLLIB], ids=lambda p: p.stem)
@pytest.mark.parametrize("size", ["smoke", "full"])
def test_config_files_load(path: Path, size: str) -> None:
    config = load_config(path, size)
    assert config.size == size
    assert config.variants and config.seeds
    assert set(config.baselines) == {"random", "greedy"}
    if size == "smoke":
        assert config.train.total_timesteps <= 512
    else:
        assert len(config.seeds) >= 3


def test_ablation_variants_and_rewards() -> None:
    config = load_config(ABLATION, "smoke")
    by_name = {v.name: v for v in config.variants}
    assert list(by_name) == ["validity_only", "joint_shaping", "dense_fidelity", "terminal_fidelity", "vlm_terms"]
    spec = reward_spec(by_name["validity_only"])
    weights = {t.name: w for t, w in spec.weights}
    assert weights == {name: (1.0 if name == "validity" else 0.0) for name in STANDARD_TERMS}
    assert {t.name: w for t, w in reward_spec(by_name["joint_shaping"]).weights}["new_joints"] > 0
    assert {t.name: w for t, w in reward_spec(by_name["dense_fidelity"]).weights}["fidelity_delta"] > 0
    terminal = {t.name: w for t, w in reward_spec(by_name["terminal_fidelity"]).weights}
    assert terminal["fidelity"] > 0 and terminal["fidelity_delta"] == 0
    vlm = reward_spec(by_name["vlm_terms"])
    assert vlm.names == [*STANDARD_TERMS, *JUDGE_TERMS]
    builder = load_config(BUILDER, "smoke")
    assert {v.encoding for v in builder.variants} == {"factored", "candidates"}


def test_missing_judge_module_skips_the_variant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "brick_gym.rewards.judge_terms", None)  # import now raises ImportError
    config = load_config(ABLATION, "smoke")
    with pytest.raises(VariantSkipped, match="vlm_terms"):
        reward_spec(next(v for v in config.variants if v.name == "vlm_terms"))
    config.baselines = []
    summary = run_experiment(config, tmp_path, variants=["vlm_terms"], progress=False, log=lambda _m: None)
    assert "vlm_terms" in summary["skipped_variants"]
    assert not (tmp_path / "runs").exists()
    assert "Skipped variants" in (tmp_path / "summary.md").read_text()


def test_a_real_judge_backend_is_asked_over_loopback_http(tmp_path: Path) -> None:
    """``judge.backend = "openai:MODEL@URL"``: the VQA and pairwise terms ask an OpenAI-compatible server (here a
    scripted backend served on loopback) and are paid from its answers."""
    from brick_gym.judges.backends import ScriptedJudge, yes_or_first
    from brick_gym.judges.server import serve_openai_compatible

    backend = ScriptedJudge(yes_or_first, model="tiny-vlm")
    server, _, url = serve_openai_compatible(backend)
    try:
        config = load_config(ABLATION, "smoke")
        config.baselines = []
        variant = next(v for v in config.variants if v.name == "vlm_terms")
        assert variant.judge is not None
        variant.judge.backend = f"openai:tiny-vlm@{url}"
        config.train.total_timesteps, config.train.n_steps = 64, 32
        config.eval.episodes, config.eval.curve_episodes, config.eval.every = 1, 0, 0
        validate(config)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("WANDB_MODE", "offline")
            run_experiment(config, tmp_path, seeds=[0], variants=["vlm_terms"], progress=False, log=lambda _m: None)
    finally:
        server.stop()
    asked = [len(r.images) for r in backend.requests]
    assert 2 in asked and any(n != 2 for n in asked)  # pairwise pairs and VQA views both reached the server
    episodes = [json.loads(line) for line in (tmp_path / "runs/vlm_terms/seed-0/episodes.jsonl").open()]
    assert any(e["reward_terms"]["vqa"] > 0 for e in episodes if e["valid"])


# ----- the smoke ablation, run once ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ablation(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("ablation")
    config = load_config(ABLATION, "smoke")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WANDB_MODE", "offline")
        summary = run_experiment(config, out, seeds=[0], variants=VARIANTS, progress=False, log=lambda _m: None)
    return {"out": out, "config": config, "summary": summary}


def _result(out: Path, name: str, seed: int = 0) -> dict:
    return json.loads((out / "runs" / name / f"seed-{seed}" / "result.json").read_text())


def _run_names(config: ExperimentConfig) -> list[str]:
    return [*VARIANTS, "random-candidates", "greedy-candidates"]


def test_ablation_ran_every_run(ablation: dict) -> None:
    out, summary = ablation["out"], ablation["summary"]
    assert summary["ran"] == 4 and summary["skipped"] == 0 and not summary["skipped_variants"]
    for name in _run_names(ablation["config"]):
        result = _result(out, name)
        assert result["seed"] == 0
        assert 0.0 <= result["metrics"]["fidelity"] <= 1.0
        assert result["metrics"]["episodes"] == ablation["config"].eval.episodes
    ppo = _result(out, "validity_only")
    assert ppo["train_episodes"] > 0
    assert (out / "runs" / "validity_only" / "seed-0" / "train" / "final_model.zip").exists()
    assert ppo["checkpoints"], "no checkpoint written"
    assert ppo["curve"][0]["timesteps"] == 0 and len(ppo["curve"]) >= 2
    walls = [p["wall_seconds"] for p in ppo["curve"]]
    assert walls == sorted(walls) and walls[-1] > 0  # the curve against wall-clock time
    assert all(0 <= p["train_seconds"] <= p["wall_seconds"] for p in ppo["curve"])


def test_wandb_offline_runs_log_every_reward_term(ablation: dict) -> None:
    out = ablation["out"]
    folders = sorted((out / "wandb").glob("offline-run-*"))
    assert len(folders) == 4, folders
    for name in VARIANTS:
        result = _result(out, name)
        info = result["wandb"]
        assert info["mode"] == "offline" and info["complete"]
        assert Path(info["dir"]).parent == out / "wandb"
        run = read_wandb_run(info["file"])
        assert run["exit_code"] == 0
        assert run["run"]["group"] == "reward_ablation" and run["run"]["name"] == f"{name}-0"
        expected = [*STANDARD_TERMS, *(JUDGE_TERMS if name == "vlm_terms" else ())]
        logged = [row for row in run["history"] if any(k.startswith("train/reward_terms/") for k in row)]
        assert len(logged) == result["train_episodes"] > 0
        for row in logged:  # every term, in every episode
            missing = [t for t in expected if f"train/reward_terms/{t}" not in row]
            assert not missing, f"{name}: reward terms not logged: {missing}"
        assert any("eval/fidelity" in row for row in run["history"])
        assert run["summary"]["final/fidelity"] == result["metrics"]["fidelity"]
        # the run config: experiment config, seeds, git commit and versions
        config = run["config"]
        assert config["seed"] == 0 and config["seeds"] == [0]
        assert config["experiment"]["name"] == "reward_ablation" and "git_commit" in config
        for package in ("torch", "stable-baselines3", "sb3-contrib", "gymnasium", "brick-gym"):
            assert config["versions"][package], package
        assert config["reward_weights"]["validity"] == 1.0


def test_logged_sums_match_the_env(ablation: dict) -> None:
    """The callback's per-episode sums equal the env's own (``episode_stats`` written by the stats wrapper)."""
    run_dir = ablation["out"] / "runs" / "vlm_terms" / "seed-0"

    def terms(path: Path) -> list[dict]:
        return [json.loads(line)["reward_terms"] for line in path.read_text().splitlines()]

    ours, env = terms(run_dir / "episodes.jsonl"), terms(run_dir / "train" / "train_stats.jsonl")
    assert len(ours) == len(env) > 0

    def order(terms: dict) -> list:
        return sorted((k, round(v, 3)) for k, v in terms.items())

    for a, b in zip(sorted(ours, key=order), sorted(env, key=order), strict=True):
        assert set(a) == set(b)
        assert a == pytest.approx(b, abs=2e-6)  # the env rounds its sums to 6 decimals


def test_summary_files(ablation: dict) -> None:
    out = ablation["out"]
    summary = json.loads((out / "summary.json").read_text())
    rows = {row["name"]: row for row in summary["rows"]}
    assert set(rows) == set(_run_names(ablation["config"]))
    for row in rows.values():
        for key in ("fidelity", "valid_rate", "pieces", "steps_per_second"):
            assert len(row[key]["values"]) == 1 and row[key]["std"] == 0.0
    assert len(summary["eval"]["tasks"]) == ablation["config"].eval.episodes
    assert _result(out, "greedy-candidates")["eval_tasks"] == summary["eval"]["tasks"]  # the same held-out targets
    md = (out / "summary.md").read_text()
    for name in rows:
        assert f"| {name} |" in md
    png = (out / "summary.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_same_seed_reproduces_eval_numbers(ablation: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "disabled")
    config = load_config(ABLATION, "smoke")
    config.baselines = []
    run_experiment(config, tmp_path, seeds=[0], variants=["validity_only"], progress=False, log=lambda _m: None)
    first, again = _result(ablation["out"], "validity_only"), _result(tmp_path, "validity_only")

    def numbers(result: dict) -> dict:
        return {k: v for k, v in result["metrics"].items() if k != "steps_per_second"}

    assert numbers(again) == numbers(first)
    clocks = ("wall_seconds", "train_seconds")
    assert [{k: v for k, v in p.items() if k not in clocks} for p in again["curve"]] == [
        {k: v for k, v in p.items() if k not in clocks} for p in first["curve"]
    ]
    episodes = "runs/validity_only/seed-0/episodes.jsonl"
    assert (tmp_path / episodes).read_text() == (ablation["out"] / episodes).read_text()  # the sampled training too


def test_second_invocation_skips_finished_runs(ablation: dict) -> None:
    out = ablation["out"]
    paths = [out / "runs" / name / "seed-0" / "result.json" for name in _run_names(ablation["config"])]
    before = {p: p.stat().st_mtime_ns for p in paths}
    folders = len(list((out / "wandb").glob("offline-run-*")))
    env = {**os.environ, "WANDB_MODE": "offline"}
    cmd = [sys.executable, str(ROOT / "experiments" / "run.py"), str(ABLATION), "--size", "smoke", "--out", str(out)]
    cmd += ["--seeds", "0", "--variants", ",".join(VARIANTS), "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "4 skipped" in proc.stderr and "0 ran" in proc.stderr, proc.stderr[-3000:]
    assert {p: p.stat().st_mtime_ns for p in paths} == before
    assert len(list((out / "wandb").glob("offline-run-*"))) == folders


def test_cli_rejects_a_bad_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[[variants]]\nname = "a"\nrewards = { validty = 1.0 }\n')
    assert main([str(bad), "--size", "base", "--out", str(tmp_path / "out")]) == 2


def test_summary_only_summarises_finished_runs_and_runs_nothing(ablation: dict, tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(ablation["out"], out)
    before = sorted(p.relative_to(out) for p in (out / "runs").glob("*/seed-*/result.json"))
    summary = run_experiment(
        ablation["config"], out, seeds=[0, 1], variants=VARIANTS, progress=False, log=lambda _m: None, summary_only=True
    )
    assert sorted(p.relative_to(out) for p in (out / "runs").glob("*/seed-*/result.json")) == before  # none ran
    assert summary["ran"] == 0 and summary["skipped"] == len(before)
    assert {row["name"]: row["seeds"] for row in summary["rows"]}["validity_only"] == [0]
    assert "validity_only" in (out / "summary.md").read_text()


def test_a_seedless_baseline_is_evaluated_once_and_later_seeds_record_it(
    ablation: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Greedy takes no seed: a seed-1 run in a folder holding its seed-0 evaluation records that one (marked), and
    it equals a real seed-1 evaluation in an empty folder, which is why it may be reused."""
    import shutil

    from brick_gym.rl.experiment import SEEDLESS_BASELINES, _Context, run_baseline

    monkeypatch.setenv("WANDB_MODE", "disabled")
    config = load_config(ABLATION, "smoke")
    assert "greedy" in SEEDLESS_BASELINES and "random" not in SEEDLESS_BASELINES
    first = tmp_path / "first"
    shutil.copytree(ablation["out"] / "runs" / "greedy-candidates", first / "runs" / "greedy-candidates")

    def run(out: Path, seed: int) -> dict:
        return run_baseline(_Context(config, out, "disabled", None, {}, lambda _m: None), "greedy", "candidates", seed)

    reused, fresh = run(first, 1), run(tmp_path / "fresh", 1)
    assert reused["same_as_seed"] == 0 and reused["seed"] == 1 and "same_as_seed" not in fresh
    assert _result(first, "greedy-candidates", seed=1) == {k: v for k, v in reused.items() if k != "skipped"}

    def numbers(result: dict) -> dict:
        return {k: v for k, v in result["metrics"].items() if k != "steps_per_second"}

    assert numbers(reused) == numbers(fresh) and reused["eval_tasks"] == fresh["eval_tasks"]


class _Interrupted(Exception):
    pass


def test_an_interrupted_run_resumes_from_its_last_checkpoint(
    ablation: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut a run off after its 128-step checkpoint: the next invocation goes on from there (curve points before it
    kept, the checkpoint's own evaluated again: the same policy, so the same numbers as the uninterrupted run's)
    instead of starting again, and records where it resumed."""
    import brick_gym.rl.experiment as engine
    from brick_gym.rl.callbacks import progress_callback

    monkeypatch.setenv("WANDB_MODE", "disabled")
    config = load_config(ABLATION, "smoke")
    config.baselines, config.seeds = [], [0]
    config.train.total_timesteps = 256

    def cut_off(update):  # a progress bar that stops the run mid-way through its second rollout
        def stop_at(step: int) -> None:
            if step >= 160:
                raise _Interrupted
            update(step)

        return progress_callback(stop_at)

    quiet = {"progress": False, "log": lambda _m: None, "variants": ["validity_only"]}
    with monkeypatch.context() as patch:
        patch.setattr(engine, "progress_callback", cut_off)
        with pytest.raises(_Interrupted):
            run_experiment(config, tmp_path, **quiet)
    run_dir = tmp_path / "runs" / "validity_only" / "seed-0"
    assert not (run_dir / "result.json").exists()
    states = sorted(p.name for p in (run_dir / "train" / "checkpoints").glob("*.json"))
    assert states == ["rl_model_128_steps.json", "rl_model_64_steps.json"]
    cut = [json.loads(line)["timesteps"] for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    assert max(cut) > 128  # episodes past the checkpoint, which the resumed run must drop

    run_experiment(config, tmp_path, **quiet)
    result = _result(tmp_path, "validity_only")
    assert result["resumed_from"] == [128] and result["timesteps"] >= 256
    points = [p["timesteps"] for p in result["curve"]]
    assert points[:3] == [0, 64, 128] and points == sorted(set(points))  # the checkpoint's point once
    plain = _result(ablation["out"], "validity_only")  # the same run, never cut off (128 timesteps)

    def numbers(points: list) -> list:
        return [{k: v for k, v in p.items() if k not in ("wall_seconds", "train_seconds")} for p in points]

    assert numbers(result["curve"][:3]) == numbers(plain["curve"][:3])
    walls = [p["wall_seconds"] for p in result["curve"]]
    assert walls == sorted(walls)  # one clock across the interruption
    steps = [json.loads(line)["timesteps"] for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    assert steps == sorted(steps) and len(steps) == result["train_episodes"]
    assert "rl_model_256_steps.zip" in {Path(c).name for c in result["checkpoints"]}


def test_a_second_experiment_on_a_running_folder_refuses(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """One writer per output folder: while a run holds the lock, another refuses (naming the holder) and the CLI
    answers with exit status 2; a summary of what finished may still be made."""
    from brick_gym.io.locks import RunLocked, run_lock

    config = load_config(ABLATION, "smoke")
    with run_lock(tmp_path):
        with pytest.raises(RunLocked, match=f"pid {os.getpid()}"):
            run_experiment(config, tmp_path, progress=False, log=lambda _m: None)
        assert main([str(ABLATION), "--size", "smoke", "--out", str(tmp_path), "--no-progress"]) == 2
        assert "in use by another run" in capsys.readouterr().err
        summary = run_experiment(config, tmp_path, progress=False, log=lambda _m: None, summary_only=True)
        assert summary["ran"] == 0


def _state(steps: int) -> dict:
    return {"timesteps": steps, "train_seconds": 1.5, "overhead_seconds": 0.5, "wall_seconds": 2.0, "episodes": 3,
            "resumed_from": []}  # fmt: skip


def test_the_resume_point_is_the_latest_checkpoint_with_a_usable_state(tmp_path: Path) -> None:
    """A checkpoint without its state, or with a damaged one, is passed over; the logs are cut back to the one
    chosen (a line the interruption cut is dropped) and later checkpoints go."""
    from brick_gym.rl.experiment import _resume_point

    folder = tmp_path / "train" / "checkpoints"
    folder.mkdir(parents=True)
    for steps, state in ((64, _state(64)), (128, _state(128)), (192, {**_state(192), "wall_seconds": "soon"})):
        _checkpoint_zip(folder / f"rl_model_{steps}_steps.zip")
        (folder / f"rl_model_{steps}_steps.json").write_text(json.dumps(state))
    (folder / "rl_model_256_steps.zip").write_bytes(b"cut short")  # no state: its save did not finish
    episodes = [{"timesteps": t} for t in (30, 100, 128, 150)]
    (tmp_path / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes) + '{"timest')
    curve = [{"timesteps": t} for t in (0, 64, 128, 192)]
    (tmp_path / "curve.jsonl").write_text("".join(json.dumps(c) + "\n" for c in curve))
    resume = _resume_point(tmp_path)
    assert resume is not None and resume.timesteps == 128 and resume.checkpoint.name == "rl_model_128_steps.zip"
    assert [json.loads(x)["timesteps"] for x in (tmp_path / "episodes.jsonl").read_text().splitlines()] == [
        30,
        100,
        128,
    ]
    assert [c["timesteps"] for c in resume.curve] == [0, 64]
    assert sorted(p.name for p in folder.iterdir()) == [
        "rl_model_128_steps.json", "rl_model_128_steps.zip", "rl_model_64_steps.json", "rl_model_64_steps.zip"
    ]  # fmt: skip
    assert _resume_point(tmp_path / "elsewhere") is None


def _checkpoint_zip(path: Path) -> None:
    """A small intact archive standing in for a saved model."""
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("policy.pth", bytes(range(256)) * 64)


def test_a_damaged_latest_checkpoint_falls_back_to_the_one_before(tmp_path: Path) -> None:
    """Issue 34, finding 10: a truncated checkpoint archive blocked every resume."""
    from brick_gym.rl.experiment import _resume_point

    folder = tmp_path / "train" / "checkpoints"
    folder.mkdir(parents=True)
    for steps in (64, 128):
        _checkpoint_zip(folder / f"rl_model_{steps}_steps.zip")
        (folder / f"rl_model_{steps}_steps.json").write_text(json.dumps(_state(steps)))
    latest = folder / "rl_model_128_steps.zip"
    latest.write_bytes(latest.read_bytes()[:-200])  # truncated: its central directory is gone
    with pytest.warns(UserWarning, match=r"rl_model_128_steps\.zip: damaged checkpoint"):
        resume = _resume_point(tmp_path)
    assert resume is not None and resume.timesteps == 64 and resume.checkpoint.name == "rl_model_64_steps.zip"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=16), inner, max_size=8),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_JSON)
def test_any_json_as_a_checkpoint_state_is_judged_without_failing(value) -> None:
    from brick_gym.rl.experiment import _usable_state

    assert _usable_state(value) in (True, False)
    assert _usable_state(_state(5)) and not _usable_state({**_state(5), "timesteps": True})
    if isinstance(value, dict):
        assert _usable_state({**_state(5), **value}) in (True, False)
