"""What one write does to a store, described before anything is written.

Every change to memories, links, verdicts or the graph signal is a `Changes` handed to
`MemoryStore.commit`, which checks it against the store, writes it in one database
transaction and then brings the catalog, both search indexes, the graph mirror and the
conflict neighbours up to date. Tools and curation describe; only the store writes.
"""
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ..core.records import Memory
from ..core.types import RELATION_TYPES
from .graph import Edge as Edge  # what a Changes names its links by
from .graph import pair


class ChangeRefused(RuntimeError):
    """A change that would break the store's invariants (a bug in its caller): nothing of it
    was written."""


@dataclass
class Changes:
    inserted: list[tuple[Memory, np.ndarray | None]] = field(default_factory=list)
    # (the memory as it is to be, its new embedding or None to keep the stored one)
    updated: list[tuple[Memory, np.ndarray | None]] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    edges_added: list[Edge] = field(default_factory=list)
    edges_removed: list[Edge] = field(default_factory=list)
    kept_separate: list[tuple[int, int]] = field(default_factory=list)
    # the graph signal of these memories is replaced by `signal` (memory id -> (pagerank,
    # community)); ids missing from it lose theirs
    signal_of: list[int] = field(default_factory=list)
    signal: dict[int, tuple[float, int]] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)
    reap_topics: bool = False  # remove every Topic no memory is about
    # keep every conflict neighbour row however many vectors the write brings (memory_import,
    # a chunk at a time), instead of forgetting them all past neighbour_table.MAINTAIN_UP_TO
    keep_rows: bool = False

    def insert(self, m: Memory, vector: np.ndarray | None) -> "Changes":
        self.inserted.append((m, vector))
        return self

    def update(self, m: Memory, vector: np.ndarray | None = None) -> "Changes":
        self.updated.append((m, vector))
        return self

    def delete(self, ids: Iterable[int]) -> "Changes":
        self.deleted += ids
        return self

    def add_edges(self, edges: Iterable[Edge]) -> "Changes":
        self.edges_added += edges
        return self

    def remove_edges(self, edges: Iterable[Edge]) -> "Changes":
        self.edges_removed += edges
        return self

    def keep_separate(self, pairs: Iterable[tuple[int, int]]) -> "Changes":
        self.kept_separate += [pair(a, b) for a, b in pairs]
        return self

    def memories(self) -> list[Memory]:
        return [m for m, _ in self.inserted] + [m for m, _ in self.updated]

    def embeddings(self) -> dict[int, np.ndarray]:
        return {m.id: v for m, v in (*self.inserted, *self.updated) if v is not None}

    def only_inserts(self) -> bool:
        return not (self.updated or self.deleted or self.edges_added or self.edges_removed
                    or self.kept_separate or self.signal_of or self.meta or self.reap_topics)

    def __bool__(self) -> bool:
        return bool(self.inserted) or not self.only_inserts()


def refusal(changes: Changes, catalog: dict[int, Memory], next_id: int, dim: int) -> str | None:
    """Why `changes` may not be committed to a store with this catalog, next free id and
    embedding width; None when it may."""
    new_ids = [m.id for m, _ in changes.inserted]
    if len(set(new_ids)) != len(new_ids):
        return f"an id is inserted twice: {sorted(new_ids)}"
    for m, vector in changes.inserted:
        if m.id in catalog or not 1 <= m.id < next_id:
            return f"memory {m.id} is not a new id the store gave (next id {next_id})"
    changed_ids = [m.id for m, _ in changes.updated]
    if len(set(changed_ids)) != len(changed_ids):
        return f"a memory is updated twice: {sorted(changed_ids)}"
    deleted = set(changes.deleted)
    for memory_id in (*changed_ids, *deleted):
        if memory_id not in catalog:
            return f"memory {memory_id} is not in the store"
    if deleted & set(changed_ids):
        return f"memories both updated and deleted: {sorted(deleted & set(changed_ids))}"
    for m, vector in (*changes.inserted, *changes.updated):
        if vector is not None and np.shape(vector) != (dim,):
            return f"memory {m.id}: an embedding of shape {np.shape(vector)}, not ({dim},)"
    for m, _ in changes.inserted:
        if not m.content.strip():
            return f"memory {m.id} has no content"
    inserted = set(new_ids)

    def present(memory_id: int) -> bool:  # once the change is made
        return memory_id in inserted or (memory_id in catalog and memory_id not in deleted)

    for rel, a, b in (*changes.edges_added, *changes.edges_removed):
        if rel not in RELATION_TYPES:
            return f"no relation type {rel!r}"
        if a == b or not present(a) or not present(b):
            return f"a {rel} link from {a} to {b} does not join two memories of the store"
    for low, high in changes.kept_separate:
        if low == high or not present(low) or not present(high):
            return f"a keep-separate verdict on {low} and {high} does not join two memories"
    if not set(changes.signal) <= set(changes.signal_of):
        return "a graph signal for a memory outside signal_of"
    return None
