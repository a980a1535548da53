"""What context ranking reads of each candidate besides the two channels, in arrays indexed by
memory id: importance, time of the last change, length in words, whether the text asks a
question, whether the memory has tags.

A ranking weighs hundreds of candidates to show ten; reading these from Memory objects was a
Python loop per attribute and candidate (bench/RESULTS.md#search-ranking-arrays).
Here they are one gather each. The write path keeps them (store.py: `_indexed`,
`_unindexed`); Memory objects are never changed in place once stored, so a write is the only
way any of them can change. Id 0 is never a memory's id: its slots stay empty.
"""
from collections.abc import Iterable, Mapping
from operator import attrgetter

import numpy as np

from ..core.growable import grown
from ..core.records import Memory
from .timeline import all_microseconds

COLUMNS = ("present", "importance", "updated_us", "words", "asks", "tagged")


def words(text: str) -> int:
    """A text's length in words: its spaces plus one (a count, not a parse)."""
    return text.count(" ") + 1


class MemoryColumns:
    def __init__(self) -> None:
        self.present = np.zeros(64, dtype=bool)
        self.importance = np.zeros(64, dtype=np.int8)
        self.updated_us = np.zeros(64, dtype=np.int64)  # microseconds since 1970, UTC
        self.words = np.zeros(64, dtype=np.int32)
        self.asks = np.zeros(64, dtype=bool)  # '?' in the text
        self.tagged = np.zeros(64, dtype=bool)

    @classmethod
    def of(cls, memories: Iterable[Memory]) -> "MemoryColumns":
        columns = cls()
        columns.put_many(memories)
        return columns

    def _grow(self, size: int) -> None:
        for name in COLUMNS:
            setattr(self, name, grown(getattr(self, name), size))

    def put_many(self, memories: Iterable[Memory]) -> None:
        """Memories added or changed."""
        kept = [m for m in memories if m.id > 0]  # 0 and below: not an id
        if not kept:
            return
        self._put(kept)

    def _put(self, memories: list[Memory]) -> None:
        n = len(memories)
        ids = np.fromiter((m.id for m in memories), dtype=np.int64, count=n)
        self._grow(int(ids.max()) + 1)
        self.importance[ids] = np.fromiter(map(attrgetter("importance"), memories),
                                           dtype=np.int8, count=n)
        self.updated_us[ids] = all_microseconds(list(map(attrgetter("updated_at"), memories)))
        self.words[ids] = np.fromiter(map(words, map(attrgetter("content"), memories)),
                                      dtype=np.int32, count=n)
        self.asks[ids] = np.fromiter(("?" in m.content for m in memories), dtype=bool, count=n)
        self.tagged[ids] = np.fromiter((bool(m.tags) for m in memories), dtype=bool, count=n)
        self.present[ids] = True

    def remove_many(self, ids: Iterable[int]) -> None:
        known = np.fromiter((i for i in ids if 0 < i < len(self.present)), dtype=np.int64)
        for name in COLUMNS:
            getattr(self, name)[known] = 0

    def differences(self, memories: Mapping[int, Memory]) -> list[str]:
        """The columns that differ from what `memories` (by id) say: verify.py gives the
        database's rows."""
        fresh = MemoryColumns.of(memories.values())
        out = []
        for name in COLUMNS:
            mine, theirs = getattr(self, name), getattr(fresh, name)
            size = max(len(mine), len(theirs))
            if not np.array_equal(grown(mine, size)[:size], grown(theirs, size)[:size]):
                out.append(name)
        return out
