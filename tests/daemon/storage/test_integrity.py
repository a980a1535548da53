"""A database holds together on its own: the tags a memory lists agree with the topics it is
about, and a database an older engine damaged is repaired when it opens."""
import gzip
import logging
import shutil

import numpy as np

from memnest_daemon.storage import integrity
from memnest_daemon.storage.database import ENGINE, Database
from memnest_daemon.store.store import MemoryStore
from support import DATA

MODEL = "memnest/all-MiniLM-L6-v2-int8"


def _fake_embed(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), 384), dtype=np.float32)
    out[:, 0] = 1.0
    out[:, 1] = [len(t) for t in texts]
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def _expected_tags(i: int) -> list[str]:
    return ["common", f"t{i}a", f"t{i}b"]


def test_a_database_the_old_engine_damaged_is_repaired_on_open(tmp_path, caplog):
    """The file was written by real-ladybug 0.15.3 exactly as issue 16 reproduces it: ten
    memories, then three rewrites of memory 5 each with a CHECKPOINT, after which rows 2-4
    and 6-7 listed other rows' tags. Its ABOUT edges stayed right, and opening it repairs
    the lists from them, with a log line naming what changed."""
    path = tmp_path / ".memnest" / "memory.lbug"
    path.parent.mkdir()
    with gzip.open(DATA / "real_ladybug_0.15.3_shifted_tags.lbug.gz") as src, \
            open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    with caplog.at_level(logging.WARNING, logger="memnest_daemon.storage.integrity"):
        store = MemoryStore(str(path), MODEL, 384, 64, 1, embed=_fake_embed)
    try:
        assert {m.id: m.tags for m in store.catalog.values()} == \
            {i: _expected_tags(i) for i in range(1, 11)}
        stored = dict(store.db.rows("MATCH (m:Memory) RETURN m.id, m.tags"))
        assert stored == {i: _expected_tags(i) for i in range(1, 11)}
        assert store.db.meta("engine") == ENGINE
        assert integrity.tag_findings(store.db) == []
    finally:
        store.close()
    repaired = [r.getMessage() for r in caplog.records if "repaired the tags" in r.getMessage()]
    assert len(repaired) == 1 and "of 5 memories" in repaired[0], repaired
    assert "memory 2 lists tags ['t2a', 't2b', 't3a']" in repaired[0]


def test_the_repair_on_open_runs_once_per_engine(tmp_path):
    path = str(tmp_path / ".memnest" / "memory.lbug")
    db = Database(path, "model", 4, 64, 1)
    assert db.meta("engine") == ENGINE
    with db.transaction():
        db.rows("CREATE (:Memory {id: 1, content: 'x', tags: ['a', 'b']})")
        db.link_topics(1, ["a", "c"])
    db.close()
    db = Database(path, "model", 4, 64, 1)  # the same engine: left as found (verify reports)
    assert db.rows("MATCH (m:Memory) RETURN m.tags") == [[["a", "b"]]]
    with db.transaction():
        db.set_meta("engine", "real-ladybug 0.15.3")
    db.close()
    db = Database(path, "model", 4, 64, 1)
    try:
        assert db.rows("MATCH (m:Memory) RETURN m.tags") == [[["a", "c"]]]
        assert db.meta("engine") == ENGINE
    finally:
        db.close()
