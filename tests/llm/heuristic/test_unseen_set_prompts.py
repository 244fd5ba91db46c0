"""The heuristic meets the Set rule (400+ parts, valid) on prompts it has never seen: BrickBench's own sample briefs,
generated paraphrases of the suite's briefs and subjects its lexicon does not know. Where the subjects and their
scenery leave it short, the rest is a garden wall round the scene, course on course: parts that stand on one
another and show, never one 1x1 part repeated."""

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
from brick_gym.llm.heuristic import HeuristicClient, plan_build

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


def test_plans_reach_the_set_minimum_for_unseen_prompts(shared_data: Path) -> None:
    rules = Rules.for_setting("set")
    prompts = _shared_prompts(shared_data) + _generated(7, 3)
    short = {p[:60]: plan.pieces for p in prompts if (plan := plan_build(p, rules)).pieces < 400}
    assert not short, short


@pytest.mark.parametrize("prompt", [_generated(11, 1)[0], "A quokka holding a tiny umbrella"])
def test_unseen_subjects_deliver_a_valid_set_model(tmp_path: Path, prompt: str) -> None:
    res = run_episode(BenchTask("set-x", prompt), HeuristicClient(), tmp_path, EpisodeConfig("set", render=False))
    assert res.valid and res.stop_reason == "finish" and res.tool_errors == {}, res.report
    assert 400 <= res.pieces <= 4000
    asm = load(tmp_path / "model.mpd").assembly
    counts = collections.Counter(p.part.stem for p in asm)
    singles = {stem: n for stem, n in counts.items() if " 1x1" in part(stem).name}
    assert max(singles.values(), default=0) <= 0.10 * len(asm), singles
    assert asm.component_count == 1  # one rigid model on its base, the wall included
