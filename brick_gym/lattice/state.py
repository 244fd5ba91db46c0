"""A batch of lattice assemblies in flat arrays, with Python methods over the compiled kernels.

Each env of the batch is an assembly of lattice parts (:mod:`.tables`) inside a region of cells; pieces are
placed the connector way (host piece, target connector, part, source connector, yaw index) and the kernels
decide each placement as ``Assembly.place`` would, or say ``UNDECIDED`` (off the lattice, outside the region,
a yaw the tables do not cover, or shared cells the meshes clear), where the exact path must decide.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from brick_gym.core.colours import colour as get_colour
from brick_gym.core.occupancy import contained_shape, lattice_place
from brick_gym.lattice import kernels as kn
from brick_gym.lattice.tables import LatticeParts, build_tables


class LatticeBatch:
    """``envs`` lattice assemblies over one part set, colour list and region (see :mod:`.kernels` for the
    arrays). ``origin`` is the lattice index of every env's region cell (0, 0, 0) (per env or shared); ``slots``
    how many connectors an env's pieces may hold in all (default: ``max_pieces`` of the widest part)."""

    def __init__(
        self,
        stems: Sequence[str] | LatticeParts,
        colours: Sequence[int],
        *,
        envs: int = 1,
        region: tuple[int, int, int] = (32, 32, 32),
        origin: Sequence[int] | np.ndarray = (-16, -8, -16),
        max_pieces: int = 256,
        limit: int = -1,
        slots: int | None = None,
    ) -> None:
        self.tables = stems if isinstance(stems, LatticeParts) else build_tables(stems)
        self.colours = tuple(int(get_colour(c).code) for c in colours)
        self.region = tuple(int(n) for n in region)
        self.origin = np.broadcast_to(np.asarray(origin, dtype=np.int64), (envs, 3)).copy()
        self.limit = int(limit)
        x, u, z = self.region
        parts = len(self.tables.stems)
        small = max(max_pieces, self.tables.conn_kind.shape[1]) < 2**15  # piece ids and connector indices fit
        self.grid = np.full((envs, kn.CHANNELS, x, u + 1, z), -1, dtype=np.int16 if small else np.int32)
        self.pieces = np.full((envs, max_pieces, 7), -1, dtype=np.int32)
        slots = max_pieces * self.tables.conn_kind.shape[1] if slots is None else int(slots)
        self.used = np.zeros((envs, slots), dtype=np.int8)
        self.meta = np.zeros((envs, 3), dtype=np.int64)
        self.stock = np.full((envs, parts, len(self.colours)), -1, dtype=np.int32)
        self._out = np.zeros(4, dtype=np.int64)

    @property
    def envs(self) -> int:
        """How many assemblies the batch holds."""
        return len(self.meta)

    def clear(self, e: int) -> None:
        """Empty env ``e`` (stock back to unlimited)."""
        self.grid[e] = -1
        self.pieces[e] = -1
        self.used[e] = 0
        self.meta[e] = 0
        self.stock[e] = -1

    # ----- placing ---------------------------------------------------------------------------------------------
    def add(self, e: int, stem: str, colour: int | str, pose: np.ndarray) -> int:
        """Put a start piece at a world pose on the lattice (ValueError when the pose is off it or outside the
        region); its id."""
        part = self.tables.index(stem)
        placed = lattice_place(contained_shape(stem), pose)  # type: ignore[arg-type]
        if placed is None:
            raise ValueError(f"{stem} at this pose is off the lattice")
        q, (i0, j0, k0, *_) = placed
        low = np.array([i0, j0, k0]) - self.origin[e]
        dims = self.tables.dims[part, q]
        if np.any(low < 0) or np.any(low + dims > self.region):
            raise ValueError(f"{stem} at this pose lies outside the lattice region")
        pid, _ = self._commit(e, part, q, *low.tolist(), self.colour_index(colour))
        return pid

    def check(self, e: int, host: int, conn: int, part: int, source: int, yaw: int, colour: int) -> int:
        """The verdict code (:mod:`.kernels`) of one connector placement; ``colour`` is a colour index."""
        t = self.tables
        return int(
            kn.check(
                self.grid, self.pieces, self.used, self.meta, self.stock, self.limit, e, host, conn, part, source,
                yaw, colour, t.kind, t.dims, t.conn_kind, t.conn_mate, t.mates, t.conn_point, t.conn_turn, t.place,
                t.pair_start, t.pair_value, self._out,
            )
        )  # fmt: skip

    def place(
        self, e: int, host: int, conn: int, part: int, source: int, yaw: int, colour: int
    ) -> tuple[int, int, int]:
        """Check and commit a placement: (verdict, new piece id or −1, new joints)."""
        verdict = self.check(e, host, conn, part, source, yaw, colour)
        if verdict != kn.OK:
            return verdict, -1, 0
        q, i0, j0, k0 = self._out.tolist()
        pid, joints = self._commit(e, part, q, i0, j0, k0, colour)
        return verdict, pid, joints

    def _commit(self, e: int, part: int, q: int, i0: int, j0: int, k0: int, colour: int) -> tuple[int, int]:
        t = self.tables
        pid, joints = kn.commit(
            self.grid, self.pieces, self.used, self.meta, self.stock, e, part, q, i0, j0, k0, colour, t.dims,
            t.nconn, t.conn_kind, t.conn_mate, t.mates, t.conn_point,
        )  # fmt: skip
        return int(pid), int(joints)

    def remove(self, e: int, pid: int) -> None:
        """Remove a piece and its joints."""
        if not 0 <= pid < self.meta[e, kn.NEXT] or self.pieces[e, pid, 0] < 0:
            raise KeyError(f"no piece #{pid} in env {e}")
        t = self.tables
        kn.remove(self.grid, self.pieces, self.used, self.meta, self.stock, e, pid, t.dims, t.nconn, t.conn_kind,
                  t.conn_point)  # fmt: skip

    # ----- reading ---------------------------------------------------------------------------------------------
    def components(self, e: int) -> int:
        """How many connected components env ``e``'s pieces form (by stud joints)."""
        t = self.tables
        _, count = kn.components(self.grid, self.pieces, self.used, self.meta, e, t.nconn, t.conn_kind, t.conn_point)
        return int(count)

    def joint_count(self, e: int) -> int:
        """How many stud joints env ``e`` holds (each joins two connectors)."""
        return int(self.used[e].sum()) // 2

    def alive(self, e: int) -> list[int]:
        """Ids of env ``e``'s pieces, ascending."""
        n = int(self.meta[e, kn.NEXT])
        return np.flatnonzero(self.pieces[e, :n, 0] >= 0).tolist()

    def colour_index(self, colour: int | str) -> int:
        """A colour's index in the batch's colour list (ValueError when it is not one of them)."""
        code = int(get_colour(colour).code)
        if code not in self.colours:
            raise ValueError(f"colour {colour!r} is not one of the batch's colours {self.colours}")
        return self.colours.index(code)

    def pose(self, e: int, pid: int) -> np.ndarray:
        """The world pose of a piece (LDraw frame), as the exact path would give it."""
        part, q, i0, j0, k0 = self.pieces[e, pid, :5].tolist()
        shape = contained_shape(self.tables.stems[part])
        assert shape is not None
        (lx, lu, lz), _ = shape.turned[q]
        low = (np.array([i0, j0, k0]) + self.origin[e]) * np.array([20.0, 8.0, 20.0])
        pose = np.eye(4)
        c, s = ((1, 0), (0, 1), (-1, 0), (0, -1))[q]
        pose[:3, :3] = [[c, 0, s], [0, 1, 0], [-s, 0, c]]
        pose[:3, 3] = (low[0] - lx, -(low[1] - lu), low[2] - lz)
        return pose


__all__ = ["LatticeBatch"]
