"""Who was stored next to whom: each memory's workspace and creation time in arrays indexed by
memory id, and from them every memory's neighbours in storage order.

Context ranking (ranking.py) lifts a memory by its neighbours' evidence. Looking neighbours
up memory by memory was a Python loop per query (bench/RESULTS.md#search-profiles); here they
are one gather from an array that is rebuilt (a few numpy passes, no Python loop) only when a
memory is added, removed or moved. Id 0 is never a memory's id, so 0 means "no neighbour"
and its slots stay empty in every array.
"""
from collections.abc import Iterable
from datetime import datetime, timedelta

import numpy as np

from ..core.growable import grown
from ..core.records import Memory

NO_WORKSPACE = -1
_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


def all_microseconds(times: list[datetime]) -> np.ndarray:
    """Exact integer microseconds since 1970 (float seconds lose the last digit). Stored
    times are naive UTC (an aware one counts by its clock time). Faster than numpy's
    conversion of datetime objects; replace() only where needed (it cost three quarters)."""
    return np.fromiter((((at if at.tzinfo is None else at.replace(tzinfo=None)) - _EPOCH)
                        // _MICROSECOND for at in times), dtype=np.int64, count=len(times))


class Timeline:
    def __init__(self) -> None:
        self._created = np.zeros(64, dtype=np.int64)                 # microseconds
        self._workspace = np.full(64, NO_WORKSPACE, dtype=np.int32)  # code, or NO_WORKSPACE
        self._codes: dict[str, int] = {}
        self._changed = True
        self._neighbours: tuple[tuple[int, int], np.ndarray] | None = None

    @classmethod
    def of(cls, memories: Iterable[Memory]) -> "Timeline":
        timeline = cls()
        timeline.put_many(memories)
        return timeline

    def put_many(self, memories: Iterable[Memory]) -> None:
        """Memories added or changed (only a new id, workspace or time changes neighbours)."""
        kept = [m for m in memories if m.id > 0]  # 0 and below: not an id
        if kept:
            self._put(kept)

    def _put(self, memories: list[Memory]) -> None:
        ids = np.fromiter((m.id for m in memories), dtype=np.int64, count=len(memories))
        self._created = grown(self._created, int(ids.max()) + 1)
        self._workspace = grown(self._workspace, int(ids.max()) + 1, NO_WORKSPACE)
        codes = self._codes
        workspace = np.fromiter((codes.setdefault(m.workspace, len(codes)) for m in memories),
                                dtype=np.int32, count=len(memories))
        created = all_microseconds([m.created_at for m in memories])
        if (self._workspace[ids] != workspace).any() or (self._created[ids] != created).any():
            self._workspace[ids], self._created[ids] = workspace, created
            self._changed = True

    def remove_many(self, ids: Iterable[int]) -> None:
        for memory_id in ids:
            if 0 < memory_id < len(self._workspace) and \
                    self._workspace[memory_id] != NO_WORKSPACE:
                self._workspace[memory_id] = NO_WORKSPACE
                self._changed = True

    @property
    def size(self) -> int:
        """The length of the arrays indexed by id: past every id put here."""
        return len(self._workspace)

    def neighbours(self, reach: int, window_us: int) -> np.ndarray:
        """An array indexed by memory id: for each memory, the ids of the memories of its
        workspace stored just before it (distance 1..reach) then just after it (1..reach),
        0 where there is none. Each step is at most `window_us` from the one before it: a
        longer pause ends the run. Read lock held (changes come under the write lock);
        rebuilt only after a change."""
        cached = self._neighbours
        if cached is None or self._changed or cached[0] != (reach, window_us):
            self._changed = False
            cached = self._neighbours = ((reach, window_us), self._build(reach, window_us))
        return cached[1]

    def _build(self, reach: int, window_us: int) -> np.ndarray:
        out = np.zeros((len(self._workspace), 2 * reach), dtype=np.int64)
        present = np.flatnonzero(self._workspace != NO_WORKSPACE)  # ascending ids
        if len(present) == 0:
            return out
        workspace = self._workspace[present]
        if workspace.min() != workspace.max():
            present = present[np.argsort(workspace, kind="stable")]  # by workspace, then id
            workspace = self._workspace[present]
        created = self._created[present]
        n = len(present)
        # linked[i]: memory i follows memory i-1 in its workspace within the window
        linked = np.zeros(n, dtype=bool)
        linked[1:] = (workspace[1:] == workspace[:-1]) & \
            (np.abs(created[1:] - created[:-1]) <= window_us)
        position = np.arange(n)
        back = np.ones(n, dtype=bool)   # linked all the way back to distance `step`
        ahead = np.ones(n, dtype=bool)  # linked all the way forward
        for step in range(1, min(reach, n - 1) + 1):
            shifted = np.zeros(n, dtype=bool)
            shifted[step - 1:] = linked[:n - step + 1]  # linked[i - step + 1]
            back &= shifted
            out[present[back], step - 1] = present[position[back] - step]
            shifted = np.zeros(n, dtype=bool)
            shifted[:n - step] = linked[step:]          # linked[i + step]
            ahead &= shifted
            out[present[ahead], reach + step - 1] = present[position[ahead] + step]
        return out
