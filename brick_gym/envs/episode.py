"""The one episode core under both environment faces (Gymnasium's :class:`~brick_gym.envs.assembly_env.
BrickAssemblyEnv` and PettingZoo's :class:`~brick_gym.envs.multi_builder.MultiBuilderEnv`).

An :class:`Episode` owns what an episode is made of — the task, the assembly, the codec, the observation builder,
the reward spec, the incremental target slots, the target rankings and the viewer — and does what both faces do:
choose the task at reset, place the start piece (or continue a given assembly), build views, decode and place an
action, run the full check at the end, pay the reward terms and keep the episode's sums. The faces add only who
acts, when an episode ends for whom, and their API's return values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.pieces import ConnectorRef, Outcome, Piece, Placement
from brick_gym.core.poses import translation, yaw_of
from brick_gym.core.progress import TargetProgress
from brick_gym.core.rules import Rules
from brick_gym.envs.codecs import Codec, View
from brick_gym.envs.encodings import make_codec
from brick_gym.envs.observations import ObservationBuilder, ObservationConfig
from brick_gym.envs.palette import PaletteSlot, TargetSlots
from brick_gym.envs.proposals import TargetRanking
from brick_gym.rewards.terms import FIDELITY_MEMORY, RewardContext, RewardSpec, frame_fidelity, standard_rewards

if TYPE_CHECKING:
    from brick_gym.core.validity import Report


@dataclass(frozen=True)
class EnvTask:
    """What one episode is about: rules, palette, start piece, optional target (Fidelity) and prompt."""

    name: str
    rules: Rules
    palette: tuple[PaletteSlot, ...]
    start: tuple[str, int | str] = ("3958", "light bluish gray")
    ground: tuple[tuple[str, int | str, tuple[float, float, float]], ...] = ()
    """More pieces standing on the ground when an episode begins, after the start piece: (part, colour, world
    translation in LDU), e.g. a bridge's far pier. With the start piece they are the episode's start pieces."""
    target_voxels: Any = None
    """``voxels.VoxelGrid`` of the target model, for fidelity terms and the ``target`` observation."""
    prompt: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def start_pieces(self) -> int:
        """How many pieces an episode begins with: the start piece and the ground pieces (ids 0 up, in order)."""
        return 1 + len(self.ground)


@dataclass(frozen=True)
class EnvConfig:
    """Static shape and budget parameters (fixed for an env's lifetime; they set the spaces)."""

    max_pieces: int = 64
    max_steps: int = 128
    max_targets: int = 128
    max_candidates: int = 64
    target_size: int = 12
    target_shape: tuple[int, int, int] | None = None
    """The target box (x, up, z) in cells when it is not a ``target_size`` cube (tall or wide targets)."""
    encoding: str = "factored"
    rank_by_target: bool = True
    target_colours: bool = False
    """Observe the target's colours too (``target_colour``: each cell's palette colour), not only its occupancy:
    what a target-blind builder needs to match colours (the benchmark suite's levels set it)."""
    """Candidate encoding, tasks with a target: list the placements that fill the unbuilt target first
    (:mod:`~brick_gym.envs.proposals`); False keeps the connector round-robin order of tasks without one."""

    @property
    def target_box(self) -> tuple[int, int, int]:
        """The target observation's box (x, up, z) in cells."""
        return tuple(self.target_shape) if self.target_shape else (self.target_size,) * 3  # type: ignore[return-value]


TaskSource = Callable[[np.random.Generator], EnvTask]


class Viewer(Protocol):
    """Draws an assembly for ``render()``: an RGB array for ``rgb_array``, text for ``ansi``. ``header`` lines
    come first in text; ``label`` adds a note after a piece's line (e.g. who placed it)."""

    def __call__(
        self,
        assembly: Assembly,
        mode: str,
        *,
        header: Sequence[str] = (),
        label: Callable[[Piece], str] | None = None,
    ) -> np.ndarray | str | None: ...


def default_viewer(
    assembly: Assembly,
    mode: str,
    *,
    header: Sequence[str] = (),
    label: Callable[[Piece], str] | None = None,
) -> np.ndarray | str | None:
    """One 256² view of the assembly (``rgb_array``), or the header and one line per piece (``ansi``)."""
    if mode == "rgb_array":
        from brick_gym.render import render_view

        return render_view([(p.part.stem, p.colour, p.pose) for p in assembly], 1, size=256)
    if mode == "ansi":
        from brick_gym.core.pieces import colour_name

        lines = list(header)
        for p in sorted(assembly, key=lambda p: p.id):
            x, y, z = p.pose[:3, 3]
            note = f"  {label(p)}" if label is not None else ""
            lines.append(
                f"  #{p.id:<3} {p.part.stem:<8} {p.part.name:<24} {colour_name(p.colour):<12} "
                f"at ({x:g}, {y:g}, {z:g}) yaw {yaw_of(p.pose):.0f}{note}"
            )
        return "\n".join(lines)
    return None


@dataclass
class Attempt:
    """One action carried out: what it decoded to, the placement's outcome, and why it was illegal (or None)."""

    stop: bool = False
    placement: Placement | None = None
    outcome: Outcome | None = None
    invalid: str | None = None
    choice: Any = None
    """The staged encoding's placement decided so far, after a *where* or *what* sub-step (else None)."""


class Episode:
    """The state and rules of one episode at a time, for any number of builders."""

    def __init__(
        self,
        task: EnvTask | TaskSource,
        config: EnvConfig,
        rewards: RewardSpec | None = None,
        viewer: Viewer | None = None,
        log_terms: str | Sequence[str] = "all",
    ) -> None:
        self.config = config
        self.rewards = (rewards or standard_rewards()).logging(log_terms)
        self.viewer: Viewer = viewer or default_viewer
        self._task_source: TaskSource | None = None if isinstance(task, EnvTask) else task
        self._fixed_task = task if isinstance(task, EnvTask) else None
        probe = self._fixed_task or task(np.random.default_rng(0))  # type: ignore[operator]
        self.palette: tuple[PaletteSlot, ...] = tuple(probe.palette)
        self.codec: Codec = make_codec(config.encoding, self.palette, config.max_targets, config.max_candidates)
        self.observer = ObservationBuilder(
            ObservationConfig(
                max_pieces=config.max_pieces,
                max_targets=config.max_targets,
                palette_size=len(self.palette),
                target_size=config.target_size,
                target_shape=config.target_box,
                max_candidates=config.max_candidates if self.codec.lists_placements else 0,
                staged=self.codec.name == "staged",
                target_colours=config.target_colours,
            ),
            self.palette,
        )
        self._slots = TargetSlots(self.palette)
        self._rankings: dict[int, TargetRanking] = {}
        self._progresses: dict[int, TargetProgress] = {}
        self.task: EnvTask = probe
        self.assembly = Assembly(probe.rules, name=probe.name)
        self.ranking: TargetRanking | None = None
        self.progress: TargetProgress | None = None
        """The build measured against the task's target (tasks with one), shared by the ranking, the observation
        and the fidelity reward terms."""
        self.report: Report | None = None
        """The full validity report, once the episode has ended."""
        self.term_sums: dict[str, float] = {}
        self.scratch: dict[str, Any] = {}
        """Per-episode memory of reward terms (e.g. the last fidelity, for Δ-fidelity shaping)."""
        self._target_tensor: np.ndarray | None = None
        self._target_colour: np.ndarray | None = None

    # ----- reset ---------------------------------------------------------------------------------------------
    def choose_task(self, rng: np.random.Generator, options: dict | None) -> EnvTask:
        """``options["task"]`` when given, else a draw from the task source, else the fixed task."""
        if options and isinstance(options.get("task"), EnvTask):
            task = options["task"]
        elif self._task_source is not None:
            task = self._task_source(rng)
        else:
            task = self._fixed_task  # type: ignore[assignment]
        if tuple(task.palette) != self.palette:
            raise ValueError(f"task {task.name!r} has a different palette than this env was built for")
        return task

    def start(self, task: EnvTask, assembly: Assembly | None = None) -> int | None:
        """Begin an episode of ``task``: from its start piece on the ground, or from a copy of ``assembly``
        (curricula, benchmarks: it must be non-empty and use the task's rules). Returns the start piece's id."""
        self.task = task
        if assembly is not None:
            if assembly.rules != task.rules or not len(assembly):
                raise ValueError("options['assembly'] must be non-empty and use the task's rules")
            self.assembly = assembly.copy()
            start_id = min(self.assembly.pieces)
        else:
            self.assembly = Assembly(task.rules, name=task.name)
            stem, col = task.start
            start = self.assembly.add(stem, col)
            if not start.ok:
                raise ValueError(f"task {task.name!r}: start piece refused: {start.message}")
            start_id = start.piece
            for stem, col, at in task.ground:
                more = self.assembly.add(stem, col, translation(*at))
                if not more.ok:
                    raise ValueError(f"task {task.name!r}: ground piece {stem} at {at} refused: {more.message}")
        self.report = None
        self.term_sums = {}
        self.scratch = {}
        self.progress = self._progress_for(task)
        self.ranking = self._ranking_for(task)
        self._target_tensor = None
        self._target_colour: np.ndarray | None = None
        if task.target_voxels is not None:
            from brick_gym.core.voxels import target_tensor

            shape = self.config.target_box
            self._target_tensor = target_tensor(task.target_voxels, shape)
            if self.config.target_colours:
                self._target_colour = self.observer.colour_tensor(
                    target_tensor(task.target_voxels, shape, colours=True)
                )
            start_ctx = RewardContext(
                self.assembly, None, None, False, target=task.target_voxels, progress=self.progress
            )
            self.scratch.update(zip(FIDELITY_MEMORY, frame_fidelity(start_ctx), strict=True))
        return start_id

    def _progress_for(self, task: EnvTask) -> TargetProgress | None:
        """The progress state for ``task``'s target (one per target grid, kept across episodes on it)."""
        grid = task.target_voxels
        if grid is None:
            return None
        hit = self._progresses.get(id(grid))
        if hit is None or hit.target is not grid:
            if len(self._progresses) > 64:
                self._progresses.clear()
            hit = self._progresses[id(grid)] = TargetProgress(grid, tuple(sorted({s.colour for s in self.palette})))
        return hit

    def _ranking_for(self, task: EnvTask) -> TargetRanking | None:
        """The candidate order for ``task`` (one per target grid, kept across episodes on the same target)."""
        if not self.codec.lists_placements or not self.config.rank_by_target or self.progress is None:
            return None
        key = id(task.target_voxels)
        if key not in self._rankings or self._rankings[key].progress is not self.progress:
            if len(self._rankings) > 64:
                self._rankings.clear()
            self._rankings[key] = TargetRanking(self.progress, self.palette)
        return self._rankings[key]

    # ----- acting --------------------------------------------------------------------------------------------
    def targets(self, limit: int | None = None) -> list[ConnectorRef]:
        """The free connectors some palette source can mate, in (piece, connector) order (incremental)."""
        return self._slots.slots(self.assembly, self.config.max_targets if limit is None else limit)

    def view(self, targets: list[ConnectorRef], slots: Sequence[int] | None = None, choice: Any = None) -> View:
        """What a builder may do at ``targets`` (with only palette ``slots`` when given; ``choice``: the staged
        encoding's placement decided so far)."""
        return self.codec.view(self.assembly, targets, self.ranking, slots, choice)

    def attempt(self, action: object, view: View, refusal: Callable[[Placement], str | None] | None = None) -> Attempt:
        """Decode ``action`` against ``view`` and place it, unless it is malformed or ``refusal`` (a face's own
        rule: whose stock, whose region) names a reason. Never raises for any action."""
        decoded = self.codec.decode(action, view)
        if decoded.error is not None:
            return Attempt(invalid=f"bad_action: {decoded.error}")
        if decoded.placement is None:
            return Attempt(stop=decoded.stop, choice=decoded.choice)
        reason = refusal(decoded.placement) if refusal is not None else None
        if reason is not None:
            return Attempt(placement=decoded.placement, invalid=reason)
        outcome = self.assembly.place(decoded.placement)
        invalid = None if outcome.ok else f"{outcome.reason}: {outcome.message}"
        return Attempt(placement=decoded.placement, outcome=outcome, invalid=invalid)

    def settle(self, attempt: Attempt, terminal: bool) -> tuple[float, dict[str, float]]:
        """Pay the reward terms of ``attempt``; when ``terminal``, first run the full BrickBench check (kept in
        :attr:`report`). Term values are added to the episode's sums."""
        ctx = RewardContext(
            self.assembly,
            attempt.outcome,
            attempt.invalid,
            terminal,
            target=self.task.target_voxels,
            episode=self.scratch,
            progress=self.progress,
            task=self.task,
        )
        if terminal and self.rewards.needs_report():
            from brick_gym.core.validity import check

            self.report = check(self.assembly)
            ctx.report = self.report
        reward, terms = self.rewards.evaluate(ctx)
        for k, v in terms.items():
            self.term_sums[k] = self.term_sums.get(k, 0.0) + v
        return float(reward), terms

    def zero_terms(self) -> dict[str, float]:
        """Every reward term at 0 (what a reset reports)."""
        return {name: 0.0 for name in self.rewards.names}

    # ----- what builders see ---------------------------------------------------------------------------------
    def observe(
        self, view: View, *, step: int, last_invalid: bool, initial_stock: Sequence[int | None]
    ) -> dict[str, np.ndarray]:
        """The observation of ``view`` (one flat Dict; see :mod:`~brick_gym.envs.observations`)."""
        if self.progress is not None:
            self.progress.sync(self.assembly)
        return self.observer.build(
            self.assembly,
            view.targets,
            step=step,
            max_steps=self.config.max_steps,
            last_invalid=last_invalid,
            target=self._target_tensor,
            target_colour=self._target_colour,
            initial_stock=initial_stock,
            candidates=view.candidates,
            candidate_poses=view.poses,
            target_grid=self.task.target_voxels,
            candidate_agreement=view.agreement,
            progress=self.progress,
            stage=view.stage,
            choice=view.choice,
        )

    def initial_stock(self) -> list[int | None]:
        """The task's stock per palette slot (None: unlimited)."""
        inv = self.task.rules.inventory
        if inv is None:
            return [None] * len(self.palette)
        return [inv.limit(s.stem, s.colour) for s in self.palette]

    def render(
        self, mode: str | None, *, header: Sequence[str] = (), label: Callable[[Piece], str] | None = None
    ) -> np.ndarray | str | None:
        """Hand the assembly to the viewer (None without a render mode)."""
        if mode is None:
            return None
        return self.viewer(self.assembly, mode, header=header, label=label)

    def report_json(self, *, timings: bool = True) -> dict[str, Any] | None:
        """The report as JSON; ``timings=False`` drops wall-clock fields (for deterministic infos)."""
        if self.report is None:
            return None
        out = self.report.to_json()
        if not timings:
            out.pop("timings_s", None)
        return out

    def stats(self) -> dict[str, Any]:
        """What both faces report of every episode: task, pieces, verdict and issue kinds, summed reward terms."""
        report = self.report
        return {
            "task": self.task.name,
            "pieces": len(self.assembly),
            "valid": None if report is None else report.valid,
            "issues": None if report is None else sorted({i.kind for i in report.issues}),
            "reward_terms": {k: round(v, 6) for k, v in self.term_sums.items()},
        }


class OverEpisode:
    """The episode's parts under the names the faces' users know (``env.codec``, ``env.assembly``, …); a face
    that mixes this in keeps its :class:`Episode` in ``self.episode``."""

    episode: Episode
    metadata: ClassVar[dict[str, Any]]
    render_mode: str | None

    def _set_render_mode(self, render_mode: str | None) -> None:
        """Keep ``render_mode`` after checking it is one of the face's ``metadata["render_modes"]``."""
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.render_mode = render_mode

    @property
    def codec(self) -> Codec:
        """The action codec."""
        return self.episode.codec

    @property
    def palette(self) -> tuple[PaletteSlot, ...]:
        """The palette slots actions index."""
        return self.episode.palette

    @property
    def task(self) -> EnvTask:
        """The current episode's task."""
        return self.episode.task

    @property
    def assembly(self) -> Assembly:
        """The current episode's assembly."""
        return self.episode.assembly

    @property
    def report(self) -> Report | None:
        """The last episode's full validity report (with timings), once it has ended."""
        return self.episode.report


__all__ = ["Attempt", "EnvConfig", "EnvTask", "Episode", "OverEpisode", "TaskSource", "Viewer", "default_viewer"]
