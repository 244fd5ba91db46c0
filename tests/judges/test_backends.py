"""Judge backends: requests and keys, scripted and cached judges, the HTTP path, the transformers loading path.

The transformers tests load ``tests/fixtures/tiny_vlm`` (a random LLaVA built by ``scripts/make_tiny_vlm.py``)
through exactly the code path used for the paper's judge; no network, no downloaded weights.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"  # before anything imports huggingface_hub
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np
import pytest

from brick_gym.judges.backends import (
    CachedJudge,
    JudgeBackend,
    JudgeRequest,
    OpenAIChatJudge,
    ScriptedJudge,
    TransformersJudge,
    decode_data_url,
    image_digest,
    judge_request,
    png_data_url,
    request_from_chat,
    request_key,
    serve_openai_compatible,
    vqa_request,
    yes_to_all,
)
from brick_gym.judges.pairwise import DESIGN, build_judge_prompt, parse_judge_reply
from brick_gym.judges.vqa import QuestionGraph, build_vqa_prompt, parse_vqa_reply, score_vqa

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "tiny_vlm"

QUESTIONS = QuestionGraph(
    [
        {"key": "house", "question": "Is there a house?", "kind": "entity", "subtype": "whole"},
        {
            "key": "house.roof",
            "question": "Is the roof blue?",
            "kind": "attribute",
            "subtype": "color",
            "dependencies": ["house"],
        },
        {"key": "tree", "question": "Is there a tree?", "kind": "entity", "subtype": "whole"},
    ]
)


def views(seed: int, n: int = 8, size: int = 32) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(rng.integers(0, 256, (size, size, 3), dtype=np.uint8) for _ in range(n))


def sha(img: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(img).tobytes()).hexdigest() + str(img.shape)


def echo(request: JudgeRequest) -> str:
    """A reply that depends on everything in the request (text, budget, every pixel)."""
    return f"{len(request.images)} {request.max_new_tokens} {request.digest[:16]}"


# ---------------------------------------------------------------------------------------------------------------
# Requests and keys
# ---------------------------------------------------------------------------------------------------------------


def test_import_does_not_pull_heavy_dependencies() -> None:
    code = (
        "import sys, brick_gym.judges.backends\n"
        "bad = [m for m in ('torch', 'transformers', 'openai', 'PIL') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_request_validates_images() -> None:
    img = np.zeros((4, 4, 3), np.uint8)
    assert JudgeRequest([img, img], "x").images[1] is img  # list → tuple, no copy
    with pytest.raises(ValueError, match="dtype"):
        JudgeRequest((img.astype(np.float32),), "x")
    with pytest.raises(ValueError, match="shape"):
        JudgeRequest((np.zeros((4, 4, 4), np.uint8),), "x")
    with pytest.raises(TypeError):
        JudgeRequest(img, "x")  # a bare image, not a sequence of images
    with pytest.raises(ValueError):
        JudgeRequest((img,), "x", max_new_tokens=0)


def test_keys_follow_content_and_backend() -> None:
    a = views(0, n=2)
    base = JudgeRequest(a, "question")
    same = JudgeRequest(tuple(v.copy() for v in a), "question")
    assert request_key(base, "b", "m", None) == request_key(same, "b", "m", None)
    changed = [v.copy() for v in a]
    changed[1][5, 7, 2] ^= 1  # one pixel, one bit
    variants = [
        JudgeRequest(tuple(changed), "question"),
        JudgeRequest(a, "question "),
        JudgeRequest(a, "question", max_new_tokens=16),
        JudgeRequest(a[::-1], "question"),
        JudgeRequest(a[:1], "question"),
    ]
    keys = {request_key(r, "b", "m", None) for r in [base, *variants]}
    assert len(keys) == 1 + len(variants)
    assert request_key(base, "b", "m", "rev") != request_key(base, "b", "m", None)
    assert request_key(base, "b", "m2", None) != request_key(base, "b", "m", None)
    assert request_key(base, "b2", "m", None) != request_key(base, "b", "m", None)
    flat = np.arange(36, dtype=np.uint8)
    assert image_digest(flat.reshape(2, 6, 3)) != image_digest(flat.reshape(6, 2, 3))  # same bytes, other shape


def test_request_builders_use_the_prompt_builders() -> None:
    v = views(1)
    req = vqa_request(v, "A house", QUESTIONS, max_new_tokens=64)
    assert req.text == build_vqa_prompt("A house", QUESTIONS) and len(req.images) == 8 and req.max_new_tokens == 64
    pair = judge_request(v, views(2), "design", size=16)
    assert pair.text == build_judge_prompt(DESIGN)
    assert [img.shape for img in pair.images] == [(16, 64, 3), (16, 64, 3)]
    tiled = np.zeros((10, 40, 3), np.uint8)
    assert judge_request(tiled, tiled, "align", "A house").images[0] is tiled


# ---------------------------------------------------------------------------------------------------------------
# Scripted
# ---------------------------------------------------------------------------------------------------------------


def test_scripted_yes_to_all_is_parsed_and_scores_full_marks() -> None:
    judge = ScriptedJudge(yes_to_all)
    assert isinstance(judge, JudgeBackend)
    reqs = [vqa_request(views(i, n=2), "A house", QUESTIONS) for i in range(3)]
    replies = judge.judge(reqs)
    assert judge.calls == 1 and judge.requests == reqs
    for reply in replies:
        answers = parse_vqa_reply(reply.text, len(QUESTIONS))
        assert answers == {1: True, 2: True, 3: True}
        assert score_vqa(QUESTIONS, answers).gated == 1.0
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
# Cache
# ---------------------------------------------------------------------------------------------------------------


def test_cache_hits_do_not_call_inner(tmp_path: Path) -> None:
    inner = ScriptedJudge(echo)
    cache = CachedJudge(inner, tmp_path / "cache.jsonl")
    reqs = [JudgeRequest(views(i, n=2), f"q{i}") for i in range(3)]
    first = cache.judge(reqs)
    assert len(inner.requests) == 3 and not any(r.cached for r in first)
    second = cache.judge(reqs)
    assert len(inner.requests) == 3 and inner.calls == 1
    assert [r.text for r in second] == [r.text for r in first] and all(r.cached for r in second)
    assert (cache.hits, cache.misses) == (3, 3)
    # mixed: a new request between cached ones keeps its place, and only it is asked
    new = JudgeRequest(views(9, n=2), "q9")
    mixed = cache.judge([reqs[0], new, reqs[2]])
    assert inner.requests[-1] is new and len(inner.requests) == 4
    assert [r.text for r in mixed] == [first[0].text, echo(new), first[2].text]
    assert [r.cached for r in mixed] == [True, False, True]


def test_cache_one_pixel_change_is_a_miss(tmp_path: Path) -> None:
    inner = ScriptedJudge(echo)
    cache = CachedJudge(inner, tmp_path / "cache.jsonl")
    a = views(3, n=2)
    cache.judge([JudgeRequest(a, "q")])
    b = [v.copy() for v in a]
    b[0][0, 0, 0] ^= 1
    reply = cache.judge([JudgeRequest(tuple(b), "q")])[0]
    assert len(inner.requests) == 2 and not reply.cached


def test_cache_resume_after_crash_and_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    reqs = [JudgeRequest(views(i, n=1), f"q{i}") for i in range(4)]
    first = CachedJudge(ScriptedJudge(echo), path)
    first.judge(reqs[:3])
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"key": "deadbeef", "text": "half a rec')  # the write a crash interrupted
    inner = ScriptedJudge(echo)
    with pytest.warns(RuntimeWarning, match="torn last line"):
        resumed = CachedJudge(inner, path)
    assert len(resumed) == 3
    replies = resumed.judge(reqs)
    assert inner.requests == [reqs[3]]  # only the request that never got an answer
    assert [r.text for r in replies] == [echo(r) for r in reqs]
    # the append after the torn line started on a fresh line: a third run reads everything back
    inner3 = ScriptedJudge(echo)
    with pytest.warns(RuntimeWarning):
        third = CachedJudge(inner3, path)
    assert third.judge(reqs) and inner3.requests == [] and len(third) == 4
    for line in path.read_text(encoding="utf-8").splitlines():
        if "half a rec" not in line:
            assert json.loads(line)["model"] == "scripted"


def test_cache_key_includes_backend_identity(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    req = JudgeRequest(views(4, n=1), "q")
    CachedJudge(ScriptedJudge(echo, model="a"), path).judge([req])
    other = ScriptedJudge(echo, model="b")
    CachedJudge(other, path).judge([req])
    assert len(other.requests) == 1


def test_cache_refresh_and_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    req = vqa_request(views(5, n=1), "A house", QUESTIONS)
    inner = ScriptedJudge(["I can't tell", "1: yes\n2: no\n3: yes"])
    cache = CachedJudge(inner, path)
    assert cache.judge([req, req])[0].text == "I can't tell"  # identical requests: asked once
    assert len(inner.requests) == 1
    unparsed = lambda r, rep: parse_vqa_reply(rep.text, len(QUESTIONS)) is None  # noqa: E731
    assert parse_vqa_reply(cache.judge([req], refresh=unparsed)[0].text, 3) == {1: True, 2: False, 3: True}
    assert len(inner.requests) == 2
    assert cache.judge([req], refresh=unparsed)[0].cached  # parsed now: no more asking
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reloaded = CachedJudge(ScriptedJudge([]), path)  # the later line wins
    assert reloaded.get(req).text.startswith("1: yes")


# ---------------------------------------------------------------------------------------------------------------
# HTTP (OpenAI-compatible) path
# ---------------------------------------------------------------------------------------------------------------


def test_data_url_round_trip_is_lossless() -> None:
    img = views(6, n=1, size=17)[0]
    url = png_data_url(img)
    assert url.startswith("data:image/png;base64,")
    assert np.array_equal(decode_data_url(url), img)
    with pytest.raises(ValueError):
        decode_data_url("https://example.com/a.png")


def test_request_from_chat_rejects_what_it_cannot_answer() -> None:
    ok = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
    assert request_from_chat(ok).max_new_tokens == 5
    for bad in (
        {**ok, "stream": True},
        {**ok, "n": 2},
        {**ok, "messages": []},
        {**ok, "messages": [{"role": "user", "content": [{"type": "input_audio"}]}]},
    ):
        with pytest.raises(ValueError):
            request_from_chat(bad)


def test_http_round_trip_with_openai_sdk() -> None:
    pytest.importorskip("openai")
    import openai

    backend = ScriptedJudge(echo, model="judge-x")
    server, thread, base_url = serve_openai_compatible(backend)
    try:
        assert thread.is_alive() and base_url.startswith("http://127.0.0.1:")
        client = OpenAIChatJudge(base_url, model="judge-x", max_retries=0, timeout=30, concurrency=3)
        reqs = [
            JudgeRequest(views(10 + i, n=3, size=24), f"question {i}\nline two", max_new_tokens=7 + i) for i in range(4)
        ]
        replies = client.judge(reqs)
        assert [r.text for r in replies] == [echo(r) for r in reqs]
        assert all((r.backend, r.model) == ("openai", "judge-x") for r in replies)
        received = sorted(backend.requests, key=lambda r: r.text)
        assert len(received) == 4
        for sent, got in zip(reqs, received, strict=True):
            assert got.text == sent.text and got.max_new_tokens == sent.max_new_tokens
            assert [sha(i) for i in got.images] == [sha(i) for i in sent.images]
        sdk = openai.OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)
        assert [m.id for m in sdk.models.list()] == ["judge-x"]
        with pytest.raises(openai.NotFoundError):
            OpenAIChatJudge(base_url, model="other", max_retries=0).judge([reqs[0]])
        with pytest.raises(openai.BadRequestError):
            sdk.chat.completions.create(model="judge-x", messages=[], max_tokens=3)
    finally:
        server.stop()
    assert not thread.is_alive()


def test_http_backend_failure_is_a_server_error() -> None:
    openai = pytest.importorskip("openai")
    server, _, base_url = serve_openai_compatible(ScriptedJudge([]))  # raises IndexError on the first request
    try:
        with pytest.raises(openai.InternalServerError, match="IndexError"):
            OpenAIChatJudge(base_url, model="scripted", max_retries=0).judge([JudgeRequest((), "x")])
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------------------------------
# Transformers loading path on the tiny random model
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_judge() -> TransformersJudge:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("PIL")
    assert (FIXTURE / "model.safetensors").exists(), "run scripts/make_tiny_vlm.py to build the fixture"
    return TransformersJudge(str(FIXTURE), revision=None, batch_size=2).load()


@pytest.fixture(scope="module")
def tiny_requests() -> list[JudgeRequest]:
    # different text lengths, so the batch really is left-padded
    return [
        JudgeRequest(views(20), "Is the roof blue? Answer yes or no.", max_new_tokens=8),
        JudgeRequest(views(21), build_vqa_prompt("A house", QUESTIONS), max_new_tokens=8),
    ]


def test_transformers_loads_like_the_paper(tiny_judge: TransformersJudge) -> None:
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
    tiny_judge: TransformersJudge, tiny_requests: list[JudgeRequest]
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


def test_transformers_over_http_matches_direct(
    tiny_judge: TransformersJudge, tiny_requests: list[JudgeRequest], tmp_path: Path
) -> None:
    pytest.importorskip("openai")
    direct = [r.text for r in tiny_judge.judge(tiny_requests)]
    server, _, base_url = serve_openai_compatible(tiny_judge)
    try:
        client = OpenAIChatJudge(base_url, model=tiny_judge.model, max_retries=0, timeout=60)
        cache = CachedJudge(client, tmp_path / "http.jsonl")
        assert [r.text for r in cache.judge(tiny_requests)] == direct
        assert [r.text for r in cache.judge(tiny_requests)] == direct and cache.misses == 2
    finally:
        server.stop()


def test_fixture_script_is_deterministic(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    spec = importlib.util.spec_from_file_location("make_tiny_vlm", ROOT / "scripts" / "make_tiny_vlm.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(tmp_path / "tiny")
    for path in sorted(FIXTURE.iterdir()):
        assert (tmp_path / "tiny" / path.name).read_bytes() == path.read_bytes(), path.name
    assert sum(p.stat().st_size for p in FIXTURE.iterdir()) < 2_000_000
