"""Voxelisation on the stud/plate lattice and bricky's fidelity metric (shape and colour IoU over yaw and shift).

The lattice has one cell per stud in x and z (20 LDU) and one per plate in height (8 LDU). Cell centres sit at
half-pitch offsets, ``offset + (i + 0.5) * pitch``, so that they fall on stud centres: a 2×4 brick at the
identity pose fills the x cells centred at −30, −10, 10, 30 (indices −2..1), the z cells at ±10 (indices −1,
0) and three plate layers. A piece fills every cell whose centre lies inside its world bounding box (its mesh
bounds, the 8 corners moved by the pose). bricklayer's meshes are inset 0.25 LDU and studs reach only half a
plate above a piece, so the centre test is exact for bricks and plates on the lattice, with no rounding
fragility. Parts that are not boxes (slopes, round parts) also need the centre inside their convex hull: coarse,
but a 45° slope no longer fills its whole box. Colour per cell is the LDraw colour code of the piece; where two
pieces claim a cell, the lower piece id wins.

The lattice offset (``offset``, LDU, in [0, pitch)) is 0 for models built on a plate or a brick of even width
at the identity pose, the usual case. A model whose pieces all sit half a stud off that lattice (a 1×2 brick
placed at the identity, say) would otherwise fall between cell centres; :func:`voxelize` therefore takes the
offset that most pieces' box edges agree with (ties: the earliest piece) unless one is given.

Arrays are ``[x, up, z]`` with the up axis pointing UP (LDraw's −Y flipped): layer 0 is the lowest. A grid
stores the lattice index of its array's ``[0, 0, 0]`` cell (``origin``, in the same (x, up, z) order), so
grids of different models compare in world terms.

:func:`fidelity` scores a candidate against a target as bricky does: shape IoU = cells filled by both / cells
filled by either, colour IoU = cells filled by both in the same colour / cells filled by either, maximised over
the four quarter-turns of the candidate about the vertical axis and every lattice shift. The best-overlap shift
of each turn comes from an FFT cross-correlation of the occupancies; the scores are then counted exactly at the
best alignments.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

DEFAULT_PITCH: tuple[float, float, float] = (20.0, 8.0, 20.0)
"""Lattice pitch in LDU: one stud in x and z, one plate in height."""

_EMPTY = -1
_MAX_CANDIDATES = 64
"""Alignments counted exactly per call, at most (all share the best shape overlap)."""


@dataclass(frozen=True, eq=False)
class VoxelGrid:
    """Occupancy (bool) and colour (int32 LDraw code, −1 empty) per lattice cell of a model, as ``[x, up, z]``
    arrays; ``origin`` is the lattice index of cell ``[0, 0, 0]``, cell ``i`` of an axis is centred at
    ``offset + (i + 0.5) * pitch`` LDU along (x, up = −y, z). Built by :func:`voxelize`; compare two with
    ``==`` (same filled cells in world terms, same colours, same lattice)."""

    occupancy: np.ndarray
    colours: np.ndarray
    origin: tuple[int, int, int] = (0, 0, 0)
    pitch: tuple[float, float, float] = DEFAULT_PITCH
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def shape(self) -> tuple[int, int, int]:
        """Array shape (x, up, z) in cells."""
        return tuple(int(s) for s in self.occupancy.shape)  # type: ignore[return-value]

    @property
    def count(self) -> int:
        """Number of filled cells."""
        return int(np.count_nonzero(self.occupancy))

    @property
    def empty(self) -> bool:
        """Whether no cell is filled."""
        return self.count == 0

    def to_dense(
        self, shape: tuple[int, int, int], origin: tuple[int, int, int] | None = None, *, colours: bool = False
    ) -> np.ndarray:
        """Occupancy (bool) or, with ``colours=True``, colour codes (int32, −1 empty) in a box of ``shape``
        cells whose ``[0, 0, 0]`` is lattice index ``origin`` (default: this grid's origin); cells of the grid
        outside the box are cropped, box cells outside the grid are empty. Puts two grids in one frame."""
        origin = self.origin if origin is None else origin
        src = self.colours if colours else self.occupancy
        out = np.full(shape, _EMPTY, dtype=np.int32) if colours else np.zeros(shape, dtype=bool)
        dst_sl, src_sl = [], []
        for o_self, o_box, n_self, n_box in zip(self.origin, origin, self.shape, shape, strict=True):
            lo = max(o_self, o_box)
            hi = min(o_self + n_self, o_box + n_box)
            if hi <= lo:
                return out
            dst_sl.append(slice(lo - o_box, hi - o_box))
            src_sl.append(slice(lo - o_self, hi - o_self))
        out[tuple(dst_sl)] = src[tuple(src_sl)]
        return out

    def indices(self) -> np.ndarray:
        """(n, 3) lattice indices (x, up, z) of the filled cells, in array order."""
        return np.argwhere(self.occupancy) + np.asarray(self.origin)

    def centres(self) -> np.ndarray:
        """(n, 3) LDraw world positions (x, y, z; −Y up) of the filled cells' centres, in array order."""
        c = np.asarray(self.offset) + (self.indices() + 0.5) * np.asarray(self.pitch)
        c[:, 1] *= -1.0
        return c + 0.0

    def rotated(self, quarter_turns: int) -> VoxelGrid:
        """The grid turned by ``quarter_turns`` × 90° about the world vertical axis through the lattice point
        x = z = 0, the same turn as pre-multiplying every piece pose by LDraw's ``Ry(90°)`` (x' = z, z' = −x)
        that many times: ``voxelize(turned poses) == voxelize(poses).rotated(k)``."""
        q = int(quarter_turns) % 4
        if q and self.pitch[0] != self.pitch[2]:
            raise ValueError(f"quarter turns need equal x and z pitch, got {self.pitch}")
        occ, col, (ox, oy, oz) = self.occupancy, self.colours, self.origin
        (fx, fy, fz), p = self.offset, self.pitch[0]
        for _ in range(q):
            # x' = z, z' = -x: cell (i, k) -> (k, -i - 1 - carry), i.e. B[c, j, X - 1 - a] = A[a, j, c]
            nx = occ.shape[0]
            occ = np.flip(np.transpose(occ, (2, 1, 0)), axis=2)
            col = np.flip(np.transpose(col, (2, 1, 0)), axis=2)
            carry = 1 if fx > 0 else 0  # -fx wraps into [0, p)
            ox, oz = oz, -ox - nx - carry
            fx, fz = fz, (p - fx if fx > 0 else 0.0)
        return VoxelGrid(np.ascontiguousarray(occ), np.ascontiguousarray(col), (ox, oy, oz), self.pitch, (fx, fy, fz))

    def shifted(self, shift: tuple[int, int, int]) -> VoxelGrid:
        """The grid moved by whole lattice steps (x, up, z)."""
        origin = tuple(int(o) + int(s) for o, s in zip(self.origin, shift, strict=True))
        return VoxelGrid(self.occupancy, self.colours, origin, self.pitch, self.offset)  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VoxelGrid):
            return NotImplemented
        a, b = _tight(self), _tight(other)
        if a.count == 0 and b.count == 0:
            return tuple(a.pitch) == tuple(b.pitch)
        return (
            tuple(a.pitch) == tuple(b.pitch)
            and np.allclose(a.offset, b.offset, atol=1e-6)
            and a.shape == b.shape
            and a.origin == b.origin
            and np.array_equal(a.occupancy, b.occupancy)
            and np.array_equal(np.where(a.occupancy, a.colours, _EMPTY), np.where(b.occupancy, b.colours, _EMPTY))
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"VoxelGrid(shape={self.shape}, origin={self.origin}, count={self.count}, pitch={self.pitch}, "
            f"offset={self.offset})"
        )


def empty_grid(
    pitch: tuple[float, float, float] = DEFAULT_PITCH, offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
) -> VoxelGrid:
    """A grid with no cells."""
    return VoxelGrid(np.zeros((0, 0, 0), dtype=bool), np.zeros((0, 0, 0), dtype=np.int32), (0, 0, 0), pitch, offset)


def _tight(grid: VoxelGrid) -> VoxelGrid:
    """The grid cropped to the bounding box of its filled cells (empty grid when none)."""
    occ = grid.occupancy
    if not occ.any():
        return empty_grid(grid.pitch, grid.offset)
    sl = []
    for axis in range(3):
        other = tuple(a for a in range(3) if a != axis)
        hit = np.flatnonzero(occ.any(axis=other))
        sl.append(slice(int(hit[0]), int(hit[-1]) + 1))
    origin = tuple(o + s.start for o, s in zip(grid.origin, sl, strict=True))
    if all(s.start == 0 and s.stop == n for s, n in zip(sl, occ.shape, strict=True)):
        return grid
    return VoxelGrid(occ[tuple(sl)], grid.colours[tuple(sl)], origin, grid.pitch, grid.offset)  # type: ignore[arg-type]


@cache
def _corners(stem: str) -> np.ndarray:
    """(8, 4) homogeneous corners of a part's mesh bounds (part frame)."""
    from brick_gym.core.meshes import box_corners, part_mesh

    return box_corners(part_mesh(stem).bounds)


def world_bounds(stem: str, poses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, 3) low and high corners, in (x, up, z) LDU with up = −y, of ``stem``'s mesh bounds at each of ``poses``
    (n, 4, 4): the boxes :func:`voxelize` fills."""
    pts = np.einsum("kj,nij->nki", _corners(stem), np.asarray(poses, dtype=np.float64).reshape(-1, 4, 4))[..., :3]
    lo, hi = pts.min(axis=1), pts.max(axis=1)
    return np.stack([lo[:, 0], -hi[:, 1], lo[:, 2]], axis=-1), np.stack([hi[:, 0], -lo[:, 1], hi[:, 2]], axis=-1)


def cell_ranges(
    lo_up: np.ndarray, hi_up: np.ndarray, pitch: np.ndarray, phase: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive lattice index ranges ``[a, b]`` of the cells whose centres ``phase + (i + 0.5) * pitch`` lie in
    the boxes ``[lo_up, hi_up]`` (an empty range has some ``b < a``)."""
    a = np.ceil((lo_up - phase) / pitch - 0.5 - 1e-9).astype(np.int64)
    b = np.floor((hi_up - phase) / pitch - 0.5 + 1e-9).astype(np.int64)
    return a, b


def _items(model: Any) -> list[tuple[int, str, int, np.ndarray]]:
    """(id, stem, colour, pose) for an Assembly, Pieces, or (stem, colour, pose) tuples (id = position)."""
    pieces = model.pieces.values() if hasattr(model, "pieces") and isinstance(model.pieces, dict) else model
    out = []
    for n, item in enumerate(pieces):
        if hasattr(item, "part") and hasattr(item, "pose"):
            out.append((int(item.id), item.part.stem, int(item.colour), np.asarray(item.pose, dtype=np.float64)))
        else:
            stem, code, pose = item
            out.append((n, str(getattr(stem, "stem", stem)), int(code), np.asarray(pose, dtype=np.float64)))
    out.sort(key=lambda t: t[0])
    return out


@cache
def _hull_planes(stem: str) -> np.ndarray | None:
    """(m, 4) outward facet planes ``n·p + d <= 0`` of a part's convex hull, or None when the hull fills the
    mesh bounds below the studs (bricks, plates, tiles: the box test is already exact for them)."""
    from scipy.spatial import ConvexHull, QhullError

    from brick_gym.core.meshes import part_mesh

    mesh = part_mesh(stem)
    lo, hi = mesh.bounds
    try:
        hull = ConvexHull(mesh.hull_vertices)
    except (QhullError, ValueError):
        return None
    # the body: the bounds without the stud layer (studs stand 4 LDU above a piece's top face)
    body = np.prod(np.maximum(hi - np.array([lo[0], lo[1] + 3.5, lo[2]]), 0.0))
    if body > 0 and hull.volume >= 0.999 * body and hull.volume <= np.prod(hi - lo) * 1.001:
        return None
    planes = np.array(hull.equations, dtype=np.float64)
    planes.flags.writeable = False
    return planes


def fills_its_box(stem: str) -> bool:
    """Whether a part fills its whole bounding box on the lattice (bricks, plates, tiles), so that its cells are
    one index range; slopes and round parts do not."""
    return _hull_planes(stem) is None


def voxelize(
    assembly_or_pieces: Any,
    pitch: tuple[float, float, float] = DEFAULT_PITCH,
    offset: tuple[float, float, float] | None = None,
) -> VoxelGrid:
    """Occupancy and colour of a model on the lattice (see the module docstring for the convention).

    Takes an :class:`~brick_gym.core.assembly.Assembly`, an iterable of pieces, or ``(stem, colour, pose)`` tuples
    (ids = order). A cell is filled when its centre lies in the piece's world bounding box and, for parts
    that are not boxes (slopes, round parts), also in the part's convex hull: exact for bricks and plates on
    the lattice, coarse for the rest (concave parts fill their hull, parts turned off the right angles their
    bounds). ``offset`` (LDU, x/up/z) fixes the lattice phase; by default it is the one most pieces sit on.
    The grid is tight around the filled cells. Overlapping claims: the lowest piece id keeps the cell. Parts
    without a mesh raise :class:`~brick_gym.core.meshes.MeshUnavailable`.
    """
    p = np.asarray(pitch, dtype=np.float64)
    pieces = []
    for pid, stem, code, pose in _items(assembly_or_pieces):
        lo_up, hi_up = world_bounds(stem, pose)
        pieces.append((pid, stem, code, pose, lo_up[0], hi_up[0]))
    phase = np.asarray(_phase([pc[4] for pc in pieces], p) if offset is None else offset, dtype=np.float64)
    phase = phase % p
    boxes = []
    for pid, stem, code, pose, lo_up, hi_up in pieces:
        a, b = cell_ranges(lo_up, hi_up, p, phase)
        if np.any(b < a):
            continue
        mask = None
        planes = _hull_planes(stem)
        if planes is not None:
            axes = [phase[d] + (np.arange(a[d], b[d] + 1) + 0.5) * p[d] for d in range(3)]
            gx, gu, gz = np.meshgrid(*axes, indexing="ij")
            centres = np.stack([gx, -gu, gz, np.ones_like(gx)], axis=-1).reshape(-1, 4)
            local = centres @ np.linalg.inv(pose).T
            inside = np.all(local[:, :3] @ planes[:, :3].T + planes[:, 3] <= 1e-6, axis=1)
            mask = inside.reshape(gx.shape)
            if not mask.any():
                continue
        boxes.append((pid, code, a, b, mask))
    lattice = (tuple(float(v) for v in p), tuple(float(v) + 0.0 for v in phase))
    if not boxes:
        return empty_grid(*lattice)  # type: ignore[arg-type]
    lo_all = np.min([bx[2] for bx in boxes], axis=0)
    hi_all = np.max([bx[3] for bx in boxes], axis=0)
    shape = tuple(int(v) for v in hi_all - lo_all + 1)
    occ = np.zeros(shape, dtype=bool)
    col = np.full(shape, _EMPTY, dtype=np.int32)
    for _, code, a, b, mask in reversed(boxes):  # highest id first, so lower ids overwrite
        sl = tuple(slice(int(s), int(e) + 1) for s, e in zip(a - lo_all, b - lo_all, strict=True))
        if mask is None:
            occ[sl] = True
            col[sl] = code
        else:
            occ[sl] |= mask
            col[sl] = np.where(mask, code, col[sl])
    return _tight(VoxelGrid(occ, col, tuple(int(v) for v in lo_all), *lattice))  # type: ignore[arg-type]


def _phase(lows: list[np.ndarray], pitch: np.ndarray) -> tuple[float, float, float]:
    """The lattice offset most pieces' low box edges agree with, per axis (ties: the earliest piece)."""
    from brick_gym.core.meshes import SHIPPED_INSET_LDU

    out = []
    for d in range(3):
        votes: dict[float, int] = {}
        for lo in lows:
            edge = np.round(((lo[d] - SHIPPED_INSET_LDU) % pitch[d]) * 2.0) / 2.0 % pitch[d]
            votes[float(edge)] = votes.get(float(edge), 0) + 1
        out.append(max(votes, key=lambda k: votes[k]) if votes else 0.0)  # dicts keep first-seen order
    return tuple(out)  # type: ignore[return-value]


@dataclass(frozen=True)
class Fidelity:
    """bricky's fidelity of a candidate against a target; 1.0 means identical up to a turn and a shift.

    ``shape_iou`` is the best over turns and shifts. ``colour_iou`` is counted at that same (shape-optimal)
    alignment, ties in shape broken by colour: one registration, both scores, as a viewer would compare them.
    ``colour_iou_max`` is the colour IoU maximised on its own over all turns and shifts (≥ ``colour_iou``;
    differs only when a different placement matches more colours at a worse shape). ``rotation`` (degrees,
    0/90/180/270) and ``shift`` (lattice steps x, up, z) say how to move the candidate onto the target:
    ``candidate.rotated(rotation // 90).shifted(shift)`` is the aligned candidate.
    """

    shape_iou: float
    colour_iou: float
    rotation: int = 0
    shift: tuple[int, int, int] = (0, 0, 0)
    colour_iou_max: float = 0.0


def _fft_len(n: int) -> int:
    from scipy.fft import next_fast_len

    return int(next_fast_len(n, real=True))


_EXACT_COLOUR_SHIFTS = 256
"""Colour-max search: alignments counted exactly before falling back to per-colour FFTs."""


def _shift_of(idx: np.ndarray, fshape: tuple[int, ...], target_shape: tuple[int, ...]) -> tuple[int, int, int]:
    """Array shift from a circular-correlation index (indices past the target wrap to negative shifts)."""
    return tuple(int(v) if v < n_b else int(v) - n for v, n, n_b in zip(idx, fshape, target_shape, strict=True))  # type: ignore[return-value]


def _exact_counts(a: VoxelGrid, b: VoxelGrid, s: tuple[int, int, int]) -> tuple[int, int]:
    """(overlap, same-colour overlap) of grid A's array shifted by ``s`` onto grid B's (counted cell by cell)."""
    sa, sb = [], []
    for n_a, n_b, d in zip(a.occupancy.shape, b.occupancy.shape, s, strict=True):
        lo, hi = max(0, -d), min(n_a, n_b - d)
        if hi <= lo:
            return 0, 0
        sa.append(slice(lo, hi))
        sb.append(slice(lo + d, hi + d))
    both = a.occupancy[tuple(sa)] & b.occupancy[tuple(sb)]
    same = both & (a.colours[tuple(sa)] == b.colours[tuple(sb)])
    return int(np.count_nonzero(both)), int(np.count_nonzero(same))


def fidelity(candidate: VoxelGrid, target: VoxelGrid, *, colour_max: bool = True) -> Fidelity:
    """bricky's shape and colour IoU of ``candidate`` against ``target``, maximised over the four quarter-turns
    of the candidate about the vertical axis and every lattice shift.

    Per turn, one FFT cross-correlation of the occupancies gives the overlap at every shift (IoU only grows
    with the overlap, the two counts being fixed); the alignments sharing the best overlap (up to 64, smaller
    turn and shift first) are counted exactly and the one matching the most colours wins; remaining ties go to
    the smaller turn, then the shift nearest zero. ``colour_iou_max`` searches the alignments in decreasing
    shape IoU, which bounds colour IoU, exactly or by per-colour FFTs when too many qualify;
    ``colour_max=False`` skips it (then it equals ``colour_iou``). Empty vs empty scores 1.0, empty vs
    non-empty 0.0. Grids must share a pitch.
    """
    from scipy import fft

    if tuple(candidate.pitch) != tuple(target.pitch):
        raise ValueError(f"grids on different lattices: pitch {candidate.pitch} vs {target.pitch}")
    cand, targ = _tight(candidate), _tight(target)
    n_c, n_t = cand.count, targ.count
    if n_c == 0 and n_t == 0:
        return Fidelity(1.0, 1.0, 0, (0, 0, 0), 1.0)
    if n_c == 0 or n_t == 0:
        return Fidelity(0.0, 0.0, 0, (0, 0, 0), 0.0)
    turns = (0, 1, 2, 3) if cand.pitch[0] == cand.pitch[2] else (0, 2)
    rotated = [cand.rotated(q) for q in turns]
    # One FFT size for every turn (a quarter-turn swaps the candidate's x and z), padded so nothing wraps.
    side = max(cand.shape[0], cand.shape[2])
    fshape = (
        _fft_len(side + targ.shape[0] - 1),
        _fft_len(cand.shape[1] + targ.shape[1] - 1),
        _fft_len(side + targ.shape[2] - 1),
    )
    # float32 round-off stays far below 0.5 of a count at these sizes (error ~ eps · log N · sqrt(n_c · n_t))
    dtype = np.float32 if n_c * n_t <= 4e8 else np.float64
    axes = (0, 1, 2)

    def spectrum(mask: np.ndarray) -> np.ndarray:
        return fft.rfftn(mask.astype(dtype), s=fshape, axes=axes)

    def back(spec: np.ndarray) -> np.ndarray:
        return np.rint(fft.irfftn(spec, s=fshape, axes=axes)).astype(np.int64)

    fb = spectrum(targ.occupancy)
    corrs = [back(np.conj(spectrum(g.occupancy)) * fb) for g in rotated]
    best = max(int(c.max()) for c in corrs)

    def world(t: int, s: tuple[int, int, int]) -> tuple[int, int, int]:
        return tuple(ob + d - oa for ob, d, oa in zip(targ.origin, s, rotated[t].origin, strict=True))  # type: ignore[return-value]

    ranked = []
    for t, corr in enumerate(corrs):
        for idx in np.argwhere(corr == best):
            s = _shift_of(idx, fshape, targ.shape)
            w = world(t, s)
            ranked.append((t, sum(abs(v) for v in w), w, s))
    ranked.sort()
    top: tuple[tuple[int, int], int, tuple[int, int, int]] | None = None
    for t, _, w, s in ranked[:_MAX_CANDIDATES]:
        counts = _exact_counts(rotated[t], targ, s)
        if top is None or counts > top[0]:
            top = (counts, t, w)
    assert top is not None
    (both, same), t_best, w_best = top
    union = n_c + n_t - both
    shape_iou, colour_iou = both / union, same / union
    colour_best = colour_iou
    if colour_max and colour_iou < 1.0:
        colour_best = _colour_max(rotated, targ, corrs, colour_iou, n_c + n_t, fshape, spectrum, back)
    return Fidelity(float(shape_iou), float(colour_iou), turns[t_best] * 90, w_best, float(colour_best))


def _colour_max(rotated, targ, corrs, floor, total, fshape, spectrum, back) -> float:
    """The best colour IoU over all turns and shifts, at least ``floor``.

    Colour IoU at an alignment never exceeds its shape IoU, so only alignments whose shape IoU beats the best
    colour IoU so far can improve it; they are counted exactly in decreasing shape IoU, or, when there are too
    many, every alignment is scored at once by summing per-colour correlations in the Fourier domain.
    """
    ious = [corr / np.maximum(total - corr, 1) for corr in corrs]
    n_above = sum(int(np.count_nonzero(iou > floor)) for iou in ious)
    if n_above == 0:
        return floor
    best = floor
    if n_above <= _EXACT_COLOUR_SHIFTS:
        cand_ious = [
            (float(iou[tuple(i)]), t, tuple(int(v) for v in i))
            for t, iou in enumerate(ious)
            for i in np.argwhere(iou > floor)
        ]
        cand_ious.sort(key=lambda c: -c[0])
        for bound, t, idx in cand_ious:
            if bound <= best:
                break
            s = _shift_of(np.asarray(idx), fshape, targ.shape)
            both, same = _exact_counts(rotated[t], targ, s)
            best = max(best, same / (total - both))
        return best
    occupied = targ.colours[targ.occupancy]
    shared = [c for c in np.unique(occupied) if any(np.any(g.colours[g.occupancy] == c) for g in rotated)]
    fbs = [spectrum(targ.occupancy & (targ.colours == c)) for c in shared]
    for g, corr, iou in zip(rotated, corrs, ious, strict=True):
        if not np.any(iou > best):
            continue
        acc = None
        for c, fbc in zip(shared, fbs, strict=True):
            term = np.conj(spectrum(g.occupancy & (g.colours == c))) * fbc
            acc = term if acc is None else acc + term
        if acc is None:
            continue
        same = back(acc)
        best = max(best, float((same / np.maximum(total - corr, 1)).max()))
    return best


def target_tensor(grid: VoxelGrid, shape: tuple[int, int, int] = (16, 16, 16), *, colours: bool = False) -> np.ndarray:
    """Occupancy as a fixed-size float32 ``[x, up, z]`` box for RL observations (``colours=True``: the cells'
    colour codes as int32, −1 where empty, in the same box).

    The model's lowest layer sits on layer 0 and its horizontal centre at the box's centre (cell
    ``shape // 2`` takes the model's centre cell, rounding down), so the tensor does not depend on where the
    model stands in the world; parts beyond the box are cropped (top first, then both sides evenly).
    """
    g = _tight(grid)
    if g.count == 0:
        return np.full(shape, _EMPTY, dtype=np.int32) if colours else np.zeros(shape, dtype=np.float32)
    ox = g.origin[0] + (g.shape[0] - 1) // 2 - shape[0] // 2
    oz = g.origin[2] + (g.shape[2] - 1) // 2 - shape[2] // 2
    origin = (ox, g.origin[1], oz)
    if colours:
        return g.to_dense(shape, origin, colours=True)
    return g.to_dense(shape, origin).astype(np.float32)


def unfilled_fraction(target: VoxelGrid, model: Any) -> float:
    """Share of the target's cells that ``model`` leaves empty, on the target's lattice and in its frame (no
    alignment search: Fidelity builds share their target's frame); 0.0 once the target is covered."""
    if target.count == 0:
        return 0.0
    built = voxelize(model, target.pitch, target.offset).to_dense(target.shape, target.origin)
    return float(np.count_nonzero(target.occupancy & ~built)) / target.count


def piece_agreement(grid: VoxelGrid, stem: str, colour: int, pose: np.ndarray) -> tuple[float, float]:
    """(fraction of the piece's cells that ``grid`` fills, fraction it fills in the same colour), with the piece
    voxelised on ``grid``'s own lattice (world-aligned: for a Fidelity task, the target and the build share
    their base plate's frame). A piece with no cells scores (0, 0)."""
    if fills_its_box(stem):  # its cells are one index range, counted by slicing
        a, b = cell_ranges(*world_bounds(stem, pose), np.asarray(grid.pitch), np.asarray(grid.offset) % grid.pitch)
        a, b = a[0] - np.asarray(grid.origin), b[0] - np.asarray(grid.origin)
        total = int(np.prod(np.maximum(b - a + 1, 0)))
        if not total:
            return 0.0, 0.0
        box = tuple(slice(max(int(lo), 0), max(int(hi) + 1, 0)) for lo, hi in zip(a, b, strict=True))
        filled = grid.occupancy[box]
        return float(filled.sum()) / total, float((filled & (grid.colours[box] == colour)).sum()) / total
    cells = voxelize([(stem, colour, pose)], grid.pitch, grid.offset).indices() - np.asarray(grid.origin)
    if not len(cells):
        return 0.0, 0.0
    inside = np.all((cells >= 0) & (cells < np.asarray(grid.shape)), axis=1)
    hits = cells[inside]
    filled = grid.occupancy[hits[:, 0], hits[:, 1], hits[:, 2]]
    same = filled & (grid.colours[hits[:, 0], hits[:, 1], hits[:, 2]] == colour)
    return float(filled.sum()) / len(cells), float(same.sum()) / len(cells)
