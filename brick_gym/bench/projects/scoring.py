"""``brick-gym projects score``: a model scored against its project, as bricky scores its projects.

* **Fidelity** (projects with a reference): shape and colour IoU of the model's cells against the reference's
  (:func:`~brick_gym.core.voxels.fidelity`: the best of the four quarter turns about the vertical axis and every
  shift), with the turn and shift that align them.
* **Validity**: the full BrickBench check under the project's setting.
* **Facts**: element count, errors (the check's issues), warnings (file lines that could not become pieces, parts
  without a mesh that fidelity could not count).
* **Effort** (when the episode's ``transcript.jsonl`` is given): turns, tool calls, tool errors, builds run
  (``run_python`` and ``write_build`` calls), minutes, tokens and cost.
* **VQA** (judged projects, when a judge is given): BrickBench's gated score of the project's questions on the
  model's 8 views.

A model is a ``.mpd``/``.ldr`` file, a ``build.py`` (rebuilt in the sandbox, never run here), or an episode folder
(its ``build.py`` when there is one, else its ``model.mpd``; its transcript gives the effort).
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from brick_gym.bench.projects.suite import Project
from brick_gym.core.assembly import Assembly
from brick_gym.io.files import finite_json
from brick_gym.judges.requests import JUDGE_IMAGE_SIZE

__all__ = [
    "ModelUnusable",
    "ProjectScore",
    "effort_of",
    "load_candidate",
    "score_assembly",
    "score_episode",
    "score_path",
]


class ModelUnusable(ValueError):
    """The model to score cannot be read (missing, not LDraw, a build.py that does not build)."""


@dataclass
class ProjectScore:
    """Everything :mod:`brick_gym.bench.projects.scoring` measures for one model of one project."""

    project: str
    model: str
    shape: float | None
    colour: float | None
    colour_max: float | None
    rotation: int | None
    shift: list[int] | None
    valid: bool
    elements: int
    errors: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    effort: dict[str, Any] | None = None
    vqa: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (what ``projects score --json`` prints): strict JSON, a number that is not finite (from
        a transcript's ``1e400``, say) is null."""
        return finite_json(asdict(self))

    def summary(self) -> str:
        """A few lines for people."""
        lines = [f"{self.project}: {self.model}"]
        if self.shape is not None:
            lines.append(
                f"  fidelity: shape {self.shape:.3f}, colour {self.colour:.3f} (best colour {self.colour_max:.3f}) "
                f"after turning {self.rotation} deg and shifting {tuple(self.shift or ())}"
            )
        lines.append(
            f"  {'VALID' if self.valid else 'INVALID'}: {self.elements} elements, {len(self.errors)} error(s), "
            f"{len(self.warnings)} warning(s)"
        )
        lines += [f"    [{e['kind']}] {e['message']}" for e in self.errors[:10]]
        lines += [f"    warning: {w}" for w in self.warnings[:10]]
        if self.effort:
            e = self.effort
            cost = e["cost_usd"] if e["cost_usd"] is not None else "-"
            lines.append(
                f"  effort: {e['turns']} turns, {e['tool_calls']} tool calls ({e['tool_errors']} errors), "
                f"{e['builds']} builds, {e['minutes']:.1f} min, cost {cost}"
            )
        if self.vqa:
            lines.append(f"  VQA: gated {self.vqa['gated']:.3f}, flat {self.vqa['flat']:.3f}")
        return "\n".join(lines)


def effort_of(transcript: str | os.PathLike[str]) -> dict[str, Any]:
    """Turns, tool calls and errors, builds run, minutes, tokens, cost and stop reason of an episode transcript."""
    from brick_gym.llm.adapter import read_transcript, summarise_transcript

    records = read_transcript(transcript)
    summary = summarise_transcript(records)
    builds = sum(1 for r in records if r["type"] == "tool_result" and r.get("name") in ("run_python", "write_build"))
    times = (float(r["t"]) for r in records if isinstance(r.get("t"), int | float) and not isinstance(r["t"], bool))
    seconds = max((t for t in times if math.isfinite(t)), default=0.0)
    return {**summary, "builds": builds, "minutes": round(seconds / 60.0, 3)}


def load_candidate(path: str | os.PathLike[str], rules: Any) -> tuple[Assembly, list[str], str]:
    """(assembly, warnings, what was read) of a model file, a ``build.py`` (rebuilt in the sandbox) or an episode
    folder; :class:`ModelUnusable` says why one cannot be read."""
    from brick_gym.core.ldraw import LDrawError
    from brick_gym.core.modelfile import load

    p = Path(path)
    if p.is_dir():
        for name in ("build.py", "model.mpd", "model.ldr"):
            if (p / name).is_file():
                return load_candidate(p / name, rules)
        raise ModelUnusable(f"{p}: no build.py, model.mpd or model.ldr in the folder")
    if not p.is_file():
        raise ModelUnusable(f"{p}: no such file")
    if p.suffix == ".py":
        from brick_gym.llm.program import build_model

        try:
            code = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelUnusable(f"{p}: unreadable: {exc}") from None
        model, built, problems = build_model(code, rules)
        if model is None:
            raise ModelUnusable(f"{p}: {built.message}")
        return model.assembly, list(problems), str(p)
    try:
        loaded = load(p, rules)
    except LDrawError as exc:
        raise ModelUnusable(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelUnusable(f"{p}: unreadable: {exc}") from None
    return loaded.assembly, [problem.message for problem in loaded.problems], str(p)


def _countable(assembly: Assembly) -> tuple[list[tuple[str, int, Any]], list[str]]:
    """The pieces fidelity can count (those with a mesh) and a warning for each part type it cannot."""
    from brick_gym.core.meshes import MeshUnavailable, part_mesh

    keep, missing = [], set()
    for piece in sorted(assembly, key=lambda p: p.id):
        try:
            part_mesh(piece.part.stem)
        except MeshUnavailable:
            missing.add(piece.part.stem)
            continue
        keep.append((piece.part.stem, int(piece.colour), piece.pose))
    return keep, [f"part {stem} has no mesh: its pieces are not counted in fidelity" for stem in sorted(missing)]


def score_assembly(
    project: Project,
    assembly: Assembly,
    *,
    name: str = "<model>",
    problems: list[str] | None = None,
    transcript: str | os.PathLike[str] | None = None,
    judge: Any = None,
    stability: bool = True,
    image_size: int = JUDGE_IMAGE_SIZE,
) -> ProjectScore:
    """Score an assembly against ``project`` (see the module docstring), checked under its own rules (load it under
    the project's setting); ``problems`` are lines of its file that could not become pieces (they make it invalid,
    as ``brick-gym check`` does). The verdict is always computed here, never taken from a file."""
    from brick_gym.core.references import reference_voxels
    from brick_gym.core.validity import check
    from brick_gym.core.voxels import fidelity, voxelize

    notes = list(problems or [])
    asm = assembly
    report = check(asm, stability=stability)
    shape = colour = colour_max = None
    rotation: int | None = None
    shift: list[int] | None = None
    if project.has_reference:
        pieces, missing = _countable(asm)
        notes += missing
        result = fidelity(voxelize(pieces), reference_voxels(project.id))
        shape, colour, colour_max = result.shape_iou, result.colour_iou, result.colour_iou_max
        rotation, shift = result.rotation, list(result.shift)
    valid, errors = bool(report.valid), [i.to_json() for i in report.issues]
    score = ProjectScore(
        project=project.id,
        model=name,
        shape=shape,
        colour=colour,
        colour_max=colour_max,
        rotation=rotation,
        shift=shift,
        valid=bool(valid) and not problems,
        elements=len(asm),
        errors=list(errors),
        warnings=notes,
    )
    if transcript is not None and Path(transcript).is_file():
        score.effort = effort_of(transcript)
    if judge is not None and project.judged:
        score.vqa = _vqa(project, asm, judge, image_size)
    return score


def _vqa(project: Project, assembly: Assembly, judge: Any, image_size: int) -> dict[str, Any]:
    """BrickBench's VQA of the project's questions on the model's 8 views (gated and flat, the answers)."""
    from brick_gym.bench.scoring import ask_judge
    from brick_gym.judges.requests import vqa_request
    from brick_gym.judges.vqa import QuestionGraph, parse_vqa_reply, score_vqa
    from brick_gym.render import RenderSettings, render_views

    graph = QuestionGraph(project.questions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # parts without a mesh are not drawn
        views = render_views(assembly, RenderSettings(size=image_size, views=8))
    n = len(graph.questions)
    request = vqa_request(views, project.prompt, graph)
    ((text, answers, attempts),) = ask_judge(judge, [request], lambda t: parse_vqa_reply(t, n))
    if answers is None:
        return {"gated": 0.0, "flat": 0.0, "answers": None, "unparsed": True, "attempts": attempts, "reply": text}
    result = score_vqa(graph, answers)
    return {
        "gated": result.gated,
        "flat": result.flat,
        "answers": {q.key: bool(answers[i + 1]) for i, q in enumerate(graph.questions)},
        "passed": dict(result.passed),
        "unparsed": False,
        "attempts": attempts,
    }


def score_path(
    project: Project,
    path: str | os.PathLike[str],
    *,
    judge: Any = None,
    stability: bool = True,
    image_size: int = JUDGE_IMAGE_SIZE,
) -> ProjectScore:
    """Score a model file, a ``build.py`` or an episode folder (:func:`score_episode`)."""
    from brick_gym.core.rules import Rules

    if Path(path).is_dir() and (Path(path) / "model.mpd").is_file():
        return score_episode(project, path, judge=judge, stability=stability, image_size=image_size)
    assembly, notes, name = load_candidate(path, Rules.for_setting(project.setting))
    return score_assembly(
        project, assembly, name=name, problems=notes, judge=judge, stability=stability, image_size=image_size
    )


def score_episode(
    project: Project,
    folder: str | os.PathLike[str],
    *,
    judge: Any = None,
    stability: bool = True,
    image_size: int = JUDGE_IMAGE_SIZE,
) -> ProjectScore:
    """Score an episode folder: its delivered ``model.mpd`` (the rebuilt ``build.py`` when one was delivered),
    checked here (a folder's ``verification.json`` is never believed: a forged one cannot raise a score), and the
    effort of its ``transcript.jsonl``."""

    from brick_gym.core.rules import Rules

    folder = Path(folder)
    assembly, notes, name = load_candidate(folder / "model.mpd", Rules.for_setting(project.setting))
    return score_assembly(
        project,
        assembly,
        name=name,
        problems=notes,
        transcript=folder / "transcript.jsonl",
        judge=judge,
        stability=stability,
        image_size=image_size,
    )
