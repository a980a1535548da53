"""A workspace's search indexes with a second, small tier's beside them (the personal tier),
read as one corpus: one context ranking scores the memories of both, so recalling the tier
costs a search its candidates, not a second ranking pass (bench/RESULTS.md#personal-tier).

The tier's ids are moved up by `offset`, past every id the workspace's arrays hold, so the
arrays indexed by id (columns, neighbours, term bits) stay arrays. Memories keep their own
ids: a ranked memory says which tier it is from by its workspace. The view is built once per
pair of store versions and kept while neither changes; it is read with both stores' read
locks held."""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from functools import partial
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..core.records import Memory
from .indexes import KeywordIndex, Scores, VectorIndex, bm25_idf
from .memory_columns import MemoryColumns
from .ranking import Hits, ScopeAnswers
from .timeline import Timeline


class TierStore(Protocol):
    """What the view reads of each store (store.MemoryStore)."""
    @property
    def catalog(self) -> Mapping[int, Memory]: ...
    @property
    def version(self) -> int: ...
    @property
    def per_workspace(self) -> Mapping[str, int]: ...
    @property
    def vectors(self) -> VectorIndex: ...
    @property
    def keywords(self) -> KeywordIndex: ...
    @property
    def timeline(self) -> Timeline: ...
    @property
    def columns(self) -> MemoryColumns: ...


def _merged(a: Hits, b: Hits, k: int) -> Hits:
    """The k best of two hit lists (best first, ties by id, as top_hits orders them)."""
    both = a + b
    both.sort(key=lambda hit: (-hit[1], hit[0]))
    return both[:k]


def _catalog(here: Mapping[int, Memory], there: Mapping[int, Memory], offset: int
             ) -> dict[int, Memory]:
    """Both catalogs in one dict (ranking looks memories up by the hundred: a dict's own
    lookups, not a Python method's), the tier's by their moved-up ids."""
    joined = dict(here)
    joined.update((i + offset, m) for i, m in there.items())
    return joined


_PerId = Callable[[npt.NDArray[np.int64]], npt.NDArray[Any]]  # a value per id


def _per_tier(ids: npt.NDArray[np.int64], offset: int, here: _PerId, there: _PerId,
              dtype: type[np.generic]) -> npt.NDArray[Any]:
    """A value per id of the view: each tier's `here` or `there` asked about its own ids."""
    if ids.max(initial=0) < offset:
        return here(ids)
    theirs = ids >= offset
    out = np.zeros(len(ids), dtype=dtype)
    out[~theirs] = here(ids[~theirs])
    out[theirs] = there(ids[theirs] - offset)
    return out


class _Scores:
    """One query's cosines over both tiers (indexes.Scores of each)."""

    def __init__(self, here: Scores, there: Scores, offset: int, there_pool: int):
        self._here, self._there, self._offset = here, there, offset
        self._there_pool = there_pool

    def best(self, allowed: AbstractSet[int] | None, k: int) -> Hits:
        offset, pool = self._offset, min(k, self._there_pool)
        if allowed is None:
            mine, theirs = self._here.best(None, k), self._there.best(None, pool)
        else:
            mine = self._here.best({i for i in allowed if i < offset}, k)
            theirs = self._there.best({i - offset for i in allowed if i >= offset}, pool)
        return _merged(mine, [(i + offset, s) for i, s in theirs], k)

    def centred(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        return self._each(ids, self._here.centred, self._there.centred)

    def cosines(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        return self._each(ids, self._here.cosines, self._there.cosines)

    def _each(self, ids: npt.NDArray[np.int64], here: _PerId, there: _PerId
              ) -> npt.NDArray[np.float64]:
        return _per_tier(ids, self._offset, here, there, np.float64)


class _Vectors:
    def __init__(self, here: VectorIndex, there: VectorIndex, offset: int, there_pool: int):
        self._here, self._there, self._offset = here, there, offset
        self._there_pool = there_pool

    def scores(self, query: npt.NDArray[np.float32]) -> _Scores:
        return _Scores(self._here.scores(query), self._there.scores(query), self._offset,
                       self._there_pool)

    def search(self, query: npt.NDArray[np.float32], allowed: AbstractSet[int] | None,
               k: int) -> Hits:
        return self.scores(query).best(allowed, k)

    def ids(self) -> set[int]:
        return self._here.ids() | {i + self._offset for i in self._there.ids()}

    def bounded(self, min_score: float = -1.0) -> bool:
        return self._here.bounded(min_score)


class _Keywords:
    """Both tiers' keyword indexes; a term's weight (idf) is its weight in both together."""

    def __init__(self, here: KeywordIndex, there: KeywordIndex, there_workspace: str,
                 offset: int, there_pool: int):
        self._here, self._there, self._offset = here, there, offset
        self._there_workspace, self._there_pool = there_workspace, there_pool

    def search(self, text: str, k: int, workspace: str | None = None,
               categories: list[str] | None = None, tags: list[str] | None = None) -> Hits:
        mine = self._here.search(text, k, workspace, categories, tags)
        theirs = self._there.search(text, min(k, self._there_pool), self._there_workspace,
                                    categories, tags)
        return _merged(mine, [(i + self._offset, s) for i, s in theirs], k)

    def analyse(self, text: str) -> list[str]:
        return self._here.analyse(text)

    def idf(self, term: str) -> float:
        here, there = self._here, self._there
        return bm25_idf(len(here) + len(there), here.frequency(term) + there.frequency(term))

    def term_bits(self, terms: list[str], ids: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
        return _per_tier(ids, self._offset, partial(self._here.term_bits, terms),
                         partial(self._there.term_bits, terms), np.uint64)


class _Columns:
    """memory_columns' arrays of both tiers, one after the other."""

    def __init__(self, here: MemoryColumns, there: MemoryColumns, offset: int):
        def joined(name: str) -> npt.NDArray[Any]:
            mine: npt.NDArray[Any] = getattr(here, name)
            out = np.zeros(offset + len(getattr(there, name)), dtype=mine.dtype)
            out[:len(mine)] = mine
            out[offset:] = getattr(there, name)
            return out
        self.importance = joined("importance")
        self.updated_us = joined("updated_us")
        self.words = joined("words")
        self.asks = joined("asks")
        self.tagged = joined("tagged")


class _Timeline:
    """Each tier's neighbours (memories of one tier are never the other's neighbours)."""

    def __init__(self, here: Timeline, there: Timeline, offset: int):
        self._here, self._there, self._offset = here, there, offset
        self._joined: tuple[tuple[int, int], npt.NDArray[np.int64]] | None = None

    def neighbours(self, reach: int, window_us: int) -> npt.NDArray[np.int64]:
        known = self._joined
        if known is None or known[0] != (reach, window_us):
            mine = self._here.neighbours(reach, window_us)
            theirs = self._there.neighbours(reach, window_us)
            out = np.zeros((self._offset + len(theirs), mine.shape[1]), dtype=np.int64)
            out[:len(mine)] = mine
            out[self._offset:] = np.where(theirs > 0, theirs + self._offset, 0)
            known = self._joined = ((reach, window_us), out)
        return known[1]


class _Joined:
    """What the view copies of both stores, kept while neither changes."""

    def __init__(self, here: TierStore, there: TierStore, there_workspace: str):
        self.there_workspace = there_workspace
        self.offset = offset = max(len(here.columns.present), here.timeline.size)
        self.there = weakref.ref(there)
        self.version = (here.version, there.version)
        self.catalog = _catalog(here.catalog, there.catalog, offset)
        self.per_workspace = {**here.per_workspace, **there.per_workspace}
        self.timeline = _Timeline(here.timeline, there.timeline, offset)
        self.columns = _Columns(here.columns, there.columns, offset)
        self.scopes: tuple[object, ScopeAnswers] = (-1, {})

    def of(self, there: TierStore, there_workspace: str) -> bool:
        return self.there() is there and self.there_workspace == there_workspace


class Beside:
    """The RankingStore (ranking.py) of a workspace's store with another tier's beside it,
    whose channels give at most `there_pool` candidates each (only its best can reach a
    page)."""

    def __init__(self, joined: _Joined, here: TierStore, there: TierStore, there_pool: int):
        self._joined = joined
        offset = joined.offset
        self.catalog, self.per_workspace = joined.catalog, joined.per_workspace
        self.timeline, self.columns = joined.timeline, joined.columns
        self.vectors = _Vectors(here.vectors, there.vectors, offset, there_pool)
        self.keywords = _Keywords(here.keywords, there.keywords, joined.there_workspace,
                                  offset, there_pool)

    @property
    def version(self) -> object:
        return self._joined.version

    @property
    def scopes(self) -> tuple[object, ScopeAnswers]:
        return self._joined.scopes

    @scopes.setter
    def scopes(self, value: tuple[object, ScopeAnswers]) -> None:
        self._joined.scopes = value


_KEPT: weakref.WeakKeyDictionary[object, _Joined] = weakref.WeakKeyDictionary()
_KEPT_LOCK = threading.Lock()


def beside(here: TierStore, there: TierStore, there_workspace: str, there_pool: int
           ) -> Beside:
    """`here` with `there` beside it; what it copies is kept until either store changes.
    Both read locks held."""
    known = _KEPT.get(here)
    if known is None or known.version != (here.version, there.version) \
            or not known.of(there, there_workspace):
        known = _Joined(here, there, there_workspace)
        with _KEPT_LOCK:
            _KEPT[here] = known
    return Beside(known, here, there, there_pool)
