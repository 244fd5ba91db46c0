"""Short, safe text of untrusted values: integers of any size, long strings and deep nesting."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from brick_gym.io.previews import preview


def test_integers_past_python_text_limit_are_described() -> None:
    assert preview(10**5000) == "<an integer of about 5,001 digits>"
    assert preview(-17) == "-17"


def test_long_strings_and_deep_nesting_are_cut() -> None:
    assert len(preview("x" * 10_000)) < 80
    top: list = []
    cur = top
    for _ in range(10_000):
        cur.append([])
        cur = cur[0]
    assert len(preview(top)) < 80


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(10**4000, 10**5000) | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(), inner, max_size=8),
    max_leaves=40,
)


@given(values)
def test_any_value_gives_short_text(value) -> None:
    assert len(preview(value, 60)) < 400
