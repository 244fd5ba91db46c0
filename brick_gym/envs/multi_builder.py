"""``MultiBuilderEnv``: a PettingZoo AEC environment where several builders take turns on ONE shared Assembly.

The episode core (:class:`~brick_gym.envs.episode.Episode`) does the work, as under the single-agent env: the same
codecs (candidates by default, factored or staged on request), observations, reward spec, ``Assembly.place``, full
check and viewer. What this module adds is who may do what:

- ``split="inventory"`` — each builder owns a share of the stock. With an inventory, every (part, colour) count of
  the palette (less what the start piece uses) is dealt round-robin between builders, one piece at a time, the
  deal continuing across palette slots (``{"3001": {"red": 1}, "3003": {"blue": 1}}`` gives builder_0 the red
  brick and builder_1 the blue one); an unlimited entry (``null``) is unlimited for every builder. Without an
  inventory each builder owns every n-th palette slot (slot ``i`` belongs to ``builder_{i % n}``). A builder's
  mask hides slots it has no stock of, and placing someone else's stock is an illegal action (``out_of_stock``
  in ``invalid_reason``).
- ``split="region"`` — the start piece's x extent is cut into ``n`` equal bands; builder i owns the free
  connectors whose world x falls in band i (a connector exactly on an edge belongs to the band on its right).
  A builder's target list (observation, factored target index, candidates) holds only its own connectors,
  so it cannot even name another builder's; a placement on one is refused (``region``).

Turns cycle ``builder_0 .. builder_{n-1}`` (an :class:`AgentSelector`). A turn is one placement: with the
one-step encodings every action passes the turn; with ``encoding="staged"`` (where, what, how: the suite's
target-blind encoding) a builder keeps the turn through its legal *where* and *what* sub-steps and passes it on its
*how* (placed or refused), STOP or an illegal action; each builder keeps its own placement decided so far (an
illegal sub-step keeps it, as in the single-agent env), so a builder never decides against another's half-made
choice. ``max_steps`` counts actions (sub-steps), as in the single-agent env. STOP takes a builder out of play: it is
terminated, takes its PettingZoo "dead step" (``step(None)``) and is skipped from then on. The episode ends
for everyone when every builder has stopped, the part budget (``max_pieces`` or the setting's limit) is spent or
no builder can place anything (all terminated), or after ``max_steps`` turns in total (all truncated). Then the
full BrickBench check runs once and the terminal reward terms are paid.

Rewards: each turn the reward spec is evaluated once for the acting builder's action (step terms) and, on the
last turn, with the report (terminal terms). ``shared_reward=True`` pays every builder still in play the whole
turn's reward (cooperative); ``False`` pays the acting builder its step terms and every builder in play the
terminal terms. A builder that stopped earlier has left the game (PettingZoo removes it after its dead step),
so it is not paid terminal terms — stopping early forfeits the team's final score for that builder.

``infos[agent]``: ``reward_terms`` (unweighted term values paid to that builder since it last acted, so that the
weighted sum equals ``last()``'s reward), ``invalid_reason`` (of its own last action, None when legal),
``action_mask``, ``pieces``, ``turn``; at the end also ``report`` (the validity report's JSON without its wall
clock timings, which would break determinism; ``env.report`` keeps the full one) and ``episode_stats``.

Illegal, malformed and out-of-range actions are no-ops with the ``invalid_action`` term and an
``invalid_reason``; nothing raises. The only exception is PettingZoo's own convention: a terminated or
truncated builder must be stepped with ``None`` (``_was_dead_step``).

With ``encoding="factored"`` the ``action_mask`` is the FactoredCodec's concatenated per-dimension mask
(palette + STOP, target, source, yaw): a masked sample may still be illegal (it is then a penalised no-op), and
``MultiDiscrete.sample`` wants the per-dimension tuple — :meth:`MultiBuilderEnv.mask_tuple` splits it. PettingZoo's
``api_test`` samples with the flat mask, so it is run on the candidate and staged encodings, whose masks are exact.

``MultiBuilderEnv()`` needs no argument (two builders on :func:`default_task`); :func:`env` wraps it as PettingZoo
classic does. :func:`parallel_env` gives the same game under PettingZoo's parallel API
(:class:`MultiBuilderParallelEnv`): a step is one round in which every builder in play acts once, in turn order,
each action read against what that builder observed at the start of the round. (PettingZoo's ``aec_to_parallel``
does not fit: it reads a later builder's action against a view the earlier builders have changed, and it wants
builders to leave only at the end of a round, where STOP takes one out at once.) A round gives every builder one
action, so the parallel API takes the one-step encodings only (a staged placement is three actions).

``import brick_gym`` does not import this module (PettingZoo is an optional extra).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils import AgentSelector, wrappers

from brick_gym.core.catalog import UnknownPart, catalog
from brick_gym.core.colours import UnknownColour, colour
from brick_gym.core.pieces import ConnectorRef, Placement, colour_name
from brick_gym.core.rules import Rules
from brick_gym.envs.codecs import View
from brick_gym.envs.encodings import ENCODINGS, ONE_STEP_ENCODINGS
from brick_gym.envs.episode import EnvConfig, EnvTask, Episode, OverEpisode, TaskSource, Viewer
from brick_gym.envs.palette import make_palette
from brick_gym.rewards.terms import RewardSpec

if TYPE_CHECKING:
    pass

SPLITS = ("inventory", "region")

DEFAULT_MULTI_CONFIG = EnvConfig(
    max_pieces=32, max_steps=64, max_targets=64, max_candidates=32, target_size=8, encoding="candidates"
)
"""Small shapes: a few builders sharing a 6×6 base, short episodes."""


def default_task() -> EnvTask:
    """A small free-setting task: three bricks in three colours on a 6×6 base plate (no inventory)."""
    palette = make_palette([("3001", "red"), ("3003", "blue"), ("3005", "yellow")])
    return EnvTask("multi-builder", Rules.for_setting("free"), palette)


class MultiBuilderEnv(OverEpisode, AECEnv):
    """Several builders take turns placing parts on one shared assembly (PettingZoo AEC)."""

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "rgb_array"],
        "name": "multi_builder_v0",
        "is_parallelizable": False,
        "render_fps": 4,
    }

    def __init__(
        self,
        task: EnvTask | TaskSource | None = None,
        n_builders: int = 2,
        *,
        config: EnvConfig = DEFAULT_MULTI_CONFIG,
        rewards: RewardSpec | None = None,
        split: str = "inventory",
        shared_reward: bool = True,
        encoding: str = "candidates",
        render_mode: str | None = None,
        viewer: Viewer | None = None,
        log_terms: str | Sequence[str] = "all",
    ) -> None:
        """Every argument has a default: ``MultiBuilderEnv()`` is two builders sharing :func:`default_task`'s stock
        (``split="inventory"``) under :data:`DEFAULT_MULTI_CONFIG`, candidate encoding, the standard rewards, paid to
        both (``shared_reward``). ``encoding`` decides the action encoding (``config.encoding`` is overridden by
        it); ``log_terms`` as for :class:`~brick_gym.envs.assembly_env.BrickAssemblyEnv`."""
        super().__init__()
        self._set_render_mode(render_mode)
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
        if isinstance(n_builders, bool) or not isinstance(n_builders, int) or n_builders < 1:
            raise ValueError(f"n_builders must be a positive integer, got {n_builders!r}")
        self.config = dataclasses.replace(config, encoding=encoding)
        self.n_builders = n_builders
        self.split = split
        self.shared_reward = bool(shared_reward)
        self.episode = Episode(task if task is not None else default_task(), self.config, rewards, viewer, log_terms)
        self.rewards: dict[str, float] = {}
        """PettingZoo's per-agent rewards (the reward terms and weights are :attr:`reward_spec`)."""
        if split == "inventory" and self.episode.task.rules.inventory is None and n_builders > len(self.palette):
            raise ValueError(
                f"split='inventory' without an inventory deals palette slots: {n_builders} builders need at least "
                f"{n_builders} slots, the palette has {len(self.palette)}"
            )
        self.possible_agents = [f"builder_{i}" for i in range(n_builders)]
        self.agents = []
        # One space object per agent: api_test wants `observation_space(a) is observation_space(a)` and seeds them.
        self.action_spaces = {a: self.codec.space() for a in self.possible_agents}
        self.observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": self.episode.observer.space(),
                    "action_mask": spaces.Box(0, 1, shape=(self.codec.mask_size,), dtype=np.int8),
                }
            )
            for a in self.possible_agents
        }
        self.np_random, _ = seeding.np_random(None)
        self._agent_selector = AgentSelector(list(self.possible_agents))

    @property
    def reward_spec(self) -> RewardSpec:
        """The reward terms and weights (``self.rewards`` is PettingZoo's per-agent reward dict)."""
        return self.episode.rewards

    # ----- PettingZoo API ------------------------------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Dict:
        """``Dict({"observation": <single-agent Dict>, "action_mask": Box(0, 1, (n,), int8)})``."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """``Discrete(N + 1)`` (candidates, STOP = N) or ``MultiDiscrete([P + 1, K, S, Y])`` (factored)."""
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start an episode: pick the task (seeded when the env samples tasks), place the start piece (or copy
        ``options["assembly"]``), deal the stock or regions, and give the turn to builder_0.
        ``options={"task": EnvTask}`` overrides the task."""
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
        task = self.episode.choose_task(self.np_random, options)
        start_id = self.episode.start(task, (options or {}).get("assembly"))
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self._skip_agent_selection = None
        self._agent_selector.reinit(list(self.possible_agents))
        self.agent_selection = self._agent_selector.reset()
        self._turns = 0
        self._stopped: set[str] = set()
        self._placed_by: dict[int, str] = {}
        self._used: dict[str, Counter[tuple[str, int]]] = {a: Counter() for a in self.possible_agents}
        self._shares = self._deal_shares()
        self._edges = self._region_edges(start_id)
        self._last_invalid: dict[str, str | None] = {a: None for a in self.agents}
        self._last_outcome: dict[str, str | None] = {a: None for a in self.agents}
        self._choices: dict[str, Any] = {}
        self._terms_since = {a: self.episode.zero_terms() for a in self.agents}
        self._returns = {a: 0.0 for a in self.possible_agents}
        self._invalid_counts = {a: 0 for a in self.possible_agents}
        self._views: dict[str, View] = {}
        self._refresh_views()
        self.infos = {a: self._info(a) for a in self.agents}

    def observe(self, agent: str) -> dict[str, Any]:
        """``{"observation": <single-agent observation from this builder's view>, "action_mask": int8}``."""
        view = self._views.get(agent) or self._view_for(agent)
        obs = self.episode.observe(
            view,
            step=self._turns,
            last_invalid=self._last_invalid.get(agent) is not None,
            initial_stock=[self._share(agent, s.stem, s.colour) for s in self.palette],
        )
        # The builder sees its own share: its pieces left / its share (the builder above reads the global stock).
        obs["inventory"] = self._own_inventory(agent)
        return {"observation": obs, "action_mask": self.codec.masks(view)}

    def step(self, action: object) -> None:
        """The selected builder acts: a placement, STOP, or a (penalised) no-op when the action is illegal."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._act(action, self._views[agent])

    def _act(self, action: object, view: View) -> None:
        """The selected (live) builder's turn, its action read against ``view`` (its current one under AEC; the one
        it observed at the start of the round under the parallel API)."""
        agent = self.agent_selection
        self._cumulative_rewards[agent] = 0.0
        self._terms_since[agent] = self.episode.zero_terms()
        self._clear_rewards()
        self._turns += 1
        attempt = self.episode.attempt(action, view, lambda p: self.refusal(agent, p))
        if attempt.outcome is not None and attempt.outcome.ok:
            assert attempt.outcome.piece is not None
            self._placed_by[attempt.outcome.piece] = agent
            placed = self.assembly[attempt.outcome.piece]
            self._used[agent][(placed.part.stem, placed.colour)] += 1
        if attempt.stop:
            self._stopped.add(agent)
        if attempt.invalid is None or attempt.placement is not None:  # an illegal sub-step keeps what was decided
            self._choices[agent] = attempt.choice
        keeps_turn = attempt.invalid is None and attempt.choice is not None  # a legal where / what sub-step
        self._last_invalid[agent] = attempt.invalid
        self._last_outcome[agent] = None if attempt.outcome is None else (attempt.outcome.reason or "placed")
        self._invalid_counts[agent] += attempt.invalid is not None

        self._refresh_views()
        live = [a for a in self.agents if a not in self._stopped]
        budget = len(self.assembly) >= self.config.max_pieces
        stuck = not any(self._views[a].can_place for a in live)
        terminated = not live or budget or stuck
        truncated = not terminated and self._turns >= self.config.max_steps
        end = terminated or truncated

        total, terms = self.episode.settle(attempt, end)
        terminal_names = {t.name for t, _ in self.reward_spec.weights if t.terminal}
        terminal_reward = sum(w * terms.get(t.name, 0.0) for t, w in self.reward_spec.weights if t.terminal)
        for a in self.agents:
            if self.shared_reward or a == agent:
                self.rewards[a] = float(total)
                paid = terms
            else:
                self.rewards[a] = float(terminal_reward)
                paid = {k: (v if k in terminal_names else 0.0) for k, v in terms.items()}
            self._returns[a] += self.rewards[a]
            acc = self._terms_since[a]
            for k, v in paid.items():
                acc[k] += v

        if end:
            for a in self.agents:
                self.terminations[a] = terminated
                self.truncations[a] = truncated
        elif attempt.stop:
            self.terminations[agent] = True
        for a in self.agents:
            self.infos[a] = self._info(a)
        if end:
            final = {"report": self.episode.report_json(timings=False), "episode_stats": self.episode_stats()}
            for a in self.agents:
                self.infos[a].update(final)
        self._accumulate_rewards()

        if not end and not keeps_turn:
            self.agent_selection = self._next_live()
        # A builder that just stopped (or everyone, at the end) takes its dead step first.
        self._deads_step_first()

    def render(self) -> str | np.ndarray | None:
        """``ansi``: the turn, each builder's state and the pieces with who placed them; ``rgb_array``: a view
        (the viewer draws both)."""
        header = self._ansi_header() if self.render_mode == "ansi" else ()
        return self.episode.render(
            self.render_mode, header=header, label=lambda p: f"by {self._placed_by.get(p.id, 'start')}"
        )

    def close(self) -> None:
        """Nothing to release: the assembly holds no native handles."""

    # ----- helpers -------------------------------------------------------------------------------------------
    def action_masks(self, agent: str | None = None) -> np.ndarray:
        """int8 action mask of ``agent`` (default: the selected builder), as in its observation."""
        return self.codec.masks(self._views[agent or self.agent_selection])

    def encode_placement(self, placement: Placement, agent: str | None = None) -> np.ndarray | int | None:
        """The action that performs (or, staged, takes the next sub-step towards) ``placement`` for ``agent``
        (default: the selected builder) now, or None when its view cannot reach it (for replaying known builds)."""
        return self.codec.encode_placement(placement, self._views[agent or self.agent_selection])

    def mask_tuple(self, mask: np.ndarray) -> tuple[np.ndarray, ...]:
        """The flat mask split per action dimension (what ``MultiDiscrete.sample`` takes for the factored
        encoding; the candidate mask is one dimension)."""
        return self.codec.split_mask(mask)

    def targets(self, agent: str) -> list[ConnectorRef]:
        """The free connectors ``agent`` may build on now (its target slots, in observation order)."""
        return list(self._views[agent].targets)

    def candidates(self, agent: str) -> list[Placement]:
        """The placements ``agent``'s candidate actions stand for (candidate encoding; empty for factored)."""
        return [p for _, p in self._views[agent].candidates]

    def region_of(self, x: float) -> int:
        """The builder index whose band holds world x (``split="region"``)."""
        return int(np.searchsorted(self._edges, float(x) + 1e-6, side="right")) if len(self._edges) else 0

    @property
    def region_edges(self) -> tuple[float, ...]:
        """The x coordinates (LDU) between bands, ascending (empty unless ``split="region"``)."""
        return tuple(float(e) for e in self._edges)

    def stock_left(self, agent: str) -> dict[tuple[str, int], int | None]:
        """Pieces ``agent`` may still place per palette (part, colour): a count, or None for unlimited."""
        return {(s.stem, s.colour): self._left(agent, s.stem, s.colour) for s in self.palette}

    def refusal(self, agent: str, placement: Placement) -> str | None:
        """Why the split forbids ``agent`` this placement (``out_of_stock: ...`` / ``region: ...``), or None;
        the assembly still checks everything else when it places."""
        if self.split == "inventory":
            try:
                part = catalog().resolve(placement.part)
                code = colour(placement.colour).code
            except (UnknownPart, UnknownColour):  # the assembly refuses these with its own reason
                return None
            left = self._left(agent, part.stem, code)
            if left is not None and left <= 0:
                owners = [a for a in self.possible_agents if a != agent and self._left(a, part.stem, code) != 0]
                whose = f"; it belongs to {', '.join(owners)}" if owners else ""
                return (
                    f"out_of_stock: {agent} has no {part.stem} ('{part.name}') in {colour_name(code)} left in its "
                    f"share{whose}"
                )
            return None
        target = placement.target
        if target is None:
            return f"region: {agent} may only attach to connectors in its band"
        try:
            x = float(self.assembly.connector_frame(target)[0, 3])
        except (KeyError, IndexError, ValueError):
            return None  # a bad target is refused by the assembly with its own reason
        owner = self.region_of(x)
        if owner != self.possible_agents.index(agent):
            return f"region: target {target} at x={x:g} LDU lies in builder_{owner}'s band, not {agent}'s"
        return None

    def episode_stats(self) -> dict[str, Any]:
        """Per-episode statistics (deterministic: no wall-clock fields)."""
        return {
            **self.episode.stats(),
            "turns": self._turns,
            "pieces_by_builder": {a: sum(1 for b in self._placed_by.values() if b == a) for a in self.possible_agents},
            "returns": {a: round(v, 6) for a, v in self._returns.items()},
            "invalid_actions": dict(self._invalid_counts),
            "stopped": sorted(self._stopped),
        }

    # ----- internals -----------------------------------------------------------------------------------------
    def _deal_shares(self) -> dict[str, dict[tuple[str, int], int | None]]:
        """Each builder's starting share per palette (part, colour) (``split="inventory"``)."""
        shares: dict[str, dict[tuple[str, int], int | None]] = {a: {} for a in self.possible_agents}
        if self.split != "inventory":
            return shares
        inv = self.task.rules.inventory
        n = self.n_builders
        keys = list(dict.fromkeys((s.stem, s.colour) for s in self.palette))
        if inv is None:
            for i, key in enumerate(keys):
                shares[self.possible_agents[i % n]][key] = None
            return shares
        cursor = 0
        for key in keys:
            if not inv.allows(*key):
                continue
            count = inv.limit(*key)
            if count is not None:  # deal what the start piece left
                count = max(0, count - self.assembly.usage.get(key, 0))
            if count is None:
                for a in self.possible_agents:
                    shares[a][key] = None
                continue
            for a in self.possible_agents:
                shares[a][key] = 0
            for _ in range(count):
                shares[self.possible_agents[cursor % n]][key] += 1  # type: ignore[operator]
                cursor += 1
        return shares

    def _region_edges(self, start_id: int | None) -> np.ndarray:
        if self.split != "region" or self.n_builders == 1 or start_id is None:
            return np.zeros(0)
        piece = self.assembly[start_id]
        lo, hi = (np.asarray(b, dtype=np.float64) for b in piece.part.bounds)
        corners = np.array([[x, y, z, 1.0] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        xs = (corners @ piece.pose.T)[:, 0]
        x0, x1 = float(xs.min()), float(xs.max())
        return np.array([x0 + (x1 - x0) * i / self.n_builders for i in range(1, self.n_builders)])

    def _share(self, agent: str, stem: str, code: int) -> int | None:
        """Starting stock of (stem, colour) for ``agent``: int, None = unlimited (0 when it has none)."""
        if self.split == "region":
            inv = self.task.rules.inventory
            return None if inv is None else inv.limit(stem, code)
        return self._shares[agent].get((stem, code), 0)

    def _left(self, agent: str, stem: str, code: int) -> int | None:
        share = self._share(agent, stem, code)
        if share is None:
            return None
        used = self.assembly.usage.get((stem, code), 0) if self.split == "region" else self._used[agent][(stem, code)]
        return share - used

    def _own_inventory(self, agent: str) -> np.ndarray:
        out = np.zeros(len(self.palette), dtype=np.float32)
        for i, s in enumerate(self.palette):
            share = self._share(agent, s.stem, s.colour)
            if share is None:
                out[i] = 1.0
            elif share > 0:
                out[i] = max(0, self._left(agent, s.stem, s.colour) or 0) / share
        return out

    def _targets_by_agent(self) -> dict[str, list[ConnectorRef]]:
        """Every builder's target slots: all free ones (inventory split) or those in its band (region split)."""
        if self.split != "region":
            return dict.fromkeys(self.possible_agents, self.episode.targets())
        out: dict[str, list[ConnectorRef]] = {a: [] for a in self.possible_agents}
        for t in self.episode.targets(limit=1 << 30):
            out[self.possible_agents[self.region_of(self.assembly.connector_frame(t)[0, 3])]].append(t)
        return {a: ts[: self.config.max_targets] for a, ts in out.items()}

    def _refresh_views(self) -> None:
        targets = self._targets_by_agent()
        self._views = {a: self._view_for(a, targets[a]) for a in self.agents}

    def _view_for(self, agent: str, targets: list[ConnectorRef] | None = None) -> View:
        """The agent's view: its targets, and only the palette slots it has stock of."""
        if targets is None:
            targets = self._targets_by_agent()[agent]
        own = [i for i, s in enumerate(self.palette) if self._left(agent, s.stem, s.colour) != 0]
        return self.episode.view(targets, slots=own, choice=self._choices.get(agent))

    def _next_live(self) -> str:
        for _ in range(self.n_builders):
            a = self._agent_selector.next()
            if a in self.agents and a not in self._stopped:
                return a
        return self.agent_selection

    def _info(self, agent: str) -> dict[str, Any]:
        return {
            "reward_terms": dict(self._terms_since[agent]),
            "invalid_reason": self._last_invalid[agent],
            "outcome": self._last_outcome[agent],
            "action_mask": self.codec.masks(self._views[agent]),
            "pieces": len(self.assembly),
            "turn": self._turns,
        }

    def _ansi_header(self) -> list[str]:
        lines = [
            f"{self.task.name}: {len(self.assembly)} pieces, turn {self._turns}/{self.config.max_steps}, "
            f"split {self.split}, next {self.agent_selection if self.agents else '-'}"
        ]
        for a in self.possible_agents:
            state = "stopped" if a in self._stopped else ("out" if a not in self.agents else "building")
            stock = ", ".join(
                f"{stem}/{colour_name(code)}: {'any' if left is None else left}"
                for (stem, code), left in self.stock_left(a).items()
                if left != 0
            )
            lines.append(f"  {a:<10} {state:<8} return {self._returns[a]:+.3f}  stock [{stock}]")
        return lines


class MultiBuilderParallelEnv(ParallelEnv):
    """The multi-builder game under PettingZoo's parallel API: each ``step(actions)`` is one round in which every
    builder still in play acts once, in turn order (builder_0 first), each action read against the observation
    that builder was given at the start of the round. A placement that an earlier builder's piece of the same
    round made illegal (collision, occupied connector) is refused as a penalised no-op with ``invalid_reason``.
    A builder's reward is what it was paid over the round; everything else is :class:`MultiBuilderEnv`'s (same
    arguments and defaults), which it drives turn by turn."""

    def __init__(self, task: EnvTask | TaskSource | None = None, n_builders: int = 2, **kwargs: Any) -> None:
        encoding = kwargs.get("encoding", "candidates")
        if encoding not in ONE_STEP_ENCODINGS:
            raise ValueError(
                f"the parallel API takes encoding one of {ONE_STEP_ENCODINGS}, got {encoding!r}: a round gives every "
                "builder one action, and a staged placement is three (use the AEC env, MultiBuilderEnv)"
            )
        self.aec = MultiBuilderEnv(task, n_builders, **kwargs)
        self.metadata = {**MultiBuilderEnv.metadata, "is_parallelizable": True}
        self.render_mode = self.aec.render_mode
        self.possible_agents = list(self.aec.possible_agents)
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> spaces.Dict:
        """As :meth:`MultiBuilderEnv.observation_space`."""
        return self.aec.observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space:
        """As :meth:`MultiBuilderEnv.action_space`."""
        return self.aec.action_space(agent)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode (as :meth:`MultiBuilderEnv.reset`): every builder's observation and info."""
        self.aec.reset(seed=seed, options=options)
        self.agents = list(self.aec.agents)
        return {a: self.aec.observe(a) for a in self.agents}, {a: dict(self.aec.infos[a]) for a in self.agents}

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, Any]]:
        """One round; a builder in play without an action in ``actions`` makes a malformed (penalised) move."""
        aec, playing = self.aec, list(self.agents)
        views = {a: aec._views[a] for a in playing}  # what each builder observed
        rewards = dict.fromkeys(playing, 0.0)
        ended: dict[str, tuple[bool, bool, dict[str, Any]]] = {}
        acted: set[str] = set()
        while aec.agents:
            agent = aec.agent_selection
            if aec.terminations[agent] or aec.truncations[agent]:
                ended[agent] = (aec.terminations[agent], aec.truncations[agent], dict(aec.infos[agent]))
                aec.step(None)  # PettingZoo's dead step: the builder leaves the game
                continue
            if agent in acted:
                break
            acted.add(agent)
            aec._act(actions.get(agent), views[agent])
            for a in aec.agents:
                rewards[a] += aec.rewards[a]
        self.agents = list(aec.agents)
        state = {**ended, **{a: (False, False, dict(aec.infos[a])) for a in self.agents}}
        return (
            {a: aec.observe(a) for a in playing},
            rewards,
            {a: state[a][0] for a in playing},
            {a: state[a][1] for a in playing},
            {a: state[a][2] for a in playing},
        )

    def render(self) -> str | np.ndarray | None:
        """As :meth:`MultiBuilderEnv.render`."""
        return self.aec.render()

    def close(self) -> None:
        """As :meth:`MultiBuilderEnv.close`."""
        self.aec.close()


def raw_env(task: EnvTask | TaskSource | None = None, n_builders: int = 2, **kwargs: Any) -> MultiBuilderEnv:
    """The unwrapped env (``task`` defaults to :func:`default_task`)."""
    return MultiBuilderEnv(task, n_builders, **kwargs)


def env(task: EnvTask | TaskSource | None = None, n_builders: int = 2, **kwargs: Any) -> AECEnv:
    """The env as PettingZoo classic ships it, wrapped in ``OrderEnforcingWrapper``.

    ``AssertOutOfBoundsWrapper`` is left out on purpose: an out-of-range action is data here (a penalised no-op
    with ``invalid_reason``), and that wrapper would turn it into an AssertionError. ``TerminateIllegalWrapper``
    is left out too: an illegal placement is a no-op with a penalty, not the end of the game.
    """
    return wrappers.OrderEnforcingWrapper(raw_env(task, n_builders, **kwargs))


def parallel_env(
    task: EnvTask | TaskSource | None = None, n_builders: int = 2, **kwargs: Any
) -> MultiBuilderParallelEnv:
    """The env under PettingZoo's parallel API (:class:`MultiBuilderParallelEnv`: one round of turns per step)."""
    return MultiBuilderParallelEnv(task, n_builders, **kwargs)


__all__ = [
    "DEFAULT_MULTI_CONFIG",
    "MultiBuilderEnv",
    "MultiBuilderParallelEnv",
    "default_task",
    "env",
    "parallel_env",
    "raw_env",
]
