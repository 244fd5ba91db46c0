"""The force analysis in words: the JSON the check carries, its summary lines, and advice for builders and LLM
agents naming the weakest joint and what would relieve it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from brick_gym.core.assembly import Assembly

if TYPE_CHECKING:
    from brick_gym.core.forces import ForceReport

WEAKEST_SHOWN = 5
"""Joints the check's ``forces`` section lists, worst first."""

_RELIEF = {
    "pulled off its stud": (
        "it hangs from a single stud: overlap more studs at that joint, put a support under the far end of what it "
        "carries, or shorten and lighten what hangs from it"
    ),
    "pulled off its studs": (
        "its studs are pulled out by the weight it carries: overlap more studs, or more of them farther from the "
        "edge it pivots on, bridge the joint with a plate above it, or support what hangs from it from below"
    ),
    "pulled out along its axis": "hold the pin from both sides or add a second pin beside it",
    "twisted about its axis": "add a second pin or use an axle through cross holes, which cannot turn",
    "slid along its axis": "add a stop (a bush) on the axle or a second joint that does not slide the same way",
    "slid along the bar": "support the part along the bar or add a second clip",
    "bent across its shaft": "shorten the lever on the shaft or support it nearer the load",
}
_MECHANISM = (
    "that joint turns or slides freely and nothing else holds it: add a second connection across it so it cannot "
    "move, or support the moving part from below"
)
_TIPS = "the model tips over as a whole: its centre of mass is outside what it stands on; widen or weight the base"


def forces_json(assembly: Assembly) -> dict:
    """The check's ``forces`` section: :meth:`forces.ForceReport.to_json` of ``assembly`` (its weakest
    :data:`WEAKEST_SHOWN` joints with parts and connectors), or ``{"error": ...}`` when a part cannot be weighed."""
    return force_analysis(assembly)[1]


def force_analysis(assembly: Assembly) -> tuple[ForceReport | None, dict]:
    """The analysis of ``assembly`` (None when a part cannot be weighed) and its :func:`forces_json` section."""
    from brick_gym.core.forces import analyse
    from brick_gym.core.meshes import MeshUnavailable

    try:
        report = analyse(assembly)
    except MeshUnavailable as exc:
        return None, {"error": f"the force analysis needs every part's mesh: {exc}"}
    return report, report.to_json(assembly, WEAKEST_SHOWN)


def _u(value: float | None) -> str:
    return "∞" if value is None else f"{value:.3g}"


def forces_summary(forces: dict) -> list[str]:
    """Human lines for a ``forces`` section: the largest utilisation and margin, then each weakest joint."""
    if "error" in forces:
        return [f"forces: not analysed ({forces['error']})"]
    verdict = "holds" if forces["holds"] else "a joint gives"
    lines = [
        f"forces: max utilisation {_u(forces['max_utilisation'])} (margin {_u(forces['margin'])}): {verdict} "
        "(beside the verdict, not part of it)"
    ]
    if forces["tips"]:
        lines.append(f"  tips over: pieces {', '.join(f'#{p}' for p in forces['tips'][:8])}")
    for joint in forces["weakest"]:
        a, b = joint["pieces"]
        what = " and ".join(joint.get("parts", [f"#{a}", f"#{b}"]))
        lines.append(f"  {_u(joint['utilisation'])} {joint['kind']} {what}: {joint['mode'] or 'carries no pull'}")
    if forces["unsupported"]:
        lines.append(f"  not analysed (joined to nothing on the ground): {len(forces['unsupported'])} piece(s)")
    return lines


def relief_advice(forces: dict) -> str:
    """One paragraph for an agent: the weakest joint, by how much it holds or fails, and what would relieve it."""
    if "error" in forces:
        return f"Force analysis: not available ({forces['error']})."
    if forces["tips"]:
        return f"Force analysis: {_TIPS}."
    weakest = [j for j in forces["weakest"] if j["mode"]]
    if not weakest:
        return "Force analysis: no joint carries any pull; every joint is in compression."
    joint = weakest[0]
    a, b = joint["pieces"]
    names = joint.get("parts", [f"#{a}", f"#{b}"])
    where = f"the {joint['kind']} between {names[0]} and {names[1]}"
    if joint.get("connectors"):
        where += " (" + ", ".join(f"{x}–{y}" for x, y in joint["connectors"][:4]) + ")"
    if joint["utilisation"] is None:
        return f"Force analysis: the weakest joint is {where}: {_MECHANISM}."
    u = joint["utilisation"]
    state = f"at {u:.0%} of its capacity" if u <= 1 else f"overloaded {u:.2g}× (it would give)"
    relief = _RELIEF.get(joint["mode"], "support it or add connections")
    return f"Force analysis: the weakest joint is {where}, {joint['mode']}, {state}. To relieve it: {relief}."


def force_advice(assembly: Assembly) -> str:
    """:func:`relief_advice` of ``assembly``'s force analysis (what the agents' check tool appends)."""
    return relief_advice(forces_json(assembly))
