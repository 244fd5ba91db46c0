"""The tool layer under hostile arguments: numbers of any size, integers past Python's 4,300-digit text limit,
100k-deep nesting, a 10 MB query, huge coordinates, negative connector indices. Every call comes back as a refusal
that names the argument, never as an exception and never as the catch-all ``tool_failed``."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brick_gym.llm.toolkit import MAX_ARGUMENT_DEPTH, ToolResult
from brick_gym.llm.tools import ToolSession

BIG = "1" + "0" * 400  # a 401-digit number, as JSON text
HUGE = "7" * 5000  # an integer longer than Python reads from text
DEEP_TEXT = "[" * 100_000 + "]" * 100_000


def _json(template: str, number: str) -> str:
    """``template`` with its ``@`` replaced by ``number`` (JSON text Python's own writer could not produce)."""
    return template.replace("@", number)


def _deep_list(levels: int) -> list:
    """A list nested ``levels`` deep, built without recursion."""
    top: list = []
    cur = top
    for _ in range(levels - 1):
        cur.append([])
        cur = cur[0]
    return top


@pytest.fixture
def session() -> ToolSession:
    s = ToolSession("free")
    assert s.call("add_part", {"part": "3001", "colour": "red", "position": [0, 0, 0]}).ok
    return s


def _refused(result: ToolResult, *words: str) -> None:
    assert isinstance(result, ToolResult)
    assert not result.ok, result.text
    assert result.error_kind not in (None, "tool_failed"), result.text
    for word in words:
        assert word in result.text, result.text


HOSTILE_NUMBERS = [
    ("find_parts", _json('{"query": "brick", "limit": @}', BIG), "limit"),
    ("find_parts", {"query": "brick", "limit": 10**400}, "limit"),
    ("find_parts", {"query": "brick", "limit": 10**5000}, "limit"),
    ("free_connectors", _json('{"piece": 0, "near": [@, 0, 0]}', BIG), "near"),
    ("free_connectors", {"piece": 0, "near": [0, 10**5000, 0]}, "near"),
    ("add_part", _json('{"part": "3001", "colour": "red", "position": [@, 0, 0]}', BIG), "position"),
    (
        "add_part",
        _json('{"part": "3001", "colour": "red", "position": [0, 0, 0], "rotation_deg_y": @}', BIG),
        "rotation",
    ),
    ("add_part", {"part": "3001", "colour": "red", "position": [0, 0, 0], "rotation_deg_y": -(10**5000)}, "rotation"),
    (
        "add_part",
        _json('{"part": "3001", "colour": "red", "position": [0, 0, 0], "axis": [0, 1, 0], "angle_deg": @}', BIG),
        "angle_deg",
    ),
    (
        "attach_part",
        _json('{"part": "3001", "colour": "red", "to": "0.stud[0]", "by": "antistud[0]", "yaw": @}', BIG),
        "yaw",
    ),
    ("place_subassembly", _json('{"name": "a", "position": [0, 0, 0], "rotation_deg_y": @}', BIG), "rotation_deg_y"),
    ("array_pieces", _json('{"pieces": [0], "count": @, "step": [0, 0, 20]}', BIG), "count"),
    ("remove_piece", {"piece": 10**5000}, "piece"),
]


@pytest.mark.parametrize(("tool", "arguments", "named"), HOSTILE_NUMBERS)
def test_numbers_of_any_size_are_refused_naming_the_argument(session, tool, arguments, named) -> None:
    _refused(session.call(tool, arguments), named)
    assert len(session.assembly.pieces) == 1  # nothing changed


def test_an_integer_over_4300_digits_in_json_text_is_malformed_json(session) -> None:
    r = session.call("find_parts", _json('{"query": "brick", "limit": @}', HUGE))
    _refused(r, "5,000 digits")
    assert r.error_kind == "malformed_json"


def test_arguments_nested_100k_deep_are_refused_quickly(session) -> None:
    started = time.perf_counter()
    as_text = session.call("find_parts", _json('{"query": @}', DEEP_TEXT))
    as_mapping = session.call("find_parts", {"query": _deep_list(100_000)})
    assert time.perf_counter() - started < 5  # a bound, not a benchmark: the recursive parser is never reached
    for r in (as_text, as_mapping):
        _refused(r, str(MAX_ARGUMENT_DEPTH))
        assert r.error_kind == "malformed_json"


def test_a_10_mb_query_is_refused_by_its_bound(session) -> None:
    started = time.perf_counter()
    r = session.call("find_parts", {"query": "brick " * 1_700_000})
    assert time.perf_counter() - started < 5
    _refused(r, "query", "at most")


def test_huge_finite_coordinates_are_refused(session) -> None:
    r = session.call("add_part", {"part": "3001", "colour": "red", "position": [1e154, 0, 0]})
    _refused(r, "1,000,000")
    assert session.call("check").ok is not None  # the check still runs on what is placed


def test_negative_connector_indices_do_not_wrap(session) -> None:
    r = session.call("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[-1]", "by": "antistud[0]"})
    _refused(r, "stud[-1]")
    assert len(session.assembly.pieces) == 1


def test_non_finite_and_non_json_numbers_are_refused(session) -> None:
    _refused(session.call("find_parts", '{"query": "brick", "limit": 1e400}'), "limit")
    _refused(session.call("add_part", '{"part": "3001", "colour": "red", "position": [NaN, 0, 0]}'))


# ---------------------------------------------------------------------------------------------------------------
# Properties: arbitrary JSON values and integers of any size, for every tool
# ---------------------------------------------------------------------------------------------------------------

SLOW_TOOLS = {"run_python", "write_build", "render_views"}  # a sandbox or a renderer per call: tested elsewhere
TOOLS = sorted(set(ToolSession("free").tools) - SLOW_TOOLS)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**300, max_value=10**5000)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from(["0.stud[0]", "0.stud[-1]", "antistud[0]", "3001", "red", "x", "y"]),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=20,
)
PARAM_NAMES = ["query", "limit", "part", "colour", "position", "rotation_deg_y", "to", "by", "yaw", "near", "piece",
               "pieces", "offset", "count", "step", "name", "placements", "matrix", "axis", "angle_deg",
               "about"]  # fmt: skip
arguments = st.dictionaries(st.sampled_from(PARAM_NAMES) | st.text(max_size=8), json_values, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.tuples(st.sampled_from(TOOLS), arguments), min_size=1, max_size=6))
def test_arbitrary_arguments_never_raise_nor_fail_inside(calls) -> None:
    session = ToolSession("free")
    for tool, args in calls:
        for given_as in (args, _as_json_text(args)):
            if given_as is None:
                continue
            result = session.call(tool, given_as)
            assert isinstance(result, ToolResult)
            assert result.error_kind != "tool_failed", (tool, result.text)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60) | st.binary(max_size=60).map(lambda b: b.decode("latin-1")))
def test_arbitrary_argument_text_never_raises(text) -> None:
    result = ToolSession("free").call("add_part", text)
    assert isinstance(result, ToolResult)
    assert result.error_kind != "tool_failed", result.text


def _as_json_text(args: dict) -> str | None:
    """``args`` as JSON text, or None where Python cannot write it (integers past 4,300 digits)."""
    try:
        return json.dumps(args)
    except ValueError:
        return None
