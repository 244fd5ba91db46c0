"""The prompt-conditioned level: BrickBench Model prompts as byte tokens, the judge's gated VQA score as the terminal
reward and the score, a judge from the level file or ``judge=``, and a clear refusal when none is configured."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from brick_gym.cli import main
from brick_gym.core.assembly import Assembly
from brick_gym.judges.backends import ScriptedJudge, yes_to_all
from brick_gym.judges.requests import JudgeRequest
from brick_gym.suite import evaluate, level, levels, make
from brick_gym.suite.prompts import JUDGE_ENV, JudgeMissing, decode_prompt, encode_prompt
from brick_gym.suite.protocol import episode_measures, family_of, raw_score
from brick_gym.suite.report import NEEDS_JUDGE, headline, markdown, rescore

LID = "prompts-model"
TINY_VLM = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_vlm"


@pytest.fixture(autouse=True)
def _no_judge_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts with no judge in the environment (as on this machine)."""
    monkeypatch.delenv(JUDGE_ENV, raising=False)


def no_to_the_first(request: JudgeRequest) -> str:
    """A VQA reply: no to question 1 (a root entity), yes to every other."""
    return yes_to_all(request).replace("1: yes", "1: no", 1)


class PlaceThenStop:
    """The first allowed action until the build has ``pieces`` pieces besides the start plate, then STOP (a
    placement's three sub-steps end with the piece placed, so STOP comes at a placement's start)."""

    name = "place-then-stop"

    def __init__(self, pieces: int = 2) -> None:
        self.pieces = pieces

    def __call__(self, observation: dict, info: dict) -> int:
        mask = np.asarray(info["action_mask"], dtype=bool)
        allowed = np.flatnonzero(mask[:-1])
        return len(mask) - 1 if info["pieces"] > self.pieces or not len(allowed) else int(allowed[0])


def test_the_level_is_benchmark_track_judged_and_out_of_the_headline() -> None:
    lv = level(LID)
    assert LID in levels(track="benchmark") and lv.observation == "prompt" and not lv.has_target
    assert lv.judge is not None and lv.judge["spec"] == f"env:{JUDGE_ENV}" and lv.judge["views"] == 8
    assert not lv.headline and lv.env["encoding"] == "staged" and lv.env["max_pieces"] == 400
    assert (lv.score.metric, lv.score.gate) == ("vqa", "valid")
    assert pickle.loads(pickle.dumps(lv)) == lv


def test_train_and_test_prompts_are_disjoint_and_deterministic() -> None:
    lv = level(LID)
    family = family_of(lv)
    train = [family.task(s).name for s in range(lv.train_seeds[0], lv.train_seeds[1] + 1)]
    test = [family.task(s).name for s in range(lv.test_seeds[0], lv.test_seeds[1] + 1)]
    assert train == [f"model-{i:03d}" for i in range(1, 7)] and test == [f"model-{i:03d}" for i in range(7, 11)]
    assert not set(train) & set(test)

    def draws(split: str) -> list[str]:
        env = make(LID, split, judge="scripted-yes")
        return [env.reset(seed=s)[1] and env.unwrapped.task.name for s in range(12)]

    assert set(draws("train")) <= set(train) and set(draws("test")) <= set(test)
    assert draws("test") == draws("test")


def test_the_prompt_encoding_round_trips_and_is_fixed_length() -> None:
    lv = level(LID)
    family = family_of(lv)
    length = lv.extras["prompt_length"]
    for seed in range(1, 11):
        prompt = family.task(seed).prompt
        tokens = encode_prompt(prompt, length)
        assert tokens.shape == (length,) and tokens.dtype == np.uint8 and decode_prompt(tokens) == prompt
    assert decode_prompt(encode_prompt("Ein grüner Frosch 🐸", 32)) == "Ein grüner Frosch 🐸"
    with pytest.raises(ValueError, match="does not fit"):
        encode_prompt("x" * 33, 32)
    with pytest.raises(ValueError, match="NUL"):
        encode_prompt("a\x00b", 32)
    env = make(LID, "test", judge="scripted-yes")
    obs, _ = env.reset(seed=0)
    assert "target" not in obs and "target_colour" not in obs
    assert env.observation_space["prompt"].shape == (length,)
    assert decode_prompt(obs["prompt"]) == env.unwrapped.task.prompt


def test_it_passes_both_checkers_and_pickles_with_a_scripted_judge() -> None:
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    check_env(make(LID, judge="scripted-yes"), skip_render_check=True)
    sb3_check(make(LID, judge="scripted-yes"), warn=False)
    env = make(LID, seed=1, judge="scripted-yes")
    env.step(int(np.flatnonzero(env.unwrapped.action_masks()[:-1])[0]))
    clone = pickle.loads(pickle.dumps(env))
    assert np.array_equal(clone.unwrapped.action_masks(), env.unwrapped.action_masks())
    a, b = clone.step(0), env.step(0)
    assert a[1] == b[1] and all(np.array_equal(a[0][k], b[0][k]) for k in a[0])


def test_evaluate_twice_with_a_scripted_judge_is_identical_and_names_the_judge() -> None:
    def run() -> dict:
        result = evaluate(PlaceThenStop(), LID, episodes=2, judge="scripted-yes")
        return {**result, "episodes": [{k: v for k, v in e.items() if k != "seconds"} for e in result["episodes"]]}

    a, b = run(), run()
    assert a == b
    assert a["judge"] == "scripted-yes" and "not comparable" in a["judge_note"] and a["seeds"] == [7, 8]
    first = a["episodes"][0]
    assert first["task"] == "model-007" and first["pieces"] == 3 and first["valid"] and first["target_pieces"] is None
    assert first["vqa"] == first["raw"] == 1.0 and all(first["answers"].values()) and first["fidelity"] is None
    assert a["raw_mean"] == a["score"] == 1.0  # low is 0 until a real judge calibrates it


def test_the_terminal_reward_follows_the_judge_through_the_gating() -> None:
    """No to the chair (model-007's first root entity) fails its five dependants too: 5 of 11 questions pass,
    where an ungated count would give 10 of 11."""
    judge = ScriptedJudge(no_to_the_first)
    result = evaluate(PlaceThenStop(), LID, episodes=1, judge=judge)
    episode = result["episodes"][0]
    assert result["judge"] == "scripted:scripted"
    assert episode["answers"]["chair"] is False and sum(episode["answers"].values()) == 10
    assert episode["vqa"] == episode["raw"] == pytest.approx(5 / 11, abs=1e-6)
    request = judge.requests[0]
    assert len(request.images) == 8 and "rocking chair" in request.text  # the episode's own prompt, 8 views


def test_the_stop_reward_is_the_judges_gated_score() -> None:
    """STOP on the start plate: a valid build, judged; the step's reward is the vqa weight (1) × the gated score."""
    env = make(LID, "test", judge=ScriptedJudge(no_to_the_first))
    env.reset(seed=0, options={"task": family_of(level(LID)).task(7)})
    _, reward, terminated, _, info = env.step(len(env.unwrapped.action_masks()) - 1)
    assert terminated and info["report"]["valid"] and reward == pytest.approx(5 / 11)


def test_an_invalid_build_scores_zero_without_asking_the_judge() -> None:
    lv = level(LID)
    task = family_of(lv).task(7)
    clash = Assembly(task.rules, strict=False)
    clash.add(*task.start)
    clash.add(*task.start)  # two plates at one spot: a collision
    judge = ScriptedJudge(yes_to_all)
    env = make(LID, "test", judge=judge)
    env.reset(seed=0, options={"task": task, "assembly": clash})
    _, reward, terminated, _, info = env.step(len(env.unwrapped.action_masks()) - 1)
    assert terminated and info["report"]["valid"] is False
    assert info["reward_terms"]["vqa"] == 0.0 and reward == 0.0 and judge.requests == []
    measures = episode_measures(lv, env.unwrapped, info)
    assert raw_score(lv, measures) == 0.0
    assert raw_score(lv, {"valid": False, "vqa": 1.0}) == 0.0 and raw_score(lv, {"valid": True, "vqa": 0.5}) == 0.5


def test_without_a_judge_it_refuses_naming_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(JudgeMissing, match=JUDGE_ENV):
        evaluate(PlaceThenStop(), LID, episodes=1)
    with pytest.raises(JudgeMissing, match=JUDGE_ENV):
        make(LID)
    assert main(["suite", "eval", LID, "--policy", "random", "--episodes", "1"]) == 2
    assert JUDGE_ENV in capsys.readouterr().err
    assert main(["suite", "report", "--levels", LID, "--baselines", "random", "--out", str(tmp_path)]) == 2
    assert JUDGE_ENV in capsys.readouterr().err
    assert main(["suite", "eval", LID, "--policy", "greedy-oracle", "--judge", "scripted-yes"]) == 2
    assert "does not play" in capsys.readouterr().err
    monkeypatch.setenv(JUDGE_ENV, "scripted-yes")  # the level file's env:BRICK_GYM_JUDGE now resolves
    assert evaluate(PlaceThenStop(1), LID, episodes=1)["judge"] == "scripted-yes"


def test_the_report_lists_it_as_needing_a_judge_and_leaves_it_out_of_the_headline(tmp_path: Path) -> None:
    summary = rescore(tmp_path)  # no result files: only the judged level is listed, with no numbers
    entry = summary["levels"][LID]
    assert entry == {"track": "benchmark", "baselines": {}, "headline": False, "needs_judge": JUDGE_ENV}
    assert f"{NEEDS_JUDGE} (set {JUDGE_ENV})" in markdown(summary)
    judged = {"levels": {LID: {**entry, "baselines": {"x": {"score": 0.9, "per_seed": [0.9]}}}}}
    judged["levels"]["a"] = {"track": "benchmark", "baselines": {"x": {"score": 0.1, "per_seed": [0.1]}}}
    assert headline(judged) == {"x": pytest.approx(0.1)}
    published = json.loads((Path(__file__).resolve().parents[2] / "docs/results/suite/summary.json").read_text())
    assert published["levels"][LID]["needs_judge"] == JUDGE_ENV and LID not in json.dumps(published["headline"])


def test_a_tiny_transformers_vlm_judges_one_episode_end_to_end() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from brick_gym.judges.backends import TransformersJudge

    # the random tiny model rarely stops early: cap its replies (the level asks for up to 2048 tokens, twice)
    judge = TransformersJudge(str(TINY_VLM), revision=None, batch_size=1, generate_kwargs={"max_new_tokens": 16})
    result = evaluate(PlaceThenStop(1), LID, episodes=1, judge=judge)
    episode = result["episodes"][0]
    assert result["judge"] == f"transformers:{TINY_VLM}" and episode["valid"] and episode["pieces"] == 2
    assert 0.0 <= episode["vqa"] <= 1.0 and episode["raw"] == episode["vqa"]
    assert judge._hf_model is not None  # the model was loaded and asked: the real loading and generation path
