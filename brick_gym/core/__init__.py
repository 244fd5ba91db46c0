"""The domain core: parts, connectors, placement, collision, stability and validity, BrickBench-exact.

Imports nothing from gymnasium, torch, an LLM client or a renderer; every other package builds on it.
"""
