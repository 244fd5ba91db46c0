"""The full BrickBench validity check of an assembly, computed from scratch, as a :class:`Report`.

Checks, in BrickBench's terms: the setting's part rule, inventory per (part, colour), exact authored connections,
collisions (more than 1 LDU of overlap) and stability (each connected component one rigid body under gravity).

Joints follow BrickAgent's rule: every *authored* connection (what ``attach`` made, or one named with
``Assembly.author`` or recorded in a brick_gym model file) must be a joint and an exact fit, else a ``join``
issue. Joints nobody authored are detected as BrickNet's ``parse_ldr`` detects them, near misses within its
pairing tolerance included; they form the rigid components of the drop test, and an inexact one is a
``near_miss`` warning, never an invalidity. Nothing here reads the assembly's incremental caches (only its record
of authored connections): that is what lets tests compare the two.

Work is bounded for degenerate input. Pieces of one part at one pose (a *spot*) are one verdict: one collision
issue names them all, and joints and stability see the spot once, so 400 copies of a plate cost what one does.
The collision scan is bounded (:func:`~brick_gym.core.collision.collision_scan`): at most
:data:`MAX_COLLISION_ISSUES` pairs are named, the rest counted in one issue; pairs too dense to test one by one are
one more issue. Colliding pieces are dropped without contact with other components (PyBullet would push two
overlapping parts apart, at great cost, and the model is invalid already).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from brick_gym.core import connectors as cx
from brick_gym.core.assembly import Assembly, scratch_table, spots
from brick_gym.core.collision import MAX_NARROW_PAIRS, all_collisions, collision_scan, describe_overlap
from brick_gym.core.ldraw import PartCountExceeded
from brick_gym.core.modelfile import LoadedModel, load
from brick_gym.core.pieces import Connection, JointTable, Piece, colour_name
from brick_gym.core.rules import Rules

ISSUE_KINDS = ("collision", "unstable", "stock", "part_limit", "join", "unknown_part", "parse")
WARNING_KINDS = ("near_miss",)
MAX_COLLISION_ISSUES = 200
"""Most colliding pairs named one by one in a report; the rest are counted in one more issue."""
MAX_NEAR_MISS_WARNINGS = 200
"""Most unauthored inexact joints named one by one in a report; the rest are counted in one more warning."""


@dataclass(frozen=True)
class Issue:
    """One reason an assembly is not valid (or, among a report's warnings, a remark), naming the pieces involved."""

    kind: str
    pieces: tuple[int, ...]
    message: str

    def to_json(self) -> dict:
        """``{"kind", "pieces", "message"}``."""
        return {"kind": self.kind, "pieces": list(self.pieces), "message": self.message}


@dataclass(frozen=True)
class Report:
    """The verdict: valid or not, with every issue, warnings that do not count against it (near misses), component
    counts, which part types met other components through a convex hull instead of a decomposition, and how long
    each check took."""

    valid: bool
    setting: str
    pieces: int
    components: int
    issues: tuple[Issue, ...]
    joints: int = 0
    max_displacement: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    warnings: tuple[Issue, ...] = ()
    authored: int = 0
    hull_colliders: tuple[str, ...] = ()
    forces: dict | None = None
    """The force analysis beside the verdict (``forces.ForceReport.to_json``), when asked for; never part of it."""

    def to_json(self) -> dict:
        """The JSON form ``brick-gym check --json`` prints."""
        return {
            "valid": self.valid,
            "setting": self.setting,
            "pieces": self.pieces,
            "components": self.components,
            "joints": self.joints,
            "authored": self.authored,
            "max_displacement_ldu": round(self.max_displacement, 6),
            "issues": [i.to_json() for i in self.issues],
            "warnings": [w.to_json() for w in self.warnings],
            "hull_colliders": list(self.hull_colliders),
            "timings_s": {k: round(v, 6) for k, v in self.timings.items()},
        } | ({"forces": self.forces} if self.forces is not None else {})

    def summary(self) -> str:
        """A few human lines: verdict, counts, then each issue."""
        head = "VALID" if self.valid else "INVALID"
        lines = [f"{head} ({self.setting}): {self.pieces} pieces, {self.joints} joints, {self.components} component(s)"]
        lines += [f"  [{i.kind}] {i.message}" for i in self.issues]
        lines += [f"  warning [{w.kind}] {w.message}" for w in self.warnings]
        if self.forces is not None:
            from brick_gym.core.force_text import forces_summary

            lines += ["  " + line for line in forces_summary(self.forces)]
        return "\n".join(lines)


def components_of(piece_ids: list[int], joints: JointTable) -> list[list[int]]:
    """Connected components (sorted ids), largest first, ties by first id (one sparse-graph pass)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    ids = np.array(sorted(piece_ids), dtype=np.int64)
    if not len(ids):
        return []
    ends = np.searchsorted(ids, joints.keys[:, [0, 2]])
    graph = coo_matrix((np.ones(len(ends)), (ends[:, 0], ends[:, 1])), shape=(len(ids), len(ids)))
    _, labels = connected_components(graph, directed=False)
    order = np.argsort(labels, kind="stable")  # ids ascending within each component
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    groups = [part.tolist() for part in np.split(ids[order], cuts)]
    return sorted(groups, key=lambda c: (-len(c), c[0]))


def _ids(ids: tuple[int, ...] | list[int], shown: int = 6) -> str:
    head = ", ".join(f"#{i}" for i in ids[:shown])
    return head + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def _collision_issues(pieces: dict[int, Piece], copies: list[list[int]], reps: dict[int, Piece]) -> tuple:
    """The collision issues of pieces (one per spot holding several, then one per colliding pair up to
    MAX_COLLISION_ISSUES, then counts) and the pieces that collide with other pieces than their spot's."""
    issues = []
    for group in copies:
        first = pieces[group[0]]
        point = ", ".join(f"{round(float(v), 1) + 0.0:g}" for v in first.pose[:3, 3])
        issues.append(
            Issue(
                "collision",
                tuple(group),
                f"{len(group)} pieces of {first.part.stem} ('{first.part.name}') sit at one spot ({point}), each "
                f"overlapping the others entirely: {_ids(group)}; keep one of them",
            )
        )
    scan = collision_scan({p.id: (p.part.stem, p.pose) for p in reps.values()})
    for a, b in scan.pairs[:MAX_COLLISION_ISSUES]:
        pa, pb = pieces[a], pieces[b]
        depth = describe_overlap(pa.part.stem, pa.pose, pb.part.stem, pb.pose)
        issues.append(Issue("collision", (a, b), f"{pa.describe()} overlaps {pb.describe()} {depth}"))
    unnamed = scan.total - min(len(scan.pairs), MAX_COLLISION_ISSUES)
    if unnamed:
        rest = tuple(sorted({p for pair in scan.pairs[MAX_COLLISION_ISSUES:] for p in pair}))
        issues.append(Issue("collision", rest, f"and {unnamed:,} more colliding pairs of pieces (among {_ids(rest)})"))
    if scan.untested:
        crowd = tuple(sorted(scan.involved))
        issues.append(
            Issue(
                "collision",
                crowd,
                f"{scan.untested:,} more pairs of pieces overlap in their bounds, beyond the {MAX_NARROW_PAIRS:,} "
                f"tested one by one: the model is too crowded to check ({_ids(crowd)}); spread the pieces out",
            )
        )
    return issues, scan.involved


def check(assembly: Assembly, *, stability: bool = True, colliders: str = "decomposed", forces: bool = False) -> Report:
    """The full BrickBench check of ``assembly``; ``stability=False`` skips the physics (reported as skipped).
    ``colliders`` chooses the drop test's part colliders between components (see ``stability.drop_test``).
    ``forces`` adds the force analysis (``forces.analyse``) beside the verdict: it never changes it."""
    timings: dict[str, float] = {}
    issues: list[Issue] = []
    pieces = assembly.pieces
    rules = assembly.rules
    setting = rules.setting
    groups = spots(pieces)
    reps = {g[0]: pieces[g[0]] for g in groups}  # joints, collisions and stability see each spot once
    copies = [g for g in groups if len(g) > 1]

    t = time.perf_counter()
    n = len(pieces)
    if n < setting.min_parts or (setting.max_parts is not None and n > setting.max_parts):
        hi = "no upper limit" if setting.max_parts is None else f"at most {setting.max_parts}"
        issues.append(
            Issue(
                "part_limit",
                (),
                f"{n} parts, but the {setting.name} setting needs at least {setting.min_parts} and {hi}",
            )
        )
    if rules.inventory is not None:
        issues += _stock_issues(assembly)
    timings["rules"] = time.perf_counter() - t

    t = time.perf_counter()
    joints = JointTable.of(assembly.joints) if assembly.joined_as_checked else scratch_table(reps)
    # a copy's authored connections are its spot's: the copies are one collision issue already
    authored = [c for c in assembly.authored if c.a in reps and c.b in reps]
    join_issues, warnings = joint_findings(pieces, joints, authored)
    issues += join_issues
    timings["joints"] = time.perf_counter() - t

    t = time.perf_counter()
    found, colliding = _collision_issues(pieces, copies, reps)
    issues += found
    timings["collisions"] = time.perf_counter() - t

    spot_comps = components_of(list(reps), joints)
    copies_of = {g[0]: g for g in copies}
    comps = [sorted(p for r in comp for p in copies_of.get(r, (r,))) for comp in spot_comps]
    max_disp = 0.0
    hulls: tuple[str, ...] = ()
    if stability and pieces:
        from brick_gym.core.stability import TooCrowded, drop_test, explain_unstable, ground_y

        t = time.perf_counter()
        groups = [[(p, pieces[p].part.stem, pieces[p].pose) for p in comp] for comp in spot_comps]
        try:
            result = drop_test(groups, ghosts=colliding, colliders=colliders)
        except TooCrowded as exc:
            issues.append(Issue("unstable", tuple(sorted(pieces)), f"the drop test was not run: {exc}"))
            result = None
        hulls = result.hull_colliders if result else ()
        ground: float | None = None
        for verdict, group in zip(result.components, groups, strict=True) if result else ():
            max_disp = max(max_disp, verdict.max_displacement)
            if not verdict.stable:
                ids = tuple(verdict.pieces)
                if ground is None:
                    ground = ground_y([(q.part.stem, q.pose) for q in reps.values()])
                names = {p: pieces[p].describe() for p in ids}
                _, why = explain_unstable(group, ground, names)
                shown = ", ".join(names[p] for p in ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
                what = names[ids[0]] if len(ids) == 1 else f"a group of {len(ids)} joined pieces [{shown}]"
                issues.append(
                    Issue(
                        "unstable",
                        ids,
                        f"{what} moves {verdict.max_displacement:.1f} LDU under gravity (limit 3 LDU): {why}",
                    )
                )
        timings["stability"] = time.perf_counter() - t
    force_json = None
    if forces:
        from brick_gym.core.force_text import forces_json

        t = time.perf_counter()
        force_json = forces_json(assembly)
        timings["forces"] = time.perf_counter() - t
    return Report(
        valid=not issues,
        setting=setting.name,
        pieces=n,
        components=len(comps),
        issues=tuple(issues),
        joints=len(joints),
        max_displacement=max_disp,
        timings=timings,
        warnings=tuple(warnings),
        authored=len(assembly.authored),
        hull_colliders=hulls,
        forces=force_json,
    )


def check_file(
    path: str | os.PathLike[str], rules: Rules | None = None, *, stability: bool = True, forces: bool = False
) -> Report:
    """Read an ``.ldr``/``.mpd`` file (with its record of authored connections) and run :func:`check` on it; lines
    that could not become pieces (unknown parts, colours, mirrored poses) come first among the issues and make the
    verdict invalid. Raises ``LDrawError`` for a file that is not LDraw and ``OSError`` for one that cannot be
    read: the caller decides how an unusable file is reported. A file that expands to more parts than the setting
    allows is not built at all: its report is :func:`oversized_report`'s."""
    try:
        loaded = load(path, rules)
    except PartCountExceeded as exc:
        return oversized_report((rules or Rules()).setting.name, exc.count, str(exc))
    return check_loaded(loaded, stability=stability, forces=forces)


def check_loaded(loaded: LoadedModel, *, stability: bool = True, forces: bool = False) -> Report:
    """:func:`check` of a model read from a file or text: the lines that could not become pieces come first among
    the issues (same kind and message) and make the verdict invalid."""
    report = check(loaded.assembly, stability=stability, forces=forces)
    if not loaded.problems:
        return report
    problems = tuple(Issue(p.kind, (), p.message) for p in loaded.problems)
    return dataclasses.replace(report, valid=False, issues=problems + report.issues)


def joint_findings(
    pieces: dict[int, Piece], joints: JointTable, authored: list[Connection]
) -> tuple[list[Issue], list[Issue]]:
    """BrickAgent's joint rule: (``join`` issues for authored connections that are missing or inexact, ``near_miss``
    warnings for inexact joints nobody authored)."""
    exact = joints.exact
    rows = _rows_of(pieces, joints, authored)  # each authored connection's joint row, -1 where none
    issues, warnings = [], []
    for c, row in zip(authored, rows.tolist(), strict=True):
        if row >= 0 and exact[row]:
            continue
        a, b = pieces[c.a], pieces[c.b]
        where = f"authored connection {a.ref(c.a_conn)} of {a.describe()} to {b.ref(c.b_conn)} of {b.describe()}"
        if row < 0:
            issues.append(Issue("join", (c.a, c.b), f"{where} is not a joint: {_offset(a, c.a_conn, b, c.b_conn)}"))
        else:
            issues.append(
                Issue("join", (c.a, c.b), f"{where} is not an exact fit: {_offset(a, c.a_conn, b, c.b_conn)} off")
            )
    unnamed: list[tuple[int, int]] = []
    inexact = ~exact
    inexact[rows[rows >= 0]] = False  # authored: judged above
    for key in joints.keys[inexact].tolist():
        c = Connection(*key)
        if len(warnings) == MAX_NEAR_MISS_WARNINGS:  # a pile pushed through itself has tens of thousands
            unnamed.append((c.a, c.b))
            continue
        a, b = pieces[c.a], pieces[c.b]
        warnings.append(
            Issue(
                "near_miss",
                (c.a, c.b),
                f"{b.describe()} sits {_offset(a, c.a_conn, b, c.b_conn)} off {a.describe()} "
                f"{a.part.connectors[c.a_conn].label} (its {b.part.connectors[c.b_conn].label}); counted as joined "
                "for stability, not an exact fit",
            )
        )
    if unnamed:
        rest = tuple(sorted({p for pair in unnamed for p in pair}))
        warnings.append(Issue("near_miss", rest, f"and {len(unnamed):,} more inexact joints (among {_ids(rest)})"))
    return issues, warnings


def _rows_of(pieces: dict[int, Piece], joints: JointTable, authored: list[Connection]) -> np.ndarray:
    """The row of ``joints`` holding each authored connection, -1 where it is not a joint: both sides' keys as one
    int64 each (pieces by rank among ``pieces``, so ids of any size fit), matched by a sorted search."""
    if not authored or not len(joints):
        return np.full(len(authored), -1, dtype=np.int64)
    ids = np.array(sorted(pieces), dtype=np.int64)
    wanted = np.array(authored, dtype=np.int64)
    width = 1 + max(int(joints.keys[:, [1, 3]].max()), int(wanted[:, [1, 3]].max()))

    kind = np.int64 if len(ids) * width < 2**31 else object  # object: Python ints, past any real assembly

    def codes(keys: np.ndarray) -> np.ndarray:
        a, b = np.searchsorted(ids, keys[:, 0]).astype(kind), np.searchsorted(ids, keys[:, 2]).astype(kind)
        return ((a * width + keys[:, 1]) * len(ids) + b) * width + keys[:, 3]

    have, want = codes(joints.keys), codes(wanted)
    order = np.argsort(have, kind="stable")
    at = np.minimum(np.searchsorted(have[order], want), len(order) - 1)
    return np.where(have[order][at] == want, order[at], -1)


def _offset(a: Piece, i: int, b: Piece, j: int) -> str:
    """How far connector ``i`` of ``a`` and ``j`` of ``b`` are apart: position (off the axis, for the axle family,
    which may slide) and tilt between their axes."""
    delta = b.points[j] - a.points[i]
    ua, ub = a.axes[i], b.axes[j]
    if a.part.connectors[i].family == "axle":
        delta = delta - float(delta @ ua) * ua
    distance, tilt = float(np.linalg.norm(delta)), math.acos(min(1.0, abs(float(ua @ ub))))
    parts = [f"{distance:.3g} LDU"] if distance > cx.EXACT_TOLERANCE or tilt <= cx.EXACT_TOLERANCE else []
    if tilt > cx.EXACT_TOLERANCE:
        parts.append(f"{math.degrees(tilt):.3g}°")
    return " and ".join(parts)


def _stock_issues(assembly: Assembly) -> list[Issue]:
    inv = assembly.rules.inventory
    assert inv is not None
    used: Counter[tuple[str, int]] = Counter((p.part.stem, p.colour) for p in assembly.pieces.values())
    issues = []
    for (stem, code), count in sorted(used.items()):
        cap = inv.limit(stem, code)
        if cap is not None and count > cap:
            ids = tuple(sorted(p.id for p in assembly.pieces.values() if (p.part.stem, p.colour) == (stem, code)))
            name = assembly.pieces[ids[0]].part.name
            what = "it is not in the inventory" if not inv.allows(stem, code) else f"the inventory has only {cap}"
            issues.append(
                Issue(
                    "stock",
                    ids,
                    f"{count} x {stem} ('{name}') in {colour_name(code)} used, but {what}",
                )
            )
    return issues


def consistency_errors(assembly: Assembly) -> list[str]:
    """Where the incremental state disagrees with a from-scratch recomputation (empty when consistent)."""
    errors = []
    scratch = scratch_table(assembly.pieces)
    key = list(map(tuple, scratch.keys.tolist()))
    mine = [(j.a, j.a_conn, j.b, j.b_conn) for j in assembly.joints]
    if key != mine:
        errors.append(
            f"joints differ: incremental-only {sorted(set(mine) - set(key))}, "
            f"scratch-only {sorted(set(key) - set(mine))}"
        )
    if components_of(list(assembly.pieces), scratch) != assembly.components:
        errors.append("components differ")
    usage = Counter((p.part.stem, p.colour) for p in assembly.pieces.values())
    if usage != assembly.usage:
        errors.append(f"usage differs: {usage} vs {assembly.usage}")
    if assembly.strict:
        hits = all_collisions({p.id: (p.part.stem, p.pose) for p in assembly.pieces.values()})
        if hits:
            errors.append(f"strict assembly holds colliding pairs {hits}")
    for p in assembly.pieces.values():
        if not np.all(np.isfinite(p.pose)):
            errors.append(f"piece {p.id} has a non-finite pose")
    return errors


def oversized_report(setting: str, count: int, message: str) -> Report:
    """The verdict on a file that expands to more parts than its setting allows (refused before any part is
    built, see :func:`brick_gym.core.modelfile.part_bound`): invalid, with one ``part_limit`` issue."""
    return Report(False, setting, count, 0, (Issue("part_limit", (), message),))
