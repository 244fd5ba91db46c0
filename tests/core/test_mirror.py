"""Mirror images from catalogue facts: symmetric parts map to themselves, handed parts to their named counterpart,
verified against connectors and meshes; BrickAgent's own mirror table agrees; chiral parts are refused."""

from __future__ import annotations

import json
import lzma
from importlib import resources

import numpy as np
import pytest

from brick_gym.core.builder import Builder
from brick_gym.core.examples import readme_wall
from brick_gym.core.mirror import NoMirror, mirror_image, mirrored_pose, reflection
from brick_gym.core.validity import check


@pytest.mark.parametrize(
    ("stem", "image"),
    [("3001", "3001"), ("3039", "3039"), ("2450", "2450"), ("41769", "41770"), ("41770", "41769"), ("47397", "47398")],
)
def test_symmetric_parts_are_their_own_image_and_handed_ones_swap(stem: str, image: str) -> None:
    m = mirror_image(stem)
    assert m.stem == image
    r = m.local[:3, :3]
    assert np.linalg.det(r) == pytest.approx(-1.0) and set(np.unique(r)) <= {-1.0, 0.0, 1.0}


def test_brickagent_table_agrees_where_both_have_an_answer() -> None:
    """BrickAgent ships a table of verified mirror counterparts: on common and handed parts, ours names the same."""
    table = json.loads(lzma.decompress((resources.files("brickagent") / "_data/v1/mirrors.json.xz").read_bytes()))
    stems = ["3001", "3004", "3039", "3040b", "3623", "6091", "2450", "41769", "43722", "47397", "3937", "63868"]
    for stem in stems:
        theirs = table["parts"].get(stem)
        assert theirs is not None, stem
        assert mirror_image(stem).stem == theirs[0], stem


def test_parts_without_a_mirror_image_are_refused_with_the_reason() -> None:
    with pytest.raises(NoMirror, match="no mirror image in the catalogue"):
        mirror_image("3298p6u")  # its printed pattern is not symmetric
    m = Builder()
    a = m.add("3001", "red")
    b = m.add("3298p6u", "red", (0, 0, 200))
    out = m.mirror([a.piece, b.piece], "x", about=(500, 0, 0))
    assert (
        not out.ok and out.reason == "no_mirror" and "3298p6u" in out.message and "nothing was changed" in out.message
    )
    assert len(m) == 2


def test_mirrored_pose_is_rigid_and_reflects_the_shape() -> None:
    plane = reflection("x", (100, 0, 0))
    np.testing.assert_array_equal(plane @ plane, np.eye(4))
    image = mirror_image("41769")
    start = np.eye(4)
    start[:3, 3] = (40, -8, 20)
    out = mirrored_pose(start, plane, image)
    assert np.linalg.det(out[:3, :3]) == pytest.approx(1.0)
    np.testing.assert_allclose(out[:3, 3], (160, -8, 20))
    with pytest.raises(ValueError, match="normal"):
        reflection((0, 0, 0))


def test_a_mirrored_wall_is_valid_and_joined() -> None:
    m = Builder(assembly=readme_wall())
    out = m.mirror(None, "z", about=(0, 0, 40))
    assert out.ok, out.message
    assert len(m) == 22 and check(m.assembly).valid
    # the mirrored half is joined inside itself exactly like the original
    assert len(m.connections(list(out.pieces))) == len(m.connections(list(range(11))))
