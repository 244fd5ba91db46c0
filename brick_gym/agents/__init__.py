"""Agents: tool calls for LLMs, the episode adapter, chat clients, the heuristic builder, RL glue, baselines."""
