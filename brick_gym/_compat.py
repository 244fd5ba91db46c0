"""Deprecated import paths of 0.1 (``brick_gym.assembly``, ``brick_gym.agents.rl``, …), kept for one release.

The restructure moved every module into a folder named for its job (``core/``, ``llm/``, ``rl/``, ``judges/``…).
So that user code, pickled environments and saved policies that name the old paths still load, importing an old
path gives the module that now holds its names, with a ``DeprecationWarning`` naming the new path. A split module
gives a stand-in that looks names up in each of its new homes in turn.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

OLD_PATHS: dict[str, tuple[str, ...]] = {
    **{
        f"brick_gym.{m}": (f"brick_gym.core.{m}",)
        for m in [
            "assembly",
            "bricknet_data",
            "catalog",
            "collision",
            "colours",
            "connectors",
            "examples",
            "fileio",
            "joints",
            "ldraw",
            "meshes",
            "modelfile",
            "rules",
            "stability",
            "validity",
            "voxels",
        ]
    },
    "brick_gym.fidelity": ("brick_gym.envs.fidelity_targets",),
    "brick_gym.speed": ("brick_gym.bench.speed",),
    "brick_gym.openai_client": ("brick_gym.endpoints",),
    "brick_gym.envs.actions": ("brick_gym.envs.codecs", "brick_gym.envs.palette"),
    "brick_gym.agents": (),
    "brick_gym.agents.adapter": ("brick_gym.llm.adapter",),
    "brick_gym.agents.tools": ("brick_gym.llm.tools",),
    "brick_gym.agents.clients": (
        "brick_gym.llm.clients",
        "brick_gym.llm.messages",
        "brick_gym.llm.specs",
        "brick_gym.endpoints",
    ),
    "brick_gym.agents.heuristic": (
        "brick_gym.llm.heuristic.client",
        "brick_gym.llm.heuristic.planner",
        "brick_gym.llm.heuristic.blueprints",
        "brick_gym.llm.heuristic.shapes",
        "brick_gym.llm.heuristic.brief",
    ),
    "brick_gym.agents.rl": ("brick_gym.rl.train", "brick_gym.rl.config", "brick_gym.rl.policies"),
    "brick_gym.agents.baselines": ("brick_gym.rl.baselines",),
    "brick_gym.agents.experiment": (
        "brick_gym.rl.experiment",
        "brick_gym.rl.experiment_config",
        "brick_gym.rl.wandb_log",
        "brick_gym.rl.callbacks",
        "brick_gym.rl.summary",
    ),
    "brick_gym.rewards.vlm": (
        "brick_gym.judges.requests",
        "brick_gym.judges.backends",
        "brick_gym.judges.cache",
        "brick_gym.judges.server",
        "brick_gym.endpoints",
    ),
    "brick_gym.rewards.judge": ("brick_gym.judges.pairwise",),
    "brick_gym.rewards.vqa": ("brick_gym.judges.vqa",),
    "brick_gym.rewards.vlm_terms": ("brick_gym.rewards.judge_terms",),
}
"""Old dotted path -> the new modules that hold its names (first match wins)."""

RENAMED: dict[str, str] = {"brick_gym.rewards.vlm.png_data_url": "image_data_url"}
"""Old dotted name -> its name in the new homes, for the few names the restructure renamed."""


class _SplitModule(types.ModuleType):
    """An old module whose names now live in several modules: attribute lookups try each in turn."""

    def __init__(self, name: str, homes: Sequence[str]) -> None:
        super().__init__(name, f"Deprecated alias of {', '.join(homes) or 'nothing'} (brick_gym 0.1 path).")
        self.__path__: list[str] = []  # a package too, so that old submodule paths resolve through the finder
        self._homes = tuple(homes)

    def __getattr__(self, attr: str) -> object:
        if attr.startswith("__"):
            raise AttributeError(attr)
        name = RENAMED.get(f"{self.__name__}.{attr}", attr)
        for home in self._homes:
            module = importlib.import_module(home)
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"{self.__name__!r} (deprecated) has no {attr!r}; it moved to one of {self._homes}")


class _OldPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of :data:`OLD_PATHS` and loads them as their new homes."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in OLD_PATHS:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        homes = OLD_PATHS[spec.name]
        if homes:
            warnings.warn(
                f"{spec.name} is deprecated and will be removed in the next release; import from "
                f"{' / '.join(homes)} (or the short names on brick_gym)",
                DeprecationWarning,
                stacklevel=3,
            )
        if len(homes) == 1:
            return importlib.import_module(homes[0])
        return _SplitModule(spec.name, homes)

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module is its new home (or a stand-in for several)."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (called by ``import brick_gym``)."""
    if not any(isinstance(f, _OldPathFinder) for f in sys.meta_path):
        sys.meta_path.append(_OldPathFinder())
