"""The conflict neighbours a store keeps: each memory's nearest memories, kept across writes,
and the flags made from them (curation/conflicts.py finds and reads them)."""
import threading
from collections.abc import Callable
from itertools import islice
from typing import TYPE_CHECKING, Literal, TypedDict

import numpy as np

from ..search.neighbour_table import NeighbourTable

if TYPE_CHECKING:  # the store keeps this cache; the cache reads the store's index
    from .store import MemoryStore

FORGET_ALL_FROM = 32  # a write changing more memories than this forgets every entry
MAX_ENTRIES = 5000  # per store; an entry with its flags' previews holds ~1-5 KB

Key = tuple[int, str]  # (memory id, workspace): whose nearest memories, among which
Hits = list[tuple[int, float]]  # (memory id, cosine), nearest first


class ConflictFlag(TypedDict):
    """One memory that looks like another (curation/conflicts.py makes them)."""
    type: Literal["value_disagreement", "near_duplicate"]
    memory_id: int  # the other memory
    similarity: float
    content: str  # the other's text, shortened
    newer: bool  # whether the other is the newer of the two


# hits, and the table that records value verdicts (None: an entry) -> the flags
MakeFlags = Callable[[Hits, NeighbourTable | None], list[ConflictFlag]]


class NeighbourCache:
    """Each memory's nearest memories within a workspace (what its conflict flags come from),
    kept across writes, and the flags made from them.

    When the workspace is the whole database (the usual case) they live in a NeighbourTable
    (neighbour_table.py): every memory's row, kept exact through writes and saved with the
    vector snapshot. Otherwise (a database shared by workspaces) they are entries here, by
    memory and workspace: finding them costs a pass over the vector matrix, so a write
    forgets only the entries it can change: those of the memories it wrote or removed,
    those that list one of them, and those one of them could now enter. Past MAX_ENTRIES
    the oldest tenth goes. The flags are kept until the graph changes (an agent settled a
    pair) or a memory they show changes. Readers add entries under the store's read lock,
    so changes to the entries take a lock of their own."""

    def __init__(self, table: NeighbourTable | None = None):
        self._hits: dict[Key, Hits] = {}
        self._flags: dict[Key, tuple[int, list[ConflictFlag]]] = {}  # graph version, flags
        self._listed_in: dict[int, set[Key]] = {}  # id -> entries listing it
        self._workspaces: set[str] = set()  # of the entries
        self.table = table  # the whole database's rows
        self.floor: float | None = None if table is None else table.floor
        self._lock = threading.Lock()

    def size(self) -> int:
        return len(self._hits) + (0 if self.table is None else self.table.size())

    def clear(self) -> None:
        self._clear_entries()
        if self.table is not None:
            self.table.clear()

    def _clear_entries(self) -> None:
        self._hits, self._flags, self._listed_in, self._workspaces = {}, {}, {}, set()

    def use_floor(self, floor: float, rule: int) -> None:
        """Rows down to `floor`; value verdicts of `rule` (those of another are found again)."""
        if self.floor != floor or self.table is None:
            self.clear()
            self.floor, self.table = floor, NeighbourTable(floor, rule)
        elif self.table.rule != rule:
            self.table.forget_verdicts(rule)

    @property
    def rows(self) -> NeighbourTable:
        """The whole database's rows (use_floor() made them)."""
        assert self.table is not None
        return self.table

    def hits(self, key: Key, whole: bool) -> Hits | None:
        """An entry's hits (None: not known). `whole`: its workspace is the database."""
        return self.rows.get(key[0]) if whole else self._hits.get(key)

    def put(self, key: Key, hits: Hits, whole: bool) -> None:
        with self._lock:
            self._flags.pop(key, None)  # made from hits this replaces
            if whole:
                self.rows.put(key[0], hits)
                return
            if len(self._hits) >= MAX_ENTRIES:
                for oldest in list(islice(self._hits, MAX_ENTRIES // 10)):
                    self._drop(oldest)
            self._hits[key] = hits
            self._workspaces.add(key[1])
            for other_id, _ in hits:
                self._listed_in.setdefault(other_id, set()).add(key)

    def _drop(self, key: Key) -> None:
        self._flags.pop(key, None)
        for other_id, _ in self._hits.pop(key, ()):
            holders = self._listed_in.get(other_id)
            if holders is not None:
                holders.discard(key)
                if not holders:
                    del self._listed_in[other_id]

    def flags(self, key: Key, whole: bool, graph_version: int,
              make: MakeFlags) -> list[ConflictFlag] | None:
        """The flags of an entry (None if it has none), made from its hits by `make`
        (given the table that records value verdicts when the entry is one of its rows)."""
        made = self._flags.get(key)
        if made is not None and made[0] == graph_version:
            return made[1]
        hits = self.hits(key, whole)
        if hits is None:
            return None
        flags = make(hits, self.rows if whole else None)
        with self._lock:
            if len(self._flags) >= MAX_ENTRIES:
                for oldest in list(islice(self._flags, MAX_ENTRIES // 10)):
                    del self._flags[oldest]
            self._flags[key] = (graph_version, flags)
        return flags

    def forget(self, store: "MemoryStore", changed: list[int], removed: list[int],
               moved: list[int] | None = None, keep_rows: bool = False) -> None:
        """After a write (write lock held): `changed` memories were added or rewritten (the
        index holds their vectors now), `removed` ones are gone; `moved`, those of `changed`
        whose vectors are new (all of them when not given). `keep_rows`: the table keeps
        every row whatever the write's size (Changes.keep_rows)."""
        moved = changed if moved is None else moved
        if self.table is not None:
            self._forget_rows(store, changed, removed, moved, keep_rows)
        if not self._hits:
            return
        if len(changed) + len(removed) > FORGET_ALL_FROM or self.floor is None:
            self._clear_entries()
            return
        written = set(changed) | set(removed)
        stale = {(i, ws) for i in written for ws in self._workspaces}  # their own entries
        for memory_id in written:
            stale |= self._listed_in.pop(memory_id, set())  # entries that list them
        # Entries one of `changed` may now enter: those of its workspace within the floor.
        # (When an entry's scope is the whole database, every memory is in its workspace.)
        keys = list(self._hits)
        ids = np.fromiter((key[0] for key in keys), dtype=np.int64, count=len(keys))
        for memory_id in changed:
            m, vector = store.catalog.get(memory_id), store.vectors.vector(memory_id)
            if m is None or vector is None:
                continue
            near = store.vectors.scores(vector).cosines(ids) >= self.floor
            stale.update(key for key in (keys[k] for k in np.flatnonzero(near).tolist())
                         if key[1] == m.workspace)
        with self._lock:
            for key in stale:
                self._drop(key)

    def _forget_rows(self, store: "MemoryStore", changed: list[int], removed: list[int],
                     moved: list[int], keep_rows: bool) -> None:
        """The table's part of forget(): rows keep up with the write; flags go wherever a
        memory they show (its preview, which of two is newer) was written or removed."""
        table = self.rows
        stale = set(table.update(store.vectors, moved, removed, keep_rows))  # and listing
        stale |= set(changed) | set(removed)
        stale.update(table.listing(set(changed) - set(moved)).tolist())  # previews changed
        if self._flags:
            with self._lock:
                for key in [key for key in self._flags if key[0] in stale]:
                    del self._flags[key]
