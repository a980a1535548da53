"""What was worked out from a memory's text, kept by the text's digest: it holds as long as
the text does, whichever memory carries it, so a write never has to invalidate it. Saved
with the vector snapshot, so that a restarted daemon does not work it out again on first
sight (curation/screening.py keeps injection markers here)."""
from collections.abc import Mapping

import numpy as np

MAX_ENTRIES = 1_000_000  # a bound on what one daemon's lifetime of texts may leave here


class ContentMemo:
    """Small integers by text digest, all worked out under one `rule` (a number naming how:
    entries of another rule are dropped when asked under this one)."""

    def __init__(self, rule: int = 0, entries: dict[int, int] | None = None):
        self.rule = rule
        self._values: dict[int, int] = entries or {}

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: int, rule: int) -> int | None:
        if rule != self.rule:
            self._values, self.rule = {}, rule
            return None
        return self._values.get(key)

    def put(self, key: int, value: int, rule: int) -> None:
        if rule != self.rule:
            self._values, self.rule = {}, rule
        if len(self._values) >= MAX_ENTRIES:
            self._values = {}
        self._values[key] = value

    def state(self, prefix: str, keep: np.ndarray) -> dict[str, np.ndarray]:
        """The entries whose digest is among `keep` (the texts saved beside them), as arrays
        named prefix_*."""
        values = dict(self._values)  # a copy: readers add entries as this runs
        keys = np.fromiter(values, dtype=np.uint64, count=len(values))
        kept = keys[np.isin(keys, keep)]
        return {f"{prefix}_rule": np.array(self.rule, dtype=np.int64),
                f"{prefix}_keys": kept,
                f"{prefix}_values": np.fromiter((values[int(k)] for k in kept.tolist()),
                                                dtype=np.int64, count=len(kept))}

    @classmethod
    def from_state(cls, prefix: str, arrays: Mapping[str, np.ndarray]) -> "ContentMemo":
        """The memo state() saved; an empty one when the arrays are missing or malformed."""
        try:
            rule = int(arrays[f"{prefix}_rule"])
            keys, values = arrays[f"{prefix}_keys"], arrays[f"{prefix}_values"]
        except (KeyError, TypeError, ValueError):
            return cls()
        if keys.ndim != 1 or keys.shape != values.shape or len(keys) > MAX_ENTRIES:
            return cls()  # not what state() writes (a planted file may hold anything)
        return cls(rule, dict(zip(keys.tolist(), values.tolist())))
