"""Every memory's nearest memories, by id, kept exact through writes: what conflict flags are
made from when a database holds one workspace (conflicts.py).

Finding a memory's nearest memories costs a pass over the vector matrix, and a search shows
ten memories it has usually not shown before (bench/RESULTS.md#search-profiles).
So each row of the table, once found, is kept, and a write changes only what it must:

- a memory written or removed loses its own row;
- a row listing it loses it; a full row (it may have had an eleventh neighbour beyond its
  last) is forgotten instead, to be found again when asked for;
- a memory written with a new vector gets its own row and enters every known row it now
  belongs in. One product of the written vectors with the matrix finds both; a write too
  large for that forgets every row, unless it asks to keep them whatever its size
  (memory_import, 200 memories at a time: a search right after an import would otherwise
  find the rows of every page it shows).

Each row is what VectorIndex.search_many(vector, None, KEPT, min_score=floor) returns: at
most KEPT (id, similarity) pairs, best first, ties by id. The memory itself is among them.
"""
from collections.abc import Iterable, Mapping

import numpy as np

from ..core.growable import grown
from .indexes import VectorIndex, top_hits

KEPT = 11  # a memory's ten nearest others, and itself
# A write of n vectors into an index of N rows compares n x N pairs to keep every row;
# past this many (an import) it forgets them all (bench/RESULTS.md#search-profiles).
MAINTAIN_UP_TO = 4_000_000
CHUNK = 128  # written vectors compared at a time
MANY_VECTORS = 64  # from this many, vectors @ matrix.T (bench/RESULTS.md#search-after-import)
STATE = ("neighbour_floor", "neighbour_rows", "neighbour_ids", "neighbour_sims",
         "neighbour_count", "neighbour_verdicts", "neighbour_rule")  # what state() gives
UNKNOWN, AGREE, DISAGREE = 0, 1, 2  # an entry's verdict: do the two name different values?


class NeighbourTable:
    def __init__(self, floor: float, rule: int = 0):
        self.floor = floor
        self.rule = rule  # the value rule the verdicts were recorded under
        self.ids = np.zeros((0, KEPT), dtype=np.int64)
        self.sims = np.zeros((0, KEPT), dtype=np.float32)
        self.count = np.zeros(0, dtype=np.int64)  # entries of each row
        self.known = np.zeros(0, dtype=bool)
        # Per entry, whether the two memories disagree on a value (values.py): checking
        # texts cost more than finding the rows, and it holds while both keep their text
        # (a new text is a new vector, which takes the memory out of every row).
        self.verdicts = np.zeros((0, KEPT), dtype=np.int8)
        # since the writer last took them (take_written): rows a write forgot, to find
        # again, and rows a written memory entered without a verdict
        self._lost: set[int] = set()
        self._entered: set[int] = set()

    def size(self) -> int:
        return int(self.known.sum())

    def clear(self) -> None:
        self.known[:] = False
        self._lost, self._entered = set(), set()  # all of them: the idle filler's work

    def get(self, memory_id: int) -> list[tuple[int, float]] | None:
        if not 0 < memory_id < len(self.known) or not self.known[memory_id]:
            return None
        n = self.count[memory_id]
        return list(zip(self.ids[memory_id, :n].tolist(), self.sims[memory_id, :n].tolist()))

    def verdicts_of(self, memory_id: int) -> np.ndarray:
        """The row's verdicts (UNKNOWN until someone records one), to read and fill in place.
        Call right after get() found the row."""
        return self.verdicts[memory_id, :self.count[memory_id]]

    def verdict(self, memory_id: int, other_id: int, at: int | None = None) -> int:
        """The verdict recorded for the pair in either one's row (UNKNOWN if neither has
        one): a pair is often in both rows, and one verdict holds for both (copied into
        the first row here). `at`: where the first row lists the other, when known."""
        if at is not None and self.verdicts[memory_id, at] != UNKNOWN:
            return int(self.verdicts[memory_id, at])
        j = self._entry(other_id, memory_id)
        found = UNKNOWN if j is None else int(self.verdicts[other_id, j])
        if found != UNKNOWN:
            self.record(memory_id, other_id, found)
        elif at is None:
            j = self._entry(memory_id, other_id)
            found = UNKNOWN if j is None else int(self.verdicts[memory_id, j])
        return found

    def record(self, memory_id: int, other_id: int, verdict: int) -> None:
        """Record the pair's verdict in each of the two rows that lists the other."""
        for row, other in ((memory_id, other_id), (other_id, memory_id)):
            j = self._entry(row, other)
            if j is not None:
                self.verdicts[row, j] = verdict

    def _entry(self, row: int, other_id: int) -> int | None:
        """Where `row`'s known row lists `other_id`, or None."""
        if not 0 < row < len(self.known) or not self.known[row]:
            return None
        try:
            return int(self.ids[row, :self.count[row]].tolist().index(other_id))
        except ValueError:
            return None

    def unsettled(self, limit: int) -> list[int]:
        """Up to `limit` known rows with an entry whose verdict is not recorded yet."""
        placed = np.arange(KEPT)[None, :] < self.count[:, None]
        open_entries = placed & (self.verdicts == UNKNOWN) & \
            (self.ids != np.arange(len(self.known))[:, None])
        rows: list[int] = np.flatnonzero(self.known & open_entries.any(axis=1))[:limit].tolist()
        return rows

    def put(self, memory_id: int, hits: list[tuple[int, float]]) -> None:
        if memory_id <= 0 or len(hits) > KEPT:
            return  # not an id of ours (a foreign row); more than a row holds: not a row
        self._room(memory_id + 1)
        self.count[memory_id] = len(hits)
        self.ids[memory_id, :len(hits)] = [i for i, _ in hits]
        self.sims[memory_id, :len(hits)] = [s for _, s in hits]
        self.verdicts[memory_id] = UNKNOWN
        self.known[memory_id] = True

    def _room(self, size: int) -> None:
        if size > len(self.known):
            self.ids = grown(self.ids, size)
            self.sims = grown(self.sims, size)
            self.count = grown(self.count, size)
            self.verdicts = grown(self.verdicts, size)
            self.known = grown(self.known, size)

    def take_written(self) -> tuple[list[int], list[int]]:
        """Since the last call: the rows writes forgot (and not found again since), and the
        known rows written memories entered."""
        lost, entered = self._lost, self._entered
        self._lost, self._entered = set(), set()
        return (sorted(i for i in lost if 0 < i < len(self.known) and not self.known[i]),
                sorted(i for i in entered if 0 < i < len(self.known) and self.known[i]))

    def known_at(self, ids: np.ndarray) -> np.ndarray:
        """Whether each of `ids` has a known row."""
        inside = (ids > 0) & (ids < len(self.known))
        out = np.zeros(len(ids), dtype=bool)
        out[inside] = self.known[ids[inside]]
        return out

    def listing(self, ids: Iterable[int]) -> np.ndarray:
        """The known rows (memory ids) that list any of `ids`."""
        wanted = np.fromiter(ids, dtype=np.int64)
        if not len(wanted) or not self.known.any():
            return np.zeros(0, dtype=np.int64)
        placed = np.arange(KEPT)[None, :] < self.count[:, None]
        return np.flatnonzero(self.known & (np.isin(self.ids, wanted) & placed).any(axis=1))

    def update(self, index: VectorIndex, moved: list[int], removed: list[int],
               keep_rows: bool = False) -> list[int]:
        """After a write (write lock held): `moved` memories have new vectors in `index` (a
        VectorIndex), `removed` ones are gone. The rows of `moved` are found from the same
        product that enters them into the other rows. `keep_rows`: keep every row however
        large the write (memory_import, a chunk at a time), instead of forgetting them all
        past MAINTAIN_UP_TO. Returns the rows whose entries changed or were forgotten."""
        written = [i for i in dict.fromkeys(moved + removed) if i > 0]
        if not written or not (self.known.any() or keep_rows):
            return []  # a table nobody fills (a database shared by workspaces)
        touched: set[int] = set()
        for row in self.listing(written).tolist():
            touched.add(row)
            n = int(self.count[row])
            keep = ~np.isin(self.ids[row, :n], written)
            if n == KEPT:  # it may have had another neighbour beyond its last: find it again
                self.known[row] = False
                self._lost.add(row)
                continue
            kept = int(keep.sum())
            self.ids[row, :kept] = self.ids[row, :n][keep]
            self.sims[row, :kept] = self.sims[row, :n][keep]
            self.verdicts[row, :kept] = self.verdicts[row, :n][keep]
            self.count[row] = kept
        own = np.array([i for i in written if i < len(self.known)], dtype=np.int64)
        self.known[own] = False
        self._lost.update(set(moved) - set(removed))
        touched.update(own.tolist())
        moved = [i for i in dict.fromkeys(moved) if i > 0 and index.vector(i) is not None]
        if moved:
            if len(moved) * len(index) > MAINTAIN_UP_TO and not keep_rows:
                touched.update(np.flatnonzero(self.known).tolist())
                self.clear()
            else:
                touched.update(self._enter(index, moved))
        return sorted(touched)

    def _enter(self, index: VectorIndex, moved: list[int]) -> set[int]:
        """Find the rows of `moved` and put each of them into every known row it now belongs
        in, from one product of their vectors with the matrix."""
        ids, matrix = index.rows()
        # columns whose row is known (those of `moved` were just forgotten)
        open_rows = self.known_at(ids) & ~np.isin(ids, moved)
        columns = np.flatnonzero(open_rows)
        rows = ids[columns]
        whole = len(columns) == len(ids)
        # A candidate must reach the floor, and in a full row its last entry too.
        full = self.count[rows] == KEPT
        least = np.where(full, self.sims[rows, KEPT - 1], self.floor).astype(np.float32)
        least = np.maximum(least, np.float32(self.floor))
        found_rows, found_ids, found_sims = [], [], []
        own: set[int] = set()
        for first in range(0, len(moved), CHUNK):
            chunk = np.array(moved[first:first + CHUNK], dtype=np.int64)
            vectors = np.stack([_indexed_vector(index, i) for i in chunk.tolist()])
            # chunk x rows, contiguous (each memory's own row is read from it in full); for
            # many vectors the other order of the product is faster and needs no copy
            scores = vectors @ matrix.T if len(chunk) >= MANY_VECTORS else \
                np.ascontiguousarray((matrix @ vectors.T).T)
            for memory_id, hits in zip(chunk.tolist(),
                                       top_hits(ids, scores, KEPT, self.floor)):
                self.put(memory_id, hits)
                own.add(memory_id)
            if not len(columns):
                continue
            if not whole:
                scores = scores[:, columns]
            which, where = np.nonzero(scores >= least[None, :])
            found_rows.append(rows[where])
            found_ids.append(chunk[which])
            found_sims.append(scores[which, where])
        new_rows = np.concatenate(found_rows) if found_rows else np.zeros(0, dtype=np.int64)
        if len(new_rows):
            self._merge(new_rows, np.concatenate(found_ids), np.concatenate(found_sims))
        entered = set(np.unique(new_rows).tolist()) | own
        self._entered |= entered
        return entered

    def _merge(self, rows: np.ndarray, ids: np.ndarray, sims: np.ndarray) -> None:
        """Add (row, id, similarity) entries, each row keeping its KEPT best (ties by id)."""
        affected = np.unique(rows)
        counts = self.count[affected]
        placed = np.arange(KEPT)[None, :] < counts[:, None]
        old_rows = np.repeat(affected, counts)
        all_rows = np.concatenate([old_rows, rows])
        all_ids = np.concatenate([self.ids[affected][placed], ids])
        all_sims = np.concatenate([self.sims[affected][placed], sims.astype(np.float32)])
        all_verdicts = np.concatenate([self.verdicts[affected][placed],
                                       np.full(len(ids), UNKNOWN, dtype=np.int8)])
        order = np.lexsort((all_ids, -all_sims, all_rows))
        all_rows, all_ids, all_sims, all_verdicts = \
            all_rows[order], all_ids[order], all_sims[order], all_verdicts[order]
        starts = np.flatnonzero(np.concatenate(([True], all_rows[1:] != all_rows[:-1])))
        lengths = np.diff(np.append(starts, len(all_rows)))
        place = np.arange(len(all_rows)) - np.repeat(starts, lengths)
        keep = place < KEPT
        self.ids[all_rows[keep], place[keep]] = all_ids[keep]
        self.sims[all_rows[keep], place[keep]] = all_sims[keep]
        self.verdicts[all_rows[keep], place[keep]] = all_verdicts[keep]
        self.count[all_rows[starts]] = np.minimum(lengths, KEPT)

    # -- kept in the vector snapshot -------------------------------------------------------

    def state(self) -> dict[str, np.ndarray]:
        """The known rows (copies), to save beside the vectors they were found from."""
        rows = np.flatnonzero(self.known)
        return dict(zip(STATE, (np.array(self.floor, dtype=np.float64), rows, self.ids[rows],
                                self.sims[rows], self.count[rows], self.verdicts[rows],
                                np.array(self.rule, dtype=np.int64))))

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray]) -> "NeighbourTable | None":
        """The table state() saved, or None if this is not one."""
        try:
            table = cls(float(state["neighbour_floor"]), int(state.get("neighbour_rule", 0)))
            rows, ids, sims, count, verdicts = (np.asarray(state[k]) for k in STATE[1:6])
        except (KeyError, TypeError, ValueError):
            return None
        if ids.shape != (len(rows), KEPT) or sims.shape != ids.shape or \
                verdicts.shape != ids.shape or verdicts.dtype != np.int8 or \
                count.shape != rows.shape or (len(rows) and (rows.min() <= 0 or
                                                             count.max() > KEPT)):
            return None
        if not len(rows):
            return table
        table._room(int(rows.max()) + 1)
        table.ids[rows], table.sims[rows] = state["neighbour_ids"], state["neighbour_sims"]
        table.count[rows], table.verdicts[rows] = count, verdicts
        table.known[rows] = True
        return table

    def forget_verdicts(self, rule: int) -> None:
        """Verdicts recorded under another value rule are found again when asked."""
        self.verdicts[:] = UNKNOWN
        self.rule = rule


def _indexed_vector(index: VectorIndex, memory_id: int) -> np.ndarray:
    """The vector of a memory update() found in the index (it enters no other)."""
    vector = index.vector(memory_id)
    assert vector is not None, memory_id
    return vector
