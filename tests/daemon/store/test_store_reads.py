"""MemoryStore's plain reads of what its database keeps beside the indexes: the layers above
the store ask the store, never its database."""
import numpy as np

from memnest_daemon.core.records import Memory, content_hash, utcnow
from memnest_daemon.store.changes import Changes
from memnest_daemon.store.store import MemoryStore
from support import put_memories


def _memory(n: int, tags: list[str]) -> Memory:
    now, text = utcnow(), f"fact {n} about the deploy pipeline"
    return Memory(id=n, content=text, content_hash=content_hash(text), category="general",
                  tags=tags, importance=3, access_count=0, workspace="/w", created_at=now,
                  updated_at=now, embedding_model="model")


def test_meta_census_and_topics_read_what_the_database_holds(tmp_path):
    store = MemoryStore(str(tmp_path / "memory.lbug"), "model", 4, 64, 1)
    try:
        assert not store.ephemeral and store.meta("review:/w") is None
        put_memories(store, [_memory(1, ["ci"]), _memory(2, [])],
                     [np.ones(4, dtype=np.float32)] * 2)
        with store.writing():
            store.commit(Changes(meta={"review:/w": "{}"}))
        assert store.meta("review:/w") == "{}"
        assert sorted(store.census_rows()) == [(1, True, "model"), (2, True, "model")]
        assert store.orphan_topics() == 0
    finally:
        store.close()
    in_memory = MemoryStore(":memory:", "model", 4, 64, 1)
    assert in_memory.ephemeral
    in_memory.close()
