"""``brick-gym render``, ``elo`` and ``vqa-score`` end to end: output shapes, decisions, clear errors (exit 2)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from brick_gym.cli import main

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "brickbench"
SAMPLE_TASKS = DATA / "sample-model-tasks.json"
ELO_KEYS = {
    "align_elo",
    "align_elo_lo",
    "align_elo_hi",
    "design_elo",
    "design_elo_lo",
    "design_elo_hi",
    "elo",
    "elo_lo",
    "elo_hi",
}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------------------
# elo
# ---------------------------------------------------------------------------------------------------------------


def judgments(strength: dict[str, float], n_tasks: int, seed: int) -> list[dict[str, str]]:
    """Both presentation orders of every pair on every task, outcomes drawn from Bradley–Terry strengths."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n_tasks):
        for a, b in itertools.permutations(strength, 2):
            p_a = 1.0 / (1.0 + 10.0 ** ((strength[b] - strength[a]) / 400.0))
            out.append({"task": f"t{t}", "first": a, "second": b, "winner": a if rng.random() < p_a else b})
    return out


@pytest.fixture()
def elo_files(tmp_path: Path) -> tuple[Path, Path]:
    strength = {"strong": 1300.0, "mid": 1000.0, "weak": 800.0, "other": 950.0}
    return (
        write_jsonl(tmp_path / "align.jsonl", judgments(strength, 12, 0)),
        write_jsonl(tmp_path / "design.jsonl", judgments(strength, 12, 1)),
    )


def test_elo_json_has_exact_keys_and_core_mean_1000(elo_files, capsys) -> None:
    align, design = elo_files
    code, out, _ = run(capsys, "elo", str(align), str(design), "--core", "strong,mid,weak", "--boot", "50", "--json")
    assert code == 0
    board = json.loads(out)
    assert set(board) == {"strong", "mid", "weak", "other"}
    for row in board.values():
        assert set(row) == ELO_KEYS
        assert all(isinstance(v, float) for v in row.values())
        for prefix in ("align_", "design_", ""):
            assert row[f"{prefix}elo_lo"] < row[f"{prefix}elo_hi"]
    for prefix in ("align_", "design_", ""):
        assert np.mean([board[s][f"{prefix}elo"] for s in ("strong", "mid", "weak")]) == pytest.approx(1000.0)
    assert board["strong"]["elo"] > board["mid"]["elo"] > board["weak"]["elo"]
    again = run(capsys, "elo", str(align), str(design), "--core", "strong,mid,weak", "--boot", "50", "--json")[1]
    assert json.loads(again) == board  # seeded bootstrap


def test_elo_table_and_plot(elo_files, tmp_path, capsys) -> None:
    align, design = elo_files
    plot = tmp_path / "board.png"
    code, out, _ = run(capsys, "elo", str(align), str(design), "--boot", "20", "--plot", str(plot))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["#", "system", "ELO"]
    assert lines[2].split()[1] == "strong"  # best first
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_elo_malformed_line_exits_2_naming_the_line(elo_files, tmp_path, capsys) -> None:
    align, design = elo_files
    bad = tmp_path / "bad.jsonl"
    bad.write_text(align.read_text().splitlines()[0] + "\n\n{not json\n", encoding="utf-8")
    code, out, err = run(capsys, "elo", str(bad), str(design), "--json")
    assert code == 2 and out == ""
    assert f"{bad}:3" in err and "not valid JSON" in err
    wrong = write_jsonl(tmp_path / "wrong.jsonl", [{"task": "t", "first": "a", "second": "b", "winner": "c"}])
    code, _, err = run(capsys, "elo", str(wrong), str(design))
    assert code == 2 and f"{wrong}:1" in err and "winner 'c'" in err
    code, _, err = run(capsys, "elo", str(align), str(design), "--core", "nobody,strong")
    assert code == 2 and "nobody" in err
    code, _, err = run(capsys, "elo", str(tmp_path / "absent.jsonl"), str(design))
    assert code == 2 and "absent.jsonl" in err


# ---------------------------------------------------------------------------------------------------------------
# vqa-score
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture()
def sample_tasks() -> list:
    if not SAMPLE_TASKS.is_file():
        pytest.skip(f"shared BrickBench sample tasks not found at {SAMPLE_TASKS}")
    return json.loads(SAMPLE_TASKS.read_text(encoding="utf-8"))


def hand_reply(n: int, no: set[int]) -> str:
    lines = "\n".join(f"{i}: {'no' if i in no else 'yes'}" for i in range(1, n + 1))
    return f"Looking at the views, here are my answers.\n{lines}"


def hand_gated(task: dict, no: set[int]) -> float:
    """Gated score computed here by hand: a question passes if it and everything it depends on got yes."""
    keys = [q["key"] for q in task["questions"]]
    deps = {q["key"]: q["dependencies"] for q in task["questions"]}
    yes = {k: (i + 1) not in no for i, k in enumerate(keys)}

    def passes(key: str, seen: frozenset = frozenset()) -> bool:
        if key not in yes or key in seen:
            return False
        return yes[key] and all(passes(d, seen | {key}) for d in deps[key])

    return sum(passes(k) for k in keys) / len(keys)


def test_vqa_score_reports_unparsed_and_missing(sample_tasks, tmp_path, capsys) -> None:
    first, second = sample_tasks[0], sample_tasks[1]
    n1 = len(first["questions"])
    no = {1, 3}  # question 1 is a root of the sample's graph: every question depending on it fails too
    replies = write_jsonl(
        tmp_path / "replies.jsonl",
        [
            {"task": first["id"], "reply": "I cannot tell."},  # unparsed attempt, then a retry that parses
            {"task": first["id"], "reply": hand_reply(n1, no)},
            {"task": second["id"], "reply": hand_reply(len(second["questions"]) - 1, set())},  # one answer short
        ],
    )
    code, out, _ = run(capsys, "vqa-score", str(SAMPLE_TASKS), str(replies), "--json")
    assert code == 0
    result = json.loads(out)
    assert set(result) >= {"tasks", "mean", "unparsed", "missing"}
    expected = hand_gated(first, no)
    assert expected < 1 - len(no) / n1  # gating bites: more fail than the two "no" answers
    assert result["tasks"][first["id"]] == {"gated": pytest.approx(expected), "flat": (n1 - 2) / n1, "parsed": True}
    assert result["tasks"][second["id"]] == {"gated": None, "flat": None, "parsed": False}
    assert result["unparsed"] == [second["id"]]
    assert result["missing"] == []
    assert result["mean"]["gated"] == pytest.approx(expected)  # the unparsed task is left out, not scored "no"
    assert "missing" in result["note"] and "0" in result["note"]


def test_vqa_score_missing_task_counts_zero(sample_tasks, tmp_path, capsys) -> None:
    first, second = sample_tasks[0], sample_tasks[1]
    replies = write_jsonl(
        tmp_path / "r.jsonl", [{"task": first["id"], "reply": hand_reply(len(first["questions"]), set())}]
    )
    code, out, _ = run(capsys, "vqa-score", str(SAMPLE_TASKS), str(replies), "--json")
    result = json.loads(out)
    assert code == 0
    assert result["missing"] == [second["id"]] and second["id"] not in result["tasks"]
    assert result["mean"] == {"gated": 0.5, "flat": 0.5}  # 1.0 for the answered task, 0 for the missing one
    code, out, _ = run(capsys, "vqa-score", str(SAMPLE_TASKS), str(replies))
    assert code == 0
    assert "missing (scored 0)" in out and "mean" in out and "0.500" in out


def test_vqa_score_bad_input_exits_2(sample_tasks, tmp_path, capsys) -> None:
    bad = tmp_path / "bad.jsonl"
    first = json.dumps({"task": sample_tasks[0]["id"], "reply": "1: yes"})
    bad.write_text(first + "\n[1, 2]\n", encoding="utf-8")
    code, out, err = run(capsys, "vqa-score", str(SAMPLE_TASKS), str(bad), "--json")
    assert code == 2 and out == "" and f"{bad}:2" in err
    unknown = write_jsonl(tmp_path / "unknown.jsonl", [{"task": "model-999", "reply": "1: yes"}])
    code, _, err = run(capsys, "vqa-score", str(SAMPLE_TASKS), str(unknown))
    assert code == 2 and "model-999" in err and ":1" in err
    tasks = tmp_path / "tasks.json"
    tasks.write_text('[{"id": "x", "prompt": "p"}]', encoding="utf-8")
    code, _, err = run(capsys, "vqa-score", str(tasks), str(unknown))
    assert code == 2 and "'x'" in err and "questions" in err


# ---------------------------------------------------------------------------------------------------------------
# render
# ---------------------------------------------------------------------------------------------------------------


def test_render_writes_views_sheet_and_thumbnail(tmp_path, capsys) -> None:
    from PIL import Image

    from brick_gym.core.examples import readme_wall
    from brick_gym.core.modelfile import save
    from brick_gym.render import VIEW_NAMES

    path = save(readme_wall(), tmp_path / "wall.mpd")
    code, out, err = run(capsys, "render", str(path), "--out", str(tmp_path / "views"), "--size", "128", "--views", "8")
    assert code == 0, err
    lines = out.splitlines()
    written = [Path(line) for line in lines[:-1]]
    names = [f"view_{i}_{name}.png" for i, name in enumerate(VIEW_NAMES)] + ["contact_sheet.png", "thumbnail.png"]
    assert [p.name for p in written] == names
    assert all(p.is_file() and p.parent == tmp_path / "views" for p in written)
    with Image.open(written[0]) as img:
        assert img.size == (128, 128)
        assert len(np.unique(np.asarray(img.convert("RGB")).reshape(-1, 3), axis=0)) > 8  # the wall, not blank
    assert lines[-1] in ("backend: moderngl", "backend: software")


def test_render_unusable_input_exits_2(tmp_path, capsys) -> None:
    garbage = tmp_path / "garbage.ldr"
    garbage.write_text("1 4 0 0 0 1 0 0 0 1 0 0 0 1\n", encoding="utf-8")
    code, out, err = run(capsys, "render", str(garbage), "--out", str(tmp_path / "o"))
    assert code == 2 and out == "" and "garbage.ldr" in err
    code, _, err = run(capsys, "render", str(tmp_path / "none.mpd"), "--out", str(tmp_path / "o"))
    assert code == 2 and "none.mpd" in err
    code, _, err = run(capsys, "render", str(garbage), "--out", str(tmp_path / "o"), "--size", "4")
    assert code == 2 and "size" in err


def test_a_truncated_view_png_is_named_not_fatal(tmp_path) -> None:
    from PIL import Image

    from brick_gym.bench.scoring import ViewFileError, load_views
    from brick_gym.render import VIEW_NAMES

    noise = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    for i, name in enumerate(VIEW_NAMES[:8]):
        Image.fromarray(noise).save(tmp_path / f"view_{i}_{name}.png")
    assert len(load_views(tmp_path)) == 8
    broken = tmp_path / f"view_3_{VIEW_NAMES[3]}.png"
    broken.write_bytes(broken.read_bytes()[:4000])  # truncated mid-image
    with pytest.raises(ViewFileError, match=broken.name):
        load_views(tmp_path)
