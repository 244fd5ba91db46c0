"""What each kind of joint can carry: the constants of the force model and, per connector family, which of the six
wrench components a joint transmits freely, which it carries up to a capacity and which it cannot carry at all.

Units: newtons and LDU (1 LDU = 0.4 mm, BrickBench's scale); moments in N·LDU. Every constant names its source; where
no published measurement exists the value is an *estimate*, derived as written beside it, and
``docs/reference/forces.md`` lists it as such.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LDU_MM = 0.4
"""Millimetres per LDU (LDraw's convention; BrickBench's scale)."""

GRAVITY_M_S2 = 9.81
"""Standard gravity, as BrickBench's drop test uses it."""

DENSITY_KG_M3 = 1000.0
"""BrickBench's uniform part density (its drop test's), so that the force model weighs parts as the verdict it sits
beside does. With the colliders' stored volumes a 3001 brick weighs 2.70 g (BrickLink lists 2.32 g): loads are
slightly overestimated, i.e. on the safe side."""

CLUTCH_MU = 0.2
"""Friction coefficient between stud and tube/hole walls: BrickSim (Wen, Liu, Piao, Li, C. Liu 2026,
arXiv:2603.16853), fitted to 150 physically built models."""

CLUTCH_N = 0.7
"""μ·F0, the friction one stud's interference fit holds without any other load, in N: BrickSim (as above). The
friction pyramid per stud is |Ft| + Fa ≤ μ(Fr + F0); here the radial term μ·Fr is dropped (lateral pressure only adds
grip), which keeps the model linear and errs on the safe side."""

STUD_PITCH_LDU = 20.0
"""Stud spacing (LDraw: 20 LDU = 8 mm). A stud joint's face contact is its stud cell, the square of this side
centred on the stud, in the plane where the two parts meet."""

STUD_RADIUS_LDU = 6.0
"""Stud radius (LDraw's stud primitive ``stud.dat``: 6 LDU = 2.4 mm): the lever of a stud's friction about its own
axis, so one stud alone resists a twist of up to μ·F0 · r."""

FIT_N = CLUTCH_N
"""Friction an interference fit of a Technic pin end, a bar in a clip or an axle in a cross hole holds along its
axis. *Estimate*: no published pull-out measurement was found; each grips a 4.8 mm (pin, axle) or 3.2 mm (bar)
shaft by an interference ring much like a stud's, so one stud's μ·F0 (BrickSim) is taken."""

FRICTION_PIN_TORQUE_NLDU = FIT_N * STUD_RADIUS_LDU
"""Twist a friction pin (a part named "... with Friction ...") holds in its hole: the same fit's friction at the pin's
radius (LDraw pin primitive: 6 LDU). *Estimate*, derived as :data:`FIT_N`. Pins without friction ridges turn
freely."""

ABS_YIELD_MPA = 40.0
"""Tensile yield strength of ABS, low end of the 40–50 MPa range given for general-purpose ABS (e.g. Wikipedia
"Acrylonitrile butadiene styrene", mechanical properties); the bending bound of pin and axle shafts."""

SHAFT_DIAMETER_MM = 4.8
"""Diameter of Technic pin and axle shafts (LDraw primitives: 6 LDU radius)."""

SHAFT_BENDING_NLDU = ABS_YIELD_MPA * math.pi * SHAFT_DIAMETER_MM**3 / 32.0 / LDU_MM
"""Bending moment a pin or axle shaft carries before it yields: σ_y · πd³/32 for a solid 4.8 mm ABS shaft
(434 N·mm; hollow pins are weaker). A material bound, far above any clutch: Funes (2001, thesis §2) notes that
brick structures fail at their joints, not in the plastic."""

GROUND_FRICTION = 10.0
"""Friction coefficient of the ground: BrickBench's drop test uses lateral friction 10 (the ground holds)."""

FREE, RIGID, LIMIT, BEND = "free", "rigid", "limit", "bend"
"""How a wrench component is carried: not at all (the joint moves: a mechanism if it must), without limit (geometry
locks it), up to a capacity, or (the two moments about axes across the shaft, together) up to a bending capacity."""


@dataclass(frozen=True)
class JointModel:
    """How a non-stud joint carries the six components of its wrench, in its frame (axis n, across e1, e2):
    forces along e1, e2, n, then moments about e1, e2, n. ``caps`` gives the capacity of each LIMIT or BEND component
    (N or N·LDU); ``name`` says what the joint is and ``modes`` what each limited component means, for messages."""

    name: str
    kinds: tuple[str, str, str, str, str, str]
    caps: tuple[float, float, float, float, float, float] = (0.0,) * 6
    modes: tuple[str, str, str, str, str, str] = ("",) * 6


_R, _F = RIGID, FREE
_AXIAL_FIT = ("pulled out along its axis", FIT_N)


def _model(name: str, axial: tuple[str, float] | None, twist: tuple[str, float] | None, bend: bool) -> JointModel:
    """A shaft-in-hole joint: radial forces rigid; the axial force and the twist each free (None), rigid
    (cap 0 with a rigid mode) or limited; bending limited by the shaft or rigid."""
    kinds, caps, modes = [_R, _R, _F, _R, _R, _F], [0.0] * 6, [""] * 6
    for at, spec in ((2, axial), (5, twist)):
        if spec is not None:
            mode, cap = spec
            kinds[at], caps[at], modes[at] = (LIMIT, cap, mode) if cap > 0 else (_R, 0.0, mode)
    if bend:
        for at in (3, 4):
            kinds[at], caps[at], modes[at] = BEND, SHAFT_BENDING_NLDU, "bent across its shaft"
    return JointModel(name, tuple(kinds), tuple(caps), tuple(modes))  # type: ignore[arg-type]


FRICTION_PIN = _model(
    "friction pin in hole", _AXIAL_FIT, ("twisted about its axis", FRICTION_PIN_TORQUE_NLDU), bend=True
)
SMOOTH_PIN = _model("pin in hole", _AXIAL_FIT, None, bend=True)
AXLE_IN_CROSS = _model("axle in cross hole", ("slid along its axis", FIT_N), ("", 0.0), bend=True)
AXLE_IN_ROUND = _model("axle in round hole", None, None, bend=True)
BAR_IN_CLIP = _model("bar in clip", ("slid along the bar", FIT_N), None, bend=False)
BAR_IN_HOLE = _model("bar in hole", ("slid along the bar", FIT_N), None, bend=False)
HINGE = JointModel("hinge", (_R, _R, _R, _R, _R, _F))
BALL = JointModel("ball joint", (_R, _R, _R, _F, _F, _F))
FIXED = JointModel("fixed snap", (_R,) * 6)  # type: ignore[arg-type]

AXLE_MODELS = {
    ("pin", "socket"): SMOOTH_PIN,
    ("axle", "cross"): AXLE_IN_CROSS,
    ("axle", "socket"): AXLE_IN_ROUND,
    ("bar", "clip"): BAR_IN_CLIP,
    ("bar", "cross"): BAR_IN_HOLE,
}
"""Axle-family joints by their (sorted) subtype pair."""

HOSTS = frozenset({"socket", "cross", "clip"})
"""Axle-family subtypes that hold the other (the hole side): its frame is the joint's frame."""


def axle_model(subtypes: tuple[str, str], friction_pin: bool) -> JointModel:
    """The model of an axle-family joint of these subtypes; ``friction_pin``: the pin has friction ridges."""
    key = tuple(sorted(subtypes))
    if key == ("pin", "socket") and friction_pin:
        return FRICTION_PIN
    return AXLE_MODELS.get(key, AXLE_IN_ROUND)  # type: ignore[arg-type]


def family_model(family: str) -> JointModel:
    """The model of a hinge, ball or fixed joint."""
    return {"hinge": HINGE, "ball": BALL, "fixed": FIXED}[family]
