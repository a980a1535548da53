"""Pairs of memories an agent should look at: near duplicates, and same-subject memories that
disagree on a value. Reported on store and on search results, with the ways to settle them."""
import numpy as np

from .records import Memory
from .search import SearchFilter, scope_ids
from .values import value_disagreement

NEIGHBOURS = 10


def resolutions(a: Memory, b: Memory) -> list[str]:
    newer, older = (a, b) if (a.updated_at, a.id) >= (b.updated_at, b.id) else (b, a)
    return [
        f"memory_relate(from_id={newer.id}, to_id={older.id}, relationship='SUPERSEDES') if "
        f"#{newer.id} replaces #{older.id}",
        f"memory_keep_separate(pairs=[[{a.id}, {b.id}]]) if both hold",
    ]


def workspace_ids(store, workspace: str) -> set[int] | None:
    """The ids of one workspace's memories, or None when they are the whole database."""
    return scope_ids(store, SearchFilter(workspace=workspace))


def conflicts(store, memories: list[Memory], settings, workspace: str) -> dict[int, list[dict]]:
    """For each of `memories`, the memories of `workspace` that look like it, unless an
    agent already settled the pair (a keep-separate verdict or a SUPERSEDES link); by memory
    id, only those with any. One pass over the vector matrix for those not already known
    since the last change to the store. Read or write lock held."""
    key = (store.version, store.graph.version)
    cached, known = getattr(store, "conflict_cache", (None, {}))
    if cached != key:
        known = {}
        store.conflict_cache = (key, known)  # replaced whole: readers share it safely
    todo = [m for m in memories if (m.id, workspace) not in known]
    embedded = [(m, v) for m, v in ((m, store.vectors.vector(m.id)) for m in todo)
                if v is not None]
    if embedded:
        floor = min(settings.conflict_threshold, settings.conflict_value_floor)
        nearest = store.vectors.search_many(np.stack([v for _, v in embedded]),
                                            workspace_ids(store, workspace), NEIGHBOURS + 1,
                                            min_score=floor)
        for (m, _), hits in zip(embedded, nearest):
            known[(m.id, workspace)] = _flags(store, m, hits, settings)
    found = {}
    for m in memories:
        flagged = known.get((m.id, workspace))
        if flagged:
            found[m.id] = flagged
    return found


def _flags(store, m: Memory, hits, settings) -> list[dict]:
    found = []
    for other_id, similarity in hits:
        other = store.catalog.get(other_id)
        if other is None or other_id == m.id or store.graph.kept_separate(m.id, other_id) \
                or any(rel == "SUPERSEDES" for rel, _, _ in store.graph.between(m.id, other_id)):
            continue
        if value_disagreement(m.content, other.content):
            kind = "value_disagreement"
        elif similarity >= settings.conflict_threshold:
            kind = "near_duplicate"
        else:
            continue
        found.append({"type": kind, "memory_id": other_id, "similarity": round(similarity, 3),
                      "content": other.content[:160], "resolutions": resolutions(m, other)})
    return found
