"""``bench report``: the static site of a scored run (leaderboard, task pages, 3D view, VQA gating, pairwise tiles
and votes, transcript), what it refuses to read from an untrusted run, and the page in a real headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from brick_gym.bench.report import ReportInputError, write_report
from brick_gym.bench.scoring import score
from brick_gym.cli import main
from brick_gym.judges.backends import ScriptedJudge

MODEL = """0 a tower
1 4 0 0 0 1 0 0 0 1 0 0 0 1 3958.dat
1 15 0 -24 0 1 0 0 0 1 0 0 0 1 3001.dat
1 14 0 -48 0 1 0 0 0 1 0 0 0 1 3001.dat
"""
TASKS = [
    {
        "id": "tower-1",
        "prompt": "A white and yellow tower on a red base.",
        "questions": [
            {"key": "q1", "question": "Is there a tower?", "kind": "entity", "subtype": "whole", "dependencies": []},
            {"key": "q2", "question": "Is there a base?", "kind": "entity", "subtype": "part", "dependencies": []},
            {
                "key": "q3",
                "question": "Is the base red?",
                "kind": "attribute",
                "subtype": "color",
                "dependencies": ["q2"],
            },
        ],
    }
]
HOSTILE = "<script>alert('pwned')</script>"
HOSTILE_NAME = "<b onmouseover=alert(1)>x"
"""A system (folder) name with markup in it: folder names cannot hold '/'."""


def _judge(request) -> str:
    """VQA: yes, no, yes (so q3 is gated by q2); pairwise: the brighter image (a rendered build beats black views)."""
    if len(request.images) == 2:
        return "1" if request.images[0].mean() >= request.images[1].mean() else "2"
    return "1: yes\n2: no\n3: yes"


def _transcript(extra_text: str = "") -> str:
    records = [
        {"seq": 0, "type": "episode", "task_id": "tower-1", "setting": "model", "protocol": "checked",
         "tools": ["add_part", "finish"], "client": {"model": "m"}, "config": {"max_turns": 300}},
        {"seq": 1, "type": "message", "role": "system", "text": "You are a LEGO designer."},
        {"seq": 2, "type": "message", "role": "user", "text": "Design brief: a tower" + extra_text},
        {"seq": 3, "type": "message", "role": "assistant", "turn": 1, "text": "Placing.",
         "tool_calls": [{"id": "c1", "name": "add_part", "arguments": json.dumps({"part": HOSTILE})}],
         "usage": {"prompt_tokens": 100, "completion_tokens": 20}},
        {"seq": 4, "type": "tool_result", "turn": 1, "tool_call_id": "c1", "name": "add_part", "ok": False,
         "error_kind": "collision", "text": "refused: " + HOSTILE,
         "images": ["images/shot.png", "../../../secret.png"]},
        {"seq": 5, "type": "event", "event": "end", "stop_reason": "finish", "turns": 1, "tool_calls": 1},
    ]  # fmt: skip
    return "".join(json.dumps(r) + "\n" for r in records)


def _system(root: Path, name: str, outside: Path, hostile: bool) -> Path:
    folder = root / name / "tower-1"
    (folder / "images").mkdir(parents=True)
    (folder / "model.mpd").write_text(MODEL)
    (folder / "transcript.jsonl").write_text(_transcript("x" * 30_000 if hostile else ""))
    marker = {"task_id": "tower-1", "files": {}, "valid": True, "stop_reason": "finish", "turns": 1,
              "tokens": {"prompt_tokens": 100, "completion_tokens": 20}}  # fmt: skip
    (folder / "done.json").write_text(json.dumps(marker))  # a complete marker, as `bench run` writes it
    from PIL import Image

    Image.fromarray(np.full((8, 8, 3), 200, np.uint8)).save(folder / "images" / "shot.png")
    if hostile:  # views that lead out of the run, and a secret picture beside the runs
        (folder / "views").symlink_to(outside, target_is_directory=True)
    return root / name


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("report")
    outside = base / "outside"
    outside.mkdir()
    from PIL import Image

    for i, name in enumerate(
        ("front_right", "back_right", "back_left", "front_left", "front", "right", "back", "left")
    ):
        Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(outside / f"view_{i}_{name}.png")
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(base / "secret.png")
    tasks = base / "tasks.json"
    tasks.write_text(json.dumps(TASKS))
    runs = [_system(base / "runs", "alpha", outside, False), _system(base / "runs", HOSTILE_NAME, outside, True)]
    score(runs, tasks, ScriptedJudge(_judge), base / "scores", setting="model", image_size=32, boot=5)
    write_report(base / "scores", base / "site", tasks=tasks)
    return base


def _page(base: Path, system: str) -> str:
    from brick_gym.bench.scoring import system_folder

    return (base / "site" / "tasks" / "tower-1" / system_folder(system) / "index.html").read_text()


def test_scoring_keeps_the_tile_the_pairwise_judge_saw(scored: Path) -> None:
    from PIL import Image

    tile = scored / "scores" / "tiles" / "alpha" / "tower-1.png"
    with Image.open(tile) as img:
        assert img.size == (4 * 32, 32)  # the first four views in a row, at the judge's image size


def test_index_lists_every_system_with_elo_interval_and_links(scored: Path) -> None:
    index = (scored / "site" / "index.html").read_text()
    assert index.count('href="tasks/tower-1/') == 2
    assert re.search(r"\d+ \[\d+, \d+\]", index)  # ELO with its interval
    assert "alpha" in index and "&lt;b onmouseover=alert(1)&gt;x" in index and "<b " not in index
    assert "<td>120</td>" in index  # tokens of each system's one task, as its done.json recorded them
    for name in ("style.css", "viewer.js", "three-modules.js", "vendor/three/LICENSE"):
        assert (scored / "site" / "assets" / name).is_file()


def test_task_page_shows_views_3d_verdict_vqa_gating_votes_and_transcript(scored: Path) -> None:
    page = _page(scored, "alpha")
    folder = scored / "site" / "tasks" / "tower-1" / "alpha"
    assert all((folder / f"view_{i}.png").is_file() for i in range(8))
    assert 'data-model="model"' in page and (folder / "model.glb").is_file() and (folder / "model.js").is_file()
    assert "re-checked" in page and "VALID" not in page.split("Verdict")[0]
    rows = re.findall(r"<tr><td>(q\d)</td>.*?</tr>", page)
    assert rows == ["q1", "q2", "q3"]
    q3 = re.search(r"<tr><td>q3</td>.*?</tr>", page).group(0)
    assert ">yes<" in q3 and "gated" in q3  # answered yes, failed through its dependency q2
    assert "Gated 0.333" in page
    assert "tile_alpha.png" in page and (folder / "tile_alpha.png").is_file()
    assert page.count("what the judge saw of") == 2
    assert "shown first" in page and "Placing." in page and "add_part" in page and "collision" in page


def test_untrusted_run_text_is_escaped_cut_and_files_outside_it_are_not_read(scored: Path) -> None:
    from brick_gym.bench.scoring import system_folder

    page = _page(scored, HOSTILE_NAME)
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#x27;pwned&#x27;)" in page and "<b " not in page
    folder = scored / "site" / "tasks" / "tower-1" / system_folder(HOSTILE_NAME)
    shots = sorted(p.name for p in folder.glob("shot_*"))
    assert shots == ["shot_images_shot.png"]  # the '../../../secret.png' image is not copied
    from PIL import Image

    shown = sorted(folder.glob("view_*.png"))  # the scorer's renders of the model, not views/ (a link out of the run)
    assert len(shown) == 8
    for path in shown:
        with Image.open(path) as img:
            assert np.asarray(img.convert("RGB")).max() > 0  # not the all-black pictures outside the run
    assert "[../../../secret.png: not shown]" in page


def test_long_texts_are_cut_with_a_note(scored: Path) -> None:
    from brick_gym.bench.report import html

    assert "10,000 more characters not shown" in html.text("x" * 30_000)
    page = _page(scored, HOSTILE_NAME)
    assert "more characters not shown" in page and "x" * 20_001 not in page


def test_report_refuses_what_it_cannot_read_and_never_writes_into_a_run(scored: Path, tmp_path: Path) -> None:
    with pytest.raises(ReportInputError, match="neither a score folder"):
        write_report(tmp_path, tmp_path / "site")
    with pytest.raises(ReportInputError, match="never writes into what it reads"):
        write_report(scored / "runs" / "alpha", scored / "runs" / "alpha" / "site")
    assert main(["bench", "report", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2


def test_report_of_run_folders_without_scores(scored: Path, tmp_path: Path, capsys) -> None:
    tasks = scored / "tasks.json"
    assert main(["bench", "report", str(scored / "runs"), "--out", str(tmp_path / "site"), "--tasks", str(tasks),
                 "--setting", "model", "--no-3d"]) == 0  # fmt: skip
    index = (tmp_path / "site" / "index.html").read_text()
    assert "alpha" in index and "valid" in index
    assert not (tmp_path / "site" / "tasks" / "tower-1" / "alpha" / "model.glb").exists()  # --no-3d


# ---------------------------------------------------------------------------------------------------------------
# In a real browser
# ---------------------------------------------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (scripts/install-system-deps.sh)")
BENIGN = re.compile(r"GL Driver Message|GPU stall due to ReadPixels")
"""Console lines from SwiftShader itself (performance notes on reading pixels back), not from the page."""


def chromium(url: str, tmp: Path, *flags: str) -> tuple[str, list[str]]:
    """Run headless Chromium (software WebGL, no network features) on ``url``: (stdout, the page's console lines)."""
    profile = tmp / f"profile-{len(list(tmp.iterdir()))}"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader",
           "--enable-unsafe-swiftshader", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=15000", *flags, url]  # fmt: skip
    env = {**os.environ, "HOME": str(tmp)}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=False)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


@needs_chromium
def test_pages_load_without_console_errors_and_the_3d_canvas_draws_the_model(scored: Path, tmp_path: Path) -> None:
    from PIL import Image

    page = scored / "site" / "tasks" / "tower-1" / "alpha" / "index.html"
    dom, console = chromium(page.as_uri(), tmp_path, "--dump-dom")
    assert [c for c in console if not BENIGN.search(c)] == []
    assert 'data-state="ready"' in dom, dom[:2000]
    shot = tmp_path / "page.png"
    _, console = chromium(page.as_uri(), tmp_path, f"--screenshot={shot}", "--window-size=1000,3200")
    assert [c for c in console if not BENIGN.search(c)] == []
    canvas = viewer_box(np.asarray(Image.open(shot).convert("RGB")))
    assert canvas.shape[0] > 400 and canvas.shape[1] > 800
    drawn = (np.abs(canvas.astype(int) - 255).sum(axis=2) > 30).mean()
    assert drawn > 0.05, drawn  # the model fills part of the box: not a blank canvas, nor a line of error text
    assert len({tuple(c) for c in canvas.reshape(-1, 3)[::7]}) > 50  # shaded faces, edges: many colours


def viewer_box(image: np.ndarray) -> np.ndarray:
    """The inside of the 3D view's box in a screenshot: the rows and columns of its 1-pixel #ccc border."""
    border = (image == 204).all(axis=2)
    rows = np.flatnonzero(border.sum(axis=1) > 0.8 * image.shape[1])
    assert len(rows) >= 2, "no 3D view box in the screenshot"
    top, bottom = rows[0], rows[-1]
    cols = np.flatnonzero(border[top + 1 : bottom].sum(axis=0) > 0.9 * (bottom - top - 1))
    return image[top + 1 : bottom, cols[0] + 1 : cols[-1]]


@needs_chromium
def test_index_page_in_the_browser_lists_the_systems(scored: Path, tmp_path: Path) -> None:
    dom, console = chromium((scored / "site" / "index.html").as_uri(), tmp_path, "--dump-dom")
    assert [c for c in console if not BENIGN.search(c)] == []
    board = dom.split('class="leaderboard"')[1].split("</table>")[0]
    assert "<td>alpha</td>" in board and "&lt;b onmouseover=alert(1)&gt;x" in board


@needs_chromium
def test_a_page_error_would_be_seen(tmp_path: Path) -> None:
    """The console check can fail: a page with an error in it is reported."""
    bad = tmp_path / "bad.html"
    bad.write_text("<script>undefinedFunction()</script>")
    _, console = chromium(bad.as_uri(), tmp_path, "--dump-dom")
    assert any("undefinedFunction" in c for c in console)
