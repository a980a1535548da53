"""MemoryStore.commit is the one write path: a Changes it accepts lands in the database and
in everything derived from it together (verify finds nothing, a reopened store agrees), and
one it refuses leaves the database exactly as it was."""
import numpy as np
import pytest

from memnest_daemon.core.records import Memory, content_hash, utcnow
from memnest_daemon.store.changes import ChangeRefused, Changes
from memnest_daemon.store.store import MemoryStore
from memnest_daemon.store.verify import verify

DIM = 8


def _vector(n: int) -> np.ndarray:
    v = np.random.default_rng(n).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _open(path) -> MemoryStore:
    return MemoryStore(str(path / "memory.lbug"), "model", DIM, 64, 1,
                       embed=lambda texts: np.stack([_vector(len(t)) for t in texts]))


def _memory(memory_id: int, text: str) -> Memory:
    now = utcnow()
    return Memory(id=memory_id, content=text, content_hash=content_hash(text),
                  category="general", tags=["shared", f"t{memory_id}"], importance=3,
                  access_count=0, workspace="/w", created_at=now, updated_at=now,
                  embedding_model="model")


def _new(store: MemoryStore, text: str) -> tuple[Memory, np.ndarray]:
    m = _memory(store.allocate_id(), text)
    return m, _vector(m.id)


def _state(store: MemoryStore) -> tuple:
    """What the database holds, read back from it."""
    rows = sorted((m.id, m.content, tuple(m.tags)) for m in store.db.load_all()[0])
    return rows, sorted(store.db.load_edges()), sorted(store.db.load_verdicts())


def _seeded(tmp_path) -> MemoryStore:
    store = _open(tmp_path)
    with store.writing():
        changes = Changes()
        for text in ("the cache lives in redis", "deploys go out on tuesday",
                     "the api is versioned in the path"):
            changes.insert(*_new(store, text))
        store.commit(changes)
        store.commit(Changes(edges_added=[("RELATED_TO", 1, 2)]))
    return store


def test_a_commit_reaches_the_database_and_every_index_at_once(tmp_path):
    store = _seeded(tmp_path)
    with store.writing():
        added, vector = _new(store, "the queue is rabbitmq")
        changed = _memory(2, "deploys go out on thursday")
        changed.tags = ["shared", "release"]
        store.commit(Changes(deleted=[3], edges_added=[("RELATED_TO", added.id, 2)],
                             kept_separate=[(1, added.id)])
                     .insert(added, vector).update(changed, _vector(20)))
    assert not verify(store)["findings"]["by_kind"]
    assert store.keywords.search("thursday", 5)[0][0] == 2
    assert not store.keywords.search("versioned", 5)
    assert store.vectors.search(_vector(20), None, 1)[0][0] == 2
    expected = _state(store)
    store.close()
    again = _open(tmp_path)
    try:
        assert _state(again) == expected
        assert [m.content for m in again.in_scope("/w")].count("deploys go out on thursday") == 1
        assert ("RELATED_TO", added.id, 2) in again.graph.edges
        assert not verify(again)["findings"]["by_kind"]
    finally:
        again.close()


def _bad_changes(store: MemoryStore) -> dict[str, Changes]:
    fresh, vector = _new(store, "a new fact")
    return {
        "an id the store already holds": Changes().insert(_memory(1, "again"), _vector(1)),
        "an id the store never gave": Changes().insert(_memory(999, "made up"), _vector(9)),
        "an update of a missing memory": Changes().update(_memory(42, "nobody"), None),
        "a delete of a missing memory": Changes(deleted=[42]),
        "an update and a delete of one memory": Changes(deleted=[1]).update(_memory(1, "x")),
        "an embedding of the wrong width": Changes().insert(fresh, np.ones(DIM + 1)),
        "empty content": Changes().insert(_memory(fresh.id, "   "), vector),
        "a link to a missing memory": Changes(edges_added=[("RELATED_TO", 1, 77)]),
        "a link to a memory deleted with it": Changes(deleted=[2],
                                                      edges_added=[("RELATED_TO", 1, 2)]),
        "a link from a memory to itself": Changes(edges_added=[("RELATED_TO", 1, 1)]),
        "an unknown relation type": Changes(edges_added=[("OWNS", 1, 2)]),
        "a verdict on a missing memory": Changes(kept_separate=[(1, 77)]),
        # a good insert in the same change must not land either
        "a good insert with a bad link": Changes(edges_added=[("RELATED_TO", fresh.id, 77)])
        .insert(fresh, vector),
    }


def test_a_refused_change_writes_nothing(tmp_path):
    store = _seeded(tmp_path)
    before = _state(store)
    with store.writing():
        bad = _bad_changes(store)
    for why, changes in bad.items():
        with store.writing(), pytest.raises(ChangeRefused):
            store.commit(changes)
        assert _state(store) == before, why
    assert not verify(store)["findings"]["by_kind"]
    store.close()
    again = _open(tmp_path)
    try:
        assert _state(again) == before
    finally:
        again.close()


def test_writes_need_the_write_lock(tmp_path):
    store = _seeded(tmp_path)
    before = _state(store)
    try:
        with store.writing():
            m, vector = _new(store, "a fact")
        with pytest.raises(ChangeRefused):
            store.commit(Changes().insert(m, vector))
        with store.reading(), pytest.raises(ChangeRefused):
            store.commit(Changes().insert(m, vector))
        with pytest.raises(ChangeRefused), store.rebuilt_afterwards():
            pass
        assert _state(store) == before
    finally:
        store.close()
