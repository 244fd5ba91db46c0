"""BrickBench (and the fidelity targets) as a verifiers environment, for LLM RL trainers and ``vf-eval``.

``load_environment(setting=..., tasks=..., rewards=...)`` returns a :class:`BrickBenchEnv`: a stateful tool
environment whose per-rollout state is one :class:`~brick_gym.llm.adapter.EpisodeTools` (the session, tools,
budgets and budget line of ``brick-gym bench run``). Each tool call of a turn goes, name and raw JSON arguments,
to that session, which parses, validates and runs it (errors come back as tool messages). (It is a
``MultiTurnEnv`` with ``ToolEnv``'s tool-call metrics rather than a ``StatefulToolEnv``: that class parses the
arguments itself and calls Python functions with schemas of their own, where here the session does both.) Images
of a tool result follow the turn's tool messages in one user message, as the adapter's OpenAI client sends them. The
dataset's prompts are the adapter's system prompt and first user message. A turn without tool calls gets the
adapter's nudge and three in a row end the rollout; ``finish``, the turn, tool-call, token and time budgets end
it after that turn's calls ran, as in the adapter.

When a rollout ends the model is delivered as the runner delivers it (``model.mpd``, ``verification.json``,
views; in ``out/<task-id>/<trajectory-id>/`` when ``out`` is given) and the rubric's weighted reward functions
read the verdict: ``validity`` (the full BrickBench check), ``part_rule``, ``fidelity`` and ``fidelity_colour``
(fidelity targets), ``vqa`` (the gated VQA score, when ``judge`` names a judge backend). ``rewards`` sets the
weights (weight 0: a logged metric). For fidelity targets each turn's trajectory step also carries a dense reward:
the change of shape fidelity in the target's frame its tool calls made (they sum to the final frame fidelity less
the base plate's share).

``setting="fidelity"`` draws ``num_targets`` targets of the env's generator (``seed``, ``kinds``, ``size``); the
other settings read a BrickBench task file (``tasks``; default: the project's suite) with ``inventory`` for
Alt-Build. ``vf.load_environment("brick-gym", ...)`` finds this function through ``brick_gym.load_environment``.
``forces=True`` adds the force analysis (max utilisation, margin, the weakest joints) to each rollout's
``verification.json`` (``state["brick_gym"]["verification"]["report"]["forces"]``), beside the verdict, never
changing it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from brick_gym.extras import require

vf = require("verifiers", "brick_gym.faces.verifiers_env")

from brick_gym.faces.episodes import (  # noqa: E402  (verifiers is checked first, with the extra to install)
    FIDELITY,
    FaceSample,
    benchmark_samples,
    deliverables,
    face_config,
    fidelity_samples,
    start_episode,
    task_folder,
)
from brick_gym.faces.scoring import vqa_score  # noqa: E402
from brick_gym.judges.requests import JUDGE_IMAGE_SIZE  # noqa: E402
from brick_gym.llm.adapter import MAX_NUDGES, NUDGE, EpisodeConfig  # noqa: E402
from brick_gym.llm.budgets import MAX_TOOL_CALLS, MAX_TURNS  # noqa: E402
from brick_gym.llm.clients import openai_messages  # noqa: E402
from brick_gym.llm.messages import Message  # noqa: E402

__all__ = ["REWARDS", "BrickBenchEnv", "load_environment"]

REWARDS: dict[str, float] = {"validity": 1.0, "part_rule": 0.0, "fidelity": 1.0, "fidelity_colour": 0.0, "vqa": 1.0}
"""Reward functions and their default weights (``fidelity*`` only with fidelity targets, ``vqa`` only with a
judge)."""

_EPISODE = "brick_gym_episode"
"""State key of the rollout's EpisodeTools (removed when the model is delivered: the state stays serialisable)."""
_RESULT = "brick_gym"
"""State key of the rollout's bookkeeping and, once delivered, its verdict and reward values."""


def _reward(name: str) -> Any:
    def reward(state: Any) -> float:
        return float(((state.get(_RESULT) or {}).get("rewards") or {}).get(name, 0.0))

    reward.__name__ = name
    reward.__doc__ = f"The delivered model's {name} (0.0 when nothing was delivered)."
    return reward


def _weights(rewards: Mapping[str, float] | None, available: Sequence[str]) -> dict[str, float]:
    weights = {name: REWARDS[name] for name in available}
    unknown = sorted(set(rewards or {}) - set(available))
    if unknown:
        raise ValueError(f"unknown or unavailable reward(s) {unknown}; this environment has {list(available)}")
    for name, weight in (rewards or {}).items():
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise ValueError(f"the weight of reward {name!r} must be a number, got {weight!r}")
        weights[name] = float(weight)
    return weights


class BrickBenchEnv(vf.MultiTurnEnv):
    """Rollouts of BrickBench episodes (see the module docstring); ``samples`` are the episodes, ``config`` their
    tools and budgets, ``judge`` a :class:`~brick_gym.judges.requests.JudgeBackend` for the ``vqa`` reward."""

    def __init__(
        self,
        samples: Sequence[FaceSample],
        config: EpisodeConfig,
        *,
        rewards: Mapping[str, float] | None = None,
        judge: Any = None,
        judge_views: int = 8,
        judge_size: int = JUDGE_IMAGE_SIZE,
        out: str | os.PathLike[str] | None = None,
        **kwargs: Any,
    ) -> None:
        from datasets import Dataset

        if not samples:
            raise ValueError("no tasks to build")
        self.samples = {s.task.id: s for s in samples}
        self.config = config
        self.judge = judge
        self.judge_views, self.judge_size = judge_views, judge_size
        self.out = None if out is None else Path(out)
        fidelity = any(s.target is not None for s in samples)
        available = [n for n in REWARDS if (n.startswith("fidelity") and fidelity) or (n == "vqa" and judge)]
        available = ["validity", "part_rule", *available]
        weights = _weights(rewards, available)
        rubric = vf.Rubric(funcs=[_reward(n) for n in weights], weights=list(weights.values()))
        rows = []
        for s in samples:
            system, user = start_episode(s, config).opening()
            rows.append(
                {
                    "prompt": [{"role": "system", "content": system.text}, {"role": "user", "content": user.text}],
                    "answer": "",
                    "info": json.dumps(s.metadata()),
                }
            )
        tools = start_episode(samples[0], config).tools
        dataset = Dataset.from_list(rows)
        super().__init__(
            dataset=dataset,
            eval_dataset=dataset,  # the same episodes (fidelity targets: draw other seeds for held-out ones)
            rubric=rubric,
            tool_defs=[vf.Tool(**t) for t in tools],
            max_turns=-1,  # the episode's own budget: the last turn's tool calls still run, as in the adapter
            env_id="brick-gym",
            **kwargs,
        )
        from verifiers.envs.tool_env import ToolMonitorRubric

        self.add_rubric(ToolMonitorRubric(tool_names=[t["name"] for t in tools]))

    async def setup_state(self, state: Any) -> Any:
        """Open the rollout's episode (its sample from the row's ``info``)."""
        sample = self.samples[state["info"]["task_id"]]
        episode = start_episode(sample, self.config)
        state[_EPISODE] = episode
        state[_RESULT] = {
            "task_id": sample.task.id,
            "nudges": 0,
            "stop": None,
            "frame_fidelity": 0.0,
            "turn_rewards": [],
        }
        if sample.target is not None:
            from brick_gym.core.progress import TargetProgress

            progress = TargetProgress(sample.target.voxels)
            progress.sync(episode.session.assembly)  # the base plate is given: turn rewards count what was built
            state[_RESULT].update(progress=progress, frame_fidelity=float(progress.shape_iou))
        return state

    def _tokens(self, state: Any) -> dict[str, int]:
        usage = self.get_state_usage(state) or {}
        return {
            "prompt_tokens": int(usage.get("input_tokens", 0)),
            "completion_tokens": int(usage.get("output_tokens", 0)),
        }

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        """Run the last turn's tool calls through the episode (or nudge after a turn without any); end the
        rollout after them when the episode is over."""
        episode, book = state[_EPISODE], state[_RESULT]
        calls = list(getattr(messages[-1], "tool_calls", None) or [])
        turns = len(state["trajectory"])
        tokens = sum(self._tokens(state).values())
        if not calls:
            book["nudges"] += 1
            if book["nudges"] >= MAX_NUDGES:
                return self._end(state, "no_tool_calls", [])
            replies = [vf.UserMessage(content=NUDGE)]
        else:
            book["nudges"] = 0
            results = []
            for call in calls:
                result = episode.call(call.name, call.arguments, turns=turns, tokens=tokens)
                results.append(Message("tool", result.text, list(result.images), tool_call_id=call.id, name=call.name))
            replies = _normalise(openai_messages(results))
            self._turn_reward(state)
        stop = None
        if episode.finished:
            stop = "finish"
        elif episode.budget_spent:
            stop = "max_tool_calls"
        elif turns >= self.config.max_turns:
            stop = "max_turns"
        else:
            stop = episode.over_budget(tokens)
        return self._end(state, stop, replies) if stop else replies

    def _end(self, state: Any, stop: str, replies: list[Any]) -> list[Any]:
        state[_RESULT]["stop"] = stop
        state["final_env_response"] = replies
        return replies

    def _turn_reward(self, state: Any) -> None:
        """A fidelity rollout's turn reward: the change of frame shape fidelity its tool calls made."""
        book = state[_RESULT]
        progress = book.get("progress")
        if progress is None or not state["trajectory"]:
            return
        progress.sync(state[_EPISODE].session.assembly)
        now = float(progress.shape_iou)
        state["trajectory"][-1]["reward"] = now - book["frame_fidelity"]
        book["turn_rewards"].append(now - book["frame_fidelity"])
        book["frame_fidelity"] = now

    @vf.cleanup
    async def deliver(self, state: Any) -> None:
        """Deliver the rollout's model (files, verdict, reward values) whatever ended it."""
        episode = state.pop(_EPISODE, None)
        if episode is None:
            return
        book = state[_RESULT]
        book.pop("progress", None)
        sample = self.samples[book["task_id"]]
        error = state.get("error")
        stop = book["stop"] or _stop_of(state, episode.finished)
        with task_folder(self.out, sample.task.id, str(state.get("trajectory_id") or "rollout")) as folder:
            result = episode.deliver(
                folder,
                stop_reason=stop,
                turns=len(state.get("trajectory") or []),
                tokens=self._tokens(state),
                nudges=book["nudges"],
                error=None if error is None else f"{type(error).__name__}: {error}",
                client={"kind": "verifiers", "model": state.get("model"), "endpoint": None},
                target=None if sample.target is None else sample.target.voxels,
            )
            delivered = deliverables(folder)
        rewards = {"validity": 1.0 if result.valid else 0.0, **result.reward_terms}
        if self.judge is not None:
            rewards["vqa"], book["vqa"] = vqa_score(
                delivered["model_mpd"],
                sample,
                self.judge,
                valid=result.valid,
                views=self.judge_views,
                size=self.judge_size,
            )
        book.update(
            stop=stop,
            valid=result.valid,
            pieces=result.pieces,
            rewards=rewards,
            model_mpd=delivered["model_mpd"],
            verification=delivered["verification"],
            folder=None if self.out is None else str(folder),
        )


def _stop_of(state: Any, finished: bool) -> str:
    """Why a rollout the episode did not end itself ended (verifiers' own stops)."""
    if finished:
        return "finish"
    if state.get("timed_out"):
        return "max_seconds"
    if state.get("prompt_too_long"):
        return "context_overflow"
    return "client_error"


def _normalise(messages: list[dict[str, Any]]) -> list[Any]:
    from verifiers.utils.message_utils import normalize_messages

    return list(normalize_messages(messages, field_name="env_response"))


def load_environment(
    setting: str = "model",
    tasks: str | None = None,
    inventory: str | None = None,
    rewards: Mapping[str, float] | None = None,
    *,
    protocol: str = "checked",
    toolset: str = "program",
    max_turns: int = MAX_TURNS,
    max_tool_calls: int = MAX_TOOL_CALLS,
    max_tokens: int | None = None,
    max_seconds: float | None = None,
    render: bool = False,
    views: int = 8,
    view_size: int = 512,
    forces: bool = False,
    judge: str | None = None,
    judge_views: int = 8,
    judge_size: int = JUDGE_IMAGE_SIZE,
    num_targets: int = 60,
    seed: int = 0,
    kinds: Sequence[str] | None = None,
    size: str = "small",
    out: str | None = None,
    **kwargs: Any,
) -> BrickBenchEnv:
    """The BrickBench environment of a setting (``model``, ``set``, ``alt-build``, or ``fidelity``); see the module
    docstring. ``judge`` is a judge spec (``openai:MODEL@URL``, ``transformers:PATH``, ``scripted-yes``); other
    keyword arguments go to the verifiers environment."""
    config = face_config(locals())
    if setting == FIDELITY:
        samples = fidelity_samples(num_targets, seed, kinds, size)
    else:
        samples = benchmark_samples(setting, tasks, inventory)
    backend = None
    if judge is not None:
        from brick_gym.judges.backends import judge_from_spec

        backend = judge_from_spec(judge)
    return BrickBenchEnv(
        samples,
        config,
        rewards=rewards,
        judge=backend,
        judge_views=judge_views,
        judge_size=judge_size,
        out=out,
        **kwargs,
    )
