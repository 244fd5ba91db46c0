"""The default action encoding of the batched lattice env, :class:`ColumnEncoding` (palette part, quarter turn, low
column, colour; see :mod:`brick_gym.lattice.columns`); it implements
:class:`~brick_gym.envs.lattice_vector.LatticeEncoding`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from brick_gym.core.catalog import part as get_part
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.lattice import columns as cols
from brick_gym.lattice.column_tables import ColumnTables
from brick_gym.lattice.tables import YAWS

if TYPE_CHECKING:
    from brick_gym.envs.lattice_vector import LatticeVectorEnv


class ColumnEncoding:
    """(palette part, quarter turn, low column, colour) actions, each part offering the colours its layout stocks;
    see :mod:`brick_gym.lattice.columns`. Its state: the height map, the column tops, ``legal`` per (part, q,
    column) and ``nlegal`` per env."""

    def bind(self, env: LatticeVectorEnv) -> int:
        """Per palette part, 4 quarter turns × columns × the colours it offers (every colour, or those the
        layout's stock does not leave at 0)."""
        x, _, z = env.batch.region
        n = env.num_envs
        self.tables = ColumnTables(env.batch.tables, env.palette_part, env.inv_yaw)
        self.heights = np.zeros((n, x, z), dtype=np.int64)
        self.tops = np.zeros((n, 1 + self.tables.words, x, z), dtype=np.int64)
        self.cls = np.zeros((n, self.tables.classes, x, z), dtype=np.int8)
        self.legal = np.zeros((n, len(env.palette_part) * 4 * x * z), dtype=np.int8)
        self.nlegal = np.zeros((n, len(env.palette_part) * 4), dtype=np.int64)
        self.allowed = np.zeros(n, dtype=np.bool_)
        self.windows = np.zeros((n, 2 + self.tables.words, len(self.tables.feet), x, z), dtype=np.int64)
        self.state = (self.heights, self.tops, self.cls, self.legal, self.nlegal, self.windows)
        """What the column kernels keep per env (their ``cs``)."""
        colours = len(env.batch.colours)
        stock = env.layout.stock
        offered = [
            list(range(colours)) if stock is None else np.flatnonzero(stock[p] != 0).tolist()
            for p in env.palette_part.tolist()
        ]
        self.ncol = np.array([len(c) for c in offered], dtype=np.int64)
        """Colours each palette part offers."""
        self.slot_colours = np.full((len(offered), max(1, int(self.ncol.max(initial=0)))), -1, dtype=np.int64)
        """(parts, most colours) the colour index of each part's k-th colour (−1 padding)."""
        for s, c in enumerate(offered):
            self.slot_colours[s, : len(c)] = c
        self.offset = np.concatenate([[0], np.cumsum(self.ncol * 4 * x * z)]).astype(np.int64)
        """The first action of each palette part (the last entry: how many actions besides STOP)."""
        self.acts = (self.offset, self.ncol, self.slot_colours)
        self.columns = (x, z)
        return int(self.offset[-1])

    def action(self, part: int, q: int, ci: int, ck: int, colour: int) -> int:
        """The action of palette part ``part`` turned ``q`` with low column (``ci``, ``ck``) in colour index
        ``colour`` (ValueError when the part does not offer that colour)."""
        offered = self.slot_colours[part, : self.ncol[part]].tolist()
        if colour not in offered:
            raise ValueError(f"palette part {part} offers colour indices {offered}, not {colour}")
        x, z = self.columns
        local = (q * x + ci) * z + ck
        return int(self.offset[part] + local * self.ncol[part] + offered.index(colour))

    def reset_masks(self, env: LatticeVectorEnv, envs: np.ndarray | list[int] | int) -> None:
        """Every action of ``envs`` decided (heights from their pieces' tops)."""
        b = env.batch
        rows = np.atleast_1d(np.asarray(envs, dtype=np.int64))
        cols.reset_masks(b.grid, b.pieces, b.used, b.meta, b.stock, env.masks, self.allowed, self.state, rows,
                         env.kernel_tables(), self.tables.arrays(), self.acts)  # fmt: skip

    def step(self, env: LatticeVectorEnv, actions: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, ...]:
        """All envs in one compiled pass."""
        codes = np.empty(env.num_envs, dtype=np.int64)
        joints = np.zeros(env.num_envs, dtype=np.int64)
        b = env.batch
        t = b.tables
        cols.step_all(
            np.asarray(actions, dtype=np.int64), active, codes, joints, self.allowed, b.grid, b.pieces, b.used,
            b.meta, b.stock, env.masks, self.state, env.built, env.goal, env.counts, env.kernel_tables(),
            self.tables.arrays(), self.acts, t.vox, t.nvox,
        )  # fmt: skip
        return codes, joints, self.allowed.copy()

    def reason(self, code: int) -> str:
        """The column verdict's wording, or ``bad_action`` for an action outside the space."""
        return cols.VERDICTS[code] if 0 < code < len(cols.VERDICTS) else "bad_action"

    def placement(self, env: LatticeVectorEnv, e: int, action: int) -> Placement | None:
        """The attachment :func:`~brick_gym.lattice.columns.evaluate` finds (the one the step commits)."""
        x, _, z = env.batch.region
        if action == env.stop_action:
            return None
        s, base, colour = (int(v) for v in cols.decode(action, *self.acts, 4 * x * z))
        ck, ci, q = base % z, (base // z) % x, (base // (z * x)) % 4
        row = np.zeros(5, dtype=np.int64)
        b = env.batch
        cols.evaluate(b.grid, b.pieces, b.used, self.heights, e, int(env.palette_part[s]), q, ci, ck,
                      *env.kernel_tables(), row)  # fmt: skip
        host, conn, source, yaw, _ = row.tolist()
        stem = env.batch.tables.stems[env.palette_part[s]]
        host_part = get_part(env.batch.tables.stems[env.batch.pieces[e, host, 0]])
        target, new = host_part.connectors[conn], get_part(stem).connectors[source]
        return Placement(
            stem,
            env.batch.colours[colour],
            ConnectorRef(host, target.group, target.group_index),
            (new.group, new.group_index),
            YAWS[yaw],
        )

    def sample(self, env: LatticeVectorEnv, u: np.ndarray) -> np.ndarray:
        """A uniform allowed action per env (STOP only when nothing else is allowed; compiled)."""
        return cols.sample(self.legal, self.nlegal, env.batch.stock, env.palette_part, self.acts, u)


__all__ = ["ColumnEncoding"]
