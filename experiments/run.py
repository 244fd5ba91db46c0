"""The one entry point for experiments: ``python experiments/run.py CONFIG.toml [--size smoke|full] [--out DIR]
[--seeds 0,1,2] [--variants a,b]``. See experiments/README.md; the engine is ``brick_gym.rl.experiment``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from brick_gym.rl.experiment import main

if __name__ == "__main__":
    raise SystemExit(main())
