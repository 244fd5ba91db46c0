"""Figures: checking a corpus of model files in one ``brick-gym check`` process against one process per file.

    PYTHONPATH=. python tests/core/bench_check_many.py [N]

Writes the first N (default 60) cases of the agreement corpus (``brick_gym.bench.corpus.cases``, seed 0) as
``.mpd`` files into a temporary folder, then times ``brick-gym check FOLDER --json`` once, and
``brick-gym check FILE --json`` for the first 10 files, one process each. Prints seconds per file for both.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from brick_gym.bench.corpus import cases
from brick_gym.core.modelfile import save


def _run(*argv: str) -> tuple[float, list[dict]]:
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "brick_gym.cli", "check", *argv, "--json"], capture_output=True, text=True
    )
    seconds = time.perf_counter() - t
    return seconds, [json.loads(line) for line in out.stdout.splitlines()]


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = [save(c.assembly, Path(folder) / f"{c.name}.mpd") for c in cases(0, n)]
        many, reports = _run(folder)
        assert len(reports) == n
        singles = [_run(str(p))[0] for p in paths[:10]]
    figures = {
        "files": n,
        "one_process_s": round(many, 3),
        "one_process_per_file_s": round(many / n, 4),
        "process_per_file_s": round(sum(singles) / len(singles), 3),
        "valid": sum(r["valid"] for r in reports),
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
