"""The column encoding's compiled kernels: a placement is (palette part, colour, quarter turn, low column), the
piece resting on the highest cell under its footprint and attached by its first hole (connector order) over a
free stud there. Each such action maps to one connector placement (host, target connector, source, yaw), which
the exact path places at the same pose; the mask is exact for the encoding (every allowed action is legal) and
kept incrementally: a commit changes only the actions whose footprint meets the new piece's columns.

Mask layout per env: ``base * colours + colour`` with ``base = ((palette part * 4 + q) * X + ci) * Z + ck``, then
STOP; ``legal[e, base]`` keeps each base's verdict (what the sampler reads).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from brick_gym.lattice import kernels as kn

LEGAL, OUTSIDE, NO_SUPPORT, COLLISION, NO_STOCK = 0, 1, 2, 3, 4
VERDICTS = ("placed", "outside_region", "no_mate", "collision", "out_of_stock")
"""``info["invalid_reason"]`` of each column verdict (no free stud under the footprint reads as ``no_mate``)."""

_BOX, _HOLE = 1, 2


def inverse_yaws(place: np.ndarray) -> np.ndarray:
    """(4, P, C, 4): the yaw index that gives quarter q for (target turn, part, source), −1 when none does."""
    out = np.full(place.shape[:4], -1, dtype=np.int64)
    turns, parts, conns, yaws = place.shape[:4]
    for t in range(turns):
        for p in range(parts):
            for c in range(conns):
                for y in range(yaws):
                    q = place[t, p, c, y, 0]
                    if q >= 0:
                        out[t, p, c, q] = y
    return out


@njit(cache=True)
def evaluate(grid, pieces, used, heights, e, part, q, ci, ck, kind, dims, nconn, conn_kind, conn_mate, mates,
             conn_point, conn_turn, place, pair_start, pair_value, inv_yaw, attach_row):  # fmt: skip
    """The column verdict of (part, q) with low column (ci, ck) in env ``e``; fills ``attach_row`` when legal."""
    nx, ny, nz = dims[part, q, 0], dims[part, q, 1], dims[part, q, 2]
    big_x, big_u, big_z = grid.shape[2], grid.shape[3] - 1, grid.shape[4]
    if ci + nx > big_x or ck + nz > big_z:
        return OUTSIDE
    j0 = 0
    for i in range(ci, ci + nx):
        for k in range(ck, ck + nz):
            j0 = max(j0, heights[e, i, k])
    if j0 + ny > big_u:
        return OUTSIDE
    found = -1
    for c in range(nconn[part]):
        if conn_kind[part, c] != _HOLE:
            continue
        i, h, k = ci + conn_point[part, q, c, 0], j0 + conn_point[part, q, c, 1], ck + conn_point[part, q, c, 2]
        if h < 0 or h > big_u:
            continue
        sp = grid[e, kn.STUD_PIECE, i, h, k]
        if sp < 0:
            continue
        sc = grid[e, kn.STUD_CONN, i, h, k]
        host_part = pieces[e, sp, 0]
        if used[e, sp, sc] or not mates[conn_mate[host_part, sc], conn_mate[part, c]]:
            continue
        turn = conn_turn[host_part, pieces[e, sp, 1], sc]
        y = inv_yaw[turn, part, c, q] if turn >= 0 else -1
        if y < 0 or place[turn, part, c, y, 1] != ci - i or place[turn, part, c, y, 3] != ck - k:
            continue
        attach_row[0], attach_row[1], attach_row[2], attach_row[3], attach_row[4] = sp, sc, c, y, j0
        found = c
        break
    if found < 0:
        return NO_SUPPORT
    if j0 > 0:
        a = part * 4 + q
        for i in range(ci, ci + nx):
            for k in range(ck, ck + nz):
                o = grid[e, kn.OWNER, i, j0 - 1, k]
                if o < 0:
                    continue
                op, oq = pieces[e, o, 0], pieces[e, o, 1]
                if kind[part] == _BOX and kind[op] == _BOX:
                    continue
                bx, by, bz = dims[op, oq, 0], dims[op, oq, 1], dims[op, oq, 2]
                dx, dy, dz = pieces[e, o, 2] - ci, pieces[e, o, 3] - j0, pieces[e, o, 4] - ck
                at = pair_start[a, op * 4 + oq]
                at += ((dx - 1 + bx) * (ny + by + 1) + (dy + by)) * (nz + bz - 1) + (dz - 1 + bz)
                if pair_value[at]:
                    return COLLISION
    return LEGAL


def fast_parts(tables: object, palette_part: np.ndarray) -> np.ndarray:
    """(palette parts, 4) hole mate code of each (part, quarter) whose holes sit under every column of its
    footprint on its bottom boundary, all of one subtype (then its verdict needs only the footprint's heights and
    top studs), −1 for the others (evaluated one by one)."""
    t = tables
    out = np.full((len(palette_part), 4), -1, dtype=np.int64)
    for s, p in enumerate(palette_part.tolist()):
        kinds = t.conn_kind[p, : t.nconn[p]]  # type: ignore[attr-defined]
        codes = set(t.conn_mate[p, : t.nconn[p]][kinds == _HOLE].tolist())  # type: ignore[attr-defined]
        for q in range(4):
            nx, _, nz = t.dims[p, q].tolist()  # type: ignore[attr-defined]
            holes = sorted(map(tuple, t.conn_point[p, q, : t.nconn[p]][kinds == _HOLE].tolist()))  # type: ignore[attr-defined]
            if len(codes) == 1 and holes == sorted((i, 0, k) for i in range(nx) for k in range(nz)):
                out[s, q] = next(iter(codes))
    return out


@njit(cache=True)
def refresh(grid, pieces, used, heights, stock, masks, legal, e, palette_part, fast, lo_i, hi_i, lo_k, hi_k, kind,
            dims, nconn, conn_kind, conn_mate, mates, conn_point, conn_turn, place, pair_start, pair_value,
            inv_yaw):  # fmt: skip
    """Re-evaluate every action of env ``e`` whose footprint meets columns [lo_i, hi_i] × [lo_k, hi_k]: ``legal``
    per (palette part, q, column), the mask per colour (legal and in stock). A fast part on box parts reads its
    footprint's heights and top studs; any other goes through :func:`evaluate`. Returns how many (part, q,
    column) were evaluated."""
    big_x, big_u, big_z = grid.shape[2], grid.shape[3] - 1, grid.shape[4]
    colours = stock.shape[2]
    row = np.zeros(5, dtype=np.int64)
    evaluated = 0
    for s in range(len(palette_part)):
        part = palette_part[s]
        for q in range(4):
            nx, ny, nz = dims[part, q, 0], dims[part, q, 1], dims[part, q, 2]
            code = fast[s, q]
            for ci in range(max(0, lo_i - nx + 1), min(big_x - 1, hi_i) + 1):
                for ck in range(max(0, lo_k - nz + 1), min(big_z - 1, hi_k) + 1):
                    evaluated += 1
                    verdict = OUTSIDE
                    if ci + nx <= big_x and ck + nz <= big_z:
                        verdict = -1
                        if code >= 0 and kind[part] == _BOX:
                            j0 = 0
                            for i in range(ci, ci + nx):
                                for k in range(ck, ck + nz):
                                    j0 = max(j0, heights[e, i, k])
                            verdict = OUTSIDE if j0 + ny > big_u else NO_SUPPORT
                            for i in range(ci, ci + nx):
                                for k in range(ck, ck + nz):
                                    if verdict != NO_SUPPORT:
                                        break
                                    if heights[e, i, k] != j0 or j0 == 0:
                                        continue
                                    o = grid[e, kn.OWNER, i, j0 - 1, k]
                                    if o >= 0 and kind[pieces[e, o, 0]] != _BOX:
                                        verdict = -1  # a contained piece below: the meshes decide
                                        break
                                    sp = grid[e, kn.STUD_PIECE, i, j0, k]
                                    if sp < 0:
                                        continue
                                    sc = grid[e, kn.STUD_CONN, i, j0, k]
                                    if not used[e, sp, sc] and mates[conn_mate[pieces[e, sp, 0], sc], code]:
                                        verdict = LEGAL
                            if verdict == LEGAL:  # any contained piece under the footprint sends it to evaluate
                                for i in range(ci, ci + nx):
                                    for k in range(ck, ck + nz):
                                        o = grid[e, kn.OWNER, i, j0 - 1, k] if j0 > 0 else -1
                                        if o >= 0 and kind[pieces[e, o, 0]] != _BOX:
                                            verdict = -1
                        if verdict < 0:
                            verdict = evaluate(
                                grid, pieces, used, heights, e, part, q, ci, ck, kind, dims, nconn, conn_kind,
                                conn_mate, mates, conn_point, conn_turn, place, pair_start, pair_value, inv_yaw, row,
                            )  # fmt: skip
                    base = ((s * 4 + q) * big_x + ci) * big_z + ck
                    legal[e, base] = 1 if verdict == LEGAL else 0
                    for c in range(colours):
                        masks[e, base * colours + c] = 1 if verdict == LEGAL and stock[e, part, c] != 0 else 0
    return evaluated


@njit(cache=True)
def apply(grid, pieces, used, meta, heights, stock, masks, legal, built, goal, counts, e, action, palette_part, fast,
          kind, dims, nconn, conn_kind, conn_mate, mates, conn_point, conn_turn, place, pair_start, pair_value,
          inv_yaw, vox, nvox, result):  # fmt: skip
    """Apply one legal (masked) action to env ``e``: commit the piece, raise the height map, count its fidelity
    cells and refresh the actions its footprint touches. ``result`` gets (piece id, new joints)."""
    big_x, big_z = grid.shape[2], grid.shape[4]
    colours = stock.shape[2]
    base, colour = action // colours, action % colours
    ck, ci, q = base % big_z, (base // big_z) % big_x, (base // (big_z * big_x)) % 4
    s = base // (big_z * big_x * 4)
    part = palette_part[s]
    row = np.zeros(5, dtype=np.int64)
    evaluate(grid, pieces, used, heights, e, part, q, ci, ck, kind, dims, nconn, conn_kind, conn_mate, mates,
             conn_point, conn_turn, place, pair_start, pair_value, inv_yaw, row)  # fmt: skip
    j0 = row[4]
    pid, joints = kn.commit(
        grid, pieces, used, meta, stock, e, part, q, ci, j0, ck, colour, dims, nconn, conn_kind, conn_mate, mates,
        conn_point,
    )  # fmt: skip
    nx, ny, nz = dims[part, q, 0], dims[part, q, 1], dims[part, q, 2]
    for i in range(ci, ci + nx):
        for k in range(ck, ck + nz):
            heights[e, i, k] = max(heights[e, i, k], j0 + ny)
    kn.fidelity_add(goal, built, counts, e, part, q, ci, j0, ck, colour, vox, nvox)
    refresh(
        grid, pieces, used, heights, stock, masks, legal, e, palette_part, fast, ci, ci + nx - 1, ck, ck + nz - 1,
        kind, dims, nconn, conn_kind, conn_mate, mates, conn_point, conn_turn, place, pair_start, pair_value, inv_yaw,
    )  # fmt: skip
    if stock[e, part, colour] == 0:  # the last of a part in a colour: none of its actions stays allowed
        for b in range(s * 4 * big_x * big_z, (s + 1) * 4 * big_x * big_z):
            masks[e, b * colours + colour] = 0
    result[0], result[1] = pid, joints


@njit(cache=True)
def sample(legal, masks, stock, palette_part, u):
    """A uniform allowed action per env (STOP when nothing else is): the (part, q, column) drawn by the number of
    its colours in stock, then one of those colours."""
    colours = stock.shape[2]
    per_part = legal.shape[1] // len(palette_part)
    out = np.empty(len(legal), dtype=np.int64)
    stop = masks.shape[1] - 1
    for e in range(len(legal)):
        total = 0
        for b in range(legal.shape[1]):
            if legal[e, b]:
                total += 1
        out[e] = stop
        if total == 0:
            continue
        pick = int(u[e] * total)
        for b in range(legal.shape[1]):
            if legal[e, b]:
                if pick == 0:
                    part = palette_part[b // per_part]
                    n = 0
                    for c in range(colours):
                        n += stock[e, part, c] != 0
                    if n == 0:
                        break
                    k = int((u[e] * total - int(u[e] * total)) * n)
                    for c in range(colours):
                        if stock[e, part, c] != 0:
                            if k == 0:
                                out[e] = b * colours + c
                                break
                            k -= 1
                    break
                pick -= 1
    return out


__all__ = ["LEGAL", "VERDICTS", "apply", "evaluate", "fast_parts", "inverse_yaws", "refresh", "sample"]
