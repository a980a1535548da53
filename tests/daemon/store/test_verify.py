"""store/verify.py in process: every kind of damage to a database or to what is derived from
it is reported, `repair` fixes what the database itself can restore, and a healthy store
reports nothing."""
import numpy as np

from memnest_daemon.storage import vector_snapshot
from memnest_daemon.core.records import Memory, content_hash, utcnow
from memnest_daemon.store.verify import verify
from memnest_daemon.store.changes import Changes
from memnest_daemon.store.store import MemoryStore

from support import put_memories

DIM = 8


def _vector(n: int) -> np.ndarray:
    v = np.random.default_rng(n).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _store_with(tmp_path, count: int = 6) -> MemoryStore:
    store = MemoryStore(str(tmp_path / "memory.lbug"), "model", DIM, 64, 1,
                        embed=lambda texts: np.stack([_vector(len(t)) for t in texts]))
    now = utcnow()
    memories = []
    for n in range(1, count + 1):
        text = f"fact {n} about the component number {n}"
        memories.append(Memory(id=n, content=text, content_hash=content_hash(text),
                               category="general", tags=[f"t{n}", "common"], importance=3,
                               access_count=0, workspace="/w", created_at=now, updated_at=now,
                               embedding_model="model"))
    put_memories(store, memories, [_vector(m.id) for m in memories])
    with store.writing():
        store.commit(Changes(edges_added=[("RELATED_TO", 1, 2)], kept_separate=[(3, 4)]))
    return store


def _kinds(report: dict) -> set[str]:
    return set(report["findings"]["by_kind"])


def test_a_healthy_store_reports_nothing(tmp_path):
    store = _store_with(tmp_path)
    try:
        report = verify(store)
        assert report["healthy"] and report["findings"]["count"] == 0, report
        assert report["checked"]["memories"] == 6
    finally:
        store.close()


def test_each_kind_of_damage_is_found_and_repaired(tmp_path):
    store = _store_with(tmp_path)
    try:
        db = store.db
        with db.transaction():
            # the old engine's damage: another row's tags in this row's list
            db.rows("MATCH (m:Memory) WHERE m.id = 2 SET m.tags = ['t3', 'common']")
            db.rows("CREATE (:Topic {name: 'nobody'})")
            db.rows("CREATE (:GraphSignal {id: 999, pagerank: 1.0, community: 1})")
            db.rows("CREATE (:SeparateVerdict {pair: '5:998', low: 5, high: 998})")
            db.set_meta("next_id", "2")
            db.rows("MATCH (m:Memory) WHERE m.id = 6 SET m.content = 'rewritten behind us'")
        store.keywords.remove_many([4])
        store.vectors.upsert(5, _vector(500))  # another vector than the database holds
        store.catalog[1] = store.catalog[1].copy(importance=5)
        store.columns.words[3] = 999  # ranking would read another length than the text's
        report = verify(store)
        assert not report["healthy"]
        assert {"tags_differ_from_topics", "orphan_topics", "graph_signal_of_deleted_memories",
                "verdicts_of_deleted_memories", "next_id_behind",
                "content_differs_from_its_hash", "missing_from_keyword_index",
                "vector_differs", "catalog_differs", "ranking_columns_differ"} <= \
            _kinds(report), _kinds(report)
        quick = verify(store, quick=True)
        assert "vector_differs" not in _kinds(quick)  # quick reads no embedding

        repaired = verify(store, repair=True)
        assert _kinds(repaired) == {"content_differs_from_its_hash"}, repaired["findings"]
        assert repaired["findings"]["items"][0]["repairable"] is False
        assert repaired["repaired"]["count"] >= 9
        assert store.catalog[2].tags == ["common", "t2"]
        assert dict(db.rows("MATCH (m:Memory) WHERE m.id = 2 RETURN m.id, m.tags")) == \
            {2: ["common", "t2"]}
        assert store.catalog[1].importance == 3  # the database's, not the stray copy's
        assert np.allclose(store.vectors.vector(5), _vector(5))
        assert 4 in store.keywords.ids()
        assert int(db.meta("next_id")) == 7
    finally:
        store.close()


def test_a_stale_vector_snapshot_is_found(tmp_path):
    store = _store_with(tmp_path)
    try:
        ids, matrix = store.vectors.rows()
        memories = [store.catalog[i] for i in ids.tolist()]
        wrong = matrix.copy()
        wrong[0] = _vector(777)
        vector_snapshot.save(store.db_path, store.model, ids, [m.content for m in memories],
                             wrong, [m.content for m in memories],
                             [store.keywords.terms_of(m.id) for m in memories], None)
        assert "snapshot_differs" in _kinds(verify(store))
        assert verify(store, repair=True)["healthy"]
        assert not vector_snapshot.path_for(store.db_path).exists()
    finally:
        store.close()
