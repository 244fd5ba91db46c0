"""The force picture: pieces coloured by the joint that holds them, a legend strip below."""

from __future__ import annotations

import math

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.forces import analyse
from brick_gym.core.poses import translation
from brick_gym.render.force_picture import OVERLOADED, force_picture, held_by, save_force_picture, utilisation_rgb


def overloaded() -> Assembly:
    """A 2×8 plate with six 1×10 plates hanging from one stud past each end (the two end studs give)."""
    a = Assembly()
    a.add("3034", "red")
    for side in (1.0, -1.0):
        for i in range(6):
            assert a.add("4477", "blue", translation(side * 160.0, -8.0 * (i + 1), 10.0)).ok
    return a


def overloaded_less() -> Assembly:
    """The same with two plates a side: every joint holds."""
    a = Assembly()
    a.add("3034", "red")
    for side in (1.0, -1.0):
        for i in range(2):
            assert a.add("4477", "blue", translation(side * 160.0, -8.0 * (i + 1), 10.0)).ok
    return a


def test_colour_scale() -> None:
    assert utilisation_rgb(0.0)[1] > utilisation_rgb(0.0)[0]  # green
    assert utilisation_rgb(1.0)[0] > 200 > utilisation_rgb(1.0)[1]  # red
    assert utilisation_rgb(1.5) == utilisation_rgb(math.inf) == OVERLOADED


def test_pieces_take_the_utilisation_of_the_joint_that_holds_them() -> None:
    a = overloaded()
    report = analyse(a)
    held = held_by(report)
    assert held[0] == 0.0  # the base rests on the ground
    assert held[1] > 1.0 and held[7] > 1.0  # the plates on the end studs hang from them
    assert held[2] == 0.0  # the next plate up is held by full overlap, in compression


def test_picture_shows_the_overloaded_joint(tmp_path) -> None:
    a = overloaded()
    image = force_picture(a, size=160)
    assert image.shape[1] == 160 and image.shape[0] > 160 and image.dtype == np.uint8
    model = image[:160].reshape(-1, 3).astype(int)
    purple = (model[:, 2] > model[:, 1] + 30) & (model[:, 0] > model[:, 1] + 15)  # shaded, still purple
    assert purple.sum() > 20
    held = force_picture(overloaded_less(), size=160)[:160].reshape(-1, 3).astype(int)
    assert ((held[:, 2] > held[:, 1] + 30) & (held[:, 0] > held[:, 1] + 15)).sum() == 0
    assert save_force_picture(a, tmp_path / "f.png", size=96).stat().st_size > 0
