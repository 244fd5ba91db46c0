"""An LLM episode's default budgets, defined once for every face (``EpisodeConfig``, ``brick-gym bench run``, the
Inspect task and the verifiers environment); a light module, so that the CLI can print them without the adapter."""

from __future__ import annotations

__all__ = ["MAX_TOOL_CALLS", "MAX_TURNS"]

MAX_TURNS: int = 300
"""Assistant turns per episode: BrickBench's budget."""

MAX_TOOL_CALLS: int = 2_000
"""Tool calls per episode, summed over turns (BrickBench sets none; this bounds an agent that never stops)."""
