"""The persistent judge cache: hits, misses, resuming after a crash, backend identity in keys, refresh."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from brick_gym.judges.backends import ScriptedJudge
from brick_gym.judges.cache import CachedJudge
from brick_gym.judges.requests import JudgeRequest, vqa_request
from brick_gym.judges.vqa import QuestionGraph, parse_vqa_reply

Views = Callable[..., tuple[np.ndarray, ...]]


def test_cache_hits_do_not_call_inner(tmp_path: Path, views: Views, echo: Callable[[JudgeRequest], str]) -> None:
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


def test_cache_one_pixel_change_is_a_miss(tmp_path: Path, views: Views, echo: Callable[[JudgeRequest], str]) -> None:
    inner = ScriptedJudge(echo)
    cache = CachedJudge(inner, tmp_path / "cache.jsonl")
    a = views(3, n=2)
    cache.judge([JudgeRequest(a, "q")])
    b = [v.copy() for v in a]
    b[0][0, 0, 0] ^= 1
    reply = cache.judge([JudgeRequest(tuple(b), "q")])[0]
    assert len(inner.requests) == 2 and not reply.cached


def test_cache_resume_after_crash_and_torn_line(
    tmp_path: Path, views: Views, echo: Callable[[JudgeRequest], str]
) -> None:
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


def test_cache_key_includes_backend_identity(tmp_path: Path, views: Views, echo: Callable[[JudgeRequest], str]) -> None:
    path = tmp_path / "cache.jsonl"
    req = JudgeRequest(views(4, n=1), "q")
    CachedJudge(ScriptedJudge(echo, model="a"), path).judge([req])
    other = ScriptedJudge(echo, model="b")
    CachedJudge(other, path).judge([req])
    assert len(other.requests) == 1


def test_cache_refresh_and_duplicates(tmp_path: Path, views: Views, questions: QuestionGraph) -> None:
    path = tmp_path / "cache.jsonl"
    req = vqa_request(views(5, n=1), "A house", questions)
    inner = ScriptedJudge(["I can't tell", "1: yes\n2: no\n3: yes"])
    cache = CachedJudge(inner, path)
    assert cache.judge([req, req])[0].text == "I can't tell"  # identical requests: asked once
    assert len(inner.requests) == 1
    unparsed = lambda r, rep: parse_vqa_reply(rep.text, len(questions)) is None  # noqa: E731
    assert parse_vqa_reply(cache.judge([req], refresh=unparsed)[0].text, 3) == {1: True, 2: False, 3: True}
    assert len(inner.requests) == 2
    assert cache.judge([req], refresh=unparsed)[0].cached  # parsed now: no more asking
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reloaded = CachedJudge(ScriptedJudge([]), path)  # the later line wins
    assert reloaded.get(req).text.startswith("1: yes")


@pytest.mark.parametrize(
    "record",
    [
        {"text": "yes", "p_yes": {"one": "half"}},
        {"text": "yes", "p_yes": [1, 2]},
        {"text": "yes", "p_yes": {"1": 10**400}},
        {"text": "yes", "backend": ["not", "a", "name"]},
    ],
    ids=["p_yes words", "p_yes list", "p_yes huge", "backend list"],
)
def test_a_wrong_shaped_record_is_skipped_naming_its_line(
    tmp_path: Path, views: Views, echo: Callable[[JudgeRequest], str], record: dict
) -> None:
    """Issue 34, finding 10: a wrong-shaped cache record aborted ``bench score`` when its reply was used."""
    path = tmp_path / "cache.jsonl"
    req = JudgeRequest(views(2, n=1), "q")
    CachedJudge(ScriptedJudge(echo), path).judge([req])
    good = json.loads(path.read_text())
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, **record}) + "\n")
    inner = ScriptedJudge(echo)
    with pytest.warns(RuntimeWarning, match=rf"{path}:2: unreadable line"):
        cache = CachedJudge(inner, path)
    assert [r.text for r in cache.judge([req])] == [echo(req)] and inner.requests == []  # line 1 answers it
