"""How new memories enter a store: exact dedup, semantic merge behind the tag and value gates,
conflict flags. Shared by memory_store and memory_import so both follow the same rules."""
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from ..core.records import Memory, content_hash, utcnow
from ..store.changes import Changes
from .conflicts import conflicts, workspace_ids
from .screening import markers
from .values import disagree, tag_overlap

BRIEF_CONFLICT = ("type", "memory_id", "similarity")
BRIEF_CONFLICTS_HINT = ("conflicts list the other memory's id only: read both with memory_get, "
                        "then memory_relate(from_id=newer, to_id=older, "
                        "relationship='SUPERSEDES') or memory_keep_separate(pairs=[[a, b]])")


@dataclass
class Item:
    content: str
    category: str = "general"
    tags: list[str] = field(default_factory=list)
    importance: int = 3
    # Kept by memory_import; new memories get now / 0.
    created_at: datetime | None = None
    updated_at: datetime | None = None
    access_count: int = 0
    accessed_at: datetime | None = None


@dataclass
class Outcome:
    status: str            # stored | duplicate | merged
    memory: Memory
    similarity: float | None = None
    conflicts: list = field(default_factory=list)

    def view(self, brief_conflicts: bool = False) -> dict:
        """`brief_conflicts`: each conflict as type, id and similarity only (a batch's
        results would otherwise repeat text and resolutions for every pair)."""
        out = {"status": self.status, "id": self.memory.id,
               "importance": self.memory.importance}
        if self.status == "merged":
            out["merged_into"] = self.memory.id
            out["similarity"] = round(self.similarity or 0.0, 3)
        if self.conflicts:
            out["conflicts"] = [{k: c[k] for k in BRIEF_CONFLICT} for c in self.conflicts] \
                if brief_conflicts else self.conflicts
        found = markers(self.memory.content)
        if found:
            out["untrusted_content"] = {"markers": found}
        return out


def ingest(store, workspace: str, items: list[Item], vectors, settings,
           merge_into: set[int] | None = None, flag_conflicts: bool = True) -> list[Outcome]:
    """Add `items` (with their embeddings) to `store` in one transaction. Write lock held.

    `merge_into`, when given, limits semantic merging to those existing memories, and items of
    the batch are not merged with each other (memory_import: the memories of one export are
    already distinct, and are compared only with what the workspace held before).
    `flag_conflicts`: look for conflicts of each stored memory (a scan of the workspace per
    batch; memory_import reports none, so it skips them)."""
    if not items:
        return []
    now = utcnow()
    allowed = workspace_ids(store, workspace)
    outcomes: list[Outcome] = []
    new: dict[int, tuple[Memory, np.ndarray]] = {}
    changed: dict[int, tuple[Memory, np.ndarray | None]] = {}  # existing memories merged into

    def current(memory_id: int) -> Memory:
        if memory_id in new:
            return new[memory_id][0]
        if memory_id not in changed:
            changed[memory_id] = (store.catalog[memory_id].copy(updated_at=now), None)
        return changed[memory_id][0]

    matrix = np.asarray(vectors, dtype=np.float32).reshape(len(items), -1)
    # Every item's merge candidates among existing memories, from one matrix product: the
    # index does not change until the batch commits.
    pool = allowed if merge_into is None else \
        merge_into if allowed is None else merge_into & allowed
    existing = store.vectors.search_many(matrix, pool, 5, min_score=settings.dedup_threshold)
    holder: dict[int, int] = {}  # item index -> the new memory that carries its vector

    def holding(digest: str) -> Memory | None:
        """The memory whose text (as this batch has left it so far) is this one."""
        for m, _ in (*new.values(), *changed.values()):
            if m.content_hash == digest:
                return m
        m = store.find_hash(workspace, digest)
        if m is not None and m.id in changed:
            return None  # an earlier item merged a fuller wording into it
        return m

    for index, (item, vector) in enumerate(zip(items, vectors)):
        digest = content_hash(item.content)
        same = holding(digest)
        if same is not None:
            target = current(same.id)
            target.importance = min(5, target.importance + 1)
            outcomes.append(Outcome("duplicate", target))
            continue
        candidates = [(store.catalog[i], s) for i, s in existing[index]]
        if merge_into is None and index:  # earlier items of this batch
            similar = matrix[:index] @ matrix[index]
            candidates += [(new[holder[j]][0], float(similar[j]))
                           for j in np.flatnonzero(similar >= settings.dedup_threshold).tolist()
                           if j in holder]
        candidate, similarity = merge_candidate(candidates, item, settings)
        if candidate is not None:
            target = current(candidate.id)
            if len(item.content) > len(target.content):  # keep the fuller wording
                target.content, target.content_hash = item.content, digest
                target.embedding_model = store.model
                if target.id in new:
                    new[target.id] = (target, vector)
                    holder = {j: i for j, i in holder.items() if i != target.id}
                    holder[index] = target.id
                else:
                    changed[target.id] = (target, vector)
            target.tags = list(dict.fromkeys(target.tags + item.tags))
            target.importance = min(5, max(target.importance, item.importance) + 1)
            outcomes.append(Outcome("merged", target, similarity))
            continue
        m = Memory(id=store.allocate_id(), content=item.content, content_hash=digest,
                   category=item.category, tags=list(item.tags), importance=item.importance,
                   access_count=item.access_count, workspace=workspace,
                   created_at=item.created_at or now, updated_at=item.updated_at or now,
                   accessed_at=item.accessed_at, embedding_model=store.model)
        new[m.id] = (m, vector)
        holder[index] = m.id
        outcomes.append(Outcome("stored", m))

    changes = Changes(inserted=list(new.values()), updated=list(changed.values()))
    if changes:
        store.commit(changes)
    if not flag_conflicts:
        return outcomes
    found = conflicts(store, [o.memory for o in outcomes if o.status == "stored"], settings,
                      workspace)
    for outcome in outcomes:
        if outcome.status == "stored":
            outcome.conflicts = found.get(outcome.memory.id, [])
    return outcomes


def merge_candidate(candidates: list[tuple[Memory, float]], item: Item, settings):
    """The memory among (memory, cosine) `candidates` this item should merge into, if any:
    same category, cosine at or above the dedup threshold, tags overlapping enough, and no
    value that differs between the two."""
    for m, similarity in sorted(candidates, key=lambda c: -c[1]):
        if similarity < settings.dedup_threshold:
            break
        if tag_overlap(m.tags, item.tags) < settings.merge_tag_overlap:
            continue
        if settings.merge_value_gate and disagree(m.content, item.content):
            continue
        if m.category != item.category:
            continue
        return m, similarity
    return None, None
