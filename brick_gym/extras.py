"""Optional dependencies: one error, naming the missing package and the pip extra that installs it.

The core needs only its own dependencies; the environments, trainers, LLM clients, judges and plots need extras
(``pip install 'brick-gym[rl]'`` …). Every place that imports one calls :func:`require`, so a missing package
always reads the same way (Gymnasium's ``DependencyNotInstalled`` habit) instead of a bare ``No module named``.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

EXTRAS: dict[str, str] = {
    "gymnasium": "rl",
    "stable_baselines3": "rl",
    "sb3_contrib": "rl",
    "torch": "rl",
    "pettingzoo": "multi",
    "transformers": "vlm",
    "PIL": "render",
    "moderngl": "render",
    "matplotlib": "render",
    "openai": "llm",
    "anthropic": "llm",
    "wandb": "experiments",
    "brickagent": "peers",
    "coacd": "colliders",
    "inspect_ai": "inspect",
    "verifiers": "verifiers",
    "datasets": "verifiers",
    "ray": "ray",
}
"""Top-level package -> the brick_gym extra that installs it (pyproject's optional-dependencies)."""


class DependencyNotInstalled(ImportError):
    """An optional dependency is missing; the message names it, what needed it and the extra to install."""


def missing_extra(package: str, needed_by: str) -> DependencyNotInstalled:
    """The error for ``package`` missing when ``needed_by`` wanted it."""
    top = package.split(".")[0]
    extra = EXTRAS.get(top)
    how = f"pip install 'brick-gym[{extra}]'" if extra else f"pip install {top}"
    return DependencyNotInstalled(f"{needed_by} needs {top}, which is not installed: {how}")


def require(package: str, needed_by: str) -> ModuleType:
    """Import ``package`` (dotted names allowed) or raise :func:`missing_extra`'s error."""
    try:
        return importlib.import_module(package)
    except ModuleNotFoundError as exc:
        if importlib.util.find_spec(package.split(".")[0]) is not None:
            raise  # the package is installed and something inside it is missing: its own error is the clear one
        raise missing_extra(package, needed_by) from exc


__all__ = ["EXTRAS", "DependencyNotInstalled", "missing_extra", "require"]
