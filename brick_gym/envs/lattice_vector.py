"""The batched env over the compiled lattice core, whatever the task: :class:`LatticeVectorEnv` steps N assemblies
in one call (a ``gymnasium.vector.VectorEnv``) and :class:`LatticeEnv` is its one-env face. A task family (the
Fidelity targets of :mod:`.lattice_env`, the open builds of :mod:`.lattice_build`) gives the palette, the region,
the budgets and, per task, where its start piece goes and what its target is (if any).

Each env starts from its task's start piece and builds inside a region of cells; actions follow an encoding given
to the constructor (:class:`LatticeEncoding`; the families default to
:class:`~brick_gym.envs.column_encoding.ColumnEncoding`), with exact masks kept
incrementally by the lattice kernels. Reward terms are the standard ones the lattice can work out (:data:`TERMS`):
validity on the lattice is one component without collisions (every placement attaches and is collision-checked)
within the setting's part counts; BrickBench's drop test is not run here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector.utils import batch_space

from brick_gym.core.occupancy import contained_shape, lattice_place
from brick_gym.core.pieces import Placement
from brick_gym.lattice import columns as cols
from brick_gym.lattice import kernels as kn
from brick_gym.lattice.state import LatticeBatch
from brick_gym.lattice.tables import LatticeParts
from brick_gym.rewards.terms import RewardSpec

TERMS = ("valid_placement", "new_joints", "invalid_action", "fidelity_delta", "fidelity_colour_delta", "validity",
         "part_rule", "fidelity", "fidelity_colour")  # fmt: skip
"""The reward terms the env works out; ``info["reward_terms"]`` carries those the rewards weigh."""


class LatticeEncoding(Protocol):
    """An action encoding over the lattice batch: its own mask layout, state and compiled kernels. An instance
    serves one env (:meth:`bind` gives it its arrays). A target-blind benchmark encoding plugs in by implementing
    these methods."""

    def bind(self, env: LatticeVectorEnv) -> int:
        """Allocate this encoding's state for ``env``'s batch; how many actions besides STOP (the last index)."""
        ...

    def reset_masks(self, env: LatticeVectorEnv, envs: np.ndarray | list[int] | int) -> None:
        """Recompute the mask rows of ``envs`` from scratch (after a reset)."""
        ...

    def step(self, env: LatticeVectorEnv, actions: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, ...]:
        """Apply the actions of the ``active`` envs: (codes, joints, allowed), code 0 placed, 1.. a refusal (see
        :meth:`reason`), :data:`~brick_gym.lattice.columns.STOPPED`, :data:`~brick_gym.lattice.columns.SKIPPED`;
        ``allowed``: whether any action besides STOP is allowed now; masks updated."""
        ...

    def reason(self, code: int) -> str:
        """The ``invalid_reason`` of a refusal code."""
        ...

    def placement(self, env: LatticeVectorEnv, e: int, action: int) -> Placement | None:
        """The exact path's placement an allowed action stands for in env ``e`` now (None for STOP)."""
        ...

    def sample(self, env: LatticeVectorEnv, u: np.ndarray) -> np.ndarray:
        """An allowed action per env (STOP only when nothing else is), from uniform numbers ``u`` in [0, 1)."""
        ...


def start_cell(stem: str) -> np.ndarray:
    """The lattice index of ``stem``'s low cell at the identity pose, where an episode puts its start piece
    (ValueError when that pose is off the lattice's stud columns, e.g. a part an odd number of studs wide)."""
    placed = lattice_place(contained_shape(stem), np.eye(4))  # type: ignore[arg-type]
    if placed is None:
        raise ValueError(f"start piece {stem} at the identity pose is off the lattice's stud columns")
    return np.array(placed[1][:3], dtype=np.int64)


@dataclass(frozen=True)
class LatticeStart:
    """What a reset needs of one task: the start piece (part and colour index, quarter 0) and its low cell in the
    region, the lattice index of region cell (0, 0, 0), and the target if the task has one."""

    base: int
    colour: int
    low: tuple[int, int, int]
    origin: np.ndarray
    goal: np.ndarray | None = None
    """Target colour index per region cell (−1 none, −2 outside ``TargetProgress``'s arrays); None: no target."""
    goal_count: int = 0
    """How many cells the target fills."""
    observed: np.ndarray | None = None
    """The ``target`` observation: goal colour + 1 per cell (0 none)."""


@dataclass(frozen=True)
class LatticeLayout:
    """What a task family fixes for an env's lifetime: the part tables (palette parts and start pieces), the
    palette's stems, the colours, the region (cells along x, up, z), the budgets and the setting's part counts."""

    tables: LatticeParts
    palette: tuple[str, ...]
    colours: tuple[int, ...]
    region: tuple[int, int, int]
    max_pieces: int
    max_steps: int
    part_counts: tuple[int, int | None] = (0, None)
    """(least, most) pieces the setting's part rule allows (the start piece counts); None: no upper limit."""
    targets: bool = False
    """Whether tasks have targets (the ``target`` observation and the fidelity terms)."""
    stock: np.ndarray | None = None
    """(parts, colours) int32 pieces in stock at a reset, −1 unlimited, 0 not offered (the start piece takes one
    of its own); None: every (part, colour) unlimited."""


class LatticeVectorEnv(gym.vector.VectorEnv):
    """N tasks of one family on the lattice core, stepped in one call (see the module docstring). Autoreset is
    gymnasium's default (next step): the step after an env ends resets it and ignores its action."""

    metadata: dict[str, Any] = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}  # noqa: RUF012

    def __init__(
        self,
        num_envs: int,
        layout: LatticeLayout,
        *,
        draw: Callable[[np.random.Generator], Any],
        start_of: Callable[[Any, LatticeVectorEnv], LatticeStart],
        rewards: RewardSpec,
        encoding: LatticeEncoding,
    ) -> None:
        """``draw`` gives a task from an env's generator; ``start_of`` what its reset needs (memoise it when it is
        slow); ``rewards`` weighs :data:`TERMS`; ``encoding`` the action encoding (a fresh instance)."""
        self.num_envs = int(num_envs)
        self.layout, self.draw, self.start_of = layout, draw, start_of
        self.rewards = rewards
        self.weights = {t.name: float(w) for t, w in rewards.weights}
        if set(self.weights) - set(TERMS):
            raise ValueError(f"the lattice env works out {TERMS}, not {sorted(set(self.weights) - set(TERMS))}")
        self.max_pieces, self.max_steps = layout.max_pieces, layout.max_steps
        region = layout.region
        t = layout.tables
        palette_part = np.array([t.index(s) for s in layout.palette], dtype=np.int64)
        slots = int(t.nconn.max()) + self.max_pieces * int(t.nconn[palette_part].max())  # a start piece, then palette
        self.batch = LatticeBatch(t, layout.colours, envs=self.num_envs, region=region, max_pieces=self.max_pieces + 1,
                                  slots=slots)  # fmt: skip
        self.palette_part = palette_part
        self.inv_yaw = cols.inverse_yaws(self.batch.tables.place)
        self.encoding = encoding
        n = self.encoding.bind(self)
        self.stop_action = n
        self.masks = np.zeros((self.num_envs, n + 1), dtype=np.int8)
        self.built = np.full((self.num_envs, *region), -1, dtype=np.int8)
        self.goal = np.full((self.num_envs, *region), -1, dtype=np.int8)
        self.target_obs = np.zeros((self.num_envs, *region), dtype=np.int8) if layout.targets else None
        """The ``target`` observation of each env (its goal colours + 1, 0 none), set at reset; None without
        targets."""
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
        colours = len(layout.colours) + 1
        observed = {"built": spaces.Box(0, colours, region, np.int8)}
        if layout.targets:
            observed["target"] = spaces.Box(0, colours, region, np.int8)
        observed["progress"] = spaces.Box(0.0, 1.0, (4 if layout.targets else 2,), np.float32)
        self.single_action_space = spaces.Discrete(n + 1)
        self.single_observation_space = spaces.Dict(observed)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)

        self._stock0 = (
            np.full(self.batch.stock.shape[1:], -1, dtype=self.batch.stock.dtype)
            if layout.stock is None
            else np.asarray(layout.stock, dtype=self.batch.stock.dtype)
        )
        """The stock every reset starts from (the start piece then takes one of its own)."""
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
        least, most = self.layout.part_counts
        for e in np.flatnonzero(ended).tolist():
            counted = least <= pieces[e] and (most is None or pieces[e] <= most)
            terms["part_rule"][e] = float(counted)
            terms["validity"][e] = float(counted and self.batch.components(e) == 1)
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

    def reset_ended(self) -> dict[str, np.ndarray]:
        """Reset now the envs whose episode ended on the last step, instead of on the next (the semantics of
        SB3's ``VecEnv``: :mod:`brick_gym.rl.lattice_vec`); every env's observation."""
        ended = np.flatnonzero(self.done)
        if len(ended):
            self._reset_envs(ended)
            self.done[ended] = False
        return self._observe()

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

    def fidelities(self, rows: np.ndarray | slice = slice(None)) -> tuple[np.ndarray, np.ndarray]:
        """Shape and colour IoU of each env's build against its target (``TargetProgress``'s frame IoU; 0 for a
        task without a target, as the exact path pays)."""
        built, inter, inter_colour = self.counts[rows, 0], self.counts[rows, 1], self.counts[rows, 2]
        union = self.goal_count[rows] + built - inter
        safe = np.maximum(union, 1)
        return np.where(union > 0, inter / safe, 1.0), np.where(union > 0, inter_colour / safe, 1.0)

    # ----- helpers -----------------------------------------------------------------------------------------------
    def _reset_envs(self, envs: np.ndarray, chosen: Sequence[Any] | None = None) -> None:
        """Draw a task for each env of ``envs`` (or take ``chosen[e]`` where given) and put its start piece (one
        compiled call for all)."""
        bases = np.empty(len(envs), dtype=np.int64)
        colours = np.empty(len(envs), dtype=np.int64)
        lows = np.empty((len(envs), 3), dtype=np.int64)
        b = self.batch
        for n, e in enumerate(envs.tolist()):
            given = None if chosen is None else chosen[e]
            task = self.tasks[e] = self.draw(self.rngs[e]) if given is None else given
            start = self.start_of(task, self)
            bases[n], colours[n], lows[n] = start.base, start.colour, start.low
            b.origin[e] = start.origin
            if start.goal is None:
                self.goal[e] = -1
            else:
                self.goal[e] = start.goal
            self.goal_count[e] = start.goal_count
            if self.target_obs is not None and start.observed is not None:
                self.target_obs[e] = start.observed
        t = b.tables
        kn.restart(b.grid, b.pieces, b.used, b.meta, b.stock, self.built, self.goal, self.counts, envs, bases, colours,
                   lows, self._stock0, t.dims, t.nconn, t.conn_kind, t.conn_mate, t.mates, t.conn_point, t.vox,
                   t.nvox)  # fmt: skip
        self.encoding.reset_masks(self, envs)
        self.paid[envs] = np.stack(self.fidelities(envs), axis=1)
        self.steps[envs] = 0
        self.returns[envs] = 0.0
        self.invalids[envs] = 0
        self.last_invalid[envs] = False

    def _zero_terms(self) -> dict[str, np.ndarray]:
        return {name: np.zeros(self.num_envs) for name in TERMS}

    def _observe(self) -> dict[str, np.ndarray]:
        progress = [self.steps / self.max_steps, self.batch.meta[:, kn.ALIVE] / self.max_pieces]
        observed = {"built": np.add(self.built, 1, dtype=np.int8)}
        if self.target_obs is not None:
            observed["target"] = self.target_obs.copy()
            progress.extend(self.fidelities())
        observed["progress"] = np.clip(np.stack(progress, axis=1).astype(np.float32), 0.0, 1.0)
        return observed

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


class LatticeEnv(gym.Env):
    """One env of a :class:`LatticeVectorEnv` (the same kernels, observations, rewards and info keys)."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(self, vector: LatticeVectorEnv) -> None:
        if vector.num_envs != 1:
            raise ValueError(f"the one-env face takes a batch of one env, got {vector.num_envs}")
        self.vector = vector
        self.action_space = vector.single_action_space
        self.observation_space = vector.single_observation_space

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Draw a task (``options["task"]``: play this one instead) and put its start piece."""
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


__all__ = ["TERMS", "LatticeEncoding", "LatticeEnv", "LatticeLayout", "LatticeStart", "LatticeVectorEnv", "start_cell"]
