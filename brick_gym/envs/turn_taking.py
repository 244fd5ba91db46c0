"""``TurnTakingEnv``: a Gymnasium view of the multi-builder AEC game for one shared policy (parameter sharing).

Each ``step`` is the action of whichever builder's turn it is; the observation is that builder's own (its targets,
its stock, its sub-step) plus ``builder``, its index, and ``info["action_mask"]`` / :meth:`action_masks` are its
exact mask, so single-agent tools (``evaluate``, the env checkers, SB3, MaskablePPO) play the game unchanged.
PettingZoo's dead steps (a builder that stopped, everyone at the end) are taken inside. The reward of a step is
what the acting builder is paid for its action (with ``shared_reward``, the team's reward), and the episode ends
when the game ends for every builder. ``info`` carries the acting builder's terms, ``invalid_reason`` and
``outcome`` (``acted``: its index), and at the end the ``report`` and ``episode_stats``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from brick_gym.core.assembly import Assembly
from brick_gym.core.pieces import Placement
from brick_gym.envs.codecs import Codec, View
from brick_gym.envs.episode import EnvConfig, EnvTask
from brick_gym.envs.multi_builder import MultiBuilderEnv
from brick_gym.envs.palette import PaletteSlot


class TurnTakingEnv(gym.Env):
    """One policy acts for every builder of a :class:`MultiBuilderEnv`, in turn (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, aec: MultiBuilderEnv) -> None:
        """``aec``: the unwrapped multi-builder env (its render mode is this env's)."""
        super().__init__()
        self.aec = aec
        self.render_mode = aec.render_mode
        agent = aec.possible_agents[0]
        self.action_space = aec.action_space(agent)
        inner = aec.observation_space(agent)["observation"]
        self.observation_space = spaces.Dict({**inner.spaces, "builder": spaces.Discrete(aec.n_builders)})

    # ----- what the suite's protocol and baselines read ---------------------------------------------------------
    @property
    def task(self) -> EnvTask:
        """The current episode's task."""
        return self.aec.task

    @property
    def assembly(self) -> Assembly:
        """The shared assembly."""
        return self.aec.assembly

    @property
    def palette(self) -> tuple[PaletteSlot, ...]:
        """The palette slots actions index."""
        return self.aec.palette

    @property
    def codec(self) -> Codec:
        """The action codec."""
        return self.aec.codec

    @property
    def config(self) -> EnvConfig:
        """The env's shapes and budgets."""
        return self.aec.config

    @property
    def builder(self) -> int:
        """The index of the builder whose turn it is."""
        return self.aec.possible_agents.index(self.aec.agent_selection)

    @property
    def view(self) -> View:
        """What the acting builder may act on now."""
        return self.aec._views[self.aec.agent_selection]

    def action_masks(self) -> np.ndarray:
        """The acting builder's int8 mask (what MaskablePPO calls)."""
        return self.aec.action_masks()

    def encode_placement(self, placement: Placement) -> np.ndarray | int | None:
        """The acting builder's action towards ``placement`` now, or None (for replaying known builds)."""
        return self.aec.encode_placement(placement)

    # ----- gymnasium API ----------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Start a game (as :meth:`MultiBuilderEnv.reset`; ``seed`` seeds its task draws): builder_0's turn."""
        super().reset(seed=seed)
        self.aec.reset(seed=seed, options=options)
        info = dict(self.aec.infos[self.aec.agent_selection])
        return self._observe(), {**info, "builder": self.builder}

    def step(self, action: object) -> tuple[dict, float, bool, bool, dict]:
        """The acting builder's action; then the dead steps, up to the next builder in play."""
        aec = self.aec
        if not aec.agents:
            raise RuntimeError("step() called after the episode ended; call reset()")
        agent = aec.agent_selection
        aec.step(action)
        reward = float(aec.rewards[agent])
        info = dict(aec.infos[agent])
        end = all(aec.terminations[a] or aec.truncations[a] for a in aec.agents)
        terminated = end and all(aec.terminations[a] for a in aec.agents)
        truncated = end and not terminated
        while aec.agents and (aec.terminations[aec.agent_selection] or aec.truncations[aec.agent_selection]):
            aec.step(None)  # PettingZoo's dead step: a builder that stopped (everyone, at the end) leaves
        info["acted"] = aec.possible_agents.index(agent)
        if end:
            info["action_mask"], info["builder"] = self.codec.idle().mask.copy(), info["acted"]
            return self._observe(agent), reward, terminated, truncated, info
        info["action_mask"], info["builder"] = aec.action_masks(), self.builder
        return self._observe(), reward, False, False, info

    def render(self) -> np.ndarray | str | None:
        """As :meth:`MultiBuilderEnv.render`."""
        return self.aec.render()

    def close(self) -> None:
        """As :meth:`MultiBuilderEnv.close`."""
        self.aec.close()

    def _observe(self, agent: str | None = None) -> dict[str, np.ndarray]:
        agent = agent or self.aec.agent_selection
        obs = dict(self.aec.observe(agent)["observation"])
        obs["builder"] = np.int64(self.aec.possible_agents.index(agent))
        return obs


__all__ = ["TurnTakingEnv"]
