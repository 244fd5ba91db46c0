"""A judge backend whose requests are answered by Ray tasks (``brick-gym bench score --ray ADDRESS``).

:class:`RayJudge` splits each call into batches of ``batch_size`` requests and sends each batch to a Ray task,
which asks the judge of the spec (:func:`~brick_gym.judges.backends.judge_from_spec`, built once per worker
process) from whichever node it lands on: typically ``openai:MODEL@URL`` of a vLLM OpenAI-compatible server on a
GPU node, which then batches what the tasks send it. Replies come back in request order. It identifies itself by
the spec's own backend, model and revision, so the persistent cache (:class:`~brick_gym.judges.cache.CachedJudge`,
kept by the driver) has the same keys as when the same judge is asked without Ray: re-scoring either way asks only
what neither asked before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from brick_gym.cluster import ray_module
from brick_gym.judges.backends import judge_from_spec
from brick_gym.judges.requests import JudgeReply, JudgeRequest, chunks

__all__ = ["RayJudge"]

_JUDGES: dict[str, Any] = {}


def _judge_batch(spec: str, batch: list[JudgeRequest]) -> list[JudgeReply]:
    """The body of one Ray task: the worker's judge for ``spec`` (built on first use) answers ``batch``."""
    if spec not in _JUDGES:
        _JUDGES[spec] = judge_from_spec(spec)
    return list(_JUDGES[spec].judge(batch))


class RayJudge:
    """``judge_from_spec(spec)``, asked through Ray tasks of ``batch_size`` requests each (``cpus``/``gpus`` per
    task; ``retries`` reruns of a task whose worker or node died). Needs a Ray connection in this process
    (:func:`brick_gym.cluster.connect`); an error raised by the judge in a task is raised here."""

    def __init__(self, spec: str, *, batch_size: int = 8, cpus: float = 0.25, gpus: float = 0.0, retries: int = 3):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if cpus < 0 or gpus < 0 or retries < 0:
            raise ValueError("cpus, gpus and retries must be >= 0")
        local = judge_from_spec(spec)  # validates the spec; contacts and loads nothing
        self.spec = spec
        self.name: str = local.name
        self.model: str = local.model
        self.revision: str | None = local.revision
        self.batch_size = batch_size
        self.cpus, self.gpus, self.retries = cpus, gpus, retries
        self.tasks = 0
        """Ray tasks sent so far (one per batch)."""

    def __repr__(self) -> str:
        return f"RayJudge({self.spec!r}, batch_size={self.batch_size})"

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        ray = ray_module("RayJudge")
        if not ray.is_initialized():
            raise RuntimeError("RayJudge needs a Ray connection: call it inside brick_gym.cluster.connect(ADDRESS)")
        if not requests:
            return []
        remote = ray.remote(_judge_batch).options(num_cpus=self.cpus, num_gpus=self.gpus, max_retries=self.retries)
        batches = list(chunks(list(requests), self.batch_size))
        refs = [remote.remote(self.spec, batch) for batch in batches]
        self.tasks += len(refs)
        replies: list[JudgeReply] = []
        for batch, ref in zip(batches, refs, strict=True):
            answered = ray.get(ref)
            if len(answered) != len(batch):
                raise RuntimeError(f"{self!r}: a task returned {len(answered)} replies for {len(batch)} requests")
            replies.extend(answered)
        return replies
