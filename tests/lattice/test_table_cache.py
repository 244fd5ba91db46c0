"""The lattice tables' disk cache: a miss builds and writes, a hit reads without building, and a damaged or foreign
file is rebuilt with a warning, never used."""

from __future__ import annotations

import os

import numpy as np
import pytest

from brick_gym.lattice import table_cache, tables
from brick_gym.lattice.tables import SCHEMA, build_tables

STEMS = ("3001", "3024")
"""Two box parts: no pair verdicts, so a build takes well under a second."""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BRICK_GYM_CACHE", str(tmp_path))
    tables._build.cache_clear()
    yield tmp_path
    tables._build.cache_clear()


def _no_build(monkeypatch) -> None:
    def refuse(stems):
        raise AssertionError("the tables were built, not read from the cache")

    monkeypatch.setattr(tables, "_compute", refuse)


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, name), getattr(b, name)) for name in SCHEMA)


def test_a_miss_builds_and_writes_and_a_hit_reads_without_building(cache, monkeypatch) -> None:
    built = build_tables(STEMS)
    path = table_cache.tables_path(table_cache.cache_key(STEMS))
    assert path.is_file() and path.parent == cache / "lattice"
    tables._build.cache_clear()
    _no_build(monkeypatch)
    read = build_tables(STEMS)
    assert read is not built and _same(read, built)
    assert not read.dims.flags.writeable


def test_another_part_set_is_another_key_and_another_file(cache) -> None:
    build_tables(STEMS)
    build_tables(("3001",))
    assert len(list((cache / "lattice").iterdir())) == 2
    assert table_cache.cache_key(STEMS) != table_cache.cache_key(("3024", "3001"))


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda data: data[: len(data) // 2], "damaged"),
        (lambda data: b"not an npz at all", "damaged"),
        (lambda data: data[:-200] + bytes(b ^ 0xFF for b in data[-200:]), "damaged"),
    ],
    ids=["truncated", "garbage", "flipped bytes"],
)
def test_a_damaged_file_is_rebuilt_with_a_warning(cache, damage, problem) -> None:
    good = build_tables(STEMS)
    path = table_cache.tables_path(table_cache.cache_key(STEMS))
    path.write_bytes(damage(path.read_bytes()))
    tables._build.cache_clear()
    with pytest.warns(UserWarning, match=problem):
        again = build_tables(STEMS)
    assert _same(again, good)
    tables._build.cache_clear()
    table_cache.read_tables(path, table_cache.cache_key(STEMS), STEMS, SCHEMA, lambda a: None)  # rewritten whole


def test_a_foreign_file_under_the_key_is_not_trusted(cache) -> None:
    good = build_tables(STEMS)
    other = build_tables(("3001",))
    path = table_cache.tables_path(table_cache.cache_key(STEMS))
    foreign = table_cache.tables_path(table_cache.cache_key(("3001",)))
    path.write_bytes(foreign.read_bytes())
    tables._build.cache_clear()
    with pytest.warns(UserWarning, match="other parts"):
        again = build_tables(STEMS)
    assert _same(again, good) and len(other.stems) == 1


def test_tables_whose_indices_leave_their_arrays_are_refused(cache) -> None:
    """Arrays that pass the digest (written by this code) but would index out of bounds in the kernels: refused."""
    good = build_tables(STEMS)
    arrays = {name: np.array(getattr(good, name)) for name in SCHEMA}
    arrays["conn_mate"][0, 0] = 99
    key = table_cache.cache_key(STEMS)
    path = table_cache.write_tables(table_cache.tables_path(key), key, STEMS, arrays)
    tables._build.cache_clear()
    with pytest.warns(UserWarning, match="inconsistent"):
        again = build_tables(STEMS)
    assert _same(again, good)
    assert path.is_file()


def test_a_fifo_in_its_place_is_not_read(cache) -> None:
    key = table_cache.cache_key(STEMS)
    path = table_cache.tables_path(key)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with pytest.warns(UserWarning, match="unreadable"):
        build_tables(STEMS)
    assert path.is_file()


def test_an_unwritable_cache_only_warns(cache, monkeypatch) -> None:
    monkeypatch.setenv("BRICK_GYM_CACHE", "/proc/brick_gym_cannot_be_here")
    with pytest.warns(UserWarning, match="not written"):
        assert build_tables(STEMS).stems == STEMS
