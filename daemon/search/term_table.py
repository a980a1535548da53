"""Each memory's distinct keyword-index terms, as ids into one vocabulary, kept end to end in
a single int32 array (one segment per memory), with every term's document frequency.

Context ranking asks, for a thousand or so memories per query, which of the query's terms each
contains. As tuples of strings that was a Python set operation per memory and a few hundred
bytes each; here it is a handful of numpy operations over the segments asked for, and 4 bytes
per term (bench/RESULTS.md#search-profiles).
"""
from collections.abc import Iterable
from itertools import islice

import numpy as np

from ..core.growable import grown

_EMPTY = np.zeros(0, dtype=np.int64)


class TermTable:
    COMPACT_SLACK = 65536  # dead entries tolerated beyond as many as are live

    def __init__(self) -> None:
        self._vocabulary: dict[str, int] = {}
        self._words: list[str] = []
        self._flat = np.zeros(1024, dtype=np.int32)  # every segment, end to end
        self._used = 0                               # entries of _flat written so far
        self._live = 0                               # of those, in current segments
        self._start = np.zeros(64, dtype=np.int64)   # by memory id
        self._count = np.zeros(64, dtype=np.int32)   # by memory id; 0: no terms
        self._df = np.zeros(64, dtype=np.int64)      # by term id

    def put(self, batch: dict[int, Iterable[str]]) -> None:
        """Each memory's distinct terms (replacing what it had)."""
        batch = {i: terms for i, terms in batch.items() if i > 0}  # 0 and below: not an id
        if not batch:
            return
        self.remove(batch)
        vocabulary = self._vocabulary
        known = vocabulary.get
        term_ids: list[int] = []
        counts = []
        for terms in batch.values():
            terms = tuple(terms)
            # at C speed: an open maps every term (bench/RESULTS.md#cold-open-memory)
            known_ids = list(map(known, terms))
            found: list[int] = known_ids if None not in known_ids else [  # type: ignore[assignment]
                vocabulary.setdefault(t, len(vocabulary)) if i is None else i
                for t, i in zip(terms, known_ids)]
            term_ids.extend(found)
            counts.append(len(found))
        if len(vocabulary) > len(self._words):
            self._words.extend(islice(vocabulary, len(self._words), None))
            self._df = grown(self._df, len(self._words))
        ids = np.fromiter(batch, dtype=np.int64, count=len(batch))
        self._start = grown(self._start, int(ids.max()) + 1)
        self._count = grown(self._count, int(ids.max()) + 1)
        flat = np.array(term_ids, dtype=np.int32)
        self._flat = grown(self._flat, self._used + len(flat))
        self._flat[self._used:self._used + len(flat)] = flat
        sizes = np.array(counts, dtype=np.int32)
        self._start[ids] = self._used + np.cumsum(sizes) - sizes
        self._count[ids] = sizes
        self._used += len(flat)
        self._live += len(flat)
        self._df += np.bincount(flat, minlength=len(self._df))

    def remove(self, ids: Iterable[int]) -> None:
        ids = np.fromiter(ids, dtype=np.int64)
        ids = ids[(ids > 0) & (ids < len(self._count))]
        gone = self._segments(ids)
        if len(gone):
            self._df -= np.bincount(gone, minlength=len(self._df))
            self._live -= len(gone)
        self._count[ids] = 0
        if self._used > 2 * self._live + self.COMPACT_SLACK:
            self._compact()

    def _compact(self) -> None:
        """Drop the segments no memory owns any more."""
        ids = np.flatnonzero(self._count)
        counts = self._count[ids]
        flat = self._segments(ids)
        self._flat = np.zeros(max(1024, len(flat) + len(flat) // 2), dtype=np.int32)
        self._flat[:len(flat)] = flat
        self._start[ids] = np.cumsum(counts) - counts
        self._used = self._live = len(flat)

    def _segments(self, ids: np.ndarray) -> np.ndarray:
        """The term ids of each of `ids` (known ids only), one segment after another."""
        counts = self._count[ids]
        total = int(counts.sum())
        if total == 0:
            return _EMPTY
        offsets = np.cumsum(counts) - counts  # where each segment starts in the result
        segments: np.ndarray = \
            self._flat[np.arange(total) + np.repeat(self._start[ids] - offsets, counts)]
        return segments

    def frequency(self, term: str) -> int:
        """How many memories contain `term`."""
        term_id = self._vocabulary.get(term)
        return 0 if term_id is None else int(self._df[term_id])

    def of(self, memory_id: int) -> tuple[str, ...]:
        if not 0 <= memory_id < len(self._count) or not self._count[memory_id]:
            return ()
        start = int(self._start[memory_id])
        words = self._words
        return tuple([words[t] for t in
                      self._flat[start:start + self._count[memory_id]].tolist()])

    def bits(self, terms: list[str], ids: np.ndarray) -> np.ndarray:
        """For each of `ids`, which of `terms` (at most 64) it contains: bit j for terms[j]."""
        assert len(terms) <= 64, "one bit per term in a uint64"
        out = np.zeros(len(ids), dtype=np.uint64)
        known = [(self._vocabulary[t], j) for j, t in enumerate(terms) if t in self._vocabulary]
        if not known or not len(ids):
            return out
        # every term's bit (0 for terms not asked about): one gather per entry of the
        # segments, rather than a search among the terms asked about
        bit_of = np.zeros(len(self._words), dtype=np.uint64)
        bit_of[[term_id for term_id, _ in known]] = np.array([1 << j for _, j in known],
                                                             dtype=np.uint64)
        ids = np.where((ids > 0) & (ids < len(self._count)), ids, 0)  # 0 has no terms
        counts = self._count[ids]
        found = self._segments(ids)
        if not len(found):
            return out
        bits = bit_of[found]
        filled = counts > 0
        out[filled] = np.bitwise_or.reduceat(bits, (np.cumsum(counts) - counts)[filled])
        return out
