"""Inventories written by others: a repeated key is refused naming it, deep nesting and bad counts are one error."""

from __future__ import annotations

import pytest

from brick_gym.core.rules import Inventory, InventoryError


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"3001": {"red": 2}, "3001": {"blue": 1}}', "key '3001' appears twice"),
        ('{"3001": {"red": 2, "red": 5}}', "key 'red' appears twice"),
        ('{"3001": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested 100,001 levels deep"),
        ('{"3001": {"red": ' + "9" * 5000 + "}}", "5,000 digits"),
    ],
)
def test_hostile_inventory_files_are_one_clear_error(tmp_path, text, message) -> None:
    path = tmp_path / "inventory.json"
    path.write_text(text)
    with pytest.raises(InventoryError, match=message) as info:
        Inventory.load(path)
    assert "inventory.json" in str(info.value)


def test_an_ordinary_inventory_loads(tmp_path) -> None:
    path = tmp_path / "inventory.json"
    path.write_text('{"3001": {"red": 2}}')
    assert Inventory.load(path).limit("3001", 4) == 2
