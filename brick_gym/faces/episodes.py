"""What the Inspect task and the verifiers environment share: their samples (a BrickBench task file of a setting,
or fidelity targets), the episode config their parameters make, the start of each episode, the folder it delivers
into and the deliverables read back.

Samples come from the same loaders as ``brick-gym bench run`` (:func:`~brick_gym.bench.runner.load_bench_tasks`
validates task files, :func:`~brick_gym.bench.runner.resolve_inventory` finds the Alt-Build inventory), so a file the
runner refuses is refused here with the same message.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brick_gym.bench.runner import default_tasks, load_bench_tasks, normalise_setting, resolve_inventory
from brick_gym.envs.fidelity_targets import ALL_KINDS, FidelityTask, generate_suite
from brick_gym.io.files import read_json
from brick_gym.io.paths import check_safe_id, safe_join
from brick_gym.llm.adapter import BenchTask, EpisodeConfig, EpisodeTools
from brick_gym.llm.fidelity_briefs import fidelity_bench_task, place_start_piece

__all__ = [
    "FIDELITY",
    "OPTIONS",
    "FaceSample",
    "benchmark_samples",
    "deliverables",
    "episode_config",
    "face_config",
    "fidelity_samples",
    "start_episode",
    "task_folder",
]

FIDELITY = "fidelity"
"""The setting name of fidelity samples (built under the ``free`` rules, scored against their target)."""


@dataclass(frozen=True)
class FaceSample:
    """One episode to play: the task (id, brief, VQA questions), its setting and inventory file, and for a fidelity
    sample its target (kept in memory by the face; never serialised)."""

    task: BenchTask
    setting: str
    inventory: str | None = None
    target: FidelityTask | None = field(default=None, compare=False)

    def metadata(self) -> dict[str, Any]:
        """A JSON-ready record of the sample (an Inspect sample's metadata, a verifiers row's info)."""
        return {
            "task_id": self.task.id,
            "prompt": self.task.prompt,
            "questions": self.task.questions,
            "inputs": self.task.inputs,
            "images": self.task.images,
            "setting": self.setting,
            "inventory": self.inventory,
        }

    @classmethod
    def from_metadata(cls, data: dict[str, Any]) -> FaceSample:
        """The sample :meth:`metadata` describes (without a fidelity target)."""
        task = BenchTask(
            str(data["task_id"]),
            str(data["prompt"]),
            list(data.get("questions") or []),
            str(data.get("inputs") or ""),
            list(data.get("images") or []),
        )
        return cls(task, str(data["setting"]), data.get("inventory"))


def benchmark_samples(
    setting: str, tasks: str | os.PathLike[str] | None = None, inventory: str | os.PathLike[str] | None = None
) -> list[FaceSample]:
    """The tasks of a BrickBench task file (default: the project's suite for ``setting``), validated as the runner
    does; Alt-Build takes ``inventory``, else ``$BRICKAGENT_SET``, else the project's small inventory."""
    setting = normalise_setting(setting)
    path = Path(tasks) if tasks is not None else default_tasks(setting)
    inv = resolve_inventory(setting, inventory)
    samples = []
    for t in load_bench_tasks(path):  # the loader refuses ids that are not safe folder names, with their index
        samples.append(FaceSample(BenchTask.from_json(t), setting, None if inv is None else str(inv)))
    return samples


def fidelity_samples(
    n: int, seed: int = 0, kinds: Sequence[str] | None = None, size: str = "small"
) -> list[FaceSample]:
    """``n`` fidelity targets of the env's generator (:func:`~brick_gym.envs.fidelity_targets.generate_suite`:
    deterministic for ``seed``, cycling through ``kinds``), each with its piece-by-piece brief."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"the number of fidelity targets must be a positive integer, got {n!r}")
    targets = generate_suite(n, seed, tuple(kinds or ALL_KINDS), size)
    return [FaceSample(fidelity_bench_task(t), FIDELITY, None, t) for t in targets]


OPTIONS = (
    "protocol",
    "toolset",
    "max_turns",
    "max_tool_calls",
    "max_tokens",
    "max_seconds",
    "render",
    "views",
    "view_size",
    "forces",
)
"""The episode options both faces take as parameters of the same names (setting and inventory are each sample's)."""


def face_config(parameters: Mapping[str, Any]) -> EpisodeConfig:
    """The episode config of a face's parameters (its ``locals()``: those named in :data:`OPTIONS`)."""
    return EpisodeConfig(**{name: parameters[name] for name in OPTIONS})


def episode_config(sample: FaceSample, config: EpisodeConfig) -> EpisodeConfig:
    """``config`` with the sample's setting and inventory (fidelity samples build under the ``free`` rules)."""
    setting = "free" if sample.setting == FIDELITY else sample.setting
    return dataclasses.replace(config, setting=setting, inventory=sample.inventory)


def start_episode(sample: FaceSample, config: EpisodeConfig) -> EpisodeTools:
    """The episode of one sample: its tools and budgets, and for a fidelity sample the target's base plate placed."""
    episode = EpisodeTools(sample.task, episode_config(sample, config))
    if sample.target is not None:
        place_start_piece(episode, sample.target)
    return episode


@contextlib.contextmanager
def task_folder(out: str | os.PathLike[str] | None, *names: str) -> Iterator[Path]:
    """``out/<name>/<name>...`` (made if needed; each name a safe id, :func:`~brick_gym.io.paths.check_safe_id`,
    and the folder checked to stay under ``out``) when ``out`` is given, else a temporary folder removed afterwards:
    task ids and trajectory ids come from files and trainers, not from us."""
    parts = [check_safe_id(n, "folder name") for n in names]
    if out is not None:
        folder = safe_join(out, *parts)
        folder.mkdir(parents=True, exist_ok=True)
        yield folder
        return
    with tempfile.TemporaryDirectory(prefix=f"brick-gym-{'-'.join(parts)}-") as tmp:
        yield Path(tmp)


def deliverables(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """What an episode delivered into ``folder``, read back: ``model_mpd`` (the text of ``model.mpd``),
    ``verification`` (``verification.json``) and ``contact_sheet`` (a PNG data URL, or None without renders)."""
    from brick_gym.endpoints import image_data_url

    root = Path(folder)
    sheet = root / "views" / "contact_sheet.png"
    return {
        "model_mpd": (root / "model.mpd").read_bytes().decode("utf-8"),
        "verification": read_json(root / "verification.json"),
        "contact_sheet": image_data_url(sheet) if sheet.is_file() else None,
    }
