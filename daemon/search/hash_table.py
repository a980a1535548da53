"""The table exact duplicates are found by: (workspace, scope, content hash) -> memory ids.

Usually one memory per key; several when texts collide (a private memory and a shared one
made private again, rows written by raw Cypher), so that removing one leaves the others
findable. A key holds an int, or a sorted list of ints for the rare collision, to stay small.
"""
from collections.abc import Iterable, Iterator

Key = tuple[str, str, str]


class HashTable:
    def __init__(self, entries: Iterable[tuple[Key, int]] = ()):
        self._ids: dict[Key, int | list[int]] = {}
        for key, memory_id in entries:
            self.add(key, memory_id)

    def add(self, key: Key, memory_id: int) -> None:
        held = self._ids.get(key)
        if held is None or held == memory_id:
            self._ids[key] = memory_id
        elif isinstance(held, int):
            self._ids[key] = sorted((held, memory_id))
        elif memory_id not in held:
            held.append(memory_id)
            held.sort()

    def remove(self, key: Key, memory_id: int) -> None:
        held = self._ids.get(key)
        if held is None:
            return
        if isinstance(held, int):
            if held == memory_id:
                del self._ids[key]
            return
        if memory_id in held:
            held.remove(memory_id)
        self._ids[key] = held[0] if len(held) == 1 else held

    def first(self, key: Key) -> int | None:
        """The oldest memory with this key."""
        held = self._ids.get(key)
        return held if held is None or isinstance(held, int) else held[0]

    def entries(self) -> Iterator[tuple[Key, int]]:
        for key, held in self._ids.items():
            for memory_id in ([held] if isinstance(held, int) else held):
                yield key, memory_id
