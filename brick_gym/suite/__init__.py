"""The BrickGym suite: an RL benchmark of levels as data, one protocol, baselines and a headline score.

``levels()`` lists the level ids, ``make(level, split, seed)`` gives a level's Gymnasium env (``make_vec`` a vector
of them; ``make_aec`` a multi-builder level's PettingZoo env), ``evaluate(policy, level)`` plays the level's fixed
test seeds and returns per-episode results and the normalised score. On the benchmark track nothing computed from
the target orders, filters or annotates the actions (the staged encoding); the assisted track (target-ranked
candidates) is opt-in and labelled.
"""

from brick_gym.extras import require

require("gymnasium", "brick_gym.suite")

from brick_gym.suite.levels import SUITE_VERSION, Level, level, levels
from brick_gym.suite.protocol import evaluate, make, make_aec, make_vec

__all__ = ["SUITE_VERSION", "Level", "evaluate", "level", "levels", "make", "make_aec", "make_vec"]
