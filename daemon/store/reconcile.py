"""After a raw Cypher write (memory_query): bring the Memory rows it made or changed up to
what every tool's write leaves, before the store is rebuilt from the database."""
from collections.abc import Callable
from typing import Any

from ..core.errors import invalid
from ..core.records import Memory, content_hash, normalise_tags, utcnow
from ..cypher import run as query_run
from ..storage.database import MEMORY_COLUMNS, Database
from .store import MemoryStore


def reconcile(store: MemoryStore, embed_texts: Callable[[list[str]], Any],
              workspace: str) -> dict:
    """Give every Memory row a raw Cypher write left what the daemon's indexes need.

    New rows (and rows whose content changed) get a content hash and an embedding from the
    daemon's model; missing category, importance, access count, workspace (the caller's) and
    timestamps get the defaults memory_store would give; tags are normalised and linked to
    Topic nodes. Memories that disappeared lose their verdicts and orphaned topics. The
    caller rebuilds the store from the database afterwards (MemoryStore.reload)."""
    with store.db.transaction() as db:
        return _reconciled(store, db, embed_texts, workspace)


def _reconciled(store: MemoryStore, db: Database, embed_texts, workspace: str) -> dict:
    cols = ", ".join(f"m.{c}" for c in MEMORY_COLUMNS)
    rows = db.rows(f"MATCH (m:Memory) RETURN {cols}, m.embedding IS NULL")
    now = utcnow()
    pending: list[tuple[Memory, bool, list[str]]] = []
    present: set[int] = set()
    next_id = int(db.meta("next_id") or 1)
    for row in rows:
        values = dict(zip(MEMORY_COLUMNS, row[:-1]))
        no_vector = row[-1]
        memory_id = values["id"]
        present.add(memory_id)
        old = store.catalog.get(memory_id)
        content = values.get("content")
        if not isinstance(content, str) or not content.strip():
            raise invalid(f"Memory {memory_id} would have no content; every Memory node needs "
                          "a non-empty `content` (delete memories with memory_delete)")
        if old is None and memory_id < next_id:
            raise invalid(f"Memory id {memory_id} belonged to a deleted memory and ids are "
                          f"never reused; use id {max(next_id, max(store.catalog, default=0) + 1)}"
                          " or above (memory_schema shows next_memory_id)")
        fixed = dict(values)
        fixed["category"] = values["category"] or "general"
        importance = values["importance"]
        fixed["importance"] = 3 if importance is None else min(5, max(1, int(importance)))
        fixed["access_count"] = min(query_run.MAX_ACCESS_COUNT,
                                    max(0, int(values["access_count"] or 0)))
        fixed["workspace"] = values["workspace"] or workspace
        fixed["tags"] = normalise_tags(values["tags"])
        fixed["created_at"] = values["created_at"] or now
        digest = content_hash(content)
        content_changed = values["content_hash"] != digest
        fixed["content_hash"] = digest
        if values["updated_at"] is None or (old is not None and content_changed
                                            and values["updated_at"] == old.updated_at):
            fixed["updated_at"] = now if old is not None else fixed["created_at"]
        embed = no_vector or content_changed or (
            old is None and values["embedding_model"] != store.model)
        if embed:
            fixed["embedding_model"] = store.model
        fixed["embedding_model"] = fixed["embedding_model"] or ""
        if embed or fixed != values or old is None:
            pending.append((Memory(**fixed), embed, list(old.tags) if old else []))
    if pending:
        texts = [m.content for m, embed, _ in pending if embed]
        vectors = iter(embed_texts(texts)) if texts else iter(())
        for m, embed, old_tags in pending:
            db.update(m, next(vectors) if embed else None, old_tags)
    gone = [i for i in store.catalog if i not in present]
    if gone:
        db.delete(gone, sorted({t for i in gone for t in store.catalog[i].tags}))
    if present and max(present) + 1 > next_id:
        db.set_meta("next_id", str(max(present) + 1))
    return {"indexed": sorted(m.id for m, _, _ in pending), "removed": sorted(gone),
            "embedded": sum(1 for _, embed, _ in pending if embed)}
