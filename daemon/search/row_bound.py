"""An upper bound on every row's dot product with a query, read from a copy of the matrix in
fewer dimensions, so a large index reads only the rows that can still matter in full.

With B an orthonormal basis of the directions the rows vary most in (its columns), each row
x and query q split into a part inside B and a rest orthogonal to it:

    x . q  =  (B'x) . (B'q)  +  rest(x) . rest(q)  <=  (B'x) . (B'q) + |rest(x)| |rest(q)|

The first term is a product over `dims` columns instead of all of them, the second a
multiplication by one stored norm per row. It holds for any orthonormal B, so the answer is
exact whatever the basis; a good basis only makes the bound tighter. On MiniLM embeddings of
project notes, 96 of 384 dimensions leave 2-7% of rows above the 100th best score.

Each row's norm is kept as one more column of its low copy, and each query's as one more
column of its own, so the whole bound is a single matrix product: adding the norms' product
afterwards cost as much again as the product (bench/RESULTS.md#search-profiles).
"""
import numpy as np

from ..core.growable import grown

DIMS = 96
SAMPLE_ROWS = 4096
# float32 rounding in the two products: a bound must never fall below the score it bounds
SLACK = 1e-3
MANY_QUERIES = 16  # from here the queries x rows product is laid out without a copy


class RowBound:
    def __init__(self, sample: np.ndarray, capacity: int):
        """`sample`: rows like the ones to come (the basis is fitted to them once)."""
        if len(sample) > SAMPLE_ROWS:  # picked before widening: all rows as float64 is large
            picked = np.random.default_rng(0).choice(len(sample), SAMPLE_ROWS, replace=False)
            sample = sample[np.sort(picked)]
        sample = np.asarray(sample, dtype=np.float64)
        # the directions of largest second moment: eigenvectors of X'X, largest first
        _, vectors = np.linalg.eigh(sample.T @ sample)
        self.basis = np.ascontiguousarray(vectors[:, ::-1][:, :DIMS], dtype=np.float32)
        # per row: its coordinates in the basis, then the norm of its rest
        self.low = np.zeros((capacity, self.basis.shape[1] + 1), dtype=np.float32)

    def _split(self, vectors: np.ndarray) -> np.ndarray:
        """Each vector's coordinates in the basis, then the norm of what they leave out."""
        low = vectors @ self.basis
        rest = np.linalg.norm(vectors - low @ self.basis.T, axis=1)
        return np.concatenate([low, rest[:, None]], axis=1)

    def set_rows(self, first: int, vectors: np.ndarray) -> None:
        """Rows first, first+1, ... now hold `vectors`."""
        self.low = grown(self.low, first + len(vectors))
        self.low[first:first + len(vectors)] = self._split(np.asarray(vectors, dtype=np.float32))

    def move(self, source: int, target: int) -> None:
        self.low[target] = self.low[source]

    def bounds(self, queries: np.ndarray, rows: int) -> np.ndarray:
        """(len(queries), rows): at least the dot product of each query with each of the
        first `rows` rows."""
        split = self._split(np.asarray(queries, dtype=np.float32))
        if len(split) < MANY_QUERIES:
            # rows x queries is the fast product for a few queries (a long matrix times a
            # thin one); each query's bounds are then read row by row, so they are laid out
            # that way
            out = np.ascontiguousarray((self.low[:rows] @ split.T).T)
        else:
            # for many (the idle filler's rows), that layout's copy cost more than the
            # product: 1,024 queries at 100k rows 2.4 s against 0.3 s
            out = split @ self.low[:rows].T
        out += SLACK
        return out
