"""ELO at its edges: a core spread of 0 (combined ELO is the plain mean, in ``bench elo`` as in the leaderboard,
intervals included), a two-system core (no interval bound lost), replies that never parse (said so, not "needs two
systems"), and scripted judges that disagree (ELO smoke tests see the order flip)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest

from brick_gym.bench.cli import main as bench_main
from brick_gym.bench.elo import leaderboard
from brick_gym.bench.scoring import score
from brick_gym.core.builder import Builder
from brick_gym.judges.backends import ScriptedJudge, judge_from_spec, yes_to_all


def _games(winners: list[tuple[str, str]], systems: tuple[str, str] = ("A", "B")) -> list[dict[str, str]]:
    """Per task, both presentation orders; ``winners[t]`` = (winner when A is shown first, when B is)."""
    a, b = systems
    out = []
    for t, (w_first, w_second) in enumerate(winners):
        out.append({"task": f"t{t}", "first": a, "second": b, "winner": w_first})
        out.append({"task": f"t{t}", "first": b, "second": a, "winner": w_second})
    return out


def _finite_row(row: dict[str, float]) -> bool:
    return all(math.isfinite(v) for v in row.values())


def test_zero_core_spread_gives_the_plain_mean_with_its_interval(tmp_path: Path, capsys) -> None:
    align = _games([("A", "A"), ("A", "B"), ("B", "A")])
    design = _games([("A", "B")] * 3)  # position bias only: every pair ties, design has no spread
    board = leaderboard(align, design, boot=200)
    for row in board.values():
        assert _finite_row(row), row
        assert row["elo"] == pytest.approx(0.5 * (row["align_elo"] + row["design_elo"]))
        assert row["elo_lo"] <= row["elo"] <= row["elo_hi"]
    for name, records in (("align.jsonl", align), ("design.jsonl", design)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    assert bench_main(["elo", str(tmp_path), "--boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out and f"{board['A']['elo']:.0f} [" in out


def test_a_two_system_core_keeps_both_bounds_of_every_interval() -> None:
    systems = ("A", "B", "C")
    records = {"align": [], "design": []}
    for t in range(6):
        for x, y in itertools.combinations(systems, 2):
            for first, second in ((x, y), (y, x)):
                winner = x if (t + ord(x)) % 3 else y
                records["align"].append({"task": f"t{t}", "first": first, "second": second, "winner": winner})
                records["design"].append({"task": f"t{t}", "first": first, "second": second, "winner": min(x, y)})
    board = leaderboard(records["align"], records["design"], core=["A", "B"], boot=300)
    for row in board.values():
        assert _finite_row(row), row
        assert row["elo_lo"] <= row["elo_hi"]


def _system(folder: Path, bricks: int, colour: str) -> Path:
    for task in ("model-001", "model-002"):
        m = Builder()
        m.add("3958", colour, (0, 0, 0))
        for k in range(bricks):
            assert m.add("3001", colour, (0, -24 - 24 * k, 0)).ok
        (folder / task).mkdir(parents=True)
        (folder / task / "model.mpd").write_text(m.to_ldraw())
    return folder


@pytest.fixture
def two_systems(tmp_path: Path) -> tuple[list[Path], Path]:
    tasks = tmp_path / "tasks.json"
    q = [{"key": "a", "question": "Is there a tower?", "kind": "entity", "subtype": "whole", "dependencies": []}]
    tasks.write_text(json.dumps([{"id": t, "prompt": "a tower", "questions": q} for t in ("model-001", "model-002")]))
    runs = [_system(tmp_path / "tall", 5, "blue"), _system(tmp_path / "red", 1, "red")]
    return runs, tasks


def test_replies_that_never_parse_are_named_as_the_reason(tmp_path: Path, two_systems, capsys) -> None:
    runs, tasks = two_systems
    garbled = ScriptedJudge(lambda r: "the left one, probably" if len(r.images) == 2 else yes_to_all(r))
    board = score(runs, tasks, garbled, tmp_path / "s", setting="model", boot=0, image_size=64)
    assert board.elo is None
    assert any("none of the judge's 8 pairwise replies could be parsed" in n for n in board.notes), board.notes
    assert bench_main(["elo", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "none of the judge's 8 pairwise replies could be parsed" in err and "two systems" not in err


def test_scripted_judges_that_disagree_flip_the_order(tmp_path: Path, two_systems) -> None:
    runs, tasks = two_systems
    firsts = {}
    for spec in ("scripted-more-parts", "scripted-colour:red"):
        board = score(runs, tasks, judge_from_spec(spec), tmp_path / spec, setting="model", boot=0, image_size=64)
        assert all(s.valid == 2 for s in board.systems.values())
        firsts[spec] = board.ranked()[0].name
        assert board.elo is not None and len({round(r["elo"]) for r in board.elo.values()}) == 2
    assert firsts == {"scripted-more-parts": "tall", "scripted-colour:red": "red"}
