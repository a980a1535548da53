"""The mean of a vector index's rows and each row's product with it, for centred cosine
(indexes.Scores.centred): with both kept, a query reads one number per candidate row instead
of the row itself. The mean stands for what every memory shares, so it is worked out again
only when the row count has moved by MEAN_DRIFT; rows written in between get their product
with the mean as they are written."""
import numpy as np

from ..core.growable import grown

MEAN_DRIFT = 0.01  # share of the row count by which it may move before the mean is redone
_SLICE = 8192      # rows per pass: no float64 copy of the whole matrix


class CorpusMean:
    def __init__(self, matrix: np.ndarray, n: int):
        """The mean of matrix[:n] (unit rows, float32) and every row's product with it."""
        total = np.zeros(matrix.shape[1], dtype=np.float64)
        for first in range(0, n, _SLICE):
            total += matrix[first:min(n, first + _SLICE)].sum(axis=0, dtype=np.float64)
        self.rows = n
        self.mean = total / n
        self._mean32 = self.mean.astype(np.float32)
        self.row_mean = np.zeros(max(64, len(matrix)), dtype=np.float64)  # by row
        for first in range(0, n, _SLICE):
            self.row_mean[first:min(n, first + _SLICE)] = \
                matrix[first:min(n, first + _SLICE)] @ self._mean32

    def stale(self, n: int) -> bool:
        return abs(self.rows - n) > MEAN_DRIFT * self.rows

    def set_row(self, row: int, vector: np.ndarray) -> None:
        """Row `row` now holds `vector` (write lock held)."""
        self.row_mean = grown(self.row_mean, row + 1)
        self.row_mean[row] = float(np.asarray(vector, dtype=np.float32) @ self._mean32)

    def move(self, source: int, target: int) -> None:
        """Row `source` was moved to `target` (write lock held)."""
        self.row_mean[target] = self.row_mean[source]
