"""Reward terms: named, weighted, each reported every step; weight 0 means logged but not paid.

Step terms see the outcome of one action; terminal terms run once at the end of an episode (STOP, part budget
or step budget) on the full validity report. Environments take a :class:`RewardSpec` through their
constructor, so ablations swap terms without touching the environment.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from brick_gym.core.assembly import Assembly
    from brick_gym.core.pieces import Outcome
    from brick_gym.core.validity import Report


@dataclass
class RewardContext:
    """What a term may look at: the assembly after the step, the step's outcome, and terminal extras."""

    assembly: Assembly
    outcome: Outcome | None
    invalid_reason: str | None
    terminal: bool
    target: Any = None
    """The task's target voxels (``voxels.VoxelGrid``) when it has one."""
    report: Report | None = None
    cache: dict[str, Any] = field(default_factory=dict)
    """Scratch space shared by terms within one step (e.g. a fidelity score computed once)."""
    episode: dict[str, Any] = field(default_factory=dict)
    """Scratch space that lives for the whole episode (e.g. the previous fidelity for Δ-shaping)."""
    progress: Any = None
    """The episode's :class:`~brick_gym.core.progress.TargetProgress` when the caller keeps one (environments do),
    so that Δ-fidelity costs the new piece's cells; without it the terms measure the assembly from scratch."""
    task: Any = None
    """The episode's :class:`~brick_gym.envs.episode.EnvTask` when an env provides it (per-task terms read their
    prompt and question graph from it)."""


class RewardTerm(Protocol):
    """A named reward component."""

    name: str
    terminal: bool

    def __call__(self, ctx: RewardContext) -> float: ...


@dataclass(frozen=True)
class FunctionTerm:
    """A term from a plain function (picklable when the function is a module-level name)."""

    name: str
    fn: Callable[[RewardContext], float]
    terminal: bool = False
    needs_report: bool = False
    """Whether the term reads ``ctx.report`` (the full BrickBench check, run at the end only when a term needs it)."""

    def __call__(self, ctx: RewardContext) -> float:
        return float(self.fn(ctx))


def _placed(ctx: RewardContext) -> float:
    return 1.0 if ctx.outcome is not None and ctx.outcome.ok else 0.0


def _joints(ctx: RewardContext) -> float:
    return float(len(ctx.outcome.joints)) if ctx.outcome is not None and ctx.outcome.ok else 0.0


def _invalid(ctx: RewardContext) -> float:
    return 1.0 if ctx.invalid_reason is not None else 0.0


def _valid(ctx: RewardContext) -> float:
    return 1.0 if ctx.report is not None and ctx.report.valid else 0.0


def _part_rule(ctx: RewardContext) -> float:
    s = ctx.assembly.rules.setting
    n = len(ctx.assembly)
    return 1.0 if n >= s.min_parts and (s.max_parts is None or n <= s.max_parts) else 0.0


def current_fidelity(ctx: RewardContext) -> tuple[float, float]:
    """(shape IoU, colour IoU) of the assembly against the task target, computed once per step."""
    if ctx.target is None:
        return 0.0, 0.0
    if "fidelity" not in ctx.cache:
        from brick_gym.core.voxels import fidelity, voxelize

        f = fidelity(voxelize(ctx.assembly), ctx.target, colour_max=False)
        ctx.cache["fidelity"] = (float(f.shape_iou), float(f.colour_iou))
    return ctx.cache["fidelity"]


def _fidelity_shape(ctx: RewardContext) -> float:
    return current_fidelity(ctx)[0]


def _fidelity_colour(ctx: RewardContext) -> float:
    return current_fidelity(ctx)[1]


def frame_fidelity(ctx: RewardContext) -> tuple[float, float]:
    """(shape IoU, colour IoU) against the target in the build's own frame (no alignment search: a Fidelity build
    shares its target's base plate), from the episode's progress when there is one."""
    if ctx.target is None:
        return 0.0, 0.0
    progress = ctx.progress
    if progress is None:
        progress = ctx.cache.get("progress")
        if progress is None:
            from brick_gym.core.progress import TargetProgress

            progress = ctx.cache["progress"] = TargetProgress(ctx.target)
    progress.sync(ctx.assembly)
    return progress.shape_iou, progress.colour_iou


FIDELITY_MEMORY = ("last_fidelity", "last_fidelity_colour")
"""Episode keys holding the last (shape, colour) frame fidelity the Δ terms paid up to; the env seeds them at
reset with the start piece's."""


def _fidelity_change(ctx: RewardContext, which: int) -> float:
    """Δ of shape (``which`` 0) or colour (1) fidelity in the build's frame since the last placement that was
    paid: a dense signal that telescopes to the final frame fidelity, which is bricky's fidelity once the target
    is built (1.0)."""
    if ctx.target is None or ctx.outcome is None or not ctx.outcome.ok:
        return 0.0
    now = frame_fidelity(ctx)[which]
    before = ctx.episode.get(FIDELITY_MEMORY[which], 0.0)
    ctx.episode[FIDELITY_MEMORY[which]] = now
    return now - before


def _stability_margin(ctx: RewardContext) -> float:
    """1 − the largest joint utilisation of the force analysis (``core.forces``), clipped to [−1, 1]: 1 when no
    joint carries a pull, 0 at capacity, −1 when a joint is twice overloaded, the model tips or moves freely. One
    analyser lives for the episode, so a step re-solves only the component the new piece joined; a step that
    changed nothing repeats the last value."""
    from brick_gym.core.forces import ForceAnalyser

    revision = ctx.assembly.revision
    memo = ctx.episode.get("stability_margin")
    if memo is not None and memo[0] == revision:
        return memo[1]
    analyser = memo[2] if memo is not None else ForceAnalyser()
    u = analyser.analyse(ctx.assembly).max_utilisation
    value = 0.0 if math.isnan(u) else max(-1.0, min(1.0, 1.0 - u))
    ctx.episode["stability_margin"] = (revision, value, analyser)
    return value


def _reach_change(ctx: RewardContext) -> float:
    """Δ of the progress towards the target's goal cells (:mod:`brick_gym.core.reach`) since the last placement
    that was paid: a dense signal for goal tasks (a cantilever's tip) that telescopes to the final progress."""
    if ctx.target is None or ctx.outcome is None or not ctx.outcome.ok:
        return 0.0
    from brick_gym.core.reach import reach_progress

    now = reach_progress(ctx.target, ctx.assembly, 1 if ctx.task is None else ctx.task.start_pieces)
    before = ctx.episode.get("last_reach", 0.0)
    ctx.episode["last_reach"] = now
    return now - before


VALID_PLACEMENT = FunctionTerm("valid_placement", _placed)
NEW_JOINTS = FunctionTerm("new_joints", _joints)
INVALID_ACTION = FunctionTerm("invalid_action", _invalid)
FIDELITY_DELTA = FunctionTerm("fidelity_delta", functools.partial(_fidelity_change, which=0))
FIDELITY_COLOUR_DELTA = FunctionTerm("fidelity_colour_delta", functools.partial(_fidelity_change, which=1))
VALIDITY = FunctionTerm("validity", _valid, terminal=True, needs_report=True)
PART_RULE = FunctionTerm("part_rule", _part_rule, terminal=True)
FIDELITY = FunctionTerm("fidelity", _fidelity_shape, terminal=True)
FIDELITY_COLOUR = FunctionTerm("fidelity_colour", _fidelity_colour, terminal=True)
STABILITY_MARGIN = FunctionTerm("stability_margin", _stability_margin)

REACH_DELTA = FunctionTerm("reach_delta", _reach_change)
OPTIONAL_TERMS: dict[str, FunctionTerm] = {"stability_margin": STABILITY_MARGIN, "reach_delta": REACH_DELTA}
"""Terms not in the standard set (they cost a force analysis a step): added when a weight names them."""

STANDARD_TERMS: tuple[FunctionTerm, ...] = (
    VALID_PLACEMENT,
    NEW_JOINTS,
    INVALID_ACTION,
    FIDELITY_DELTA,
    FIDELITY_COLOUR_DELTA,
    VALIDITY,
    PART_RULE,
    FIDELITY,
    FIDELITY_COLOUR,
)


@dataclass(frozen=True)
class RewardSpec:
    """Terms with weights. ``gate_on_validity`` multiplies every other terminal term by the validity verdict."""

    weights: tuple[tuple[RewardTerm, float], ...]
    gate_on_validity: bool = False
    logged: frozenset[str] | None = None
    """Terms computed although their weight is 0; None (the default): every term. A term neither paid nor logged
    is not computed at all, and is absent from the values."""

    @property
    def names(self) -> list[str]:
        """Names of the terms computed, in order (the keys of ``info["reward_terms"]``)."""
        return [t.name for t, _ in self._active()]

    def _active(self) -> list[tuple[RewardTerm, float]]:
        if self.logged is None:
            return list(self.weights)
        return [(t, w) for t, w in self.weights if w != 0 or t.name in self.logged]

    def logging(self, which: str | Sequence[str] = "all") -> RewardSpec:
        """A copy computing every term (``"all"``), only the paid ones (``"paid"``), or the paid ones and those
        named: terms with weight 0 then cost nothing (the full check too, unless a computed term needs it)."""
        if which == "all":
            logged = None
        elif which == "paid":
            logged = frozenset()
        elif isinstance(which, str):
            raise ValueError(f"log_terms must be 'all', 'paid' or a list of term names, got {which!r}")
        else:
            logged = frozenset(which)
            unknown = logged - {t.name for t, _ in self.weights}
            if unknown:
                raise KeyError(f"unknown reward terms {sorted(unknown)}; known: {[t.name for t, _ in self.weights]}")
        return RewardSpec(self.weights, self.gate_on_validity, logged)

    def needs_report(self) -> bool:
        """Whether the end of an episode must run the full check: a computed term reads it, or validity gates."""
        return self.gate_on_validity or any(getattr(t, "needs_report", True) for t, _ in self._active() if t.terminal)

    def evaluate(self, ctx: RewardContext) -> tuple[float, dict[str, float]]:
        """(weighted reward, {term: unweighted value}); terminal terms are 0 on non-terminal steps."""
        values: dict[str, float] = {}
        active = self._active()
        for term, _ in active:
            values[term.name] = float(term(ctx)) if (ctx.terminal or not term.terminal) else 0.0
        if ctx.terminal and self.gate_on_validity:
            ok = _valid(ctx)
            for term, _ in active:
                if term.terminal and term.name != "validity":
                    values[term.name] *= ok
        total = sum(w * values[t.name] for t, w in active)
        return float(total), values

    def plus(self, term: RewardTerm, weight: float) -> RewardSpec:
        """A copy with one more term."""
        return RewardSpec((*self.weights, (term, float(weight))), self.gate_on_validity, self.logged)


def standard_rewards(**weights: float) -> RewardSpec:
    """Every standard term; by default a small bonus per valid piece, a penalty per illegal action, and the
    terminal validity and fidelity paid in full; the rest logged (weight 0)."""
    defaults = {
        "valid_placement": 0.05,
        "new_joints": 0.0,
        "invalid_action": -0.1,
        "fidelity_delta": 0.0,
        "fidelity_colour_delta": 0.0,
        "validity": 1.0,
        "part_rule": 0.0,
        "fidelity": 1.0,
        "fidelity_colour": 0.0,
    }
    unknown = set(weights) - set(defaults) - set(OPTIONAL_TERMS)
    if unknown:
        raise KeyError(f"unknown reward terms {sorted(unknown)}; known: {sorted(defaults) + sorted(OPTIONAL_TERMS)}")
    defaults.update(weights)
    extra = tuple(OPTIONAL_TERMS[name] for name in OPTIONAL_TERMS if name in weights)
    return RewardSpec(tuple((t, float(defaults[t.name])) for t in (*STANDARD_TERMS, *extra)))
