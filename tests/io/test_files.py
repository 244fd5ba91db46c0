"""The one bounded JSON loader (size, depth, integer length, repeated keys) and atomic writes that never follow a
symlink planted at their temporary name."""

from __future__ import annotations

import json
import os
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brick_gym.io.files import (
    JSONInputError,
    atomic_write_text,
    iter_jsonl,
    nesting_depth,
    parse_json,
    read_json,
    too_deep,
)

DEEP = "[" * 100_000 + "]" * 100_000


def test_100k_deep_nesting_is_refused_without_recursion(tmp_path) -> None:
    started = time.perf_counter()
    with pytest.raises(JSONInputError, match="nested 100,000 levels deep"):
        parse_json(DEEP, "deep.json")
    path = tmp_path / "deep.json"
    path.write_text('{"a": ' + DEEP + "}")
    with pytest.raises(JSONInputError, match=r"deep\.json: lists and objects nested 100,001"):
        read_json(path)
    assert time.perf_counter() - started < 5


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    assert parse_json(json.dumps({"text": "[" * 5000})) == {"text": "[" * 5000}
    assert nesting_depth('["[[[[[[[[[[[[[[", {"a": [1]}]') == 3


def test_a_repeated_key_is_refused_naming_it() -> None:
    with pytest.raises(JSONInputError, match="key '3001' appears twice"):
        parse_json('{"3001": {"red": 1}, "3001": {"blue": 2}}', "inventory.json")


def test_integers_past_4300_digits_are_refused_in_words() -> None:
    with pytest.raises(JSONInputError, match="5,000 digits"):
        parse_json("[" + "9" * 5000 + "]")
    assert parse_json("1" + "0" * 400) == 10**400  # long but readable


def test_size_bound_and_encoding(tmp_path) -> None:
    with pytest.raises(JSONInputError, match="at most 10 are read"):
        parse_json(b"[1, 2, 3, 4, 5]", max_bytes=10)
    path = tmp_path / "big.json"
    path.write_bytes(b"[" + b"0," * 100 + b"0]")
    with pytest.raises(JSONInputError, match="larger than 50 bytes"):
        read_json(path, max_bytes=50)
    with pytest.raises(JSONInputError, match="not UTF-8"):
        parse_json(b'"\xff\xfe"')


def test_syntax_errors_say_where() -> None:
    with pytest.raises(JSONInputError, match=r"t\.json: not valid JSON .* line 2 column"):
        parse_json('{"a": 1,\n "b": }', "t.json")


def test_jsonl_lines_are_bounded_and_named(tmp_path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n\n' + DEEP + "\n")
    lines = iter_jsonl(path)
    assert next(lines) == (f"{path}:1", {"a": 1})
    with pytest.raises(ValueError, match=rf"{path.name}:3: lists and objects nested"):
        next(lines)
    path.write_text('{"a": "' + "x" * 200 + '"}\n')
    with pytest.raises(ValueError, match=r":1: a line longer than 100 bytes"):
        list(iter_jsonl(path, max_line_bytes=100))


def test_too_deep_walks_any_depth_without_recursion() -> None:
    top: list = []
    cur = top
    for _ in range(100_000):
        cur.append([])
        cur = cur[0]
    assert too_deep(top)
    assert not too_deep({"a": [1, {"b": [2]}]}, max_depth=4)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=30,
)


@given(json_values)
def test_any_json_value_round_trips_or_is_refused_cleanly(value) -> None:
    try:
        text = json.dumps(value)
    except ValueError:  # an integer Python will not write as text
        return
    try:
        assert parse_json(text) == value
    except JSONInputError as exc:
        assert "digits" in str(exc) or "nested" in str(exc)


@given(st.text(max_size=200) | st.binary(max_size=200))
def test_arbitrary_text_parses_or_raises_only_json_input_error(text) -> None:
    try:
        parse_json(text, "fuzz")
    except JSONInputError as exc:
        assert str(exc).startswith("fuzz: ")


def test_atomic_write_never_writes_through_a_planted_symlink(tmp_path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    target = tmp_path / "out" / "model.txt"
    target.parent.mkdir()
    os.symlink(victim, target.parent / f".model.txt.tmp{os.getpid()}")  # planted at the temporary name
    os.symlink(victim, target)  # and at the name itself
    atomic_write_text(target, "new")
    assert victim.read_text() == "keep me"
    assert not target.is_symlink() and target.read_text() == "new"


def test_finite_json_drops_every_non_finite_float_at_any_depth() -> None:
    import json
    import math

    from brick_gym.io.files import finite_json

    value = {"a": math.inf, "b": [1.0, -math.inf, {"c": math.nan, "d": (2, "x")}], "e": 3}
    assert finite_json(value) == {"a": None, "b": [1.0, None, {"c": None, "d": [2, "x"]}], "e": 3}
    json.loads(json.dumps(finite_json(value)), parse_constant=lambda name: pytest.fail(f"{name} in the output"))
