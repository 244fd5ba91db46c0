"""Scores of a delivered model that both faces report: validity by the check ``brick-gym check`` runs on the
delivered file, and the dependency-gated VQA score of :class:`~brick_gym.rewards.judge_terms.VQATerm` when a judge
is given (an invalid model scores 0 and the judge is not asked, as in BrickBench).
"""

from __future__ import annotations

from typing import Any

from brick_gym.bench.submission import check_model_text
from brick_gym.core.assembly import Assembly
from brick_gym.core.rules import Rules
from brick_gym.faces.episodes import FaceSample, episode_config
from brick_gym.judges.requests import JUDGE_IMAGE_SIZE, JudgeBackend
from brick_gym.llm.adapter import EpisodeConfig

__all__ = ["delivered_assembly", "sample_rules", "validity_report", "vqa_score"]


def sample_rules(sample: FaceSample) -> Rules:
    """The rules a sample's model is checked under (its setting and inventory)."""
    config = episode_config(sample, EpisodeConfig())
    return Rules.for_setting(config.setting, config.inventory)


def validity_report(model_mpd: str, sample: FaceSample, *, forces: bool = False) -> dict[str, Any]:
    """The full BrickBench check of the delivered ``model.mpd`` text: the report ``brick-gym check --json`` prints
    for that file (load problems in front as issues; ``valid`` false when anything could not be loaded); with
    ``forces``, as ``check --forces --json`` prints it (the force analysis beside the verdict)."""
    return check_model_text(model_mpd, f"{sample.task.id}/model.mpd", sample_rules(sample), forces=forces)


def delivered_assembly(model_mpd: str, sample: FaceSample) -> Assembly:
    """The delivered model's pieces, loaded from its ``model.mpd`` text (what the judge's renders show)."""
    from brick_gym.core.ldraw import read_ldraw
    from brick_gym.core.modelfile import from_model

    return from_model(read_ldraw(model_mpd, "model.mpd"), sample_rules(sample)).assembly


def vqa_score(
    model_mpd: str,
    sample: FaceSample,
    judge: JudgeBackend,
    *,
    valid: bool,
    views: int = 8,
    size: int = JUDGE_IMAGE_SIZE,
) -> tuple[float, dict[str, Any]]:
    """(gated VQA score, the term's record: replies, answers, attempts) of the delivered model against the sample's
    questions; 0.0 without asking when the model is invalid or the sample has no questions."""
    from brick_gym.judges.vqa import QuestionGraph
    from brick_gym.rewards.judge_terms import VQATerm
    from brick_gym.rewards.terms import RewardContext

    if not valid or not sample.task.questions:
        return 0.0, {"skipped": "invalid" if not valid else "no_questions", "value": 0.0}
    graph = QuestionGraph(sample.task.questions, strict=False)  # BrickBench: a bad dependency fails only its questions
    term = VQATerm(judge, graph, sample.task.prompt, views, size, gate_on_validity=False)
    ctx = RewardContext(delivered_assembly(model_mpd, sample), None, None, True)
    value = term(ctx)
    return float(value), dict(ctx.cache[term.name])
