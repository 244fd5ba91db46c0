"""Reward and scoring functions: BrickBench VQA gating, pairwise-judge prompts and parsers, reward terms."""
