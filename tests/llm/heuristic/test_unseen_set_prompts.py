"""The heuristic meets the Set rule (400+ parts, valid) on prompts it has never seen: BrickBench's own sample briefs,
generated paraphrases of the suite's briefs and subjects its lexicon does not know. The parts come from the
subjects the brief names, built larger where scale 2 leaves them short (a statue-sized figure, a monument of
taller tiers), with modest scenery: the subjects make at least half of every model, a garden wall at most 10%,
and no 1x1 part is repeated past its share."""

from __future__ import annotations

import collections
import json
import random
from pathlib import Path

import pytest

from brick_gym.bench.runner import default_tasks
from brick_gym.core.catalog import part
from brick_gym.core.modelfile import load
from brick_gym.core.rules import Rules
from brick_gym.llm.adapter import BenchTask, EpisodeConfig, run_episode
from brick_gym.llm.heuristic import BuildPlan, HeuristicClient, plan_build

UNKNOWN = ("quokka", "xylophone", "jellyfish", "sandwich", "reading nook", "entropy", "zibblewort", "glorp")
FRAMES = ("A {adj} {noun} on a tabletop", "Build me a {adj} {noun}, please", "{adj} {noun} seen from the front")
ADJECTIVES = ("tiny", "huge", "striped", "ancient", "cheerful", "lopsided")


def _generated(seed: int, n: int) -> list[str]:
    """Unknown subjects in plain frames, and the suite's own Set briefs reworded (paraphrases it never saw)."""
    rng = random.Random(seed)
    out = [rng.choice(FRAMES).format(adj=rng.choice(ADJECTIVES), noun=rng.choice(UNKNOWN)) for _ in range(n)]
    for task in json.loads(default_tasks("set").read_text(encoding="utf-8"))[:n]:
        words = task["prompt"].rstrip(".").split()
        out.append(f"Imagine this as a display piece: {' '.join(words[len(words) // 2 :] + words[: len(words) // 2])}")
    return out


def _shared_prompts(shared: Path) -> list[str]:
    prompts = []
    for name in ("sample-model-tasks.json", "sample-alt-build-tasks.json"):
        prompts += [t["prompt"] for t in json.loads((shared / name).read_text(encoding="utf-8"))]
    return prompts


@pytest.fixture(scope="module")
def unseen_plans(shared_data: Path) -> dict[str, BuildPlan]:
    rules = Rules.for_setting("set")
    return {p: plan_build(p, rules) for p in _shared_prompts(shared_data) + _generated(7, 3)}


def test_plans_reach_the_set_minimum_for_unseen_prompts(unseen_plans: dict[str, BuildPlan]) -> None:
    assert len(unseen_plans) == 10
    short = {p[:60]: plan.pieces for p, plan in unseen_plans.items() if plan.pieces < 400}
    assert not short, short
    for plan in unseen_plans.values():  # the sources add up to the plan
        assert sum(plan.parts.values()) == plan.pieces, plan.parts


def test_unseen_prompts_are_built_from_their_subjects_not_a_ring(unseen_plans: dict[str, BuildPlan]) -> None:
    """The named subjects make at least half of every model; a garden wall, if any, at most a tenth."""
    for prompt, plan in unseen_plans.items():
        parts = plan.parts
        assert 2 * parts["subjects"] >= plan.pieces, (prompt[:60], parts)
        assert 10 * parts.get("border", 0) <= plan.pieces, (prompt[:60], parts)


def test_short_subjects_are_built_larger(unseen_plans: dict[str, BuildPlan]) -> None:
    """A lone figure or an unknown subject grows past Set's scale 2; the suite's own briefs need no more."""
    scales = {p: plan.scale for p, plan in unseen_plans.items()}
    assert scales["Build me a huge zibblewort, please"] > 2
    assert min(s for p, s in scales.items() if p.startswith("A short, black-haired lord")) > 2
    rules = Rules.for_setting("set")
    assert plan_build(json.loads(default_tasks("set").read_text(encoding="utf-8"))[0]["prompt"], rules).scale == 2


@pytest.mark.parametrize(
    "prompt",
    [
        _generated(11, 1)[0],
        "A quokka holding a tiny umbrella",
        "A short, black-haired lord in a red hat and red tunic",  # a statue at scale 5
    ],
)
def test_unseen_subjects_deliver_a_valid_set_model(tmp_path: Path, prompt: str) -> None:
    res = run_episode(BenchTask("set-x", prompt), HeuristicClient(), tmp_path, EpisodeConfig("set", render=False))
    assert res.valid and res.stop_reason == "finish" and res.tool_errors == {}, res.report
    assert 400 <= res.pieces <= 4000
    asm = load(tmp_path / "model.mpd").assembly
    counts = collections.Counter(p.part.stem for p in asm)
    singles = {stem: n for stem, n in counts.items() if " 1x1" in part(stem).name}
    assert max(singles.values(), default=0) <= 0.10 * len(asm), singles
    assert asm.component_count == 1  # one rigid model on its base
