"""An assembly pickled in one process keeps working in another: connector type codes are numbered per process (in
order of first use), so the joint index carries the types themselves (the program sandbox relies on this)."""

from __future__ import annotations

import pickle
import subprocess
import sys

from brick_gym.core.assembly import Assembly
from brick_gym.core.rules import Rules

CHILD = """
import pickle, sys
from brick_gym.core.catalog import part
from brick_gym.core.joints import part_arrays
for stem in ("3062b", "3700", "6558", "3937", "3941"):  # register other connector types first, in another order
    part_arrays(part(stem))
a = pickle.loads(sys.stdin.buffer.read())
out = a.attach("3941", "red", to="0.stud[86]", by="hole[0]")
print(out.ok, len(out.joints), a == pickle.loads(pickle.dumps(a)))
"""


def test_an_assembly_pickled_here_places_and_joins_in_another_process() -> None:
    a = Assembly(Rules.for_setting("model"))
    assert a.add("3867", "dark bluish grey").ok
    here = a.copy().attach("3941", "red", to="0.stud[86]", by="hole[0]")
    assert here.ok
    done = subprocess.run(
        [sys.executable, "-c", CHILD], input=pickle.dumps(a), capture_output=True, check=True, timeout=300
    )
    assert done.stdout.decode().split() == ["True", str(len(here.joints)), "True"], done.stderr.decode()[-2000:]
