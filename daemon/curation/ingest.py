"""How new memories enter a store: exact dedup, semantic merge behind the tag and value gates,
conflict flags. Shared by memory_store and memory_import so both follow the same rules."""
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from ..core.anchors import NO_CODE, CodeContext
from ..core.config import Settings
from ..core.records import Memory, Origin, content_hash, utcnow
from ..core.types import Category, OutcomeStatus, Scope
from ..store.changes import Changes
from ..store.neighbours import ConflictFlag
from ..store.store import MemoryStore
from .conflicts import conflicts, keeps_rows, settle_written, with_resolutions, workspace_ids
from .freshness import merged
from .screening import markers
from .values import disagree, tag_overlap

BRIEF_CONFLICTS_HINT = ("conflicts list the other memory's id only: read both with memory_get, "
                        "then memory_relate(from_id=newer, to_id=older, "
                        "relationship='SUPERSEDES') or memory_keep_separate(pairs=[[a, b]])")


@dataclass
class Item:
    content: str
    category: Category = "general"
    tags: list[str] = field(default_factory=list)
    importance: int = 3
    # Kept by memory_import; new memories get now / 0.
    created_at: datetime | None = None
    updated_at: datetime | None = None
    access_count: int = 0
    accessed_at: datetime | None = None
    code: CodeContext = NO_CODE  # the anchors and branch it cites (core/anchors.py)
    # The scope the memory is to have: an item is a duplicate of, or merges into, only a
    # memory of that scope, so private text never reaches a shared file and a teammate's
    # file never joins a private memory. A memory this item creates takes the scope with
    # `global_id` (memory_import, team sync: the caller makes sure the id is not in use);
    # without one it is created private and the caller shares it (team/sync.set_scope,
    # which refuses secrets).
    scope: Scope = "private"
    global_id: str = ""
    origin: Origin | None = None  # who it comes from, when not the whole call's origin


@dataclass
class Outcome:
    status: OutcomeStatus
    memory: Memory
    similarity: float | None = None
    conflicts: list[ConflictFlag] = field(default_factory=list)

    def view(self, brief_conflicts: bool = False) -> dict[str, object]:
        """`brief_conflicts`: each conflict as type, id and similarity only (a batch's
        results would otherwise repeat text and resolutions for every pair)."""
        out: dict[str, object] = {"status": self.status, "id": self.memory.id,
                                  "importance": self.memory.importance}
        if self.status == "merged":
            out["merged_into"] = self.memory.id
            out["similarity"] = round(self.similarity or 0.0, 3)
        if self.conflicts:
            out["conflicts"] = [{"type": c["type"], "memory_id": c["memory_id"],
                                 "similarity": c["similarity"]} for c in self.conflicts] \
                if brief_conflicts else with_resolutions(self.memory.id, self.conflicts)
        found = markers(self.memory.content)
        if found:
            out["untrusted_content"] = {"markers": found}
        return out


def ingest(store: MemoryStore, workspace: str, items: list[Item],
           vectors: Sequence[np.ndarray] | np.ndarray, settings: Settings,
           merge_into: set[int] | None = None, flag_conflicts: bool = True,
           origin: Origin = Origin()) -> list[Outcome]:
    """Add `items` (with their embeddings) to `store` in one transaction. Write lock held.

    `merge_into`, when given, limits semantic merging to those existing memories, and items of
    the batch are not merged with each other (memory_import: the memories of one export are
    already distinct, and are compared only with what the workspace held before).
    `flag_conflicts`: report the conflicts of each stored memory. memory_import reports
    none: it keeps the conflict neighbour rows and their verdicts instead."""
    if not items:
        return []
    allowed = workspace_ids(store, workspace)
    matrix = np.asarray(vectors, dtype=np.float32).reshape(len(items), -1)
    # Every item's merge candidates among existing memories, from one matrix product: the
    # index does not change until the batch commits.
    pool = allowed if merge_into is None else \
        merge_into if allowed is None else merge_into & allowed
    existing = store.vectors.search_many(matrix, pool, 5, min_score=settings.dedup_threshold)
    batch = _Batch(store, workspace, origin)
    outcomes = [batch.place(index, item, vector, existing[index],
                            matrix if merge_into is None else None, settings)
                for index, (item, vector) in enumerate(zip(items, vectors))]
    changes = batch.changes()
    if changes:
        # An import keeps every row (each memory's own found from the same product) and,
        # once every chunk is in, settles their verdicts (conflicts.settle_all), so that a
        # search right after it compares no texts; it reports no conflicts of its own.
        changes.keep_rows = not flag_conflicts and keeps_rows(store, settings, workspace)
        store.commit(changes)
    if not flag_conflicts:
        return outcomes
    stored = [o.memory for o in outcomes if o.status == "stored"]
    for m in stored:  # worked out now, kept: a search that shows it later need not
        markers(m.content, store.screened)
    found = conflicts(store, stored, settings, workspace)
    settle_written(store)
    for outcome in outcomes:
        if outcome.status == "stored":
            outcome.conflicts = found.get(outcome.memory.id, [])
    return outcomes


class _Batch:
    """The memories one ingest call creates and changes, until they are committed together."""

    def __init__(self, store: MemoryStore, workspace: str, origin: Origin):
        self.store, self.workspace, self.now = store, workspace, utcnow()
        self.origin = origin  # of the memories it creates (a merge keeps the older one's)
        self.new: dict[int, tuple[Memory, np.ndarray]] = {}
        # existing memories merged into: (as they are to be, a new embedding or None)
        self.changed: dict[int, tuple[Memory, np.ndarray | None]] = {}
        self.holder: dict[int, int] = {}  # item index -> the new memory that carries its vector
        self.intended: dict[int, Scope] = {}  # new memory -> the scope its item asked for

    def changes(self) -> Changes:
        return Changes(inserted=list(self.new.values()), updated=list(self.changed.values()))

    def place(self, index: int, item: Item, vector: np.ndarray,
              existing: list[tuple[int, float]], batch_matrix: np.ndarray | None,
              settings: Settings) -> Outcome:
        """Item `index` as a duplicate, a merge or a new memory. `batch_matrix`: the batch's
        embeddings, when items may merge with earlier items of the same batch."""
        digest = content_hash(item.content)
        same = self._holding(digest, item.scope)
        if same is not None:
            target = self._current(same.id)
            target.importance = min(5, target.importance + 1)
            target.code = merged(target.code, item.code)
            return Outcome("duplicate", target)
        candidates = [(self.store.catalog[i], s) for i, s in existing]
        if batch_matrix is not None and index:  # earlier items of this batch
            similar = batch_matrix[:index] @ batch_matrix[index]
            candidates += [(self.new[self.holder[j]][0], float(similar[j]))
                           for j in np.flatnonzero(similar >= settings.dedup_threshold).tolist()
                           if j in self.holder]
        candidate, similarity = merge_candidate(candidates, item, settings, self.scope_of)
        if candidate is not None:
            return Outcome("merged", self._merge(candidate.id, index, item, digest, vector),
                           similarity)
        return Outcome("stored", self._add(index, item, digest, vector))

    def _current(self, memory_id: int) -> Memory:
        """The memory as this batch has left it so far (a copy, for an existing one)."""
        if memory_id in self.new:
            return self.new[memory_id][0]
        if memory_id not in self.changed:
            self.changed[memory_id] = (self.store.catalog[memory_id].copy(updated_at=self.now),
                                       None)
        return self.changed[memory_id][0]

    def scope_of(self, m: Memory) -> Scope:
        """The scope a memory has, or is to have once the caller shares what it asked to."""
        return self.intended.get(m.id, m.scope)

    def _holding(self, digest: str, scope: Scope) -> Memory | None:
        """The memory of `scope` whose text (as this batch has left it so far) is this one."""
        for m, _ in (*self.new.values(), *self.changed.values()):
            if m.content_hash == digest and self.scope_of(m) == scope:
                return m
        held = self.store.find_hash(self.workspace, digest, scope)
        if held is not None and held.id in self.changed:
            return None  # an earlier item merged a fuller wording into it
        return held

    def _merge(self, memory_id: int, index: int, item: Item, digest: str,
               vector: np.ndarray) -> Memory:
        target = self._current(memory_id)
        if len(item.content) > len(target.content):  # keep the fuller wording
            target.content, target.content_hash = item.content, digest
            target.embedding_model = self.store.model
            if target.id in self.new:
                self.new[target.id] = (target, vector)
                self.holder = {j: i for j, i in self.holder.items() if i != target.id}
                self.holder[index] = target.id
            else:
                self.changed[target.id] = (target, vector)
        target.tags = list(dict.fromkeys(target.tags + item.tags))
        target.importance = min(5, max(target.importance, item.importance) + 1)
        target.code = merged(target.code, item.code)
        return target

    def _add(self, index: int, item: Item, digest: str, vector: np.ndarray) -> Memory:
        now = self.now
        origin = item.origin or self.origin
        m = Memory(id=self.store.allocate_id(), content=item.content, content_hash=digest,
                   category=item.category, tags=list(item.tags), importance=item.importance,
                   access_count=item.access_count, workspace=self.workspace,
                   created_at=item.created_at or now, updated_at=item.updated_at or now,
                   accessed_at=item.accessed_at, embedding_model=self.store.model,
                   origin_via=origin.via, origin_client=origin.client,
                   origin_session=origin.session, code=item.code,
                   scope=item.scope if item.global_id else "private",
                   global_id=item.global_id)
        self.new[m.id] = (m, vector)
        self.holder[index] = m.id
        self.intended[m.id] = item.scope
        return m


def merge_candidate(candidates: list[tuple[Memory, float]], item: Item, settings: Settings,
                    scope_of: Callable[[Memory], Scope] = lambda m: m.scope
                    ) -> tuple[Memory, float] | tuple[None, None]:
    """The memory among (memory, cosine) `candidates` this item should merge into, if any:
    same scope and category, cosine at or above the dedup threshold, tags overlapping
    enough, and no value that differs between the two."""
    for m, similarity in sorted(candidates, key=lambda c: -c[1]):
        if similarity < settings.dedup_threshold:
            break
        if scope_of(m) != item.scope:
            continue
        if tag_overlap(m.tags, item.tags) < settings.merge_tag_overlap:
            continue
        if settings.merge_value_gate and disagree(m.content, item.content):
            continue
        if m.category != item.category:
            continue
        return m, similarity
    return None, None
