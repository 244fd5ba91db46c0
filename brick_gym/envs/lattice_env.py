"""Fidelity tasks on the compiled lattice core: a batched ``gymnasium.vector.VectorEnv`` stepping N assemblies in
one call (``FidelityLatticeVectorEnv``) and its one-env face (``FidelityLatticeEnv``), registered as
``BrickGym/FidelityLattice-v0`` so that ``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``
gives the batch.

Each env draws a target from ``Fidelity-v0``'s generator (same splits, seeds, kinds, sizes and pools), starts from
its base plate, and builds inside a region of cells above it (8 × 8 columns from the base's low corner; 40 plates
tall for small targets, 80 for medium). Actions follow an encoding given to the constructor (default
:class:`ColumnEncoding`: palette part, colour, quarter turn, low column; the piece rests on the highest cell of
its footprint and attaches by a hole over a free stud), with exact masks kept incrementally by the lattice
kernels. Reward terms and weights are ``Fidelity-v0``'s (:data:`~brick_gym.envs.registry.FIDELITY_REWARDS`):
the fidelity terms are the frame IoU of ``TargetProgress``; validity on the lattice is one component without
collisions (every placement attaches and is collision-checked). BrickBench's drop test is not run here: a build
that overhangs its base plate can still topple (a suite level on the lattice core mirrors every episode on the
exact path and gates on the full check: :mod:`brick_gym.suite.lattice_level`). The exact path replays any episode
to the same pieces, joints, fidelity and every verdict but the drop test's (tested).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector.utils import batch_space

from brick_gym.core.catalog import part as get_part
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.core.progress import MARGIN
from brick_gym.envs.fidelity_targets import BASE_PLATES, COLOURS, PALETTE_STEMS
from brick_gym.envs.fidelity_tasks import DEFAULT_POOL, fidelity_task_source
from brick_gym.lattice import columns as cols
from brick_gym.lattice import kernels as kn
from brick_gym.lattice.column_tables import ColumnTables
from brick_gym.lattice.state import LatticeBatch
from brick_gym.lattice.tables import YAWS, build_tables
from brick_gym.rewards.terms import RewardSpec, standard_rewards

COLUMNS = (8, 8)
"""Region columns along (x, z) from the base plate's low corner (every base plate fits)."""
HEIGHTS = {"small": 40, "medium": 80}
"""Region plates per target size (the tallest generated targets: 34 and 76)."""
BUDGETS = {"small": (32, 64), "medium": (80, 160)}
"""(max pieces, max steps) per size, as ``Fidelity-v0``'s."""
TERMS = ("valid_placement", "new_joints", "invalid_action", "fidelity_delta", "fidelity_colour_delta", "validity",
         "part_rule", "fidelity", "fidelity_colour")  # fmt: skip
"""The reward terms the env works out; ``info["reward_terms"]`` carries those the rewards weigh."""


class LatticeEncoding(Protocol):
    """An action encoding over the lattice batch: its own mask layout, state and compiled kernels. An instance
    serves one env (:meth:`bind` gives it its arrays). A target-blind benchmark encoding plugs in by implementing
    these methods."""

    def bind(self, env: FidelityLatticeVectorEnv) -> int:
        """Allocate this encoding's state for ``env``'s batch; how many actions besides STOP (the last index)."""
        ...

    def reset_masks(self, env: FidelityLatticeVectorEnv, envs: np.ndarray | list[int] | int) -> None:
        """Recompute the mask rows of ``envs`` from scratch (after a reset)."""
        ...

    def step(self, env: FidelityLatticeVectorEnv, actions: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, ...]:
        """Apply the actions of the ``active`` envs: (codes, joints, allowed), code 0 placed, 1.. a refusal (see
        :meth:`reason`), :data:`~brick_gym.lattice.columns.STOPPED`, :data:`~brick_gym.lattice.columns.SKIPPED`;
        ``allowed``: whether any action besides STOP is allowed now; masks updated."""
        ...

    def reason(self, code: int) -> str:
        """The ``invalid_reason`` of a refusal code."""
        ...

    def placement(self, env: FidelityLatticeVectorEnv, e: int, action: int) -> Placement | None:
        """The exact path's placement an allowed action stands for in env ``e`` now (None for STOP)."""
        ...

    def sample(self, env: FidelityLatticeVectorEnv, u: np.ndarray) -> np.ndarray:
        """An allowed action per env (STOP only when nothing else is), from uniform numbers ``u`` in [0, 1)."""
        ...


class ColumnEncoding:
    """(palette part, colour, quarter turn, low column) actions; see :mod:`brick_gym.lattice.columns`. Its state:
    the height map, the column tops, ``legal`` per (part, q, column) and ``nlegal`` per env."""

    def bind(self, env: FidelityLatticeVectorEnv) -> int:
        """Palette parts × colours × 4 quarter turns × columns."""
        x, _, z = env.batch.region
        n = env.num_envs
        self.tables = ColumnTables(env.batch.tables, env.palette_part, env.inv_yaw)
        self.heights = np.zeros((n, x, z), dtype=np.int64)
        self.tops = np.zeros((n, 2, x, z), dtype=np.int64)
        self.cls = np.zeros((n, self.tables.classes, x, z), dtype=np.int8)
        self.legal = np.zeros((n, len(env.palette_part) * 4 * x * z), dtype=np.int8)
        self.nlegal = np.zeros((n, len(env.palette_part) * 4), dtype=np.int64)
        self.allowed = np.zeros(n, dtype=np.bool_)
        self.state = (self.heights, self.tops, self.cls, self.legal, self.nlegal)
        """What the column kernels keep per env (their ``cs``)."""
        return self.legal.shape[1] * len(env.batch.colours)

    def reset_masks(self, env: FidelityLatticeVectorEnv, envs: np.ndarray | list[int] | int) -> None:
        """Every action of ``envs`` decided (heights from their pieces' tops)."""
        b = env.batch
        rows = np.atleast_1d(np.asarray(envs, dtype=np.int64))
        cols.reset_masks(b.grid, b.pieces, b.used, b.meta, b.stock, env.masks, self.allowed, self.state, rows,
                         env.kernel_tables(), self.tables.arrays())  # fmt: skip

    def step(self, env: FidelityLatticeVectorEnv, actions: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, ...]:
        """All envs in one compiled pass."""
        codes = np.empty(env.num_envs, dtype=np.int64)
        joints = np.zeros(env.num_envs, dtype=np.int64)
        b = env.batch
        t = b.tables
        cols.step_all(
            np.asarray(actions, dtype=np.int64), active, codes, joints, self.allowed, b.grid, b.pieces, b.used,
            b.meta, b.stock, env.masks, self.state, env.built, env.goal, env.counts, env.kernel_tables(),
            self.tables.arrays(), t.vox, t.nvox,
        )  # fmt: skip
        return codes, joints, self.allowed.copy()

    def reason(self, code: int) -> str:
        """The column verdict's wording, or ``bad_action`` for an action outside the space."""
        return cols.VERDICTS[code] if 0 < code < len(cols.VERDICTS) else "bad_action"

    def placement(self, env: FidelityLatticeVectorEnv, e: int, action: int) -> Placement | None:
        """The attachment :func:`~brick_gym.lattice.columns.evaluate` finds (the one the step commits)."""
        x, _, z = env.batch.region
        if action == env.stop_action:
            return None
        base, colour = divmod(action, len(env.batch.colours))
        ck, ci, q = base % z, (base // z) % x, (base // (z * x)) % 4
        s = base // (z * x * 4)
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

    def sample(self, env: FidelityLatticeVectorEnv, u: np.ndarray) -> np.ndarray:
        """A legal (part, q, column) uniformly, then one of its part's colours in stock (compiled)."""
        return cols.sample(self.legal, self.nlegal, env.batch.stock, env.palette_part, u)


@dataclass(frozen=True)
class _Target:
    """What a reset needs of one task: base plate, its low cell, the goal in region cells, the goal's size, the
    target observation."""

    base: int
    colour: int
    origin: np.ndarray
    goal: np.ndarray
    goal_count: int
    observed: np.ndarray
    """The ``target`` observation: goal colour + 1 per cell (0 none)."""


_TARGETS: dict[tuple[int, tuple[int, int, int]], tuple[Any, _Target]] = {}
"""Prepared targets by (task id, region), with the task kept alive (tasks are cached by their source)."""


def _target(task: Any, region: tuple[int, int, int], colours: tuple[int, ...], base_part: int) -> _Target:
    """The region's goal grid of a task (memoised)."""
    key = (id(task), region)
    hit = _TARGETS.get(key)
    if hit is None or hit[0] is not task:
        if len(_TARGETS) >= 4096:
            _TARGETS.clear()
        hit = _TARGETS[key] = (task, _prepare(task, region, colours, base_part))
    return hit[1]


def _prepare(task: Any, region: tuple[int, int, int], colours: tuple[int, ...], base_part: int) -> _Target:
    """The region's goal grid of a task (colour index per cell, −1 none, −2 outside ``TargetProgress``'s arrays)."""
    from brick_gym.core.occupancy import contained_shape, lattice_place

    fidelity_task = task.extras["fidelity_task"]
    base = fidelity_task.steps[0]
    _, (i0, j0, k0, *_) = lattice_place(contained_shape(base.part), np.eye(4))  # type: ignore[arg-type,misc]
    origin = np.array([i0, j0, k0], dtype=np.int64)
    target = task.target_voxels
    p_origin = np.asarray(target.origin, dtype=np.int64) - MARGIN
    p_shape = np.array([int(n) + 2 * m for n, m in zip(target.shape, MARGIN, strict=True)])
    dense = target.to_dense(tuple(p_shape), tuple(p_origin), colours=True)
    occupied = target.to_dense(tuple(p_shape), tuple(p_origin))
    index = np.full(256, 127, dtype=np.int64)  # a colour outside the palette matches nothing
    for n, c in enumerate(colours):
        index[c] = n
    goal = np.full(region, -2, dtype=np.int8)
    cells = np.stack(np.meshgrid(*(np.arange(n) for n in region), indexing="ij"), axis=-1) + origin - p_origin
    inside = np.all((cells >= 0) & (cells < p_shape), axis=-1)
    at = tuple(cells[inside].T)
    goal[inside] = np.where(occupied[at], index[np.clip(dense[at], 0, 255)], -1)
    observed = (np.maximum(goal, -1) + 1).astype(np.int8)
    return _Target(base_part, colours.index(base.colour), origin, goal, int(occupied.sum()), observed)


class FidelityLatticeVectorEnv(gym.vector.VectorEnv):
    """N Fidelity tasks on the lattice core, stepped in one call (see the module docstring). Autoreset is
    gymnasium's default (next step): the step after an env ends resets it and ignores its action."""

    metadata: dict[str, Any] = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}  # noqa: RUF012

    def __init__(
        self,
        num_envs: int = 1,
        *,
        split: str = "train",
        seed: int = 0,
        kinds: tuple[str, ...] | None = None,
        size: str = "small",
        pool: int | None = DEFAULT_POOL,
        min_parts: int = 0,
        rewards: RewardSpec | Mapping[str, float] | None = None,
        encoding: LatticeEncoding | None = None,
        max_pieces: int | None = None,
        max_steps: int | None = None,
        source: Callable[[np.random.Generator], Any] | None = None,
    ) -> None:
        """Fidelity-v0's task arguments; ``rewards`` a spec or {term: weight} over the standard terms (default
        Fidelity-v0's weights); ``encoding`` the action encoding (default :class:`ColumnEncoding`); ``source`` a
        task source of ``size`` targets drawing from an env's generator (e.g. a suite level's split) in place of
        Fidelity-v0's (``split``, ``seed``, ``kinds``, ``pool`` and ``min_parts`` are then unused)."""
        from brick_gym.envs.registry import FIDELITY_REWARDS, _rewards

        if size not in HEIGHTS:
            raise ValueError(f"size must be one of {sorted(HEIGHTS)}, got {size!r}")
        self.num_envs = int(num_envs)
        self.source = source or fidelity_task_source(split=split, seed=seed, kinds=kinds, size=size, pool=pool,
                                                     min_parts=min_parts)  # fmt: skip
        spec = _rewards(rewards, FIDELITY_REWARDS) if rewards is not None else standard_rewards(**FIDELITY_REWARDS)
        self.rewards = spec
        self.weights = {t.name: float(w) for t, w in spec.weights}
        if set(self.weights) - set(TERMS):
            raise ValueError(f"the lattice env works out {TERMS}, not {sorted(set(self.weights) - set(TERMS))}")
        self.max_pieces, self.max_steps = BUDGETS[size]
        self.max_pieces = max_pieces or self.max_pieces
        self.max_steps = max_steps or self.max_steps
        region = (COLUMNS[0], HEIGHTS[size], COLUMNS[1])
        self.batch = LatticeBatch(build_tables(PALETTE_STEMS + tuple(BASE_PLATES)), COLOURS, envs=self.num_envs,
                                  region=region, max_pieces=self.max_pieces + 1)  # fmt: skip
        self.palette_part = np.array([self.batch.tables.index(s) for s in PALETTE_STEMS], dtype=np.int64)
        self.inv_yaw = cols.inverse_yaws(self.batch.tables.place)
        self.encoding = encoding or ColumnEncoding()
        n = self.encoding.bind(self)
        self.stop_action = n
        self.masks = np.zeros((self.num_envs, n + 1), dtype=np.int8)
        self.built = np.full((self.num_envs, *region), -1, dtype=np.int8)
        self.goal = np.full((self.num_envs, *region), -2, dtype=np.int8)
        self.target_obs = np.zeros((self.num_envs, *region), dtype=np.int8)
        """The ``target`` observation of each env (its goal colours + 1, 0 none), set at reset."""
        self.counts = np.zeros((self.num_envs, 4), dtype=np.int64)
        self.goal_count = np.zeros(self.num_envs, dtype=np.int64)
        self.paid = np.zeros((self.num_envs, 2))
        self.steps = np.zeros(self.num_envs, dtype=np.int64)
        self.returns = np.zeros(self.num_envs)
        self.invalids = np.zeros(self.num_envs, dtype=np.int64)
        self.last_invalid = np.zeros(self.num_envs, dtype=bool)
        self.done = np.zeros(self.num_envs, dtype=bool)
        self.tasks: list[Any] = [None] * self.num_envs
        self.rngs = [seeding.np_random(None)[0] for _ in range(self.num_envs)]
        colours = len(COLOURS) + 1
        self.single_action_space = spaces.Discrete(n + 1)
        self.single_observation_space = spaces.Dict(
            {
                "built": spaces.Box(0, colours, region, np.int8),
                "target": spaces.Box(0, colours, region, np.int8),
                "progress": spaces.Box(0.0, 1.0, (4,), np.float32),
            }
        )
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)

        self._reasons = np.array([None, *(self.encoding.reason(c) for c in range(1, cols.STOPPED))], dtype=object)
        t = self.batch.tables
        self._kernel_tables = (t.kind, t.dims, t.nconn, t.conn_kind, t.conn_mate, t.mates, t.conn_point, t.conn_turn,
                               t.place, t.pair_start, t.pair_value, self.inv_yaw)  # fmt: skip

    # ----- what the kernels take ---------------------------------------------------------------------------------
    def kernel_tables(self) -> tuple[np.ndarray, ...]:
        """The part tables and the inverse yaw table, in the kernels' order."""
        return self._kernel_tables

    # ----- gymnasium API -----------------------------------------------------------------------------------------
    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Reset every env; ``seed`` an int (env i gets seed + i) or one per env; ``options["tasks"]``: a task
        per env to play instead of a drawn one (None: draw), e.g. an evaluation's task seeds."""
        seeds = [None] * self.num_envs if seed is None else seed
        if isinstance(seeds, int):
            seeds = [seeds + i for i in range(self.num_envs)]
        for e, s in enumerate(seeds):
            if s is not None:
                self.rngs[e] = seeding.np_random(int(s))[0]
        tasks = (options or {}).get("tasks")
        if tasks is not None and len(tasks) != self.num_envs:
            raise ValueError(f"options['tasks'] must hold a task (or None) per env ({self.num_envs}), got {len(tasks)}")
        self._reset_envs(np.arange(self.num_envs), tasks)
        self.done[:] = False
        skipped = np.full(self.num_envs, cols.SKIPPED)
        terms = {k: v for k, v in self._zero_terms().items() if k in self.weights}
        return self._observe(), self._info(skipped, np.zeros(self.num_envs), terms)

    def step(self, actions: Any) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step every env; an env that ended on the last step is reset instead (its action ignored)."""
        actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)
        was_done = self.done.copy()
        if was_done.any():
            self._reset_envs(np.flatnonzero(was_done))
        active = ~was_done
        codes, joints, allowed = self.encoding.step(self, actions, active)
        self.steps[active] += 1
        placed = codes == 0
        invalid = active & (codes != 0) & (codes != cols.STOPPED)
        self.invalids += invalid
        self.last_invalid = invalid
        iou, colour_iou = self.fidelities()
        pieces = self.batch.meta[:, kn.ALIVE]
        terminated = active & ((codes == cols.STOPPED) | (pieces >= self.max_pieces) | ~allowed)
        truncated = active & ~terminated & (self.steps >= self.max_steps)
        ended = terminated | truncated
        terms = self._zero_terms()
        terms["valid_placement"] = placed.astype(np.float64)
        terms["new_joints"] = joints.astype(np.float64)
        terms["invalid_action"] = invalid.astype(np.float64)
        terms["fidelity_delta"] = np.where(placed, iou - self.paid[:, 0], 0.0)
        terms["fidelity_colour_delta"] = np.where(placed, colour_iou - self.paid[:, 1], 0.0)
        self.paid[placed] = np.stack([iou, colour_iou], axis=1)[placed]
        for e in np.flatnonzero(ended).tolist():
            terms["validity"][e] = float(self.batch.components(e) == 1)
            terms["part_rule"][e] = 1.0
            terms["fidelity"][e], terms["fidelity_colour"][e] = iou[e], colour_iou[e]
        terms = {k: v for k, v in terms.items() if k in self.weights}
        reward = sum(self.weights[k] * v for k, v in terms.items())
        reward = np.where(active, reward, 0.0)
        self.returns = np.where(active, self.returns + reward, 0.0)
        info = self._info(codes, pieces, terms)
        if ended.any():
            info["episode_return"], info["_episode_return"] = np.where(ended, self.returns, 0.0), ended
            info["episode_length"], info["_episode_length"] = np.where(ended, self.steps, 0), ended
        self.done = ended
        return self._observe(), reward.astype(np.float64), terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """(N, A) int8 exact masks (read-only view of the batch's masks; sb3-contrib's MaskablePPO reads this)."""
        view = self.masks.view()
        view.flags.writeable = False
        return view

    def placement(self, e: int, action: int) -> Placement | None:
        """The exact path's placement an allowed action stands for in env ``e`` now (for replays)."""
        return self.encoding.placement(self, e, int(action))

    def sample_actions(self, rng: np.random.Generator) -> np.ndarray:
        """A uniform allowed action per env (STOP only when nothing else is allowed), the encoding's sampler."""
        return self.encoding.sample(self, rng.random(self.num_envs))

    # ----- helpers -----------------------------------------------------------------------------------------------
    def _reset_envs(self, envs: np.ndarray, chosen: Sequence[Any] | None = None) -> None:
        """Draw a task for each env of ``envs`` (or take ``chosen[e]`` where given) and start it from its base
        plate (one compiled call for all)."""
        bases = np.empty(len(envs), dtype=np.int64)
        colours = np.empty(len(envs), dtype=np.int64)
        b = self.batch
        for n, e in enumerate(envs.tolist()):
            given = None if chosen is None else chosen[e]
            task = self.tasks[e] = self.source(self.rngs[e]) if given is None else given
            target = _target(task, b.region, b.colours, b.tables.index(task.extras["fidelity_task"].steps[0].part))
            bases[n], colours[n] = target.base, target.colour
            b.origin[e] = target.origin
            self.goal[e] = target.goal
            self.target_obs[e] = target.observed
            self.goal_count[e] = target.goal_count
        t = b.tables
        kn.restart(b.grid, b.pieces, b.used, b.meta, b.stock, self.built, self.goal, self.counts, envs, bases, colours,
                   t.dims, t.nconn, t.conn_kind, t.conn_mate, t.mates, t.conn_point, t.vox, t.nvox)  # fmt: skip
        self.encoding.reset_masks(self, envs)
        self.paid[envs] = np.stack(self.fidelities(envs), axis=1)
        self.steps[envs] = 0
        self.returns[envs] = 0.0
        self.invalids[envs] = 0
        self.last_invalid[envs] = False

    def fidelities(self, rows: np.ndarray | slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
        """Shape and colour IoU of each env's build against its target (``TargetProgress``'s frame IoU)."""
        built, inter, inter_colour = self.counts[rows, 0], self.counts[rows, 1], self.counts[rows, 2]
        union = self.goal_count[rows] + built - inter
        safe = np.maximum(union, 1)
        return np.where(union > 0, inter / safe, 1.0), np.where(union > 0, inter_colour / safe, 1.0)

    def _zero_terms(self) -> dict[str, np.ndarray]:
        return {name: np.zeros(self.num_envs) for name in TERMS}

    def _observe(self) -> dict[str, np.ndarray]:
        iou, colour_iou = self.fidelities()
        progress = np.stack(
            [self.steps / self.max_steps, self.batch.meta[:, kn.ALIVE] / self.max_pieces, iou, colour_iou], axis=1
        ).astype(np.float32)
        return {
            "built": np.add(self.built, 1, dtype=np.int8),
            "target": self.target_obs.copy(),
            "progress": np.clip(progress, 0.0, 1.0),
        }

    def _info(self, codes: np.ndarray, pieces: np.ndarray, terms: dict[str, np.ndarray]) -> dict[str, Any]:
        refused = (codes > 0) & (codes < cols.STOPPED)
        reason = np.where(refused, self._reasons[np.clip(codes, 0, cols.STOPPED - 1)], None)
        return {
            "reward_terms": terms,
            "action_mask": self.masks,
            "invalid_reason": reason,
            "pieces": np.asarray(self.batch.meta[:, kn.ALIVE]).copy(),
            "outcome": np.where(codes == 0, "placed", reason),
        }


class FidelityLatticeEnv(gym.Env):
    """One env of :class:`FidelityLatticeVectorEnv` (the same kernels, observations, rewards and info keys)."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(self, **kw: Any) -> None:
        self.vector = FidelityLatticeVectorEnv(1, **kw)
        self.action_space = self.vector.single_action_space
        self.observation_space = self.vector.single_observation_space

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Draw a task (``options["task"]``: play this one instead) and place its base plate."""
        super().reset(seed=seed)
        task = (options or {}).get("task")
        obs, info = self.vector.reset(seed=seed, options=None if task is None else {"tasks": [task]})
        return _first(obs), _first(info)

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        """One placement or STOP."""
        if self.vector.done[0]:
            raise RuntimeError("step() called after the episode ended; call reset()")
        obs, reward, terminated, truncated, info = self.vector.step(np.array([action]))
        return _first(obs), float(reward[0]), bool(terminated[0]), bool(truncated[0]), _first(info)

    def action_masks(self) -> np.ndarray:
        """int8 mask of the current state."""
        return self.vector.masks[0].copy()

    def placement(self, action: int) -> Placement | None:
        """The exact path's placement an allowed action stands for now."""
        return self.vector.placement(0, action)


def _first(tree: Any) -> Any:
    """Env 0's entry of batched observations or infos (the "_key" masks dropped), copied out of the batch's arrays
    (they are rewritten by the next step)."""
    if isinstance(tree, dict):
        return {k: _first(v) for k, v in tree.items() if not k.startswith("_")}
    if isinstance(tree, np.ndarray):
        value = tree[0]
        if tree.dtype == object:
            return value
        return value.copy() if value.ndim else value.item()
    return tree


def make_fidelity_lattice_env(**kw: Any) -> FidelityLatticeEnv:
    """``BrickGym/FidelityLattice-v0``'s single env."""
    return FidelityLatticeEnv(**kw)


def make_fidelity_lattice_vector_env(num_envs: int = 1, **kw: Any) -> FidelityLatticeVectorEnv:
    """``BrickGym/FidelityLattice-v0``'s vector entry point."""
    return FidelityLatticeVectorEnv(num_envs, **kw)


__all__ = [
    "ColumnEncoding",
    "FidelityLatticeEnv",
    "FidelityLatticeVectorEnv",
    "LatticeEncoding",
    "make_fidelity_lattice_env",
    "make_fidelity_lattice_vector_env",
]
