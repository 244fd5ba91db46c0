"""Safe ids and safe joins: names from untrusted input become one path component under their root, or an error."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brick_gym.io.paths import MAX_ID_CHARS, SAFE_ID, UnsafePath, cache_dir, check_safe_id, safe_id_problem, safe_join

HOSTILE_IDS = ["../../../victim", ".", "..", "a/b/c", "a\x00b", "x" * 300, "", ".hidden", "-rf", "a b", "é", "a\\b",
               "summary.json", "t.partial-1", "/etc", "C:x"]  # fmt: skip


@pytest.mark.parametrize("value", HOSTILE_IDS)
def test_hostile_ids_are_refused_with_the_reason(value) -> None:
    problem = safe_id_problem(value)
    assert problem
    with pytest.raises(UnsafePath, match="task #3 id"):
        check_safe_id(value, "task #3 id")


def test_a_300_character_id_says_its_length() -> None:
    assert "300 characters" in safe_id_problem("x" * 300)


@pytest.mark.parametrize("value", ["model-001", "a", "A_b-9", "9" * MAX_ID_CHARS])
def test_ordinary_ids_pass(value) -> None:
    assert check_safe_id(value, "id") == value


@pytest.mark.parametrize("value", [None, 5, ["a"], b"abc"])
def test_non_strings_are_refused(value) -> None:
    assert "must be a string" in safe_id_problem(value)


@given(st.text(max_size=120))
def test_a_safe_id_is_always_one_component_inside_its_root(tmp_path_factory, text) -> None:
    root = tmp_path_factory.getbasetemp()
    if safe_id_problem(text) is None:
        assert SAFE_ID.fullmatch(text)
        joined = safe_join(root, text)
        assert joined.parent == root and joined.name == text
    else:
        with pytest.raises(UnsafePath):
            check_safe_id(text, "id")


@pytest.mark.parametrize("part", ["../x", "a/../../x", "/etc/hostname", "a\x00", ""])
def test_safe_join_refuses_parts_that_leave_the_root(tmp_path, part) -> None:
    with pytest.raises(UnsafePath):
        safe_join(tmp_path, part)


def test_safe_join_refuses_a_symlink_out_of_the_root(tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / "link")
    with pytest.raises(UnsafePath, match="through a symlink"):
        safe_join(root, "link", "file.txt")
    assert safe_join(root, "sub", "file.txt") == root / "sub" / "file.txt"


def test_the_cache_folder_follows_brick_gym_cache_then_xdg_then_home(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("BRICK_GYM_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_dir() == tmp_path / "home" / ".cache" / "brick_gym"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/not/per/spec")
    assert cache_dir() == tmp_path / "home" / ".cache" / "brick_gym"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "brick_gym"
    monkeypatch.setenv("BRICK_GYM_CACHE", str(tmp_path / "own"))
    assert cache_dir() == tmp_path / "own"
