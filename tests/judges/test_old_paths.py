"""The 0.1 path ``brick_gym.rewards.vlm`` still gives every name it had, with a DeprecationWarning, now from the
judge modules that hold them (``png_data_url`` under its new name, :func:`brick_gym.endpoints.image_data_url`)."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

import pytest

from brick_gym import endpoints
from brick_gym.judges import backends, cache, requests, server

OLD_VLM: dict[str, tuple[ModuleType, str]] = {
    "DEFAULT_MAX_NEW_TOKENS": (requests, "DEFAULT_MAX_NEW_TOKENS"),
    "PAPER_JUDGE_MODEL": (backends, "PAPER_JUDGE_MODEL"),
    "PAPER_JUDGE_REVISION": (backends, "PAPER_JUDGE_REVISION"),
    "CachedJudge": (cache, "CachedJudge"),
    "JudgeBackend": (requests, "JudgeBackend"),
    "JudgeHTTPServer": (server, "JudgeHTTPServer"),
    "JudgeReply": (requests, "JudgeReply"),
    "JudgeRequest": (requests, "JudgeRequest"),
    "OpenAIChatJudge": (backends, "OpenAIChatJudge"),
    "ScriptedJudge": (backends, "ScriptedJudge"),
    "TransformersJudge": (backends, "TransformersJudge"),
    "decode_data_url": (server, "decode_data_url"),
    "image_digest": (requests, "image_digest"),
    "judge_from_spec": (backends, "judge_from_spec"),
    "judge_request": (requests, "judge_request"),
    "png_data_url": (endpoints, "image_data_url"),
    "request_from_chat": (server, "request_from_chat"),
    "request_key": (requests, "request_key"),
    "serve_openai_compatible": (server, "serve_openai_compatible"),
    "vqa_request": (requests, "vqa_request"),
    "yes_to_all": (backends, "yes_to_all"),
    "yes_or_first": (backends, "yes_or_first"),
    "JUDGE_SPECS": (backends, "JUDGE_SPECS"),
}
"""The public names of 0.1's ``brick_gym.rewards.vlm`` and where each is now."""


def test_old_path_gives_the_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "brick_gym.rewards.vlm", raising=False)
    with pytest.warns(DeprecationWarning, match="brick_gym.rewards.vlm"):
        vlm = importlib.import_module("brick_gym.rewards.vlm")
    for old, (home, name) in OLD_VLM.items():
        assert getattr(vlm, old) is getattr(home, name), old
    with pytest.raises(AttributeError, match="no 'nothing_here'"):
        vlm.nothing_here  # noqa: B018


def test_from_import_of_the_old_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "brick_gym.rewards.vlm", raising=False)
    with pytest.warns(DeprecationWarning, match="brick_gym.judges.cache"):
        from brick_gym.rewards.vlm import CachedJudge
    assert CachedJudge is cache.CachedJudge
