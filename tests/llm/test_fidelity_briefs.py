"""Fidelity targets as chat-model episodes: the brief lists every piece to add, bottom up, with the pose the
target has; the base plate is the start piece; a model built from the brief scores fidelity 1.0."""

from __future__ import annotations

import re

import numpy as np
import pytest

from brick_gym.core.pieces import colour_name
from brick_gym.envs.fidelity_targets import generate_suite
from brick_gym.llm.adapter import EpisodeConfig, EpisodeTools
from brick_gym.llm.fidelity_briefs import fidelity_bench_task, fidelity_brief, place_start_piece

LINE = re.compile(r"^- (\S+) \((.+)\), (.+), at \((\S+), (\S+), (\S+)\), yaw (\S+)$")


@pytest.mark.parametrize("target", generate_suite(6, seed=11), ids=lambda t: t.kind)
def test_the_brief_lists_every_piece_bottom_up_with_its_pose(target) -> None:
    pieces = list(target.build())
    brief = fidelity_brief(target)
    rows = [LINE.match(line) for line in brief.split("Pieces to add:\n", 1)[1].split("\n")]
    assert all(rows) and len(rows) == len(pieces) - 1
    heights = [float(r.group(5)) for r in rows]
    assert heights == sorted(heights, reverse=True)  # -y is up: bottom first
    listed = sorted((r.group(1), r.group(3), float(r.group(4)), float(r.group(5)), float(r.group(6))) for r in rows)
    actual = sorted((p.part.stem, colour_name(p.colour), *np.round(p.pose[:3, 3], 3)) for p in pieces[1:])
    assert listed == [(s, c, float(x), float(y), float(z)) for s, c, x, y, z in actual]
    assert f"{pieces[0].part.stem} {pieces[0].part.name}" in brief and f"of {len(pieces)} pieces" in brief


def test_the_base_plate_is_the_start_piece() -> None:
    (target,) = generate_suite(1, seed=2)
    task = fidelity_bench_task(target)
    assert (task.id, task.questions) == (target.name, []) and task.prompt == fidelity_brief(target)
    episode = EpisodeTools(task, EpisodeConfig(setting="free", render=False))
    place_start_piece(episode, target)
    (base,) = list(episode.session.assembly)
    assert (base.part.stem, base.colour) == (target.steps[0].part, target.steps[0].colour)
    assert np.array_equal(base.pose, np.eye(4))
