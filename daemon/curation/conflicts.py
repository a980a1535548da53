"""Pairs of memories an agent should look at: near duplicates, and same-subject memories that
disagree on a value. Reported on store and on search results, with the ways to settle them."""
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from ..core.config import Settings
from ..core.records import Memory
from ..search.neighbour_table import AGREE, DISAGREE, KEPT, UNKNOWN, NeighbourTable
from ..search.ranking import SearchFilter, scope_ids
from ..store.neighbours import ConflictFlag, Hits, NeighbourCache
from ..store.store import MemoryStore
from . import values
from .values import value_disagreement

NEIGHBOURS = KEPT - 1
SETTLE_LOST_ROWS = 2048  # rows a store finds again at once; the idle filler finds the rest
SETTLE_SLICE = 2048  # rows settle_all() works on per read-lock hold


def neighbour_floor(settings: Settings) -> float:
    """The similarity conflict neighbours are found down to: a value disagreement is flagged
    from conflict_value_floor, a near duplicate from conflict_threshold."""
    return min(settings.conflict_threshold, settings.conflict_value_floor)


# A search page lists its conflicts without the calls that settle each pair, and says once:
SEARCH_CONFLICTS_HINT = ("each conflict names the other memory and whether it is the newer "
                         "one: memory_relate(from_id=newer, to_id=older, "
                         "relationship='SUPERSEDES') if the newer replaces the older, "
                         "memory_keep_separate(pairs=[[a, b]]) if both hold")


def is_newer(a: Memory, b: Memory) -> bool:
    """Whether `a` is the newer of the two (the later update; ties by the higher id)."""
    return (a.updated_at, a.id) > (b.updated_at, b.id)


class ResolvedFlag(ConflictFlag):
    """A conflict flag with the two calls that settle its pair."""
    resolutions: list[str]


def with_resolutions(memory_id: int, found: Sequence[ConflictFlag]) -> list[ResolvedFlag]:
    """`found` (conflicts() of one memory) with the two calls that settle each pair."""
    out: list[ResolvedFlag] = []
    for flag in found:
        other = flag["memory_id"]
        newer, older = (other, memory_id) if flag["newer"] else (memory_id, other)
        out.append(ResolvedFlag(**flag, resolutions=[
            f"memory_relate(from_id={newer}, to_id={older}, relationship='SUPERSEDES') if "
            f"#{newer} replaces #{older}",
            f"memory_keep_separate(pairs=[[{memory_id}, {other}]]) if both hold"]))
    return out


def workspace_ids(store: MemoryStore, workspace: str) -> frozenset[int] | None:
    """The ids of one workspace's memories, or None when they are the whole database."""
    return scope_ids(store, SearchFilter(workspace=workspace))


def conflicts(store: MemoryStore, memories: list[Memory], settings: Settings,
              workspace: str) -> dict[int, list[ConflictFlag]]:
    """For each of `memories`, the memories of `workspace` that look like it, unless an
    agent already settled the pair (a keep-separate verdict or a SUPERSEDES link); by memory
    id, only those with any, each as type, the other's id, similarity, the other's text (160
    characters) and whether the other is the newer (with_resolutions() adds the calls that
    settle the pair). One pass over the vector matrix for those not already known
    (store.neighbours). Read or write lock held; the lists are shared: copy to change."""
    cache = store.neighbours
    cache.use_floor(neighbour_floor(settings), values.RULE)
    scope = workspace_ids(store, workspace)
    whole = scope is None
    todo = [m for m in memories if cache.hits((m.id, workspace), whole) is None]
    embedded = [(m, v) for m, v in ((m, store.vectors.vector(m.id)) for m in todo)
                if v is not None]
    if embedded:
        nearest = store.vectors.search_many(np.stack([v for _, v in embedded]), scope, KEPT,
                                            min_score=cache.rows.floor)
        for (m, _), hits in zip(embedded, nearest):
            cache.put((m.id, workspace), hits, whole)
    found: dict[int, list[ConflictFlag]] = {}
    graph_version = store.graph.version
    for m in memories:
        def make(hits: Hits, table: NeighbourTable | None, m: Memory = m
                 ) -> list[ConflictFlag]:
            return _flags(store, m, hits, table, settings)
        flagged = cache.flags((m.id, workspace), whole, graph_version, make)
        if flagged:
            found[m.id] = flagged
    return found


def fill_rows(store: MemoryStore, floor: float, limit: int) -> int:
    """Find the neighbour rows of up to `limit` memories that have none yet, or else the
    value verdicts of up to `limit` rows that lack some, in a database holding one
    workspace: the housekeeping thread's work while the database is idle, so that after an
    import or an open without saved rows searches find them known. Returns how many rows
    were worked on (0: nothing left to do). Takes the read lock."""
    with store.lock.read():
        if not _one_workspace(store):
            return 0  # shared by workspaces: entries are found per workspace when asked
        cache = store.neighbours
        cache.use_floor(floor, values.RULE)
        ids, _ = store.vectors.rows()
        todo = ids[~cache.rows.known_at(ids) & (ids > 0)][:limit].tolist()
        todo = _find_rows(store, todo) if todo else cache.rows.unsettled(limit)
        _settle_rows(store, cache.rows, todo)
        return len(todo)


def keeps_rows(store: MemoryStore, settings: Settings, workspace: str) -> bool:
    """Whether a write of `workspace`'s memories can keep the whole database's rows: it
    is the only workspace there (or the database is empty). Makes the table if none is
    kept yet. Write lock held."""
    if not _one_workspace(store, workspace):
        return False
    store.neighbours.use_floor(neighbour_floor(settings), values.RULE)
    return True


def settle_written(store: MemoryStore) -> None:
    """After a store: find again the rows writes forgot (up to SETTLE_LOST_ROWS) and record
    the value verdicts of the rows written memories entered unjudged, so that a search
    showing any of them compares no texts. Only where the table keeps the rows (a database
    of one workspace); the idle filler does the rest."""
    table = store.neighbours.table
    if table is None or not _one_workspace(store):
        return
    lost, entered = table.take_written()
    found = _find_rows(store, [i for i in lost[:SETTLE_LOST_ROWS] if i in store.catalog])
    _settle_rows(store, table, sorted(set(entered[:SETTLE_LOST_ROWS * KEPT]) | set(found)))


def settle_all(store: MemoryStore, still_wanted: Callable[[], bool] = lambda: True,
               progress: Callable[[int, int], None] = lambda done, total: None) -> int:
    """Find again every row writes forgot and record every verdict the rows lack, in a
    database holding one workspace (after memory_import, which leaves them to this). Rows
    are taken along the neighbour graph, each right after one that lists it: a text is then
    still in values' cache when the next row needs it, where in id order it would be read
    again for nearly every row listing it. SETTLE_SLICE rows per read-lock hold; stops early
    when `still_wanted()` turns false. Returns how many rows were settled."""
    with store.lock.read():
        table = store.neighbours.table
        if table is None or not _one_workspace(store):
            return 0
        lost, _ = table.take_written()
        for first in range(0, len(lost), SETTLE_SLICE):
            _find_rows(store, [i for i in lost[first:first + SETTLE_SLICE] if i in store.catalog])
        rows = _along_the_graph(table, table.unsettled(len(table.known)))
    for first in range(0, len(rows), SETTLE_SLICE):
        if not still_wanted():
            return first
        with store.lock.read():
            if store.neighbours.table is not table:
                return first  # the rows were dropped (another floor): searches find them
            _settle_rows(store, table, rows[first:first + SETTLE_SLICE])
        progress(min(first + SETTLE_SLICE, len(rows)), len(rows))
    return len(rows)


def _along_the_graph(table: NeighbourTable, rows: list[int]) -> list[int]:
    """`rows` in depth-first order over the neighbour graph: after a row, its nearest
    unvisited neighbour among them."""
    todo, order = set(rows), list[int]()
    for start in rows:
        if start not in todo:
            continue
        todo.discard(start)
        stack = [start]
        while stack:
            row = stack.pop()
            order.append(row)
            listed = table.get(row) or ()
            for other, _ in reversed(listed):  # the nearest is taken next
                if other in todo:
                    todo.discard(other)
                    stack.append(other)
    return order


def _one_workspace(store: MemoryStore, workspace: str | None = None) -> bool:
    """Whether the database holds one workspace at most (`workspace` or none, when it is
    named), whose rows the table keeps."""
    held = {ws for ws, n in store.per_workspace.items() if n > 0}
    return held <= {workspace} if workspace is not None else len(held) <= 1


def _find_rows(store: MemoryStore, ids: list[int]) -> list[int]:
    """Find and keep the whole database's rows of `ids` (one pass over the matrix); returns
    those that have a vector, whose rows were found."""
    embedded = [(i, v) for i, v in ((i, store.vectors.vector(i)) for i in ids) if v is not None]
    if embedded:
        cache: NeighbourCache = store.neighbours
        nearest = store.vectors.search_many(np.stack([v for _, v in embedded]), None, KEPT,
                                            min_score=cache.rows.floor)
        for (memory_id, _), hits in zip(embedded, nearest):
            cache.put((memory_id, ""), hits, True)
    return [i for i, _ in embedded]


def _settle_rows(store: MemoryStore, table: NeighbourTable, rows: list[int]) -> None:
    """Record the value verdict of every entry of these rows that has none yet."""
    catalog = store.catalog
    for row in rows:
        m = catalog.get(row)
        for j, (other_id, _) in enumerate(table.get(row) or ()):
            other = catalog.get(other_id)
            if m is None or other is None:
                table.record(row, other_id, AGREE)  # gone: nothing to disagree with
            else:
                _disagree(m, other, table, j)


def _disagree(m: Memory, other: Memory, table: NeighbourTable | None,
              at: int | None = None) -> bool:
    """Whether the two disagree on a value: as `table` records it for the pair (recorded
    there when not; `at`: where m's row lists the other), checked afresh without a table.
    The texts are compared in id order, so the verdict is the pair's whichever row asks."""
    if m.id == other.id:
        return False
    known = UNKNOWN if table is None else table.verdict(m.id, other.id, at)
    if known != UNKNOWN:
        return known == DISAGREE
    first, second = (m, other) if m.id < other.id else (other, m)
    disagree = value_disagreement(first.content, second.content)
    if table is not None:
        table.record(m.id, other.id, DISAGREE if disagree else AGREE)
    return disagree


def _flags(store: MemoryStore, m: Memory, hits: Hits, table: NeighbourTable | None,
           settings: Settings) -> list[ConflictFlag]:
    """`table`: where the pairs' value verdicts are recorded (filled in here where
    unknown), or None."""
    found: list[ConflictFlag] = []
    for j, (other_id, similarity) in enumerate(hits):
        other = store.catalog.get(other_id)
        if other is None or other_id == m.id or store.graph.kept_separate(m.id, other_id) \
                or any(rel == "SUPERSEDES" for rel, _, _ in store.graph.between(m.id, other_id)):
            continue
        kind: Literal["value_disagreement", "near_duplicate"]
        if _disagree(m, other, table, j):
            kind = "value_disagreement"
        elif similarity >= settings.conflict_threshold:
            kind = "near_duplicate"
        else:
            continue
        found.append({"type": kind, "memory_id": other_id, "similarity": round(similarity, 3),
                      "content": other.content[:160], "newer": is_newer(other, m)})
    return found
