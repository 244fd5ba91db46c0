"""Judge backends: the scripted judge and the transformers loading path on the tiny random model.

The transformers tests load ``tests/fixtures/tiny_vlm`` (see ``conftest.py``) through exactly the code path used
for the paper's judge; no network, no downloaded weights. The OpenAI judge is tested over HTTP in
``test_server.py``.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from brick_gym.judges.backends import ScriptedJudge, TransformersJudge, yes_to_all
from brick_gym.judges.pairwise import parse_judge_reply
from brick_gym.judges.requests import JudgeBackend, JudgeRequest, vqa_request
from brick_gym.judges.vqa import QuestionGraph, parse_vqa_reply, score_vqa

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "tiny_vlm"

Views = Callable[..., tuple[np.ndarray, ...]]


def test_import_does_not_pull_heavy_dependencies() -> None:
    code = (
        "import sys, brick_gym.endpoints, brick_gym.judges.requests, brick_gym.judges.backends\n"
        "import brick_gym.judges.cache, brick_gym.judges.server\n"
        "bad = [m for m in ('torch', 'transformers', 'openai', 'PIL') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# ---------------------------------------------------------------------------------------------------------------
# Scripted
# ---------------------------------------------------------------------------------------------------------------


def test_scripted_yes_to_all_is_parsed_and_scores_full_marks(views: Views, questions: QuestionGraph) -> None:
    judge = ScriptedJudge(yes_to_all)
    assert isinstance(judge, JudgeBackend)
    reqs = [vqa_request(views(i, n=2), "A house", questions) for i in range(3)]
    replies = judge.judge(reqs)
    assert judge.calls == 1 and judge.requests == reqs
    for reply in replies:
        answers = parse_vqa_reply(reply.text, len(questions))
        assert answers == {1: True, 2: True, 3: True}
        assert score_vqa(questions, answers).gated == 1.0
    assert (replies[0].backend, replies[0].model, replies[0].revision) == ("scripted", "scripted", None)


def test_scripted_list_in_order_then_exhausted() -> None:
    judge = ScriptedJudge(["1", "2"])
    req = JudgeRequest((), "x")
    assert [parse_judge_reply(r.text) for r in judge.judge([req, req])] == [1, 2]
    with pytest.raises(IndexError):
        judge.judge([req])
    with pytest.raises(TypeError):
        ScriptedJudge("yes")


# ---------------------------------------------------------------------------------------------------------------
# Transformers loading path on the tiny random model
# ---------------------------------------------------------------------------------------------------------------


def test_transformers_loads_like_the_paper(tiny_judge: TransformersJudge, views: Views) -> None:
    import transformers

    expected = "AutoModelForMultimodalLM" if hasattr(transformers, "AutoModelForMultimodalLM") else None
    if expected:
        assert tiny_judge.model_class == expected
    assert tiny_judge.processor.tokenizer.padding_side == "left"
    assert isinstance(tiny_judge, JudgeBackend)
    prompt = tiny_judge.prompt(JudgeRequest(views(0, n=3), "TEXT"))
    assert prompt.index("<image>" * 3) < prompt.index("TEXT")  # images first, then the text
    assert "<think>" not in prompt  # enable_thinking=False reached the template
    assert tiny_judge.template_kwargs == {"enable_thinking": False}
    thinking = TransformersJudge(str(FIXTURE), None, chat_template_kwargs={"enable_thinking": True, "unused": 1})
    assert "<think>" in thinking.prompt(JudgeRequest((), "TEXT"))
    assert thinking.template_kwargs == {"enable_thinking": True}  # a keyword the template never reads is dropped


def test_transformers_generates_deterministically(
    tiny_judge: TransformersJudge, tiny_requests: list[JudgeRequest], views: Views
) -> None:
    replies = tiny_judge.judge(tiny_requests)
    assert len(replies) == 2
    for reply in replies:
        assert isinstance(reply.text, str) and reply.text
        assert (reply.backend, reply.model, reply.revision) == ("transformers", str(FIXTURE), None)
    again = tiny_judge.judge(tiny_requests)
    assert [r.text for r in again] == [r.text for r in replies]
    one_by_one = [tiny_judge.judge([r])[0].text for r in tiny_requests]
    assert one_by_one == [r.text for r in replies]
    other_images = tiny_judge.judge([JudgeRequest(views(99), tiny_requests[0].text, max_new_tokens=8)])[0]
    assert other_images.text != replies[0].text  # the images reach the model


def test_fixture_script_is_deterministic(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    spec = importlib.util.spec_from_file_location("make_tiny_vlm", ROOT / "scripts" / "make_tiny_vlm.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(tmp_path / "tiny")
    fresh = tmp_path / "tiny"
    assert sorted(p.name for p in fresh.iterdir()) == sorted(p.name for p in FIXTURE.iterdir())
    for path in sorted(FIXTURE.iterdir()):
        assert_same_content(path, fresh / path.name)
    assert sum(p.stat().st_size for p in FIXTURE.iterdir()) < 2_000_000


#: Keys that record which library wrote a file, not what the model is: they change with every transformers release.
WRITER_STAMPS = frozenset({"transformers_version"})


def _without_writer_stamps(value: object) -> object:
    """``value`` (parsed JSON) with every :data:`WRITER_STAMPS` key removed, at any depth."""
    if isinstance(value, dict):
        return {k: _without_writer_stamps(v) for k, v in value.items() if k not in WRITER_STAMPS}
    if isinstance(value, list):
        return [_without_writer_stamps(v) for v in value]
    return value


def assert_same_content(expected: Path, actual: Path) -> None:
    """The two files describe the same model: equal JSON less the writer's version stamp, equal tensors (names,
    dtypes, shapes, values), equal text. Byte layout and the library version that wrote them do not matter."""
    import json

    if expected.suffix == ".safetensors":
        from safetensors.numpy import load_file

        want, got = load_file(expected), load_file(actual)
        assert sorted(want) == sorted(got), expected.name
        for name, tensor in want.items():
            assert got[name].dtype == tensor.dtype and got[name].shape == tensor.shape, (expected.name, name)
            assert np.array_equal(got[name], tensor), (expected.name, name)
    elif expected.suffix == ".json":
        want_json = _without_writer_stamps(json.loads(expected.read_text(encoding="utf-8")))
        got_json = _without_writer_stamps(json.loads(actual.read_text(encoding="utf-8")))
        assert got_json == want_json, expected.name
    else:
        assert actual.read_text(encoding="utf-8") == expected.read_text(encoding="utf-8"), expected.name


def test_fixture_comparison_ignores_the_writer_stamp_but_not_the_model(tmp_path: Path) -> None:
    """A different ``transformers_version`` is the same model; a changed dimension or weight is not."""
    import json

    config = json.loads((FIXTURE / "config.json").read_text(encoding="utf-8"))
    restamped = tmp_path / "config.json"
    restamped.write_text(json.dumps({**config, "transformers_version": "99.0.0"}), encoding="utf-8")
    assert_same_content(FIXTURE / "config.json", restamped)
    resized = tmp_path / "resized.json"
    text_config = {**config["text_config"], "hidden_size": config["text_config"]["hidden_size"] * 2}
    resized.write_text(json.dumps({**config, "text_config": text_config}), encoding="utf-8")
    with pytest.raises(AssertionError):
        assert_same_content(FIXTURE / "config.json", resized)
    pytest.importorskip("safetensors")
    from safetensors.numpy import load_file, save_file

    weights = load_file(FIXTURE / "model.safetensors")
    name = sorted(weights)[0]
    weights[name] = weights[name] + 1
    save_file(weights, tmp_path / "model.safetensors")
    with pytest.raises(AssertionError):
        assert_same_content(FIXTURE / "model.safetensors", tmp_path / "model.safetensors")
