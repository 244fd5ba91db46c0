"""The incremental assembly core: pieces placed by connectors, checked before commit, with undo.

Every mutation returns an :class:`Outcome`; a refusal changes nothing and says why (reason code, pieces,
connectors). A checked placement costs O(neighbours): a grid of connector positions finds the joints the new
piece forms, and a grid of piece bounds feeds the mesh collision test. Components of the joint graph are kept
up to date. The whole object is plain data: it pickles, copies and compares without any native handles. The values
it takes and gives (pieces, connector references, joints, placements, outcomes) are :mod:`brick_gym.core.pieces`.
"""

from __future__ import annotations

import copy as _copy
import gc
import math
import re
from collections import ChainMap, Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import numpy as np

from brick_gym.core import connectors as cx
from brick_gym.core import joints as jx
from brick_gym.core.catalog import Connector, Part, UnknownPart, catalog
from brick_gym.core.collision import CollisionIndex, pair_verdicts, world_aabb
from brick_gym.core.colours import UnknownColour, colour
from brick_gym.core.occupancy import (
    CellIndex,
    LatticeConnectors,
    Range,
    lattice_connectors,
    range_of_bounds,
    studs_reach,
)
from brick_gym.core.pieces import Connection, ConnectorRef, Joint, JointTable, Outcome, Piece, Placement, colour_name
from brick_gym.core.poses import MAX_COORDINATE_LDU, is_rotation
from brick_gym.core.rules import Rules

_STUD_FAMILY = jx.family_name(jx.STUD)


def _refuse(reason: str, message: str, pieces: Iterable[int] = ()) -> Outcome:
    return Outcome(False, reason, message, None, tuple(pieces))


class Assembly:
    """Pieces, joints, components and stock, mutated only through checked operations."""

    def __init__(self, rules: Rules | None = None, *, strict: bool = True, name: str = "model") -> None:
        self.rules = rules or Rules()
        self.strict = strict
        self.name = name
        self.pieces: dict[int, Piece] = {}
        self.usage: Counter[tuple[str, int]] = Counter()
        self._next_id = 0
        self._links: dict[tuple[int, int], dict[tuple[int, int], Joint]] = {}
        self._adjacent: dict[int, dict[int, int]] = {}
        """piece -> {neighbour: joints between them} (plain dicts: a Counter costs microseconds per placement)."""
        self._component_of: dict[int, int] = {}
        self._members: dict[int, set[int]] = {}
        self._conn_grid = jx.ConnectorGrid()
        self._lattice_ids: set[int] = set()
        """Pieces under the lattice joint rule (box parts on the lattice, strict mode; ``occupancy``)."""
        self._unindexed: set[int] = set()
        """Lattice-rule pieces not yet in ``_conn_grid`` (added when a piece off the rule first needs them)."""
        self._loaded: set[int] = set()
        """Pieces ``add_all`` joined at once, not yet in ``_conn_grid`` (added when a later placement needs it)."""
        self._studs_at: dict[tuple[int, int, int], tuple[int, int]] = {}
        self._holes_at: dict[tuple[int, int, int], tuple[int, int]] = {}
        """Lattice-rule pieces' studs (keyed by the cell above them) and holes (by their own bottom cell)."""
        self._cells = CellIndex()
        """Box parts on the lattice (their cells decide their collisions exactly, see ``occupancy``)."""
        self._collisions = CollisionIndex()
        """Every other piece (fcl narrow phase)."""
        self._history: list[tuple] = []
        self._authored: dict[int, dict[Connection, None]] = {}
        self.revision = 0
        """Counts committed changes (pieces added or removed): caches compare it to know they are current."""
        self._scratch_revision = -1
        """The revision at which ``add_all`` joined every piece by the full check's rule (-1: never)."""

    # ----- queries -------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.pieces)

    def __iter__(self) -> Iterator[Piece]:
        return iter(self.pieces.values())

    def __getitem__(self, piece_id: int) -> Piece:
        return self.pieces[piece_id]

    @property
    def joints(self) -> list[Joint]:
        """Every joint, each once, sorted."""
        seen = {j for links in self._links.values() for j in links.values()}
        return sorted(seen, key=lambda j: (j.a, j.a_conn, j.b, j.b_conn))

    def joints_of(self, piece_ids: Iterable[int]) -> list[Joint]:
        """Every joint with an end among ``piece_ids``, each once, sorted as :attr:`joints` (which walks them all)."""
        links = self._links
        seen: set[Joint] = set()
        for pid in piece_ids:
            for c in range(len(self.pieces[pid].part.connectors)):
                found = links.get((pid, c))
                if found:
                    seen.update(found.values())
        return sorted(seen)  # a joint's fields start (a, a_conn, b, b_conn), unique to it

    @property
    def authored(self) -> list[Connection]:
        """Every authored connection (what attach made, plus those named with :meth:`author`), each once, sorted."""
        return sorted({c for conns in self._authored.values() for c in conns})

    @property
    def components(self) -> list[list[int]]:
        """Connected components of the joint graph (sorted piece ids), largest first, ties by first id."""
        comps = [sorted(m) for m in self._members.values()]
        return sorted(comps, key=lambda c: (-len(c), c[0]))

    @property
    def component_count(self) -> int:
        """Number of connected components (O(1))."""
        return len(self._members)

    def degree(self, piece_id: int) -> int:
        """Number of pieces joined to ``piece_id`` (O(1))."""
        return len(self._adjacent.get(piece_id, ()))

    def degrees(self, piece_ids: Iterable[int]) -> list[int]:
        """:meth:`degree` of each of ``piece_ids`` (one call for a whole observation)."""
        adjacent = self._adjacent
        return [len(adjacent.get(pid, ())) for pid in piece_ids]

    def component_of(self, piece_id: int) -> int:
        """An id naming the component a piece belongs to (stable until the component changes)."""
        return self._component_of[piece_id]

    def neighbours(self, piece_id: int) -> list[int]:
        """Pieces joined to ``piece_id``."""
        return sorted(self._adjacent.get(piece_id, ()))

    def is_free(self, ref: ConnectorRef | str | tuple) -> bool:
        """Whether a connector can take another joint (axle-family connectors always can)."""
        r = ConnectorRef.parse(ref)
        piece = self.pieces[r.piece]
        conn = piece.part.connector(r.group, r.index)
        return not cx.exclusive(conn) or not self._links.get((r.piece, conn.index))

    def free_connectors(self, piece_id: int | None = None) -> list[ConnectorRef]:
        """Connectors that can still take a joint, for one piece or the whole assembly."""
        ids = [piece_id] if piece_id is not None else list(self.pieces)
        out = []
        for pid in ids:
            piece = self.pieces[pid]
            for c in piece.part.connectors:
                if not cx.exclusive(c) or not self._links.get((pid, c.index)):
                    out.append(ConnectorRef(pid, c.group, c.group_index))
        return out

    def connector_frame(self, ref: ConnectorRef | str | tuple) -> np.ndarray:
        """World frame of a connector."""
        r = ConnectorRef.parse(ref)
        piece = self.pieces[r.piece]
        return piece.world_frames[piece.part.connector(r.group, r.index).index]

    def filled_cells(self, cells: Range) -> list[int]:
        """Box pieces on the lattice filling any cell of the inclusive cell box ``cells`` (sorted ids): for a box
        part on the lattice, the pieces its cells collide with (``occupancy``)."""
        return self._cells.blocking(cells)

    def stock_left(self) -> dict[tuple[str, int], int | None]:
        """Remaining count per inventory entry (None = unlimited); empty without an inventory."""
        inv = self.rules.inventory
        if inv is None:
            return {}
        return {k: (None if v is None else v - self.usage.get(k, 0)) for k, v in inv.limits.items()}

    # ----- mutations -----------------------------------------------------------------------------------------
    def add(self, part: str | int | Part, colour: int | str, pose: np.ndarray | None = None) -> Outcome:
        """Place a part at a world pose (identity by default), checked like any placement."""
        return self.place(Placement(part, colour, pose=np.eye(4) if pose is None else pose))

    def add_all(self, placed: Iterable[tuple[str | int | Part, int | str, np.ndarray]]) -> list[Outcome]:
        """Place many parts by pose (a model file's), each checked like :meth:`add`. Into an empty non-strict
        assembly their joints are then found in one pass over them all by BrickNet's rule, as the full check finds
        them (each spot once: copies of a part at one spot join nothing of their own; an exclusive connector keeps
        its best partner overall), instead of one search per part in order: loading stays cheap however crowded
        the file. Otherwise this is :meth:`add` for each in turn."""
        if self.strict or self.pieces:
            return [self.add(part, colour, pose) for part, colour, pose in placed]
        outcomes = [self._place_unjoined(part, colour, pose) for part, colour, pose in placed]
        for joint in joints_from_scratch({group[0]: self.pieces[group[0]] for group in spots(self.pieces)}):
            self._link(joint)
        self._scratch_revision = self.revision
        return outcomes

    @property
    def joined_as_checked(self) -> bool:
        """Whether the joints are exactly those the full check finds (placed by ``add_all`` and no piece added or
        removed since), so that the check of a file just read need not search for them twice."""
        return self.__dict__.get("_scratch_revision", -1) == self.revision

    def _place_unjoined(self, part: str | int | Part, colour: int | str, pose: np.ndarray) -> Outcome:
        """:meth:`add` without the joint search (``add_all`` finds the joints of all its parts at once)."""
        resolved = self._resolved(Placement(part, colour, pose=pose))
        if isinstance(resolved, Outcome):
            return resolved
        return self._commit_checked(*resolved, joined=False)

    def attach(
        self,
        part: str | int | Part,
        colour: int | str,
        *,
        to: ConnectorRef | str | tuple,
        by: tuple[str, int] | str = ("hole", 0),
        yaw: float = 0.0,
        flip: bool = False,
        slide: float = 0.0,
        rotation: tuple[float, float, float] | None = None,
    ) -> Outcome:
        """Place a part by an exact connector fit: its connector ``by`` on the existing connector ``to``."""
        try:
            target = ConnectorRef.parse(to)
        except ValueError as exc:
            return _refuse("bad_connector", str(exc))
        if isinstance(by, str):
            m = re.match(r"^\s*([A-Za-z0-9_]+)\s*\[\s*(-?\d+)\s*\]\s*$", by)
            if not m:
                return _refuse("bad_connector", f"bad source connector {by!r}: write it as 'GROUP[INDEX]'")
            by = (m.group(1), int(m.group(2)))
        return self.place(Placement(part, colour, target, tuple(by), yaw, flip, slide, rotation))

    def author(self, a: ConnectorRef | str | tuple, b: ConnectorRef | str | tuple) -> Outcome:
        """Record that connectors ``a`` and ``b`` of two placed pieces are meant to be joined, as ``attach`` records
        its connection (BrickAgent's ``contacts``): the full check then requires an exact fit between them. Pieces
        placed by pose (``add``, a model file) carry no authored connection until one is named here."""
        try:
            ra, rb = ConnectorRef.parse(a), ConnectorRef.parse(b)
        except ValueError as exc:
            return _refuse("bad_connector", str(exc))
        ends = []
        for r in (ra, rb):
            piece = self.pieces.get(r.piece)
            if piece is None:
                return _refuse("no_piece", f"{r}: no piece #{r.piece} in the assembly")
            try:
                ends.append((piece, piece.part.connector(r.group, r.index)))
            except (KeyError, IndexError) as exc:
                return _refuse("bad_connector", f"{r}: {exc.args[0]}", (piece.id,))
        (pa, ca), (pb, cb) = ends
        if pa.id == pb.id or not cx.mates(ca, cb):
            why = (
                "are on the same piece"
                if pa.id == pb.id
                else f"cannot mate ({ca.group} takes {', '.join(_partners(ca))})"
            )
            return _refuse("no_mate", f"{ra} of {pa.describe()} and {rb} of {pb.describe()} {why}", (pa.id, pb.id))
        connection = Connection.of(pa.id, ca.index, pb.id, cb.index)
        if connection in self._authored.get(pa.id, ()):
            return Outcome(True, None, f"{ra} to {rb} is already authored", None, (pa.id, pb.id))
        self._record(connection)
        self._history.append(("author", connection))
        return Outcome(True, None, f"authored {ra} of {pa.describe()} to {rb} of {pb.describe()}", None, (pa.id, pb.id))

    def pose_for(self, placement: Placement) -> np.ndarray | None:
        """The world pose a placement would give its part, or None when it cannot be resolved."""
        if placement.target is None:
            return None if placement.pose is None else np.asarray(placement.pose, dtype=np.float64)
        try:
            part = catalog().resolve(placement.part)
        except UnknownPart:
            return None
        resolved = self._resolve_mate(part, placement)
        return None if isinstance(resolved, Outcome) else resolved[0]

    def evaluate(self, placement: Placement, *, explain: bool = True, rules: bool = True) -> Outcome:
        """Check a placement without committing it: the outcome ``place`` would give (joints not listed). With
        ``explain=False`` a collision's message is not written (verdict and pieces only: for callers that only ask
        whether, such as candidate lists, where wording the overlap costs a third of a refused check). With
        ``rules=False`` the setting's part limit and the inventory are not checked: the verdict is about geometry
        only (collisions and engagement), what callers that remember verdicts across stock changes need."""
        resolved = self._resolved(placement)
        if isinstance(resolved, Outcome):
            return resolved
        return self._commit_checked(*resolved, dry_run=True, explain=explain, rules=rules)

    def place(self, placement: Placement, *, dry_run: bool = False, explain: bool = True) -> Outcome:
        """Check a placement against the assembly and commit it (unless ``dry_run``), or refuse it with a reason
        (its collision worded unless ``explain=False``)."""
        resolved = self._resolved(placement)
        if isinstance(resolved, Outcome):
            return resolved
        return self._commit_checked(*resolved, dry_run=dry_run, explain=explain)

    def _resolved(self, placement: Placement) -> Outcome | tuple[Part, int, np.ndarray, tuple[int, int, int] | None]:
        """(part, colour code, world pose, authored connection) of a placement, or the refusal of what is wrong."""
        try:
            part = catalog().resolve(placement.part)
        except UnknownPart as exc:
            return _refuse("unknown_part", str(exc))
        try:
            code = colour(placement.colour).code
        except UnknownColour as exc:
            return _refuse("unknown_colour", str(exc))
        authored: tuple[int, int, int] | None = None
        if placement.target is None:
            pose = np.asarray(placement.pose if placement.pose is not None else np.eye(4), dtype=np.float64)
            bad = _bad_pose(pose)
            if bad:
                return _refuse("bad_pose", f"pose for {part.stem} ('{part.name}') {bad}")
        else:
            resolved = self._resolve_mate(part, placement)
            if isinstance(resolved, Outcome):
                return resolved
            pose, authored = resolved
        return part, code, pose, authored

    def remove(self, piece_id: int) -> Outcome:
        """Remove a piece and its joints."""
        if piece_id not in self.pieces:
            return _refuse("no_piece", f"no piece #{piece_id} in the assembly")
        piece = self.pieces[piece_id]
        joints = self._detach(piece_id)
        self._history.append(("remove", piece, joints, self._next_id, self._forget(piece_id)))
        return Outcome(True, None, f"removed {piece.describe()}", piece_id, (piece_id,), tuple(joints))

    def undo(self) -> Outcome:
        """Revert the last applied add/attach/remove/author exactly."""
        if not self._history:
            return _refuse("nothing_to_undo", "nothing to undo")
        record = self._history.pop()
        if record[0] == "author":
            connection = record[1]
            for end in (connection.a, connection.b):
                self._authored[end].pop(connection, None)
            return Outcome(True, None, "undid an authored connection", None, (connection.a, connection.b))
        if record[0] == "add":
            _, piece_id, next_id = record
            self._detach(piece_id)
            self._forget(piece_id)
            self._next_id = next_id
            return Outcome(True, None, f"undid placement of #{piece_id}", piece_id, (piece_id,))
        _, piece, joints, next_id, authored = record
        self._insert(piece, joints)
        for connection in authored:
            self._record(connection)
        self._next_id = next_id
        return Outcome(True, None, f"undid removal of {piece.describe()}", piece.id, (piece.id,), tuple(joints))

    def copy(self) -> Assembly:
        """An independent deep copy (parts and frames are shared read-only)."""
        return _copy.deepcopy(self)

    def __deepcopy__(self, memo: dict) -> Assembly:
        new = Assembly.__new__(Assembly)
        for k, v in self.__dict__.items():
            if k in ("rules", "pieces"):
                setattr(new, k, v if k == "rules" else dict(v))
            else:
                setattr(new, k, _copy.deepcopy(v, memo))
        return new

    # ----- internals -----------------------------------------------------------------------------------------
    def _resolve_mate(self, part: Part, placement: Placement) -> Outcome | tuple[np.ndarray, tuple[int, int, int]]:
        target = placement.target
        if not isinstance(target, ConnectorRef):
            try:
                target = ConnectorRef.parse(target)
            except ValueError as exc:
                return _refuse("bad_connector", str(exc))
        host = self.pieces.get(target.piece)
        if host is None:
            return _refuse("no_piece", f"target {target}: no piece #{target.piece} in the assembly")
        try:
            t_conn = host.part.connector(target.group, target.index)
        except (KeyError, IndexError) as exc:
            return _refuse("bad_connector", f"target {target}: {exc.args[0]}", (host.id,))
        group, index = placement.source if placement.source is not None else ("hole", 0)
        try:
            s_conn = part.connector(group, int(index))
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            return _refuse("bad_connector", f"source {group}[{index}]: {exc.args[0]}")
        if not cx.mates(t_conn, s_conn):
            return _refuse(
                "no_mate",
                f"{s_conn.label} of {part.stem} ('{part.name}') cannot mate {target} ({t_conn.group}) of "
                f"{host.describe()}: {t_conn.group} takes {', '.join(_partners(t_conn)) or 'nothing'}",
                (host.id,),
            )
        if self.strict and cx.exclusive(t_conn) and self._links.get((host.id, t_conn.index)):
            holder = sorted({p for p, _ in self._links[(host.id, t_conn.index)]})
            return _refuse(
                "occupied",
                f"{target} of {host.describe()} is already joined to "
                + ", ".join(self.pieces[p].describe() for p in holder),
                (host.id, *holder),
            )
        for name, value in (("yaw", placement.yaw), ("slide", placement.slide)):
            try:
                finite = math.isfinite(float(value))
            except (OverflowError, TypeError, ValueError):
                finite = False
            if not finite:
                return _refuse("bad_pose", f"{name} must be a finite number, got {repr(value)[:40]}")
        rotation = None
        if placement.rotation is not None:
            try:
                rotation = tuple(float(v) for v in placement.rotation)
            except (TypeError, ValueError, OverflowError):
                rotation = ()
            if len(rotation) != 3 or not all(math.isfinite(v) for v in rotation):
                return _refuse("bad_pose", f"rotation must be 3 finite angles in degrees, got {placement.rotation!r}")
        local = cx.host_transform(
            t_conn, s_conn, (float(placement.yaw), bool(placement.flip), float(placement.slide), rotation)
        )
        pose = host.pose @ local
        return pose, (host.id, t_conn.index, s_conn.index)

    def _commit_checked(
        self,
        part: Part,
        code: int,
        pose: np.ndarray,
        authored: tuple[int, int, int] | None,
        *,
        dry_run: bool = False,
        joined: bool = True,
        explain: bool = True,
        rules: bool = True,
    ) -> Outcome:
        x, y, z = pose[0, 3], pose[1, 3], pose[2, 3]
        if max(abs(x), abs(y), abs(z)) > MAX_COORDINATE_LDU:
            return _refuse(
                "bad_pose",
                f"{part.stem} ('{part.name}') would sit at {_point(pose[:3, 3])}, outside ±{MAX_COORDINATE_LDU:,.0f} "
                "LDU; positions must be within that bound",
            )
        new_id = self._next_id
        candidate = Piece(new_id, part, code, _frozen(pose))
        if self.strict:
            refusal = self._check_rules(part, code) if rules else None
            if refusal is None:
                refusal = self._check_collision(candidate, explain)
            if refusal is not None:
                return refusal
        elif (cap := self.rules.part_cap) is not None and len(self.pieces) >= cap[0]:
            # unchecked placements (BrickBench's protocol) still stop at the setting's bound: it bounds the check
            return _refuse("part_limit", f"{cap[1]} parts; already {cap[0]} (placed unchecked, but never past it)")
        engaged_by_construction = authored is None or cx.exclusive(part.connectors[authored[2]])
        if dry_run and engaged_by_construction:
            return Outcome(True, None, f"would place {candidate.describe()}")
        joints = self._find_joints(candidate) if joined else []
        if authored is not None:
            host, t_idx, s_idx = authored
            if not any(
                (j.a, j.a_conn, j.b, j.b_conn) in ((host, t_idx, new_id, s_idx), (new_id, s_idx, host, t_idx))
                for j in joints
            ):
                conn = part.connectors[s_idx]
                return _refuse(
                    "no_mate",
                    f"{conn.label} of {part.stem} ('{part.name}') does not engage {self.pieces[host].ref(t_idx)} "
                    f"with these parameters (slide too far for the axle lengths?)",
                    (host,),
                )
        if dry_run:
            return Outcome(True, None, f"would place {candidate.describe()}", None, (), tuple(joints))
        self._insert(candidate, joints, indexed=joined)
        if authored is not None:
            self._record(Connection.of(authored[0], authored[1], new_id, authored[2]))
        self._next_id = new_id + 1
        self._history.append(("add", new_id, new_id))
        return Outcome(True, None, f"placed {candidate.describe()}", new_id, (new_id,), tuple(joints))

    def _check_rules(self, part: Part, code: int) -> Outcome | None:
        limit = self.rules.setting.max_parts
        if limit is not None and len(self.pieces) >= limit:
            return _refuse(
                "part_limit", f"the {self.rules.setting.name} setting allows at most {limit} parts; already {limit}"
            )
        inv = self.rules.inventory
        if inv is not None:
            key = (part.stem, code)
            if not inv.allows(*key):
                return _refuse(
                    "out_of_stock",
                    f"{part.stem} ('{part.name}') in {colour_name(code)} is not in the inventory",
                )
            cap = inv.limit(*key)
            if cap is not None and self.usage[key] >= cap:
                return _refuse(
                    "out_of_stock", f"all {cap} of {part.stem} ('{part.name}') in {colour_name(code)} are used"
                )
        return None

    def _check_collision(self, candidate: Piece, explain: bool = True) -> Outcome | None:
        stem, pose = candidate.part.stem, candidate.pose
        lattice, enclosure = candidate.lattice, candidate.enclosure
        enclosed = None if enclosure is None else enclosure[1]  # what it cannot reach out of (``occupancy``)
        hits = self._collisions.colliding(stem, pose, enclosed) if len(self._collisions) else []
        if lattice is not None:
            cells = lattice[1]  # a box part on the lattice: its cells decide against the other box parts
            hits = sorted({*hits, *self._cells.blocking(cells)})
        elif len(self._cells):  # box parts near it go to the narrow phase like any other piece
            reach = enclosed if enclosed is not None else studs_reach(range_of_bounds(*world_aabb(stem, pose)))
            near = self._cells.blocking(reach)
            if near:
                others = [self.pieces[p] for p in near]
                verdicts = pair_verdicts(
                    [stem] * len(near),
                    np.repeat(pose[None], len(near), axis=0),
                    [o.part.stem for o in others],
                    np.array([o.pose for o in others]),
                )
                hits = sorted({*hits, *(p for p, hit in zip(near, verdicts, strict=True) if hit)})
        if not hits:
            return None
        if not explain:
            return _refuse("collision", "collides", hits)
        from brick_gym.core.collision import describe_overlap

        stem, pose = candidate.part.stem, candidate.pose
        where = "; and ".join(
            f"{self.pieces[h].describe()} {describe_overlap(stem, pose, self.pieces[h].part.stem, self.pieces[h].pose)}"
            for h in hits[:3]
        )
        more = f"; and {len(hits) - 3} more piece(s)" if len(hits) > 3 else ""
        return _refuse(
            "collision",
            f"{candidate.part.stem} ('{candidate.part.name}') in {colour_name(candidate.colour)} at "
            f"{_point(pose[:3, 3])} would overlap {where}{more}",
            hits,
        )

    def _find_joints(self, piece: Piece) -> list[Joint]:
        """Joints the piece forms with existing pieces; exclusive connectors take their best single partner.

        A piece under the lattice rule (``occupancy.lattice_connectors``) finds its stud joints with other such
        pieces by looking up the cells above and below it; everything else goes through the connector grid."""
        rule = self._lattice_rule(piece)
        if rule is not None:
            pairs = self._lattice_pairs(piece.id, *rule)
            if len(self.pieces) == len(self._lattice_ids):  # only lattice joints: each end once, all exact
                links = self._links  # what select would keep: in its order, ends joined elsewhere left out
                return [
                    Joint(a[0], a[1], b[0], b[1], _STUD_FAMILY, 0.0)
                    for a, b in sorted(pairs)
                    if not (links.get(a) or links.get(b))
                ]
            if self._loaded:  # pieces off the rule: ask the connector grid for those
                self._index(set(self._loaded))
            lattice = self._lattice_ids
            found = [jx.Candidate(0.0, a, b, jx.STUD) for a, b in pairs]
            found += [c for c in self._grid_joints(piece) if (c.b[0] if c.a[0] == piece.id else c.a[0]) not in lattice]
        else:
            self._index_pending()
            found = self._grid_joints(piece)
        if not found:
            return []
        taken = {k for c in found for k in (c.a, c.b) if k[0] != piece.id and self._links.get(k)}
        return [
            Joint(c.a[0], c.a[1], c.b[0], c.b[1], jx.family_name(c.family), c.residual) for c in jx.select(found, taken)
        ]

    def _lattice_rule(self, piece: Piece) -> tuple[int, Range, LatticeConnectors] | None:
        """(quarter turns, cells, connector table) when the piece follows the lattice joint rule (a box part, or a
        thin one such as a base plate, on the lattice), else None."""
        if not self.strict:
            return None
        placed = piece.lattice if piece.lattice is not None else piece.slab
        if placed is None:
            return None
        table = lattice_connectors(piece.part.stem)
        return None if table is None else (*placed, table)

    def _lattice_pairs(
        self, pid: int, q: int, cells: Range, table: LatticeConnectors
    ) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """Stud joints with lattice-rule pieces, as ordered (end, end) pairs: a stud meets the hole right above it,
        exactly (so residual 0 and the stud family go without saying)."""
        i0, j0, k0, _, j1, _ = cells
        out = []
        for conns, at, layer in ((table.holes[q], self._studs_at, j0), (table.studs[q], self._holes_at, j1 + 1)):
            get = at.get
            for idx, di, dk in conns:
                hit = get((i0 + di, layer, k0 + dk))
                if hit is not None:
                    mine = (pid, idx)
                    out.append((mine, hit) if mine <= hit else (hit, mine))
        return out

    def _grid_joints(self, piece: Piece) -> list[jx.Candidate]:
        """Joint candidates from the connector grid (BrickNet's pairing rules within reach)."""
        pairs = self._conn_grid.candidates(piece.id, piece.part, piece.points, piece.axes, self._links.get)
        if not pairs.a:
            return []
        return jx.score_candidates(ChainMap({piece.id: piece}, self.pieces), pairs)

    def _index_pending(self) -> None:
        """Put every piece not yet in the connector grid into it."""
        self._index(self._unindexed | self._loaded)

    def _index(self, pending: set[int]) -> None:
        """Put ``pending`` pieces into the connector grid (and out of the sets that deferred them)."""
        for pid in sorted(pending):
            piece = self.pieces[pid]
            self._conn_grid.add(pid, piece.part, piece.points, piece.axes)
        self._unindexed -= pending
        self._loaded -= pending

    def _insert(self, piece: Piece, joints: Iterable[Joint], *, indexed: bool = True) -> None:
        pid = piece.id
        self.revision += 1
        self.pieces[pid] = piece
        self.usage[(piece.part.stem, piece.colour)] += 1
        if piece.lattice is not None:
            self._cells.add(pid, piece.lattice[1])
        else:
            self._collisions.add(pid, piece.part.stem, piece.pose)
        rule = self._lattice_rule(piece)
        if rule is not None:
            q, (i0, j0, k0, _, j1, _), table = rule
            for idx, di, dk in table.studs[q]:
                self._studs_at[(i0 + di, j1 + 1, k0 + dk)] = (pid, idx)
            for idx, di, dk in table.holes[q]:
                self._holes_at[(i0 + di, j0, k0 + dk)] = (pid, idx)
            self._lattice_ids.add(pid)
            self._unindexed.add(pid)
        elif indexed:
            self._conn_grid.add(pid, piece.part, piece.points, piece.axes)
        else:  # joined by add_all: indexed only when a later placement needs the grid
            self._loaded.add(pid)
        self._component_of[pid] = pid
        self._members[pid] = {pid}
        links, adjacent = self._links, self._adjacent
        mine: dict[int, int] = {}
        adjacent[pid] = mine
        for j in joints:  # each joins this piece: its links, then one merge per neighbour
            a, a_conn, b, b_conn, _, _ = j
            links.setdefault((a, a_conn), {})[(b, b_conn)] = j
            links.setdefault((b, b_conn), {})[(a, a_conn)] = j
            other = b if a == pid else a
            mine[other] = mine.get(other, 0) + 1
            theirs = adjacent[other]
            theirs[pid] = theirs.get(pid, 0) + 1
        for other in mine:
            self._merge(pid, other)

    def _link(self, j: Joint) -> None:
        """Record a joint between two placed pieces."""
        self._links.setdefault((j.a, j.a_conn), {})[(j.b, j.b_conn)] = j
        self._links.setdefault((j.b, j.b_conn), {})[(j.a, j.a_conn)] = j
        for end, other in ((j.a, j.b), (j.b, j.a)):
            counts = self._adjacent[end]
            counts[other] = counts.get(other, 0) + 1
        self._merge(j.a, j.b)

    def _record(self, connection: Connection) -> None:
        """Index an authored connection under both its pieces."""
        for end in (connection.a, connection.b):
            self._authored.setdefault(end, {})[connection] = None

    def _forget(self, piece_id: int) -> list[Connection]:
        """Drop (and return) the authored connections of a piece that is leaving."""
        gone = list(self._authored.pop(piece_id, ()))
        for connection in gone:
            other = connection.b if connection.a == piece_id else connection.a
            self._authored.get(other, {}).pop(connection, None)
        return gone

    def _merge(self, a: int, b: int) -> None:
        ra, rb = self._component_of[a], self._component_of[b]
        if ra == rb:
            return
        if len(self._members[ra]) < len(self._members[rb]):
            ra, rb = rb, ra
        for p in self._members[rb]:
            self._component_of[p] = ra
        self._members[ra] |= self._members.pop(rb)

    def _detach(self, pid: int) -> list[Joint]:
        piece = self.pieces.pop(pid)
        self.revision += 1
        key = (piece.part.stem, piece.colour)
        self.usage[key] -= 1
        if self.usage[key] <= 0:
            del self.usage[key]
        if pid in self._cells:
            self._cells.remove(pid)
        else:
            self._collisions.remove(pid)
        if pid in self._lattice_ids:
            rule = self._lattice_rule(piece)
            assert rule is not None
            q, (i0, j0, k0, _, j1, _), table = rule
            for _, di, dk in table.studs[q]:
                del self._studs_at[(i0 + di, j1 + 1, k0 + dk)]
            for _, di, dk in table.holes[q]:
                del self._holes_at[(i0 + di, j0, k0 + dk)]
            self._lattice_ids.discard(pid)
        if pid in self._unindexed or pid in self._loaded:
            self._unindexed.discard(pid)
            self._loaded.discard(pid)
        else:
            self._conn_grid.remove(pid, piece.part, piece.points, piece.axes)
        removed: list[Joint] = []
        for c in piece.part.connectors:
            for other, j in self._links.pop((pid, c.index), {}).items():
                removed.append(j)
                partner = self._links.get(other)
                if partner is not None:
                    partner.pop((pid, c.index), None)
                    if not partner:
                        del self._links[other]
        for other in self._adjacent.pop(pid):
            del self._adjacent[other][pid]
        root = self._component_of.pop(pid)
        members = self._members.pop(root)
        members.discard(pid)
        self._relabel(members)
        return sorted(removed, key=lambda j: (j.a, j.a_conn, j.b, j.b_conn))

    def _relabel(self, members: set[int]) -> None:
        """Recompute components among ``members`` after a removal split them (BFS, O(component))."""
        left = set(members)
        while left:
            start = min(left)
            comp, stack = {start}, [start]
            while stack:
                for n in self._adjacent[stack.pop()]:
                    if n not in comp:
                        comp.add(n)
                        stack.append(n)
            left -= comp
            for p in comp:
                self._component_of[p] = start
            self._members[start] = comp

    def __eq__(self, other: object) -> bool:
        """Same pieces (ids, parts, colours, exact poses), joints, rules and mode."""
        if not isinstance(other, Assembly):
            return NotImplemented
        return (
            self.rules == other.rules
            and self.strict == other.strict
            and self._next_id == other._next_id
            and self.pieces.keys() == other.pieces.keys()
            and all(
                a.part.stem == b.part.stem and a.colour == b.colour and np.array_equal(a.pose, b.pose)
                for a, b in ((self.pieces[k], other.pieces[k]) for k in self.pieces)
            )
            and self.joints == other.joints
            and self.authored == other.authored
        )

    __hash__ = None  # type: ignore[assignment]


def _partners(c: Connector) -> list[str]:
    if c.family == "stud":
        return sorted({s for pair in cx.STUD_MATES if c.subtype in pair for s in pair if s != c.subtype})
    if c.family == "axle":
        return sorted({s for pair in cx.AXLE_MATES if c.subtype in pair for s in pair if s != c.subtype})
    other = "on" if c.polarity == "in" else "in"
    return [f"{c.kind}{c.subtype}_{other}"]


def _point(p: np.ndarray) -> str:
    return "(" + ", ".join(f"{round(float(v), 1) + 0.0:g}" for v in p) + ")"


def spots(pieces: dict[int, Piece]) -> list[list[int]]:
    """Pieces grouped by placement: one part at one pose (to 1e-6 LDU) is one spot; ids sorted, spots in order
    of their first id. Pieces with one spot are copies of each other, which the full check reports as one
    collision and whose joints it finds once."""
    ids = sorted(pieces)
    if not ids:
        return []
    blob = (np.round(np.stack([pieces[pid].pose for pid in ids]), 6) + 0.0).tobytes()
    size = len(blob) // len(ids)
    groups: dict[tuple[str, bytes], list[int]] = {}
    for k, pid in enumerate(ids):
        groups.setdefault((pieces[pid].part.stem, blob[k * size : (k + 1) * size]), []).append(pid)
    return list(groups.values())


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector during a burst of short-lived, cycle-free allocations (tens of thousands
    of joint tuples): otherwise it runs dozens of times and scans every live object each time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def joints_from_scratch(pieces: dict[int, Piece]) -> list[Joint]:
    """Every joint among ``pieces`` by BrickNet's pairing rules; exclusive connectors keep their best partner."""
    with _collector_paused():  # tens of thousands of joint tuples
        return scratch_table(pieces).joints()


def scratch_table(pieces: dict[int, Piece]) -> JointTable:
    """:func:`joints_from_scratch` as a :class:`JointTable` (what the full check reads)."""
    with _collector_paused():
        return JointTable.from_rows(jx.scratch_rows(pieces))


_SNAP = np.array([[1e-12, 1e-12, 1e-12, 1e-9]] * 3)
"""How far a pose's rotation entries (LDU for translations) may sit from a whole number and be snapped to it."""


def _frozen(pose: np.ndarray) -> np.ndarray:
    """A read-only copy with round-off snapped: rotation entries within 1e-12 of 0 or ±1 and translations within
    1e-9 LDU of a whole LDU become exact, so that parts placed on the lattice sit exactly on it."""
    p = np.array(pose, dtype=np.float64)
    top = p[:3]
    whole = np.rint(top)
    np.copyto(top, whole, where=np.abs(top - whole) <= _SNAP)
    top += 0.0  # no negative zeros
    p.flags.writeable = False
    return p


def _bad_pose(pose: np.ndarray) -> str | None:
    if pose.shape != (4, 4):
        return f"must be a 4x4 matrix, got shape {pose.shape}"
    if not np.all(np.isfinite(pose)):
        return "contains NaN or infinity"
    if pose[3].tolist() != [0.0, 0.0, 0.0, 1.0] and not np.allclose(pose[3], [0, 0, 0, 1]):
        return "must have a last row of 0 0 0 1"
    if not is_rotation(pose[:3, :3]):
        return "must be a rotation (orthonormal, no mirroring) plus a translation"
    return None
