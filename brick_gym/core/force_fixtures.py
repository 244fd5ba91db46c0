"""Published structures with a stated real outcome (StableLego's stairs), kept as data for validating the force
model: each an LDraw file in ``brick_gym/data/forces`` beside an index naming its source, the outcome its authors
state and how it was rebuilt (``docs/reference/forces.md`` lists them with the model's readings)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

from brick_gym.core.assembly import Assembly
from brick_gym.core.modelfile import load

__all__ = ["Fixture", "fixtures"]


@dataclass(frozen=True)
class Fixture:
    """One published structure: ``outcome`` is "holds" or "fails", as its source states it was observed."""

    name: str
    file: str
    source: str
    outcome: str
    stated: str
    reconstruction: str

    def assembly(self) -> Assembly:
        """The structure, read from its LDraw file."""
        with resources.as_file(resources.files("brick_gym") / "data" / "forces" / self.file) as path:
            loaded = load(path)
        if loaded.problems:
            raise ValueError(f"{self.file}: {loaded.problems[0].message}")
        return loaded.assembly


def fixtures() -> tuple[Fixture, ...]:
    """Every fixture of the index, in its order."""
    index = resources.files("brick_gym") / "data" / "forces" / "fixtures.json"
    return tuple(Fixture(**entry) for entry in json.loads(index.read_text(encoding="utf-8"))["fixtures"])
