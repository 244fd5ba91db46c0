"""The force analysis in the check and in words: JSON shape beside the verdict, summary lines and advice."""

from __future__ import annotations

import json

from brick_gym.cli import main
from brick_gym.core.assembly import Assembly
from brick_gym.core.force_text import forces_json, forces_summary, relief_advice
from brick_gym.core.modelfile import save
from brick_gym.core.poses import translation
from brick_gym.core.validity import check


def overhang(length_stem: str = "4477", stack: int = 6) -> Assembly:
    """A 2×8 plate carrying, past each end, ``stack`` 1×10 plates by one stud (balanced, so that it does not tip):
    with six the end studs give."""
    a = Assembly()
    a.add("3034", "red")
    for side in (1.0, -1.0):
        for i in range(stack):
            assert a.add(length_stem, "blue", translation(side * 160.0, -8.0 * (i + 1), 10.0)).ok
    return a


def test_check_carries_forces_beside_an_unchanged_verdict() -> None:
    a = overhang()
    plain, with_forces = check(a, stability=False), check(a, stability=False, forces=True)
    assert plain.valid == with_forces.valid and plain.issues == with_forces.issues
    assert plain.forces is None and "forces" not in plain.to_json()
    forces = with_forces.to_json()["forces"]
    assert forces["max_utilisation"] > 1 and not forces["holds"]
    assert forces["weakest"][0]["pieces"] in ([0, 1], [0, 7]) and forces["weakest"][0]["connectors"]
    assert "forces: max utilisation" in with_forces.summary()


def test_cli_check_forces_json_numbers_pieces_in_file_order(tmp_path, capsys) -> None:
    path = save(overhang(stack=2), tmp_path / "overhang.ldr")
    assert main(["check", str(path), "--json", "--forces", "--no-stability"]) == 0
    data = json.loads(capsys.readouterr().out)
    forces = data["forces"]
    assert data["valid"] is True and 0 < forces["max_utilisation"] < 1
    weakest = forces["weakest"]
    assert weakest[0]["pieces"] in ([0, 1], [0, 3]) and weakest[0]["mode"] == "pulled off its stud"
    values = [j["utilisation"] for j in weakest]
    assert values == sorted(values, reverse=True)


def test_advice_names_the_weakest_joint_and_a_relief() -> None:
    forces = forces_json(overhang())
    text = relief_advice(forces)
    assert "#0 3034" in text and "4477" in text and "overloaded" in text and "support" in text
    assert forces_summary(forces)[0].startswith("forces: max utilisation")


def test_advice_for_a_tipping_model_and_for_pure_compression() -> None:
    a = Assembly()
    a.add("3005", "red")
    a.add("3008", "red", translation(70.0, -24.0, 0.0))
    assert "tips over" in relief_advice(forces_json(a))
    tower = Assembly()
    tower.add("3001", "red")
    tower.add("3001", "red", translation(0.0, -24.0, 0.0))
    assert "compression" in relief_advice(forces_json(tower))
