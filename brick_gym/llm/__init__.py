"""LLM agents: the neutral messages, chat clients and their specs, the tools an agent calls, the episode adapter
and the heuristic builder."""
