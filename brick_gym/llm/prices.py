"""A price table for hosted models, so that every result and leaderboard states a cost even where the server
reports none (OpenAI itself, vLLM, llama.cpp never do).

The file (``--prices FILE``) is JSON: an object from model name to its rates in US dollars per million tokens,
``{"gpt-4o": {"input": 2.5, "output": 10.0}, "openai:qwen3": {"input": 0.1, "output": 0.3}}``. A key is the
model as the agent spec names it, optionally with the spec's kind in front (``openai:``, ``anthropic:``); the
longer key wins when both are there.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from brick_gym.io.files import read_json

__all__ = ["PriceTable", "PriceTableError"]

_MAX_RATE = 1e6
"""Highest believable rate in USD per million tokens (a larger one is a typo, e.g. a price per token)."""


class PriceTableError(ValueError):
    """An unusable price table; the message names the file and the entry."""


@dataclass(frozen=True)
class PriceTable:
    """Rates per model: ``rates[key] = (USD per million input tokens, USD per million output tokens)``."""

    rates: Mapping[str, tuple[float, float]]
    source: str = "<memory>"

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PriceTable:
        """Read and check a price table file (see the module docstring); :class:`PriceTableError` names the entry."""
        try:
            data = read_json(path, max_bytes=4 * 1024 * 1024)
        except ValueError as exc:  # JSONInputError names the file
            raise PriceTableError(str(exc)) from None
        return cls.from_json(data, str(path))

    @classmethod
    def from_json(cls, data: Any, source: str = "<memory>") -> PriceTable:
        """A table from its parsed JSON; :class:`PriceTableError` for anything but model -> {input, output}."""
        if not isinstance(data, dict) or not data:
            raise PriceTableError(f"{source}: a price table is a non-empty JSON object of model -> {{input, output}}")
        rates: dict[str, tuple[float, float]] = {}
        for model, entry in data.items():
            if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
                raise PriceTableError(
                    f'{source}: {str(model)[:80]!r} must be {{"input": USD, "output": USD}} per million tokens'
                )
            pair = []
            for side in ("input", "output"):
                value = entry[side]
                ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
                if not ok or not 0 <= value <= _MAX_RATE:
                    raise PriceTableError(
                        f"{source}: {str(model)[:80]!r} {side} must be USD per million tokens from 0 to {_MAX_RATE:g}"
                    )
                pair.append(float(value))
            rates[str(model)] = (pair[0], pair[1])
        return cls(rates, source)

    def rates_for(self, kind: str, model: str) -> tuple[float, float]:
        """The rates of ``model`` (``kind:model`` first); :class:`PriceTableError` naming the model when absent,
        so a run never starts with a cost it cannot state."""
        for key in (f"{kind}:{model}", model):
            if key in self.rates:
                return self.rates[key]
        raise PriceTableError(f'{self.source}: no price for model {model!r} (add "{model}": {{input, output}})')

    def cost(self, kind: str, model: str, usage: Mapping[str, Any]) -> float:
        """USD for ``usage`` (``prompt_tokens``, ``completion_tokens``) at the model's rates."""
        rate_in, rate_out = self.rates_for(kind, model)
        return (
            float(usage.get("prompt_tokens") or 0) * rate_in + float(usage.get("completion_tokens") or 0) * rate_out
        ) / 1e6
