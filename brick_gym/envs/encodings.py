"""The action encodings by name: ``factored`` and ``candidates`` (:mod:`.codecs`: one placement per step) and
``staged`` (:mod:`.staged_codec`: where, what, how in three sub-steps; the benchmark track's target-blind one)."""

from __future__ import annotations

from collections.abc import Sequence

from brick_gym.envs.codecs import CandidateCodec, Codec, FactoredCodec
from brick_gym.envs.palette import PaletteSlot
from brick_gym.envs.staged_codec import StagedCodec

ENCODINGS = ("factored", "candidates", "staged")
ONE_STEP_ENCODINGS = ("factored", "candidates")
"""Encodings whose every action is a whole placement (what a face that takes turns per action needs)."""


def make_codec(encoding: str, palette: Sequence[PaletteSlot], max_targets: int, max_candidates: int) -> Codec:
    """The codec named ``encoding`` (one of :data:`ENCODINGS`)."""
    if encoding == "factored":
        return FactoredCodec(palette, max_targets)
    if encoding == "candidates":
        return CandidateCodec(palette, max_candidates)
    if encoding == "staged":
        return StagedCodec(palette, max_targets)  # type: ignore[return-value]
    raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")


__all__ = ["ENCODINGS", "ONE_STEP_ENCODINGS", "make_codec"]
