"""Pairs of memories an agent should look at: near duplicates, and same-subject memories that
disagree on a value. Reported on store and on search results, with the ways to settle them."""
import threading
from itertools import islice

import numpy as np

from ..search.neighbour_table import AGREE, DISAGREE, KEPT, UNKNOWN, NeighbourTable
from ..core.records import Memory
from ..search.ranking import SearchFilter, scope_ids
from .values import value_disagreement

NEIGHBOURS = KEPT - 1
FORGET_ALL_FROM = 32  # a write changing more memories than this forgets every entry
MAX_ENTRIES = 5000  # per store; an entry with its flags' previews holds ~1-5 KB


def neighbour_floor(settings) -> float:
    """The similarity conflict neighbours are found down to: a value disagreement is flagged
    from conflict_value_floor, a near duplicate from conflict_threshold."""
    return min(settings.conflict_threshold, settings.conflict_value_floor)


def resolutions(a: Memory, b: Memory) -> list[str]:
    newer, older = (a, b) if (a.updated_at, a.id) >= (b.updated_at, b.id) else (b, a)
    return [
        f"memory_relate(from_id={newer.id}, to_id={older.id}, relationship='SUPERSEDES') if "
        f"#{newer.id} replaces #{older.id}",
        f"memory_keep_separate(pairs=[[{a.id}, {b.id}]]) if both hold",
    ]


def workspace_ids(store, workspace: str) -> frozenset[int] | None:
    """The ids of one workspace's memories, or None when they are the whole database."""
    return scope_ids(store, SearchFilter(workspace=workspace))


class NeighbourCache:
    """Each memory's nearest memories within a workspace (what its conflict flags come from),
    kept across writes, and the flags made from them.

    When the workspace is the whole database (the usual case) they live in a NeighbourTable
    (neighbour_table.py): every memory's row, kept exact through writes and saved with the
    vector snapshot. Otherwise (a database shared by workspaces) they are entries here, by
    memory and workspace: finding them costs a pass over the vector matrix (a page of ten:
    3-4 ms at 10k memories), so a write forgets only the entries it can change: those of the
    memories it wrote or removed, those that list one of them, and those one of them could
    now enter. Past MAX_ENTRIES the oldest tenth goes. The flags are kept until the graph
    changes (an agent settled a pair) or a memory they show changes. Readers add entries
    under the store's read lock, so changes to the entries take a lock of their own."""

    def __init__(self, table: NeighbourTable | None = None):
        self._hits: dict[tuple[int, str], list[tuple[int, float]]] = {}
        self._flags: dict[tuple[int, str], tuple[int, list[dict]]] = {}  # graph version, flags
        self._listed_in: dict[int, set[tuple[int, str]]] = {}  # id -> entries listing it
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

    def use_floor(self, floor: float) -> None:
        if self.floor != floor:
            self.clear()
            self.floor, self.table = floor, NeighbourTable(floor)

    def hits(self, key: tuple[int, str], whole: bool) -> list[tuple[int, float]] | None:
        """An entry's hits (None: not known). `whole`: its workspace is the database."""
        return self.table.get(key[0]) if whole else self._hits.get(key)

    def put(self, key: tuple[int, str], hits: list[tuple[int, float]], whole: bool) -> None:
        with self._lock:
            self._flags.pop(key, None)  # made from hits this replaces
            if whole:
                self.table.put(key[0], hits)
                return
            if len(self._hits) >= MAX_ENTRIES:
                for oldest in list(islice(self._hits, MAX_ENTRIES // 10)):
                    self._drop(oldest)
            self._hits[key] = hits
            self._workspaces.add(key[1])
            for other_id, _ in hits:
                self._listed_in.setdefault(other_id, set()).add(key)

    def _drop(self, key: tuple[int, str]) -> None:
        self._flags.pop(key, None)
        for other_id, _ in self._hits.pop(key, ()):
            holders = self._listed_in.get(other_id)
            if holders is not None:
                holders.discard(key)
                if not holders:
                    del self._listed_in[other_id]

    def flags(self, key: tuple[int, str], whole: bool, graph_version: int,
              make) -> list[dict] | None:
        """The flags of an entry (None if it has none), made from its hits by `make`."""
        made = self._flags.get(key)
        if made is not None and made[0] == graph_version:
            return made[1]
        hits = self.hits(key, whole)
        if hits is None:
            return None
        flags = make(hits, self.table.verdicts_of(key[0]) if whole else None)
        with self._lock:
            if len(self._flags) >= MAX_ENTRIES:
                for oldest in list(islice(self._flags, MAX_ENTRIES // 10)):
                    del self._flags[oldest]
            self._flags[key] = (graph_version, flags)
        return flags

    def forget(self, store, changed: list[int], removed: list[int],
               moved: list[int] | None = None) -> None:
        """After a write (write lock held): `changed` memories were added or rewritten (the
        index holds their vectors now), `removed` ones are gone; `moved`, those of `changed`
        whose vectors are new (all of them when not given)."""
        moved = changed if moved is None else moved
        if self.table is not None:
            self._forget_rows(store, changed, removed, moved)
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

    def _forget_rows(self, store, changed: list[int], removed: list[int],
                     moved: list[int]) -> None:
        """The table's part of forget(): rows keep up with the write; flags go wherever a
        memory they show (its preview, which of two is newer) was written or removed."""
        table = self.table
        stale = set(table.update(store.vectors, moved, removed))  # rows listing those too
        stale |= set(changed) | set(removed)
        stale.update(table.listing(set(changed) - set(moved)).tolist())  # previews changed
        if self._flags:
            with self._lock:
                for key in [key for key in self._flags if key[0] in stale]:
                    del self._flags[key]


def conflicts(store, memories: list[Memory], settings, workspace: str) -> dict[int, list[dict]]:
    """For each of `memories`, the memories of `workspace` that look like it, unless an
    agent already settled the pair (a keep-separate verdict or a SUPERSEDES link); by memory
    id, only those with any. One pass over the vector matrix for those not already known
    (store.neighbours). Read or write lock held."""
    cache: NeighbourCache = store.neighbours
    cache.use_floor(neighbour_floor(settings))
    scope = workspace_ids(store, workspace)
    whole = scope is None
    todo = [m for m in memories if cache.hits((m.id, workspace), whole) is None]
    embedded = [(m, v) for m, v in ((m, store.vectors.vector(m.id)) for m in todo)
                if v is not None]
    if embedded:
        nearest = store.vectors.search_many(np.stack([v for _, v in embedded]), scope, KEPT,
                                            min_score=cache.floor)
        for (m, _), hits in zip(embedded, nearest):
            cache.put((m.id, workspace), hits, whole)
    found = {}
    graph_version = store.graph.version
    for m in memories:
        flagged = cache.flags((m.id, workspace), whole, graph_version,
                              lambda hits, verdicts, m=m: _flags(store, m, hits, verdicts,
                                                                 settings))
        if flagged:
            found[m.id] = flagged
    return found


def fill_rows(store, floor: float, limit: int) -> int:
    """Find the neighbour rows (and their value verdicts) of up to `limit` memories that have
    none yet, in a database holding one workspace: the housekeeping thread's work while the
    database is idle, so that after an import or an open without saved rows searches find
    them known. Returns how many were found (0: nothing left to do). Takes the read lock."""
    with store.lock.read():
        if sum(1 for n in store.per_workspace.values() if n > 0) > 1:
            return 0  # shared by workspaces: entries are found per workspace when asked
        cache: NeighbourCache = store.neighbours
        cache.use_floor(floor)
        table = cache.table
        ids, _ = store.vectors.rows()
        todo = ids[~table.known_at(ids) & (ids > 0)][:limit].tolist()
        if not todo:
            return 0
        nearest = store.vectors.search_many(np.stack([store.vectors.vector(i) for i in todo]),
                                            None, KEPT, min_score=floor)
        catalog = store.catalog
        for memory_id, hits in zip(todo, nearest):
            cache.put((memory_id, ""), hits, True)
            m, verdicts = catalog.get(memory_id), table.verdicts_of(memory_id)
            for j, (other_id, _) in enumerate(hits):
                other = catalog.get(other_id)
                if m is not None and other is not None and other_id != memory_id:
                    _disagree(m, other, verdicts, j)
        return len(todo)


def _disagree(m: Memory, other: Memory, verdicts, j: int) -> bool:
    """Whether the two disagree on a value: entry j of the table's `verdicts` when recorded
    (recorded here when not), checked afresh when there are none."""
    if verdicts is not None and verdicts[j] != UNKNOWN:
        return verdicts[j] == DISAGREE
    disagree = value_disagreement(m.content, other.content)
    if verdicts is not None:
        verdicts[j] = DISAGREE if disagree else AGREE
    return disagree


def _flags(store, m: Memory, hits, verdicts, settings) -> list[dict]:
    """`verdicts`: the table's record, entry by entry, of whether the two disagree on a
    value (filled in here where unknown), or None."""
    found = []
    for j, (other_id, similarity) in enumerate(hits):
        other = store.catalog.get(other_id)
        if other is None or other_id == m.id or store.graph.kept_separate(m.id, other_id) \
                or any(rel == "SUPERSEDES" for rel, _, _ in store.graph.between(m.id, other_id)):
            continue
        if _disagree(m, other, verdicts, j):
            kind = "value_disagreement"
        elif similarity >= settings.conflict_threshold:
            kind = "near_duplicate"
        else:
            continue
        found.append({"type": kind, "memory_id": other_id, "similarity": round(similarity, 3),
                      "content": other.content[:160], "resolutions": resolutions(m, other)})
    return found
