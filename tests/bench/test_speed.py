"""`brick-gym speed --json` reports every figure the budgets name (values are measured, never asserted)."""

from __future__ import annotations

import json

from brick_gym.cli import main


def test_speed_quick_reports_every_figure(capsys) -> None:
    assert main(["speed", "--quick", "--json"]) == 0
    captured = capsys.readouterr()
    figures = json.loads(captured.out)
    stages = [line for line in captured.err.splitlines() if line.startswith("speed: ")]
    assert stages[0] == "speed: import and catalogue times (fresh processes)" and len(stages) >= 8
    assert any("FidelityCandidates-v0" in line for line in stages) and stages[-1].endswith("policy included")
    assert figures["machine"]["cpu"] and figures["machine"]["cores"] >= 1 and figures["machine"]["python"]
    assert set(figures["placement_us"]) == {"50", "400"}
    assert all(v > 0 for v in figures["placement_us"].values()) and figures["placement_mean_us"] > 0
    assert figures["full_check_s"]["400"] > 0 and figures["full_check_valid"]["400"] is True
    plate = figures["full_check_base_plate_s"]
    assert plate["pieces"] == 21 and plate["valid"] is True
    assert plate["imports"] > 0 and plate["first"] > 0 and plate["repeat"] > 0
    assert figures["brickagent_attach_us"] > 0 and figures["placement_vs_brickagent_ratio"] > 0
    low, high = figures["placement_vs_brickagent_ratio_range"]
    assert 0 < low <= figures["placement_vs_brickagent_ratio"] <= high
    assert figures["catalog_ready_s"] > 0 and figures["import_s"] >= 0
    assert figures["forces"]["cold_52_ms"][1] > 0 and figures["forces"]["large_pieces"] > 52
    assert figures["render_8x512_s"] > 0 and figures["render_backend"]
    assert set(figures["env_step_over_place"]) == {"50", "400"}
    assert figures["env_2_subprocess_steps_per_s"] > 0
    order = figures["fidelity_candidates_steps_per_s"]
    assert order["target_guided"] > 0 and order["connector_order"] > 0 and order["guided_over_connector"] > 0
    assert set(figures["non_box_placement_us"]) == {"50", "400"} and figures["non_box_placement_us"]["50"] > 0
    from brick_gym.envs.registry import ENV_IDS

    rows = figures["registered_envs"]
    assert set(rows) == {i.split("/")[-1] for i in ENV_IDS} | {"Set-v0 candidates"}
    assert all(r["reset_ms"] > 0 and r["reset_new_seed_ms"] > 0 for r in rows.values())
    assert all(r["attach_us"] > 0 and r["step_over_attach"] > 0 and r["reset_over_attach"] > 0 for r in rows.values())
    assert rows["Model-v0"]["steps_per_s_at_50"] > 0 and rows["FidelityCandidates-v0"]["steps_per_s_episodes"] > 0
    assert rows["Set-v0 candidates"]["steps_per_s_at_50"] > 0
    assert figures["altbuild_random_pieces"] > 0 and 0 <= figures["altbuild_random_refused_share"] <= 1
    lattice = figures["lattice_env"]
    assert set(lattice) == {"first_env_s", "1 envs", "16 envs", "64 envs"}
    assert all(
        lattice[k]["env_steps_per_s"] > 0 and lattice[k]["env_step_over_attach"] > 0 for k in lattice if "envs" in k
    )
    builds = figures["lattice_open_builds"]
    assert set(builds) == {"ModelLattice-v0", "SetLattice-v0"}  # a quick run leaves out AltBuildLattice-v0
    assert all(row[k]["env_steps_per_s"] > 0 for row in builds.values() for k in ("1 envs", "16 envs", "64 envs"))
    training = figures["lean_training"]
    assert training["env_steps_per_s"] > 0 and training["env_step_over_attach"] > 0 and training["head"] == "factored"


def test_the_yardstick_times_brickagent_a_course_at_a_time_on_a_wall_of_at_most_400_pieces() -> None:
    from brick_gym.bench.yardstick import BRICKS_PER_COURSE, COURSES_PER_WALL, yardstick

    stick = yardstick()
    assert stick is not None  # brickagent is a dev dependency
    bursts = [stick.burst() for _ in range(COURSES_PER_WALL + 1)]
    assert all(b > 0 for b in bursts)
    # A wall's first course is added, not attached; odd courses have a 2×2 brick at each end (one brick more). After
    # the tenth course the next burst starts a new wall: courses 1-9 of the first, then 1 and 2 of the second.
    per_course = [BRICKS_PER_COURSE + c % 2 for c in (*range(1, COURSES_PER_WALL), 1, 2)]
    assert len(stick.times_s) == sum(per_course)
    result, mean_us = stick.around(lambda: "figure")
    assert result == "figure" and mean_us > 0 and stick.median_us() > 0


def test_the_base_plate_model_stands_on_one_large_decomposed_part() -> None:
    """The large-part check figure times what it says: four 5-brick towers joined to a 32×32 base plate, one
    component, valid, the plate's collider a shipped decomposition."""
    from brick_gym.bench.speed import base_plate_model
    from brick_gym.core.colliders import stored_mass
    from brick_gym.core.validity import check

    model = base_plate_model()
    assert [p.part.stem for p in model].count("3811") == 1 and len(model) == 21
    assert model.component_count == 1 and check(model).valid
    assert stored_mass("3811") is not None


def test_force_figures_time_cold_and_after_one_more_piece() -> None:
    from brick_gym.bench.speed import force_figures

    figures = force_figures(quick=True)
    assert figures["large_pieces"] == 105
    for key in ("cold_52_ms", "cold_large_ms", "after_one_more_piece_ms"):
        wall, cpu = figures[key]
        assert wall > 0 and cpu > 0


def test_the_public_attach_figure_times_the_same_placements_both_ways() -> None:
    import numpy as np

    from brick_gym.bench.speed import public_attach_figures
    from brick_gym.core.assembly import Assembly
    from brick_gym.core.pieces import ConnectorRef, Placement

    figures = public_attach_figures(6)
    assert figures["public_us"] > 0 and figures["pre_resolved_us"] > 0 and figures["public_over_pre_resolved"] > 0
    public, resolved = Assembly(), Assembly()
    for asm in (public, resolved):
        asm.add("3811", "green")
    for i in range(0, 30, 5):
        assert public.attach("brick 1x1", "red", to=ConnectorRef(0, "stud", i), by=("hole", 0)).ok
        assert resolved.place(Placement("3005", 4, ConnectorRef(0, "stud", i), ("hole", 0))).ok
    assert [(p.part.stem, p.colour) for p in public.pieces.values()] == [
        (p.part.stem, p.colour) for p in resolved.pieces.values()
    ]
    assert all(np.array_equal(public.pieces[k].pose, resolved.pieces[k].pose) for k in public.pieces)


def test_force_figures_time_cold_and_warm_solves() -> None:
    from brick_gym.bench.speed import force_figures

    figures = force_figures(quick=True)
    assert figures["large_pieces"] > 52
    for key in ("cold_52_ms", "cold_large_ms", "after_one_more_piece_ms", "next_pieces_median_ms"):
        wall, cpu = figures[key]
        assert wall > 0 and cpu >= 0, key


def test_force_figures_stand_beside_their_targets_and_print_one_a_line() -> None:
    from brick_gym.bench.speed import FORCE_TARGETS_MS, force_figures, format_figures

    figures = force_figures(quick=True)
    targets = figures["targets"]
    assert sorted(t["target_ms"] for t in targets.values()) == sorted(FORCE_TARGETS_MS.values())
    for target in targets.values():
        assert target["met"] == (target["cpu_ms"] <= target["target_ms"])
    lines = format_figures({"forces": figures}).splitlines()
    assert lines[0] == "forces" and "  targets" in lines
    for name in targets:  # each target on its own line, under the figures' heading
        assert any(line.startswith(f"    {name}") and "met: " in line for line in lines)
