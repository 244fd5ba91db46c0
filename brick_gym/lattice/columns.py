"""The column encoding's compiled kernels: a placement is (palette part, colour, quarter turn, low column), the
piece resting on the highest cell under its footprint and attached by its first hole (connector order) over a
free stud there. Each such action maps to one connector placement (host, target connector, source, yaw), which
the exact path places at the same pose; the mask is exact for the encoding (every allowed action is legal) and
kept incrementally.

Mask layout per env: a palette part offers its own colours (``acts``: per part the first action ``offset``, how
many colours ``ncol`` and which ``slot_colours``, colour indices), and its actions are ``offset[s] + local * ncol[s]
+ k`` with ``local = (q * X + ci) * Z + ck``, then STOP; ``legal[e, base]`` keeps each shape-column's verdict
(``base = s * 4 * X * Z + local``, what the sampler reads). When every part offers every colour this is ``base *
colours + colour``.

Why it is fast: an action's verdict reads only its footprint's columns, so each column keeps a summary of its top
(``tops``: which hole subtypes its free top stud takes, which palette shapes resting on its top piece need the
meshes), each of the few distinct patterns (footprint and the columns under its holes: 8 for the Fidelity palette)
folds a window of columns once (the highest top over the footprint, the studs over its hole columns there), and each
class of part-quarters (same footprint, height and hole subtype: 14 classes for 40 part-quarters) reads its
verdict off the window and compares it with the one it keeps per low column (``cls``). A commit changes only the
new piece's columns, all to one height: only the windows meeting them are updated, from those columns alone (the
windows are kept per env), only the windows whose highest column the new piece reaches are decided again, and a
class's shapes and mask rows are written only where its verdict changed. Whatever the summary cannot decide (a
part whose holes are not one subtype under every column, a shape whose meshes may meet the piece below) goes
through :func:`evaluate`, the authority.

Per-env state of the kernels (``cs``): ``heights`` (N, X, Z), ``tops`` (N, 1 + W, X, Z) with W the words of a
palette-shape bitmask (:data:`~brick_gym.lattice.column_tables.BITS`; none when no shape is at risk), ``cls``
(N, K, X, Z), ``legal`` (N, shapes × X × Z), ``nlegal`` (N, shapes) legal low columns per palette shape, ``win``
(N, 2 + W, F, X, Z) each pattern's window per low column.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from brick_gym.lattice import kernels as kn
from brick_gym.lattice.column_tables import BITS

LEGAL, OUTSIDE, NO_SUPPORT, COLLISION, NO_STOCK = 0, 1, 2, 3, 4
VERDICTS = ("placed", "outside_region", "no_mate", "collision", "out_of_stock")
"""``info["invalid_reason"]`` of each column verdict (no free stud under the footprint reads as ``no_mate``)."""
STOPPED, SKIPPED, BAD = 9, 10, len(VERDICTS)
"""Step codes besides the verdicts: STOP taken, env not stepped (autoreset), action outside the space."""

EVALUATE_STATE, UNKNOWN_STATE = 2, 3
"""A class's state per low column besides 0 (no shape of it legal) and 1 (all legal): decided shape by shape, not
decided yet (after a reset)."""

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
        if used[e, pieces[e, sp, kn.SLOT] + sc] or not mates[conn_mate[host_part, sc], conn_mate[part, c]]:
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


@njit(cache=True)
def column_tops(grid, pieces, used, heights, tops, e, lo_i, hi_i, lo_k, hi_k, conn_mate, mates, conn_turn, risk):
    """Summarise the tops of columns [lo_i, hi_i] × [lo_k, hi_k] of env ``e``: ``tops[e, 0, i, k]`` bit m when a
    free upright stud on the column's top takes a hole of subtype m, ``tops[e, 1:, i, k]`` the palette shapes whose
    placement on the column's top piece needs the meshes (``risk`` of its shape, in words)."""
    codes = min(mates.shape[0], BITS)
    words = risk.shape[1]
    for i in range(lo_i, hi_i + 1):
        for k in range(lo_k, hi_k + 1):
            j0 = heights[e, i, k]
            bits = np.int64(0)
            for w in range(words):
                tops[e, 1 + w, i, k] = 0
            if j0 > 0:
                o = grid[e, kn.OWNER, i, j0 - 1, k]
                if o >= 0:
                    shape = pieces[e, o, 0] * 4 + pieces[e, o, 1]
                    for w in range(words):
                        tops[e, 1 + w, i, k] = risk[shape, w]
                sp = grid[e, kn.STUD_PIECE, i, j0, k]
                if sp >= 0:
                    sc = grid[e, kn.STUD_CONN, i, j0, k]
                    hp = pieces[e, sp, 0]
                    if not used[e, pieces[e, sp, kn.SLOT] + sc] and conn_turn[hp, pieces[e, sp, 1], sc] >= 0:
                        m = conn_mate[hp, sc]
                        for c in range(codes):
                            if mates[m, c]:
                                bits |= np.int64(1) << c
            tops[e, 0, i, k] = bits


@njit(cache=True, inline="always")  # inlined: a call counts a reference to each array of its tuples
def refresh(grid, pieces, used, stock, masks, cs, e, lo_i, hi_i, lo_k, hi_k, top, tabs, cols, acts):
    """Re-decide every action of env ``e`` whose footprint meets columns [lo_i, hi_i] × [lo_k, hi_k] (their tops
    summarised): each pattern's windows kept in ``win`` (N, 2 + W, F, X, Z: highest column, hole subtypes and risk
    words there), each class's verdict read off its pattern's window and compared with the one kept in ``cls``;
    where it changed (or the meshes must decide), the class's shapes are decided, by :func:`evaluate` where the
    summary cannot, and ``legal``, ``nlegal`` and the mask (legal and in stock, per colour the part offers) written
    where a verdict flips. ``top`` −1 (after a reset): the windows are folded from scratch. Else a commit raised
    every changed column to ``top``, the new piece's top: a window's highest column becomes ``top`` where it was
    not above it, with the changed columns' summaries, and a window whose highest column stays above ``top`` reads
    nothing that changed (the piece lies below its top cells and free studs), so its classes are not looked at.
    One loop nest, not helpers per window or class: a compiled call that takes the tables' tuples counts a reference
    to each of their arrays (a helper per class and window made a step 5× slower)."""
    kind, dims, nconn, conn_kind, conn_mate, mates, conn_point, conn_turn, place, pair_start, pair_value, inv_yaw = tabs
    palette_part, feet, _, fclass, cny, ccode, cmask, cshapes, cn, fmask, ftall = cols
    heights, tops, cls, legal, nlegal, win = cs
    offset, ncol, slot_colours = acts
    big_x, big_u, big_z = grid.shape[2], grid.shape[3] - 1, grid.shape[4]
    per_part = 4 * big_x * big_z
    words = tops.shape[1] - 1
    row = np.zeros(5, dtype=np.int64)
    for f in range(len(feet)):
        fx, fz = feet[f, 0], feet[f, 1]
        for ci in range(max(0, lo_i - fx + 1), min(big_x - fx, hi_i) + 1):
            for ck in range(max(0, lo_k - fz + 1), min(big_z - fz, hi_k) + 1):
                if top < 0:  # the whole window, from scratch
                    i0, i1, k0, k1, j0 = ci, ci + fx - 1, ck, ck + fz - 1, -1
                elif top >= win[e, 0, f, ci, ck]:  # the changed columns, into the window as it was
                    i0, i1, k0, k1 = max(ci, lo_i), min(ci + fx - 1, hi_i), max(ck, lo_k), min(ck + fz - 1, hi_k)
                    j0 = win[e, 0, f, ci, ck]
                    before = win[e, 1, f, ci, ck]
                else:  # the change lies below the window's highest column: nothing it reads changed
                    continue
                for i in range(i0, i1 + 1):  # fold: the highest column, hole subtypes and risk words there
                    for k in range(k0, k1 + 1):
                        h = heights[e, i, k]
                        under_hole = fmask[f, (i - ci) * fz + (k - ck)]
                        if h > j0:
                            j0 = h
                            win[e, 1, f, ci, ck] = tops[e, 0, i, k] if under_hole else 0
                            for w in range(words):
                                win[e, 2 + w, f, ci, ck] = tops[e, 1 + w, i, k]
                        elif h == j0:
                            if under_hole:
                                win[e, 1, f, ci, ck] |= tops[e, 0, i, k]
                            for w in range(words):
                                win[e, 2 + w, f, ci, ck] |= tops[e, 1 + w, i, k]
                win[e, 0, f, ci, ck] = j0
                bits = win[e, 1, f, ci, ck]
                if top >= 0 and bits == before and words == 0 and j0 + ftall[f] <= big_u:
                    continue  # the same hole subtypes, and every class fits under the region's top: no verdict moves
                for c in range(fclass[f], fclass[f + 1]):  # the pattern's classes: verdict, then shapes if changed
                    ny, code = cny[c], ccode[c]
                    risky = False
                    for w in range(words):
                        if win[e, 2 + w, f, ci, ck] & cmask[c, w]:
                            risky = True
                    if j0 + ny > big_u:
                        state = 0
                    elif code < 0 or risky:
                        state = EVALUATE_STATE
                    else:
                        state = (bits >> code) & 1
                    if state == cls[e, c, ci, ck] and state != EVALUATE_STATE:
                        continue
                    cls[e, c, ci, ck] = state
                    for n in range(cn[c]):
                        a = cshapes[c, n]
                        if state != EVALUATE_STATE:
                            ok = state
                        elif code < 0 or (win[e, 2 + a // BITS, f, ci, ck] >> (a % BITS)) & 1:
                            verdict = evaluate(
                                grid, pieces, used, heights, e, palette_part[a // 4], a % 4, ci, ck, kind, dims,
                                nconn, conn_kind, conn_mate, mates, conn_point, conn_turn, place, pair_start,
                                pair_value, inv_yaw, row,
                            )  # fmt: skip
                            ok = 1 if verdict == LEGAL else 0
                        else:
                            ok = (bits >> code) & 1
                        base = (a * big_x + ci) * big_z + ck
                        if legal[e, base] != ok:
                            legal[e, base] = ok
                            nlegal[e, a] += 1 if ok else -1
                            s = a // 4
                            part = palette_part[s]
                            first = offset[s] + (base - s * per_part) * ncol[s]
                            for m in range(ncol[s]):
                                masks[e, first + m] = 1 if ok and stock[e, part, slot_colours[s, m]] != 0 else 0


@njit(cache=True)
def reset_masks(grid, pieces, used, meta, stock, masks, allowed, cs, envs, tabs, cols, acts):
    """Every action of each env in ``envs`` decided from scratch (after a reset): the height map from its pieces,
    the column tops, then every window; ``allowed`` as :func:`step_all` sets it."""
    dims = tabs[1]
    heights, tops, cls, legal, nlegal, _ = cs
    big_x, big_z = grid.shape[2], grid.shape[4]
    for e in envs:
        masks[e, :-1] = 0
        masks[e, -1] = 1
        legal[e] = 0
        nlegal[e] = 0
        cls[e] = UNKNOWN_STATE
        heights[e] = 0
        for p in range(meta[e, kn.NEXT]):
            part, q = pieces[e, p, 0], pieces[e, p, 1]
            if part < 0:
                continue
            i0, top, k0 = pieces[e, p, 2], pieces[e, p, 3] + dims[part, q, 1], pieces[e, p, 4]
            for i in range(i0, i0 + dims[part, q, 0]):
                for k in range(k0, k0 + dims[part, q, 2]):
                    heights[e, i, k] = max(heights[e, i, k], top)
        column_tops(grid, pieces, used, heights, tops, e, 0, big_x - 1, 0, big_z - 1, tabs[4], tabs[5], tabs[7],
                    cols[2])  # fmt: skip
        refresh(grid, pieces, used, stock, masks, cs, e, 0, big_x - 1, 0, big_z - 1, -1, tabs, cols, acts)
        allowed[e] = any_allowed(nlegal, stock, cols[0], acts, e)


@njit(cache=True)
def decode(action, offset, ncol, slot_colours, per_part):
    """(palette part, shape-column ``base``, colour index) of an action below STOP (see the module docstring)."""
    s = np.searchsorted(offset, action, side="right") - 1
    local = action - offset[s]
    return s, s * per_part + local // ncol[s], slot_colours[s, local % ncol[s]]


@njit(cache=True, inline="always")  # inlined into step_all, as refresh is
def apply(grid, pieces, used, meta, stock, masks, cs, built, goal, counts, e, action, tabs, cols, acts, vox, nvox,
          result):  # fmt: skip
    """Apply one legal (masked) action to env ``e``: commit the piece, raise the height map, count its fidelity
    cells, summarise its columns' tops and refresh the actions whose footprint meets them. ``result`` gets (piece
    id, new joints)."""
    kind, dims, nconn, conn_kind, conn_mate, mates, conn_point, conn_turn, place, pair_start, pair_value, inv_yaw = tabs
    palette_part = cols[0]
    offset, ncol, slot_colours = acts
    heights, tops = cs[0], cs[1]
    big_x, big_z = grid.shape[2], grid.shape[4]
    per_part = 4 * big_x * big_z
    s, base, colour = decode(action, offset, ncol, slot_colours, per_part)
    ck, ci, q = base % big_z, (base // big_z) % big_x, (base // (big_z * big_x)) % 4
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
    column_tops(grid, pieces, used, heights, tops, e, ci, ci + nx - 1, ck, ck + nz - 1, conn_mate, mates, conn_turn,
                cols[2])  # fmt: skip
    refresh(grid, pieces, used, stock, masks, cs, e, ci, ci + nx - 1, ck, ck + nz - 1, j0 + ny, tabs, cols, acts)
    if stock[e, part, colour] == 0:  # the last of a part in a colour: none of its actions stays allowed
        k = 0
        while slot_colours[s, k] != colour:
            k += 1
        for b in range(per_part):
            masks[e, offset[s] + b * ncol[s] + k] = 0
    result[0], result[1] = pid, joints


@njit(cache=True)
def step_all(actions, active, codes, joints, allowed, grid, pieces, used, meta, stock, masks, cs, built, goal, counts,
             tabs, cols, acts, vox, nvox):  # fmt: skip
    """Step every active env of the batch in one call: a masked action is applied (code 0, its new joints in
    ``joints``), a refused one leaves the env as it was (its verdict's code), STOP reads :data:`STOPPED`, an
    inactive env :data:`SKIPPED`; ``allowed[e]`` says whether any action besides STOP is allowed afterwards."""
    stop = masks.shape[1] - 1
    result = np.zeros(2, dtype=np.int64)
    row = np.zeros(5, dtype=np.int64)
    big_x, big_z = grid.shape[2], grid.shape[4]
    offset, ncol, slot_colours = acts
    kind, dims, nconn, conn_kind, conn_mate, mates, conn_point, conn_turn, place, pair_start, pair_value, inv_yaw = tabs
    for e in range(len(actions)):
        if not active[e]:
            codes[e] = SKIPPED
            continue
        a = actions[e]
        if a == stop:
            codes[e] = STOPPED
        elif a < 0 or a > stop:
            codes[e] = BAD
        elif masks[e, a] == 0:
            s, base, _ = decode(a, offset, ncol, slot_colours, 4 * big_x * big_z)
            ck, ci, q = base % big_z, (base // big_z) % big_x, (base // (big_z * big_x)) % 4
            part = cols[0][s]
            verdict = evaluate(
                grid, pieces, used, cs[0], e, part, q, ci, ck, kind, dims, nconn, conn_kind, conn_mate, mates,
                conn_point, conn_turn, place, pair_start, pair_value, inv_yaw, row,
            )  # fmt: skip
            codes[e] = verdict if verdict != LEGAL else NO_STOCK
        else:
            apply(grid, pieces, used, meta, stock, masks, cs, built, goal, counts, e, a, tabs, cols, acts, vox, nvox,
                  result)  # fmt: skip
            codes[e] = 0
            joints[e] = result[1]
        allowed[e] = any_allowed(cs[4], stock, cols[0], acts, e)


@njit(cache=True)
def any_allowed(nlegal, stock, palette_part, acts, e):
    """Whether env ``e`` allows any action besides STOP: a legal shape whose part has a colour it offers in stock."""
    ncol, slot_colours = acts[1], acts[2]
    for a in range(nlegal.shape[1]):
        if nlegal[e, a] > 0:
            s = a // 4
            for m in range(ncol[s]):
                if stock[e, palette_part[s], slot_colours[s, m]] != 0:
                    return True
    return False


@njit(cache=True)
def sample(legal, nlegal, stock, palette_part, acts, u):
    """A uniform allowed action per env (STOP when nothing else is): a legal (part, q, column) and a colour its part
    offers in stock, drawn together uniformly (a shape weighs its legal columns times its part's colours in stock)."""
    offset, ncol, slot_colours = acts
    per_shape = legal.shape[1] // nlegal.shape[1]
    out = np.empty(len(legal), dtype=np.int64)
    stop = offset[-1]
    in_stock = np.zeros(len(palette_part), dtype=np.int64)
    for e in range(len(legal)):
        out[e] = stop
        for s in range(len(palette_part)):
            in_stock[s] = 0
            for m in range(ncol[s]):
                in_stock[s] += stock[e, palette_part[s], slot_colours[s, m]] != 0
        total = 0
        for a in range(nlegal.shape[1]):
            total += nlegal[e, a] * in_stock[a // 4]
        if total == 0:
            continue
        pick = min(int(u[e] * total), total - 1)
        a = 0
        while pick >= nlegal[e, a] * in_stock[a // 4]:
            pick -= nlegal[e, a] * in_stock[a // 4]
            a += 1
        s = a // 4
        column, k = pick // in_stock[s], pick % in_stock[s]
        b = a * per_shape
        while True:
            if legal[e, b]:
                if column == 0:
                    break
                column -= 1
            b += 1
        for m in range(ncol[s]):
            if stock[e, palette_part[s], slot_colours[s, m]] != 0:
                if k == 0:
                    out[e] = offset[s] + (b - s * 4 * per_shape) * ncol[s] + m
                    break
                k -= 1
    return out


__all__ = [
    "BAD",
    "LEGAL",
    "SKIPPED",
    "STOPPED",
    "VERDICTS",
    "any_allowed",
    "apply",
    "column_tops",
    "decode",
    "evaluate",
    "inverse_yaws",
    "refresh",
    "reset_masks",
    "sample",
    "step_all",
]
