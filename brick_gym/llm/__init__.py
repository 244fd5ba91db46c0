"""LLM agents: messages, chat clients, the tools an agent calls, the episode adapter and the heuristic builder."""
