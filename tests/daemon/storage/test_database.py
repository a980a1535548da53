"""The LadybugDB layer on its own, in process."""
import numpy as np
import psutil
import pytest

from memnest_daemon.storage.database import DEFER_MAX_ROWS, SMALL_ROW_BYTES, Database
from memnest_daemon.core.records import Memory, content_hash, utcnow
from memnest_daemon.core.storage_errors import DiskFailure


def test_writes_with_embeddings_do_not_grow_the_process(tmp_path):
    """real_ladybug keeps ~50 KB per statement prepared for a call with a 384-float
    parameter; the daemon prepares its statements once per connection instead."""
    db = Database(str(tmp_path / "memory.lbug"), "model", 384, 64, 1)
    rng = np.random.default_rng(3)
    now = utcnow()

    def batch(first: int) -> None:
        with db.transaction():
            for n in range(first, first + 250):
                text = f"memory {n}: the deploy pipeline caches wheels per branch"
                db.insert(Memory(id=n, content=text, content_hash=content_hash(text),
                                 category="general", tags=["ci"] if n % 3 else [],
                                 importance=3, access_count=0, workspace="/w",
                                 created_at=now, updated_at=now, accessed_at=None,
                                 embedding_model="model"),
                          rng.normal(size=384).astype(np.float32))

    batch(1)  # warm-up: the buffer pool and caches take their share first
    before = psutil.Process().memory_info().rss
    for first in range(251, 2251, 250):
        batch(first)
    grown_mb = (psutil.Process().memory_info().rss - before) / 2**20
    assert db.rows("MATCH (m:Memory) RETURN count(m)")[0][0] == 2250
    db.close()
    # Unprepared, these 2,000 inserts grew the process by ~130 MB.
    assert grown_mb < 50, f"{grown_mb:.0f} MB for 2,000 inserts"


def _row(n: int, text: str) -> Memory:
    now = utcnow()
    return Memory(id=n, content=text, content_hash=content_hash(text), category="general",
                  tags=["ci"], importance=3, access_count=0, workspace="/w", created_at=now,
                  updated_at=now, accessed_at=None, embedding_model="model")


def test_small_rows_leave_their_embeddings_to_the_next_checkpointed_write(tmp_path):
    db = Database(str(tmp_path / "memory.lbug"), "model", 4, 64, 1)
    vector = np.array([0.5, 0.5, 0.5, 0.5], dtype=np.float32)
    first = _row(1, "the deploy pipeline caches wheels per branch")
    assert db.can_defer([first])
    with db.transaction(checkpoint=False):
        db.insert(first, vector)
    assert db.rows("MATCH (m:Memory) RETURN m.id, m.embedding IS NULL") == [[1, True]]
    assert db.has_pending() and db.census_rows() == [(1, True, "model")]
    try:  # a deferred write that fails leaves nothing behind, pending or not
        with db.transaction(checkpoint=False):
            db.insert(_row(2, "never committed"), vector)
            raise KeyError("fault")
    except KeyError:
        pass
    # A reload in between (raw Cypher writes do one) takes the embedding from memory.
    memories, ids, matrix, _, unembedded = db.load_all()
    assert [m.id for m in memories] == ids == [1] and unembedded == []
    assert np.allclose(matrix[0], vector)
    with db.transaction():  # any checkpointed write carries the deferred embeddings
        db.set_meta("touched", "yes")
    assert not db.has_pending()
    stored = db.rows("MATCH (m:Memory) RETURN m.embedding")
    assert len(stored) == 1 and np.allclose(stored[0][0], vector)
    db.close()


def test_only_rows_with_a_replayable_record_are_deferred(tmp_path):
    db = Database(str(tmp_path / "memory.lbug"), "model", 4, 64, 1)
    assert not db.can_defer([_row(1, "x" * (SMALL_ROW_BYTES + 1))])
    assert not db.can_defer([_row(n, "short") for n in range(1, DEFER_MAX_ROWS + 2)])
    db.close()
    memory = Database(":memory:", "model", 4, 64, 1)  # nothing to checkpoint there
    assert not memory.can_defer([_row(1, "short")])
    memory.close()


ENGINE_DISK_FULL = ("IO exception: Cannot write to file memory.lbug.wal. Error: "
                    "No space left on device")


def test_the_engine_saying_the_disk_is_full_leaves_storage_as_a_disk_failure(monkeypatch):
    db = Database(":memory:", "model", 4, 64, 1)

    def full(*_):
        raise RuntimeError(ENGINE_DISK_FULL)

    monkeypatch.setattr(db, "_rows", full)
    with pytest.raises(DiskFailure) as failed:
        db.rows("MATCH (m:Memory) RETURN m.id")
    assert failed.value.strerror == "No space left on device"
    assert str(failed.value) == ENGINE_DISK_FULL
    monkeypatch.undo()
    with pytest.raises(DiskFailure), db.transaction():
        raise RuntimeError(ENGINE_DISK_FULL)
    with pytest.raises(RuntimeError) as other:  # any other engine error is left as it is
        db.rows("MATCH (m:NoSuchTable) RETURN m")
    assert not isinstance(other.value, DiskFailure)
    assert db.rows("MATCH (m:Memory) RETURN count(m)") == [[0]]  # and the database serves on
    db.close()
