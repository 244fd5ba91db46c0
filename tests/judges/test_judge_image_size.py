"""One judge image size everywhere: every path that renders pictures for a judge defaults to BrickBench's 1024²."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from brick_gym.bench.projects.scoring import score_assembly, score_episode, score_path
from brick_gym.bench.scoring import score
from brick_gym.envs.registry import make_model_vqa_env
from brick_gym.faces.scoring import vqa_score
from brick_gym.judges.requests import JUDGE_IMAGE_SIZE
from brick_gym.rewards.judge_terms import PairwiseTerm, VQATerm

JUDGED: list[tuple[Callable[..., Any], str]] = [
    (VQATerm.__init__, "size"),
    (PairwiseTerm.__init__, "size"),
    (make_model_vqa_env, "size"),
    (score_assembly, "image_size"),
    (score_episode, "image_size"),
    (score_path, "image_size"),
    (score, "image_size"),
    (vqa_score, "size"),
]


def test_brickbench_judges_1024_pixel_views() -> None:
    assert JUDGE_IMAGE_SIZE == 1024


@pytest.mark.parametrize(("fn", "arg"), JUDGED, ids=lambda v: getattr(v, "__qualname__", v))
def test_every_judged_path_defaults_to_the_judge_image_size(fn: Callable[..., Any], arg: str) -> None:
    assert inspect.signature(fn).parameters[arg].default == JUDGE_IMAGE_SIZE
