"""A read-only, hashable, picklable ``str -> str`` mapping for frozen metadata records."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class FrozenMap(Mapping[str, str]):
    """A read-only, hashable, picklable ``str -> str`` mapping that keeps insertion order."""

    __slots__ = ("_data",)

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._data: dict[str, str] = dict(items or {})

    def __getitem__(self, key: str) -> str:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return self._data == dict(other.items())
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenMap, (self._data,))
