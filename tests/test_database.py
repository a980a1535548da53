"""The LadybugDB layer on its own, in process."""
import numpy as np
import psutil

from memnest_daemon.database import Database
from memnest_daemon.records import Memory, content_hash, utcnow


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
