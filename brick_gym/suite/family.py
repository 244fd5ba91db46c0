"""What every task family shares: equality and hashing by its parameters, so that the per-(family, seed) task
caches serve two families built from the same level file as one."""

from __future__ import annotations

__all__ = ["KeyedFamily"]


class KeyedFamily:
    """A task family equal to another of its class with the same :meth:`key` (its parameters)."""

    def key(self) -> tuple:
        """The parameters that fix every task of the family."""
        raise NotImplementedError

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.key()))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.key() == other.key()  # type: ignore[attr-defined]
