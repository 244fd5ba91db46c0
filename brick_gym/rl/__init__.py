"""Learned builders: one TrainConfig, policies, training, baselines and experiments (SB3 / sb3-contrib)."""
