"""The palette's placement rows per connector frame, shared by every target on a lattice, and the ranking's pool
that counts them against one target."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np

import brick_gym.envs  # noqa: F401
from brick_gym.core.progress import box_sums
from brick_gym.envs.slot_geometry import SlotGeometry, slot_geometry


def _fidelity_env():
    return gym.make("BrickGym/FidelityCandidates-v0", max_pieces=40, max_steps=60, split="test")


def _without_shape_codes(geometry: SlotGeometry, rows: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """Rows with the shape column blanked, and each row's own cells (codes number shapes in the order met)."""
    cells = [() if code < 0 else tuple(map(tuple, geometry.shapes[code].tolist())) for code in rows[:, 8].tolist()]
    blank = rows.copy()
    blank[:, 8] = 0
    return blank, cells


def test_a_frame_met_before_gives_the_rows_a_fresh_geometry_makes(random_states) -> None:
    """Along random episodes on several targets, every listed slot's rows from the shared geometry (looked up
    when its frame was met on an earlier target or episode) equal those a new geometry works out."""
    looked_up = 0
    for base in random_states(_fidelity_env(), range(3), 12, agent_seed=1):
        ranking, assembly = base.episode.ranking, base.assembly
        shared = ranking.geometry
        fresh = SlotGeometry(shared.palette, tuple(shared.pitch), shared.offset, shared.lattice)
        asked = [
            (assembly.connector_frame(r), assembly.pieces[r.piece].part.connector(r.group, r.index))
            for r in base.view.targets
        ]
        looked_up += sum((f.tobytes(), c.kind, c.subtype, c.polarity) in shared._frames for f, c in asked)
        for mine, theirs in zip(shared.rows(asked), fresh.rows(asked), strict=True):
            a, a_cells = _without_shape_codes(shared, mine)
            b, b_cells = _without_shape_codes(fresh, theirs)
            assert np.array_equal(a, b) and a_cells == b_cells
    assert looked_up > 100


def test_targets_on_one_palette_and_lattice_share_one_geometry_and_pickle_without_its_frames() -> None:
    env = _fidelity_env()
    env.reset(seed=0)
    first = env.unwrapped.episode.ranking
    env.reset(seed=1)
    second = env.unwrapped.episode.ranking
    assert first is not second and first.progress.target is not second.progress.target
    assert first.geometry is second.geometry
    geometry = first.geometry
    assert geometry is slot_geometry(geometry.palette, tuple(geometry.pitch), geometry.offset, geometry.lattice)
    assert geometry._frames
    clone = pickle.loads(pickle.dumps(geometry))
    assert clone._frames == {} and len(clone.shapes) == len(geometry.shapes)
    assert all(np.array_equal(x, y) for x, y in zip(clone.shapes, geometry.shapes, strict=True))


def _recount(ranking, rows: np.ndarray) -> np.ndarray:
    """Counts of rows made from their definition: every row over the summed-volume tables, slopes over their own
    cells (no shortcut for rows away from the build)."""
    progress = ranking.progress
    a, b = rows[:, 2:5], rows[:, 5:8]
    main = box_sums(progress.tables(), a, b)
    out = np.concatenate([main, box_sums(progress.colour_tables(), a, b), main[:, 1:2] + main[:, 2:3]], axis=1)
    slopes = np.flatnonzero(rows[:, 8] >= 0)
    if len(slopes):
        cells = np.concatenate([progress.channels(), progress.colour_channels()])
        out[slopes, : cells.shape[0]] = _own_cell_counts(ranking.geometry, rows[slopes], cells)
    return out


def _own_cell_counts(geometry, rows: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """(n, channels) of ``cells`` over each row's own cells, gathered in numpy (independent of the compiled count)."""
    offsets, valid = geometry.padded_shapes()
    pts = rows[:, None, 2:5] + offsets[rows[:, 8]]  # (n, m, 3)
    dims = np.asarray(cells.shape[1:])
    ok = valid[rows[:, 8]] & np.all((pts >= 0) & (pts < dims), axis=-1)
    flat = np.where(ok, (pts[..., 0] * dims[1] + pts[..., 1]) * dims[2] + pts[..., 2], 0)
    return (np.take(cells.reshape(cells.shape[0], -1), flat, axis=1) & ok).sum(axis=-1).T


def test_kept_counts_equal_a_recount_of_every_row(random_states) -> None:
    """The pool's counts, kept across steps and read off the target counts for rows the build never reached,
    equal a full recount of every row counted at the current change."""
    checked = 0
    for base in random_states(_fidelity_env(), range(3), 20, agent_seed=6):
        ranking = base.episode.ranking
        pool, now = ranking._pool, len(ranking.progress.changes)
        current = np.flatnonzero(pool.since[: pool.slots] == now)
        positions = np.concatenate([np.arange(*pool.spans[s]) for s in current.tolist()])
        assert np.array_equal(pool.sums[positions], _recount(ranking, pool.rows[positions]))
        checked += len(positions)
    assert checked > 50_000


def test_a_pool_copy_shares_no_array_and_lists_every_array_it_has() -> None:
    env = _fidelity_env()
    env.reset(seed=3)
    pool = env.unwrapped.episode.ranking._pool
    arrays = {name for name, value in vars(pool).items() if isinstance(value, np.ndarray)}
    assert arrays == set(pool.ROW_ARRAYS + pool.SLOT_ARRAYS)
    copy = pool.copy(None, -1)
    assert not any(np.shares_memory(getattr(pool, name), getattr(copy, name)) for name in arrays)
    assert copy.slot_of == pool.slot_of and copy.slot_of is not pool.slot_of
