"""The OpenAI-compatible judge server, end to end with the OpenAI SDK and :class:`OpenAIChatJudge` on loopback."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from brick_gym.endpoints import EndpointError, image_data_url
from brick_gym.judges.backends import OpenAIChatJudge, ScriptedJudge, TransformersJudge
from brick_gym.judges.cache import CachedJudge
from brick_gym.judges.requests import JudgeRequest
from brick_gym.judges.server import decode_data_url, request_from_chat, serve_openai_compatible

Views = Callable[..., tuple[np.ndarray, ...]]


def sha(img: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(img).tobytes()).hexdigest() + str(img.shape)


def test_data_url_round_trip_is_lossless(views: Views) -> None:
    img = views(6, n=1, size=17)[0]
    url = image_data_url(img)
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


def test_http_round_trip_with_openai_sdk(views: Views, echo: Callable[[JudgeRequest], str]) -> None:
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
        with pytest.raises(EndpointError, match=r"failed after 1 attempt\(s\): HTTP 404"):  # names the URL too
            OpenAIChatJudge(base_url, model="other", max_retries=0).judge([reqs[0]])
        with pytest.raises(openai.BadRequestError):
            sdk.chat.completions.create(model="judge-x", messages=[], max_tokens=3)
    finally:
        server.stop()
    assert not thread.is_alive()


def test_http_backend_failure_is_a_server_error() -> None:
    pytest.importorskip("openai")
    server, _, base_url = serve_openai_compatible(ScriptedJudge([]))  # raises IndexError on the first request
    try:
        with pytest.raises(EndpointError, match=r"HTTP 500.*IndexError"):
            OpenAIChatJudge(base_url, model="scripted", max_retries=0).judge([JudgeRequest((), "x")])
    finally:
        server.stop()


def test_openai_judge_retries_server_errors_not_client_errors(echo: Callable[[JudgeRequest], str]) -> None:
    """The judge retries as the chat client does (:mod:`brick_gym.endpoints`): a 5xx is asked again, a 404 is not."""
    pytest.importorskip("openai")
    failures = [RuntimeError("busy")]

    def flaky(request: JudgeRequest) -> str:
        if failures:
            raise failures.pop()
        return echo(request)

    backend = ScriptedJudge(flaky)
    server, _, base_url = serve_openai_compatible(backend)
    try:
        request = JudgeRequest((), "x")
        reply = OpenAIChatJudge(base_url, model="scripted", max_retries=2, retry_base_delay=0.01).judge([request])[0]
        assert reply.text == echo(request) and backend.calls == 2
        start = time.monotonic()
        with pytest.raises(EndpointError, match=r"failed after 1 attempt\(s\): HTTP 404"):  # not asked again
            OpenAIChatJudge(base_url, model="other", max_retries=2, retry_base_delay=30).judge([request])
        assert time.monotonic() - start < 10  # raised at once, not after a 30 s backoff
    finally:
        server.stop()


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
