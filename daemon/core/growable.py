"""Arrays indexed by memory id or row that grow as ids and rows are added."""
import numpy as np


def grown(array: np.ndarray, size: int, fill: float = 0) -> np.ndarray:
    """`array` with room for at least `size` entries along its first axis, new entries set to
    `fill`; by half again at least, so one append at a time stays cheap. The same array when
    it is big enough."""
    if size <= len(array):
        return array
    bigger = np.full((max(size, len(array) + len(array) // 2),) + array.shape[1:], fill,
                     dtype=array.dtype)
    bigger[:len(array)] = array
    return bigger
