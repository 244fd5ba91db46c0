"""The conversation kept within its context: images evicted, results truncated, turns dropped, never over."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.llm.context import ContextOverflow, ContextPolicy, Conversation
from brick_gym.llm.messages import Message, ToolCall
from brick_gym.llm.tokens import CharClassCounter

COUNTER = CharClassCounter()
TOOLS = [{"name": "attach_part", "description": "add a part", "parameters": {"type": "object", "properties": {}}}]
IMAGE = np.zeros((64, 64, 3), dtype=np.uint8)


def conversation(**policy: object) -> Conversation:
    head = [Message("system", "You build LEGO models."), Message("user", "Design brief: a tower")]
    return Conversation(head, TOOLS, ContextPolicy(**policy), COUNTER)  # type: ignore[arg-type]


def add_turn(conv: Conversation, turn: int, result: str = "ok", images: int = 0, text: str = "") -> None:
    conv.append(Message("assistant", text, tool_calls=[ToolCall(f"c{turn}", "attach_part", "{}")]), turn)
    conv.append(Message("tool", result, [IMAGE] * images, tool_call_id=f"c{turn}", name="attach_part"), turn)


def answered_calls_are_present(messages: list[Message]) -> bool:
    """Every tool message answers a call of the assistant message before it, and turns start with the model."""
    issued: set[str] = set()
    for i, m in enumerate(messages):
        if m.role == "assistant":
            issued = {c.id for c in m.tool_calls}
        elif m.role == "tool" and m.tool_call_id not in issued:
            return False
        if i == 2 and m.role != "assistant":
            return False
    return True


def test_old_images_are_evicted_but_the_latest_render_stays() -> None:
    conv = conversation(keep_images_turns=2)
    add_turn(conv, 1, images=2)
    add_turn(conv, 2, images=1)
    add_turn(conv, 3)
    add_turn(conv, 4)
    sent = conv.request(4)
    tools = [m for m in sent if m.role == "tool"]
    assert tools[0].images == [] and tools[0].text == (
        "ok\n[2 image(s) removed from this turn-1 message to save context; the latest render is kept; call "
        "render_views() for new pictures]"
    )
    assert len(tools[1].images) == 1  # turn 2 is old too, but it holds the latest render
    assert conv.stats.images_evicted == 2


def test_old_results_are_truncated_with_a_marker() -> None:
    conv = conversation(keep_results_turns=2, truncated_chars=20)
    add_turn(conv, 1, result="x" * 500)
    add_turn(conv, 2, result="y" * 500)
    add_turn(conv, 3, result="z" * 500)
    sent = conv.request(3)
    tools = [m.text for m in sent if m.role == "tool"]
    assert tools[0] == "x" * 20 + "\n… [truncated after 2 turns: 20 of 500 characters kept to save context]"
    assert tools[1] == "y" * 500 and tools[2] == "z" * 500  # one and zero turns old: whole
    assert conv.stats.results_truncated == 1


def test_long_arguments_of_old_calls_are_cut_but_stay_a_json_object() -> None:
    conv = conversation(keep_results_turns=1, truncated_chars=30)
    code = "for i in range(100):\n    model.attach('3001', 'red')\n" * 40
    conv.append(Message("assistant", "", tool_calls=[ToolCall("p1", "run_python", json.dumps({"code": code}))]), 1)
    conv.append(Message("tool", "ran", tool_call_id="p1", name="run_python"), 1)
    assert "characters kept" not in conv.request(1)[2].tool_calls[0].arguments_json  # this turn's call: whole
    sent = conv.request(2)
    args = json.loads(sent[2].tool_calls[0].arguments_json)
    assert list(args) == ["code"] and args["code"].startswith(code[:30]) and "characters kept" in args["code"]


def test_oldest_turns_are_dropped_whole_and_the_brief_says_so() -> None:
    conv = conversation(context_tokens=3000, reply_tokens=500, keep_results_turns=50)
    for t in range(1, 30):
        add_turn(conv, t, result="word " * 100, text=f"turn {t}")
    sent = conv.request(29)
    assert conv.estimate() <= 3000 - 500
    assert conv.stats.turns_dropped > 0 and answered_calls_are_present(sent)
    first_kept = next(m for m in sent if m.role == "assistant").text
    dropped = int(first_kept.split()[1]) - 1
    assert sent[1].text.endswith(
        f"[turns 1-{dropped} of this episode were removed from the conversation to keep it within 3000 tokens. "
        "Everything they built is still in the model: check(), free_connectors() and render_views() show it.]"
    )
    assert sent[-1].text == "word " * 100  # the latest turn is whole
    # dropping stops at the low-water mark, so the next few turns need no drop
    before = conv.stats.turns_dropped
    add_turn(conv, 30, result="word " * 100, text="turn 30")
    conv.request(30)
    assert conv.stats.turns_dropped == before


def test_one_huge_result_is_squeezed_to_fit() -> None:
    conv = conversation(context_tokens=2000, reply_tokens=200)
    add_turn(conv, 1, result="coordinates " * 5000, images=3)
    sent = conv.request(1)
    assert conv.estimate() <= 1800 and conv.stats.squeezed == 1
    assert "truncated to fit the context" in sent[-1].text


def test_a_head_that_cannot_fit_is_an_overflow() -> None:
    head = [Message("system", "rules " * 5000), Message("user", "brief")]
    conv = Conversation(head, TOOLS, ContextPolicy(context_tokens=1000, reply_tokens=100), COUNTER)
    with pytest.raises(ContextOverflow, match="the context is 1000 with 100 kept for the reply"):
        conv.request(0)


def test_server_counts_scale_estimates_up_never_down() -> None:
    conv = conversation()
    conv.request(0)
    estimate = conv.last_estimate
    conv.observe(estimate * 2)
    assert conv.estimate() == pytest.approx(2 * estimate, abs=2)
    conv.observe(1)
    assert conv.estimate() == pytest.approx(2 * estimate, abs=2)


def test_policy_rejects_nonsense() -> None:
    for bad in ({"context_tokens": 0}, {"reply_tokens": 200_000}, {"keep_images_turns": 0}, {"low_water": 0.0}):
        with pytest.raises(ValueError):
            ContextPolicy(**bad)  # type: ignore[arg-type]


turn_shapes = st.lists(
    st.tuples(
        st.integers(0, 3),  # tool results in the turn
        st.integers(0, 6000),  # characters per result
        st.integers(0, 2),  # images per result
        st.integers(0, 3000),  # characters of assistant text
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(turn_shapes, st.integers(1500, 20_000), st.integers(1, 4), st.integers(1, 4))
def test_no_request_is_ever_over_the_context(turns, context, keep_images, keep_results) -> None:
    conv = conversation(
        context_tokens=context,
        reply_tokens=context // 10,
        keep_images_turns=keep_images,
        keep_results_turns=keep_results,
    )
    for t, (results, chars, images, text) in enumerate(turns, start=1):
        calls = [ToolCall(f"c{t}_{k}", "attach_part", json.dumps({"k": k})) for k in range(results)]
        conv.append(Message("assistant", "a" * text, tool_calls=calls), t)
        for k in range(results):
            conv.append(Message("tool", "r " * (chars // 2), [IMAGE] * images, tool_call_id=f"c{t}_{k}"), t)
        sent = conv.request(t)
        assert conv.last_estimate <= context - context // 10
        assert sent[0].role == "system" and sent[1].text.startswith("Design brief: a tower")
        assert answered_calls_are_present(sent)
