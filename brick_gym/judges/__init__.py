"""Judges: VQA question graphs, pairwise prompts and tiling, judge backends, the persistent cache and an endpoint."""
