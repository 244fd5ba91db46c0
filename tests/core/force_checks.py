"""Shared checks of force analyses read two ways (warm against cold, fast path against a solve from scratch)."""

from __future__ import annotations

import math

import pytest

from brick_gym.core import force_program as fp

FLOOR = 1.0 / fp.MAX_LOAD_FACTOR * (1 + 1e-6)
"""Under 1/MAX_LOAD_FACTOR utilisations are the joints' own (non-unique) readings."""


def same_utilisation(one: float, other: float) -> bool:
    """Equal within 1e-6 relative where U is unique (1/λ*); under :data:`FLOOR` both read the joints' own
    (non-unique) readings, so ``one`` must only stay there; ∞ and NaN match themselves."""
    if not math.isfinite(other):
        return math.isnan(one) if math.isnan(other) else math.isinf(one)
    return one == pytest.approx(other, rel=1e-6) if other > FLOOR else one <= FLOOR


def assert_same_components(one, other) -> None:
    """``one`` reads as ``other``: the same unsupported pieces and components, each with the same U, tipping,
    joined pairs, and (``one``) equilibrium within 1e-7. Returns nothing; asserts."""
    assert one.unsupported == other.unsupported
    by_pieces = {c.pieces: c for c in other.components}
    assert {c.pieces for c in one.components} == set(by_pieces)
    for comp in one.components:
        theirs = by_pieces[comp.pieces]
        assert same_utilisation(comp.max_utilisation, theirs.max_utilisation), (comp.max_utilisation, theirs)
        assert comp.tips == theirs.tips
        assert comp.residual < 1e-7 or math.isnan(comp.max_utilisation)
        assert {j.pieces for j in comp.joints} == {j.pieces for j in theirs.joints}
