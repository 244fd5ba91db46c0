"""VLM reward terms (VQA, pairwise) on scripted judges, the ModelVQA env, and the real transformers loading path."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import gymnasium as gym
import numpy as np
import pytest

import brick_gym.envs  # noqa: F401  (registers the ids)
from brick_gym.core.assembly import Assembly
from brick_gym.core.examples import readme_wall, translation
from brick_gym.core.validity import check
from brick_gym.judges.backends import ScriptedJudge, yes_to_all
from brick_gym.judges.cache import CachedJudge
from brick_gym.judges.pairwise import tile_views
from brick_gym.judges.requests import JudgeReply
from brick_gym.judges.vqa import build_vqa_prompt
from brick_gym.render import RenderSettings, render_views
from brick_gym.rewards.judge_terms import DEFAULT_VQA_PROMPT, PairwiseTerm, VQATerm, default_vqa_graph
from brick_gym.rewards.terms import RewardContext

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_vlm"
SAMPLE_TASKS = Path(__file__).resolve().parents[3] / "shared" / "data" / "brickbench" / "sample-model-tasks.json"
SMALL = {"views": 8, "size": 48}  # renders stay cheap; the protocol does not depend on the size


@pytest.fixture(scope="module")
def wall() -> Assembly:
    return readme_wall()


@pytest.fixture(scope="module")
def wall_report(wall):
    report = check(wall)
    assert report.valid
    return report


@pytest.fixture(scope="module")
def clash() -> Assembly:
    a = Assembly(strict=False)
    a.add("3001", "red")
    a.add("3001", "blue", translation(20, 0, 0))  # interpenetrating: invalid
    return a


def ctx_for(assembly: Assembly, report=None) -> RewardContext:
    return RewardContext(assembly, None, None, True, report=report)


def replies(*texts: str) -> ScriptedJudge:
    return ScriptedJudge(list(texts))


def answer_lines(no: set[int], n: int = 5) -> str:
    return "Answers:\n" + "\n".join(f"{i}: {'no' if i in no else 'yes'}" for i in range(1, n + 1))


# ---------------------------------------------------------------------------------------------------------------
# VQATerm
# ---------------------------------------------------------------------------------------------------------------


def test_vqa_yes_to_all_scores_one_with_one_request_of_views_then_text(wall, wall_report) -> None:
    judge = ScriptedJudge(yes_to_all)
    term = VQATerm(judge, default_vqa_graph(), DEFAULT_VQA_PROMPT, **SMALL)
    assert (term.name, term.terminal) == ("vqa", True)
    ctx = ctx_for(wall, wall_report)
    assert term(ctx) == 1.0
    assert len(judge.requests) == 1
    request = judge.requests[0]
    assert len(request.images) == 8 and request.images[0].shape == (48, 48, 3)
    assert request.text == build_vqa_prompt(DEFAULT_VQA_PROMPT, default_vqa_graph())
    expected = render_views(wall, RenderSettings(size=48, views=8))
    assert all(np.array_equal(a, b) for a, b in zip(request.images, expected, strict=True))
    record = ctx.cache["vqa"]
    assert record["parsed"] is True and record["gated"] == 1.0 and record["flat"] == 1.0
    assert record["answers"] == dict.fromkeys(default_vqa_graph().keys, True)
    assert record["reply"] == yes_to_all(request)


def test_vqa_one_no_gives_the_hand_computed_gated_score(wall, wall_report) -> None:
    # Graph: 1 tower, 2 tower.color <- tower, 3 base, 4 base.color <- base, 5 tower-on-base <- tower, base.
    # "no" to 1 fails 1, 2 and 5: gated 2/5; flat 4/5.
    term = VQATerm(replies(answer_lines({1})), default_vqa_graph(), DEFAULT_VQA_PROMPT, **SMALL)
    ctx = ctx_for(wall, wall_report)
    assert term(ctx) == pytest.approx(0.4)
    assert ctx.cache["vqa"]["flat"] == pytest.approx(0.8)
    assert ctx.cache["vqa"]["answers"]["tower"] is False
    # "no" to the leaf 4 only fails 4.
    term = VQATerm(replies(answer_lines({4})), default_vqa_graph(), DEFAULT_VQA_PROMPT, **SMALL)
    assert term(ctx_for(wall, wall_report)) == pytest.approx(0.8)


def test_vqa_garbage_is_retried_then_zero_and_counted_unparsed(wall, wall_report) -> None:
    judge = replies("I think it is a tower.", "1: yes\n2: yes")  # the retry answers only 2 of 5: still unparsed
    term = VQATerm(judge, default_vqa_graph(), DEFAULT_VQA_PROMPT, retries=1, **SMALL)
    ctx = ctx_for(wall, wall_report)
    assert term(ctx) == 0.0
    assert term.stats["unparsed"] == 1 and term.stats["requests"] == 2
    assert ctx.cache["vqa"]["parsed"] is False and ctx.cache["vqa"]["attempts"] == 2
    assert ctx.cache["vqa"]["replies"] == ["I think it is a tower.", "1: yes\n2: yes"]
    # A retry that parses is scored.
    term = VQATerm(replies("no idea", answer_lines(set())), default_vqa_graph(), DEFAULT_VQA_PROMPT, **SMALL)
    assert term(ctx_for(wall, wall_report)) == 1.0 and term.stats["unparsed"] == 0


def test_vqa_gated_on_validity_without_asking(wall, clash) -> None:
    judge = ScriptedJudge(yes_to_all)
    term = VQATerm(judge, default_vqa_graph(), DEFAULT_VQA_PROMPT, **SMALL)
    ctx = ctx_for(clash)  # no report given: the term runs the check itself
    assert term(ctx) == 0.0
    assert judge.requests == [] and ctx.cache["vqa"]["skipped"] == "invalid" and term.stats["gated_out"] == 1
    ungated = VQATerm(judge, default_vqa_graph(), DEFAULT_VQA_PROMPT, gate_on_validity=False, **SMALL)
    assert ungated(ctx_for(clash)) == 1.0 and len(judge.requests) == 1
    assert term(ctx_for(wall)) == 1.0  # valid without a given report


class SoftJudge:
    """A backend that also reports P(yes) per question."""

    name, model, revision = "soft", "soft", None

    def __init__(self, p_yes: dict[int, float], text: str) -> None:
        self.p_yes, self.text = p_yes, text

    def judge(self, requests):
        return [JudgeReply(self.text, self.name, self.model, None, p_yes=self.p_yes) for _ in requests]


def test_vqa_soft_uses_p_yes(wall, wall_report) -> None:
    p = {1: 0.5, 2: 1.0, 3: 1.0, 4: 1.0, 5: 1.0}  # tower 0.5, tower.color 0.5, base 1, base.color 1, on-base 0.5
    soft = VQATerm(SoftJudge(p, "garbage"), default_vqa_graph(), DEFAULT_VQA_PROMPT, soft=True, **SMALL)
    assert soft(ctx_for(wall, wall_report)) == pytest.approx(3.5 / 5)
    hard = VQATerm(SoftJudge(p, answer_lines({1})), default_vqa_graph(), DEFAULT_VQA_PROMPT, soft=False, **SMALL)
    assert hard(ctx_for(wall, wall_report)) == pytest.approx(0.4)
    partial = VQATerm(SoftJudge({1: 0.5}, answer_lines(set())), default_vqa_graph(), DEFAULT_VQA_PROMPT, soft=True)
    assert partial(ctx_for(wall, wall_report)) == 1.0  # incomplete p_yes: falls back to the parsed reply


def test_vqa_cache_and_pickle(wall, wall_report, tmp_path) -> None:
    inner = ScriptedJudge(yes_to_all)
    term = VQATerm(inner, default_vqa_graph(), DEFAULT_VQA_PROMPT, cache=tmp_path / "judge.jsonl", **SMALL)
    assert isinstance(term.judge, CachedJudge)
    assert term(ctx_for(wall, wall_report)) == 1.0
    assert term(ctx_for(wall, wall_report)) == 1.0
    assert len(inner.requests) == 1 and term.judge.hits == 1  # same pixels: answered from the file
    clone = pickle.loads(pickle.dumps(term))
    assert isinstance(clone.judge, CachedJudge) and clone.judge.inner is not inner
    assert clone(ctx_for(wall, wall_report)) == 1.0 and clone.judge.hits == 2
    assert clone(ctx_for(readme_wall(), wall_report)) == 1.0  # the clone's judge and locks work
    assert len(inner.requests) == 1


def test_vqa_retry_through_a_cache_asks_again(wall, wall_report, tmp_path) -> None:
    inner = replies("garbage", answer_lines(set()))
    term = VQATerm(inner, default_vqa_graph(), DEFAULT_VQA_PROMPT, cache=tmp_path / "c.jsonl", **SMALL)
    assert term(ctx_for(wall, wall_report)) == 1.0
    assert len(inner.requests) == 2  # the cached unparsed reply did not answer the retry


# ---------------------------------------------------------------------------------------------------------------
# PairwiseTerm
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference_views() -> list[np.ndarray]:
    ref = Assembly()
    ref.add("3001", "blue")
    return render_views(ref, RenderSettings(size=48, views=4))


@pytest.mark.parametrize(
    ("script", "value"),
    [(("1", "2"), 1.0), (("1", "1"), 0.5), (("2", "2"), 0.5), (("2", "1"), 0.0)],
)
def test_pairwise_both_orders(wall, wall_report, reference_views, script, value) -> None:
    judge = replies(*script)
    term = PairwiseTerm(judge, reference_views, "align", "A wall.", size=48)
    assert term.name == "pairwise_align" and term.terminal
    ctx = ctx_for(wall, wall_report)
    assert term(ctx) == value
    first, second = judge.requests
    build = tile_views(render_views(wall, RenderSettings(size=48, views=4)), size=48)
    ref = tile_views(reference_views, size=48)
    assert np.array_equal(first.images[0], build) and np.array_equal(first.images[1], ref)  # build shown first
    assert np.array_equal(second.images[0], ref) and np.array_equal(second.images[1], build)  # then reference
    assert first.images[0].shape == (48, 192, 3)
    assert "A wall." in first.text and first.text == second.text
    assert ctx.cache["pairwise_align"]["choices"] == [int(script[0]), int(script[1])]


def test_pairwise_unparsed_orders(wall, wall_report, reference_views) -> None:
    # One order unparsed even after its retry: the other decides alone (reference-first reply "2": build wins).
    judge = replies("Image 2, clearly.", "2", "hmm")
    term = PairwiseTerm(judge, reference_views, "design", size=48)
    ctx = ctx_for(wall, wall_report)
    assert term(ctx) == 1.0
    assert len(judge.requests) == 3 and judge.requests[2] is judge.requests[0]  # only the unparsed order retried
    assert ctx.cache["pairwise_design"]["choices"] == [None, 2]
    # Neither order parses: 0.0 (documented decision), counted.
    term = PairwiseTerm(replies("tie", "both", "?", "!"), reference_views, "design", size=48)
    ctx = ctx_for(wall, wall_report)
    assert term(ctx) == 0.0
    assert term.stats["unparsed"] == 1 and ctx.cache["pairwise_design"]["parsed"] is False
    # A retry that parses counts.
    term = PairwiseTerm(replies("x", "y", "1", "2"), reference_views, "design", size=48, retries=1)
    assert term(ctx_for(wall, wall_report)) == 1.0


def test_pairwise_gating_reference_model_and_pickle(wall, wall_report, clash) -> None:
    judge = ScriptedJudge(lambda request: "1")
    ref = Assembly()
    ref.add("3001", "blue")
    term = PairwiseTerm(judge, ref, "align", "A wall.", size=48)
    assert term(ctx_for(clash)) == 0.0 and judge.requests == []
    assert term(ctx_for(wall, wall_report)) == 0.5
    assert np.array_equal(judge.requests[1].images[0], tile_views(term.reference_views, size=48))
    with pytest.raises(ValueError, match="prompt"):
        PairwiseTerm(judge, ref, "align")
    with pytest.raises(ValueError, match="withheld"):
        PairwiseTerm(judge, ref, "design", "A wall.")
    with pytest.raises(ValueError, match="at least 4"):
        PairwiseTerm(judge, [np.zeros((8, 8, 3), np.uint8)] * 3, "design")
    yes_judge = ScriptedJudge(yes_to_all)  # module-level function: picklable
    clone = pickle.loads(pickle.dumps(PairwiseTerm(yes_judge, ref, "design", size=48)))
    assert clone(ctx_for(wall, wall_report)) == 0.0  # "yes" is no valid choice: unparsed → 0.0


# ---------------------------------------------------------------------------------------------------------------
# BrickGym/ModelVQA-v0
# ---------------------------------------------------------------------------------------------------------------


def _episode(env, seed: int = 0):
    from brick_gym.rl.baselines import RandomMaskedAgent

    agent = RandomMaskedAgent(seed)
    env.reset(seed=seed)
    while True:
        obs, reward, term, trunc, info = env.step(agent.act(env))
        assert "vqa" in info["reward_terms"]
        if term or trunc:
            return reward, info


def test_model_vqa_env_episode_reports_vqa() -> None:
    assert gym.spec("BrickGym/ModelVQA-v0").nondeterministic is True
    assert gym.spec("BrickGym/Model-v0").nondeterministic is False
    env = gym.make("BrickGym/ModelVQA-v0", max_steps=3, size=48)
    base = env.unwrapped
    assert base.task.prompt == DEFAULT_VQA_PROMPT
    _, info = env.reset(seed=0)
    assert info["reward_terms"]["vqa"] == 0.0
    _, info = _episode(env)
    assert info["report"]["valid"] is True
    assert info["reward_terms"]["vqa"] == 1.0  # the default judge answers yes to everything
    assert info["episode_stats"]["reward_terms"]["vqa"] == info["reward_terms"]["vqa"]
    clone = pickle.loads(pickle.dumps(base))
    assert clone.rewards.names == base.rewards.names


def test_model_vqa_env_with_task_file_and_judge() -> None:
    if not SAMPLE_TASKS.is_file():
        pytest.skip(f"shared BrickBench sample tasks not found at {SAMPLE_TASKS}")
    judge = ScriptedJudge(lambda request: "no answers here")
    env = gym.make("BrickGym/ModelVQA-v0", tasks=SAMPLE_TASKS, task_index="model-004", judge=judge, max_steps=2)
    env = env.unwrapped
    assert env.task.prompt.startswith("A short, black-haired lord")
    _, info = _episode(env, seed=1)
    assert info["reward_terms"]["vqa"] == 0.0
    assert info["report"]["valid"] is True
    assert len(judge.requests) == 2 and "black-haired lord" in judge.requests[0].text  # asked, retried once
    with pytest.raises(IndexError):
        gym.make("BrickGym/ModelVQA-v0", tasks=SAMPLE_TASKS, task_index=5)


# ---------------------------------------------------------------------------------------------------------------
# The real transformers path on the tiny random fixture
# ---------------------------------------------------------------------------------------------------------------


def test_vqa_term_with_tiny_transformers_judge(wall, wall_report) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from brick_gym.judges.backends import TransformersJudge

    judge = TransformersJudge(str(FIXTURE), revision=None, batch_size=1)
    term = VQATerm(judge, default_vqa_graph(), DEFAULT_VQA_PROMPT, views=8, size=32, max_new_tokens=12, retries=0)
    ctx = ctx_for(wall, wall_report)
    value = term(ctx)
    assert isinstance(value, float) and 0.0 <= value <= 1.0
    assert isinstance(ctx.cache["vqa"]["reply"], str)
    assert term.stats["judged"] == 1 and term.stats["requests"] == 1
    clone = pickle.loads(pickle.dumps(term))  # the loaded model is dropped and reloaded on first use
    assert clone.judge._hf_model is None
    assert clone(ctx_for(wall, wall_report)) == value
