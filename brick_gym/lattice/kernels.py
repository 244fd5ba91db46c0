"""The compiled lattice kernels (numba, ``cache=True``): placement verdicts, commits, removals, joints,
components and fidelity counts of a batch of assemblies held in flat arrays (:mod:`.state` owns them).

State per env ``e`` (region coordinates: cell (0, 0, 0) is the region's low corner):
``grid[e, OWNER, i, j, k]`` the piece filling a cell (−1 none); ``grid[e, STUD_PIECE / STUD_CONN, i, h, k]`` the
stud on lattice point (i, h, k) (h: plate boundary) and ``HOLE_PIECE / HOLE_CONN`` the hole there;
``pieces[e, p]`` = (part, quarter, i0, j0, k0, colour, first slot), part −1 once removed; ``used[e, s]`` whether
the connector in slot s is joined (connector c of piece p holds slot ``pieces[e, p, SLOT] + c``: a piece takes as
many slots as its part has connectors, so a batch holds the connectors its pieces have, not its widest part's
for every piece); ``meta[e]`` = (next piece id, pieces alive, next free slot).
Tables: :meth:`~brick_gym.lattice.tables.LatticeParts.arrays`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

OWNER, STUD_PIECE, STUD_CONN, HOLE_PIECE, HOLE_CONN = 0, 1, 2, 3, 4
CHANNELS = 5
NEXT, ALIVE, SLOTS = 0, 1, 2
SLOT = 6
"""The column of ``pieces`` holding a piece's first connector slot."""

OK, NO_MATE, OCCUPIED, PART_LIMIT, OUT_OF_STOCK, COLLISION, UNDECIDED = 0, 1, 2, 3, 4, 5, 6
REASONS = (None, "no_mate", "occupied", "part_limit", "out_of_stock", "collision", None)
"""The reason code of each verdict as ``Assembly.place`` words it (None: placed, or undecided)."""

_BOX, _OTHER, _STUD = 1, 0, 1


@njit(cache=True)
def collides(grid, pieces, e, part, q, i0, j0, k0, kind, dims, pair_start, pair_value):
    """OK, COLLISION, or UNDECIDED (a contained part shares cells with a piece the meshes clear: one owner per
    cell cannot hold that) for part ``part`` turned ``q`` with low cell (i0, j0, k0); also UNDECIDED when the
    box leaves the region."""
    nx, ny, nz = dims[part, q, 0], dims[part, q, 1], dims[part, q, 2]
    big_x, big_u, big_z = grid.shape[2], grid.shape[3] - 1, grid.shape[4]
    if i0 < 0 or j0 < 0 or k0 < 0 or i0 + nx > big_x or j0 + ny > big_u or k0 + nz > big_z:
        return UNDECIDED
    shared = False
    a = part * 4 + q
    for i in range(i0, i0 + nx):
        for j in range(j0 - 1, j0 + ny + 1):
            if j < 0 or j >= big_u:
                continue
            inside = j0 <= j < j0 + ny
            for k in range(k0, k0 + nz):
                o = grid[e, OWNER, i, j, k]
                if o < 0:
                    continue
                op, oq = pieces[e, o, 0], pieces[e, o, 1]
                if kind[part] == _BOX and kind[op] == _BOX:
                    if inside:
                        return COLLISION
                    continue
                bx, by, bz = dims[op, oq, 0], dims[op, oq, 1], dims[op, oq, 2]
                dx, dy, dz = pieces[e, o, 2] - i0, pieces[e, o, 3] - j0, pieces[e, o, 4] - k0
                if dx < 1 - bx or dx > nx - 1 or dz < 1 - bz or dz > nz - 1 or dy < -by or dy > ny:
                    continue
                at = pair_start[a, op * 4 + oq]
                at += ((dx - 1 + bx) * (ny + by + 1) + (dy + by)) * (nz + bz - 1) + (dz - 1 + bz)
                if pair_value[at]:
                    return COLLISION
                if inside:
                    shared = True
    return UNDECIDED if shared else OK


@njit(cache=True)
def target_point(pieces, e, host, conn, conn_kind, conn_point, conn_turn):
    """(i, h, k, frame turn) of a piece's connector on the lattice, turn −1 when it is off the lattice points."""
    part, q = pieces[e, host, 0], pieces[e, host, 1]
    if conn_kind[part, conn] == _OTHER:
        return 0, 0, 0, -1
    return (
        pieces[e, host, 2] + conn_point[part, q, conn, 0],
        pieces[e, host, 3] + conn_point[part, q, conn, 1],
        pieces[e, host, 4] + conn_point[part, q, conn, 2],
        conn_turn[part, q, conn],
    )


@njit(cache=True)
def check(
    grid, pieces, used, meta, stock, limit, e, host, conn, part, source, yaw, colour,
    kind, dims, conn_kind, conn_mate, mates, conn_point, conn_turn, place, pair_start, pair_value, out,
):  # fmt: skip
    """The verdict of placing ``part`` by connector ``source`` on connector ``conn`` of piece ``host`` turned by
    yaw index ``yaw``, in the order ``Assembly.place`` refuses (mate, occupied, part limit, stock, collision);
    writes the new piece's (quarter, i0, j0, k0) into ``out``. ``stock[e, part, colour]`` < 0: unlimited;
    ``limit`` < 0: no part limit."""
    hp = pieces[e, host, 0]
    if not mates[conn_mate[hp, conn], conn_mate[part, source]]:
        return NO_MATE
    if used[e, pieces[e, host, SLOT] + conn]:
        return OCCUPIED
    if limit >= 0 and meta[e, ALIVE] >= limit:
        return PART_LIMIT
    if stock[e, part, colour] == 0:
        return OUT_OF_STOCK
    i, h, k, turn = target_point(pieces, e, host, conn, conn_kind, conn_point, conn_turn)
    if turn < 0 or meta[e, NEXT] >= pieces.shape[1]:
        return UNDECIDED
    q = place[turn, part, source, yaw, 0]
    if q < 0:
        return UNDECIDED
    i0, j0, k0 = (
        i + place[turn, part, source, yaw, 1],
        h + place[turn, part, source, yaw, 2],
        k + place[turn, part, source, yaw, 3],
    )
    out[0], out[1], out[2], out[3] = q, i0, j0, k0
    return collides(grid, pieces, e, part, q, i0, j0, k0, kind, dims, pair_start, pair_value)


@njit(cache=True)
def commit(grid, pieces, used, meta, stock, e, part, q, i0, j0, k0, colour, dims, nconn, conn_kind, conn_mate,
           mates, conn_point):  # fmt: skip
    """Add a piece whose placement :func:`check` passed (or a start piece); join its studs and holes with the free
    holes and studs on the same lattice points. Returns (piece id, new joints)."""
    slot = meta[e, SLOTS]
    if slot + nconn[part] > used.shape[1]:
        raise IndexError("the batch has no connector slots left for this piece")
    pid = meta[e, NEXT]
    meta[e, NEXT] += 1
    meta[e, ALIVE] += 1
    meta[e, SLOTS] += nconn[part]
    if stock[e, part, colour] > 0:
        stock[e, part, colour] -= 1
    pieces[e, pid, 0], pieces[e, pid, 1], pieces[e, pid, 5], pieces[e, pid, SLOT] = part, q, colour, slot
    pieces[e, pid, 2], pieces[e, pid, 3], pieces[e, pid, 4] = i0, j0, k0
    for i in range(i0, i0 + dims[part, q, 0]):
        for j in range(j0, j0 + dims[part, q, 1]):
            for k in range(k0, k0 + dims[part, q, 2]):
                grid[e, OWNER, i, j, k] = pid
    joints = 0
    for c in range(nconn[part]):
        ck = conn_kind[part, c]
        if ck == _OTHER:
            continue
        i, h, k = i0 + conn_point[part, q, c, 0], j0 + conn_point[part, q, c, 1], k0 + conn_point[part, q, c, 2]
        if ck == _STUD:
            grid[e, STUD_PIECE, i, h, k], grid[e, STUD_CONN, i, h, k] = pid, c
            other, oc = grid[e, HOLE_PIECE, i, h, k], grid[e, HOLE_CONN, i, h, k]
        else:
            grid[e, HOLE_PIECE, i, h, k], grid[e, HOLE_CONN, i, h, k] = pid, c
            other, oc = grid[e, STUD_PIECE, i, h, k], grid[e, STUD_CONN, i, h, k]
        free = other >= 0 and other != pid and not used[e, pieces[e, other, SLOT] + oc]
        if free and mates[conn_mate[part, c], conn_mate[pieces[e, other, 0], oc]]:
            used[e, pieces[e, other, SLOT] + oc] = 1
            used[e, slot + c] = 1
            joints += 1
    return pid, joints


@njit(cache=True)
def remove(grid, pieces, used, meta, stock, e, pid, dims, nconn, conn_kind, conn_point):
    """Remove a piece: its cells, its studs and holes, and its joints (their other ends become free)."""
    part, q = pieces[e, pid, 0], pieces[e, pid, 1]
    i0, j0, k0 = pieces[e, pid, 2], pieces[e, pid, 3], pieces[e, pid, 4]
    for i in range(i0, i0 + dims[part, q, 0]):
        for j in range(j0, j0 + dims[part, q, 1]):
            for k in range(k0, k0 + dims[part, q, 2]):
                if grid[e, OWNER, i, j, k] == pid:
                    grid[e, OWNER, i, j, k] = -1
    for c in range(nconn[part]):
        ck = conn_kind[part, c]
        if ck == _OTHER:
            continue
        i, h, k = i0 + conn_point[part, q, c, 0], j0 + conn_point[part, q, c, 1], k0 + conn_point[part, q, c, 2]
        mine, theirs = (STUD_PIECE, HOLE_PIECE) if ck == _STUD else (HOLE_PIECE, STUD_PIECE)
        if grid[e, mine, i, h, k] == pid:
            grid[e, mine, i, h, k] = -1
        if used[e, pieces[e, pid, SLOT] + c]:
            other = grid[e, theirs, i, h, k]
            if other >= 0:
                used[e, pieces[e, other, SLOT] + grid[e, theirs + 1, i, h, k]] = 0
            used[e, pieces[e, pid, SLOT] + c] = 0
    colour = pieces[e, pid, 5]
    if stock[e, part, colour] >= 0:
        stock[e, part, colour] += 1
    pieces[e, pid, 0] = -1
    meta[e, ALIVE] -= 1


@njit(cache=True)
def _root(parent, a):
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return a


@njit(cache=True)
def components(grid, pieces, used, meta, e, nconn, conn_kind, conn_point):
    """(labels, count): each piece's component (smallest piece id in it; −1 for removed ids) by its joined
    studs' holes, looked up on the lattice points."""
    n = meta[e, NEXT]
    parent = np.arange(n)
    for p in range(n):
        part = pieces[e, p, 0]
        if part < 0:
            continue
        q = pieces[e, p, 1]
        for c in range(nconn[part]):
            if conn_kind[part, c] != _STUD or not used[e, pieces[e, p, SLOT] + c]:
                continue
            i = pieces[e, p, 2] + conn_point[part, q, c, 0]
            h = pieces[e, p, 3] + conn_point[part, q, c, 1]
            k = pieces[e, p, 4] + conn_point[part, q, c, 2]
            other = grid[e, HOLE_PIECE, i, h, k]
            ra, rb = _root(parent, p), _root(parent, other)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    labels = np.full(n, -1)
    count = 0
    for p in range(n):
        if pieces[e, p, 0] >= 0:
            labels[p] = _root(parent, p)
            count += labels[p] == p
    return labels, count


@njit(cache=True)
def fidelity_add(goal, built, counts, e, part, q, i0, j0, k0, colour, vox, nvox):
    """Count a new piece's fidelity cells against the target (region coordinates): ``goal[e]`` the target's colour
    per cell (−1 none, −2 outside the target's arrays: not counted, as ``TargetProgress`` does), ``built[e]`` the
    built colour (−1 none; the first piece keeps a cell), ``counts[e]`` = (built, built in the target, built in its
    colour, pieces with cells outside the arrays)."""
    outside = False
    for n in range(nvox[part, q]):
        i, j, k = i0 + vox[part, q, n, 0], j0 + vox[part, q, n, 1], k0 + vox[part, q, n, 2]
        g = goal[e, i, j, k]
        if g == -2:
            outside = True
            continue
        if built[e, i, j, k] >= 0:
            continue
        built[e, i, j, k] = colour
        counts[e, 0] += 1
        if g >= 0:
            counts[e, 1] += 1
            if g == colour:
                counts[e, 2] += 1
    if outside:
        counts[e, 3] += 1


@njit(cache=True)
def restart(grid, pieces, used, meta, stock, built, goal, counts, envs, parts, colours, lows, stock0, dims, nconn,
            conn_kind, conn_mate, mates, conn_point, vox, nvox):  # fmt: skip
    """Empty each env ``envs[n]`` (stock ``stock0``, nothing built) and put its start piece ``parts[n]`` in colour
    ``colours[n]`` at quarter 0 with its low cell at region cell ``lows[n]`` (taking one from the stock like any
    piece), its fidelity cells counted against ``goal``."""
    for n in range(len(envs)):
        e = envs[n]
        grid[e] = -1
        pieces[e] = -1
        used[e] = 0
        meta[e] = 0
        stock[e] = stock0
        built[e] = -1
        counts[e] = 0
        i0, j0, k0 = lows[n, 0], lows[n, 1], lows[n, 2]
        commit(grid, pieces, used, meta, stock, e, parts[n], 0, i0, j0, k0, colours[n], dims, nconn, conn_kind,
               conn_mate, mates, conn_point)  # fmt: skip
        fidelity_add(goal, built, counts, e, parts[n], 0, i0, j0, k0, colours[n], vox, nvox)


__all__ = [
    "COLLISION",
    "NO_MATE",
    "OCCUPIED",
    "OK",
    "OUT_OF_STOCK",
    "PART_LIMIT",
    "REASONS",
    "UNDECIDED",
    "check",
    "collides",
    "commit",
    "components",
    "fidelity_add",
    "remove",
    "restart",
]
