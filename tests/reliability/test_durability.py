"""Every acknowledged write survives kill -9: a client stores batches in a loop while the
daemon is killed at seeded-random moments and restarted; afterwards every acknowledged memory
is there with its exact content and the database reports healthy indexes."""
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np

from memnest_daemon.storage import wal_recovery
from memnest_daemon.storage.database import Database
from memnest_daemon.core.records import Memory, content_hash, utcnow
from memnest_daemon.storage.row_journal import RowJournal
from memnest_daemon.store.store import MemoryStore
from memnest_shims.client import DaemonUnavailable, ToolFailure

ROUNDS = int(os.environ.get("MEMNEST_KILL_ROUNDS", "60" if os.environ.get("MEMNEST_SOAK") else "20"))
WORDS = ("cache schema index deploy rollback token queue worker shard replica lease quota "
         "ledger cursor webhook cron bucket tenant mirror fence").split()


def test_acknowledged_writes_survive_random_kill_9(fresh_daemon, workspace):
    rng = random.Random(20261129)
    fresh_daemon.start()
    acked: dict[int, str] = {}
    failures: list[str] = []
    stop = threading.Event()

    def writer():
        client = fresh_daemon.client(autostart=False)
        n = 0
        while not stop.is_set():
            items = []
            for _ in range(4):
                n += 1
                words = " ".join(rng.choice(WORDS) for _ in range(8))
                items.append({"content": f"note {n}: {words} ({rng.getrandbits(48):x})"})
            try:
                out = client.call_tool("memory_store", {"items": items}, str(workspace))
            except (DaemonUnavailable, ToolFailure) as exc:
                failures.append(str(exc)[:200])  # not acknowledged: nothing to check
                client.close()
                time.sleep(0.05)
                continue
            for item, result in zip(items, out["results"]):
                if result["status"] == "stored":
                    acked[result["id"]] = item["content"]
        client.close()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    t0 = time.monotonic()
    kills = 0
    for _ in range(ROUNDS):
        time.sleep(rng.uniform(0.1, 1.2))
        for pid in fresh_daemon.pids():
            os.kill(pid, signal.SIGKILL)
            kills += 1
        deadline = time.monotonic() + 10
        while fresh_daemon.pids() and time.monotonic() < deadline:
            time.sleep(0.02)
        if fresh_daemon.proc is not None:
            fresh_daemon.proc.wait(timeout=10)
        fresh_daemon.start()
    time.sleep(0.5)
    stop.set()
    thread.join(timeout=60)
    elapsed = time.monotonic() - t0

    client = fresh_daemon.client(autostart=False)
    try:
        ids = sorted(acked)
        found = {}
        for start in range(0, len(ids), 100):
            got = client.call_tool("memory_get", {"ids": ids[start:start + 100]},
                                   str(workspace))
            assert not got["missing"], f"acknowledged memories lost: {got['missing']}"
            found.update({m["id"]: m["content"] for m in got["memories"]})
        lost = [i for i in ids if found.get(i) != acked[i]]
        assert not lost, f"{len(lost)} acknowledged memories missing or changed, e.g. {lost[:5]}"
        stats = client.call_tool("memory_stats", {}, str(workspace))
        health = stats["index_health"]
        assert health["healthy"], health
        assert health["rows_in_database"] >= len(ids)
    finally:
        client.close()
    set_aside = list((workspace / ".memnest").glob("*.unreplayable-*"))
    print(f"\n{kills} kill -9 rounds in {elapsed:.0f} s: {len(acked)} acknowledged memories "
          f"all intact; {len(failures)} calls cut off unacknowledged; {len(set_aside)} "
          f"unreplayable WAL(s) set aside (unacknowledged work only)")
    assert kills >= ROUNDS
    assert len(acked) > ROUNDS


def test_a_single_store_killed_before_its_embedding_was_written_is_found_by_meaning(
        fresh_daemon, workspace):
    """A small store is acknowledged before its embedding reaches the database (it waits
    for the next checkpoint): after kill -9 the row is there, and the daemon embeds it again
    on open, so a search that shares no word with it still finds it."""
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    stored = client.call_tool("memory_store", {"content": "Staging deploys need the VPN up"},
                              str(workspace))
    client.close()
    for pid in fresh_daemon.pids():  # long before the housekeeping writes the embedding
        os.kill(pid, signal.SIGKILL)
    fresh_daemon.proc.wait(timeout=10)
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    try:
        found = client.call_tool("memory_search", {"query": "connect to the private network "
                                                   "before shipping to preprod"},
                                 str(workspace))
        assert [r["id"] for r in found["results"]] == [stored["id"]]
        assert found["results"][0]["content"] == "Staging deploys need the VPN up"
        health = client.call_tool("memory_stats", {}, str(workspace))["index_health"]
        assert health["healthy"] and health["rows_with_embedding"] == 1, health
    finally:
        client.close()
    assert "embedded 1 memories again" in fresh_daemon.log.read_text()


def _fake_embed(texts: list[str]) -> np.ndarray:
    """A stand-in model, the same the child process below uses."""
    out = np.zeros((len(texts), 384), dtype=np.float32)
    out[:, :4] = [[len(t), t.count("e"), t.count("a"), 1.0] for t in texts]
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_a_crash_between_writing_deferred_embeddings_and_their_checkpoint(tmp_path):
    """The next checkpointed write first checkpoints the deferred rows, then writes their
    embeddings. Killed before that write's checkpoint, the database opens with every
    acknowledged row and every embedding: the WAL the crash left is replayed (in a child
    process, wal_recovery.py) and nothing is set aside."""
    path = tmp_path / "memory.lbug"
    subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os
        import numpy as np
        from memnest_daemon.storage.database import Database
        from memnest_daemon.core.records import Memory, content_hash, utcnow

        db = Database({str(path)!r}, "model", 384, 64, 1)
        now, texts = utcnow(), ["alpha release", "beta deploy", "gamma rollback"]
        vectors = np.zeros((3, 384), dtype=np.float32)
        vectors[:, :4] = [[len(t), t.count("e"), t.count("a"), 1.0] for t in texts]
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = [Memory(id=n, content=t, content_hash=content_hash(t), category="general",
                       tags=[], importance=3, access_count=0, workspace="/w",
                       created_at=now, updated_at=now, embedding_model="model")
                for n, t in enumerate(texts, 1)]
        assert db.can_defer(rows)
        with db.transaction(checkpoint=False):  # acknowledged from here on
            for m, v in zip(rows, vectors):
                db.insert(m, v)

        class DiesBeforeTheLastCheckpoint:  # the fault: kill -9 at that moment
            def __init__(self, conn):
                self.conn, self.committed = conn, False
            def execute(self, query, *args):
                if query == "CHECKPOINT" and self.committed:
                    os._exit(0)
                self.committed |= query == "COMMIT"
                return self.conn.execute(query, *args)
            def __getattr__(self, name):
                return getattr(self.conn, name)

        db._local.conn = DiesBeforeTheLastCheckpoint(db._conn())
        with db.transaction():
            db.set_meta("later", "write")
        raise SystemExit("the fault did not fire")
    """)], check=True)
    store = MemoryStore(str(path), "model", 384, 64, 1, embed=_fake_embed)
    try:
        assert sorted(m.content for m in store.catalog.values()) == \
            ["alpha release", "beta deploy", "gamma rollback"]
        ids, matrix = store.vectors.rows()
        expected = _fake_embed([store.catalog[i].content for i in ids.tolist()])
        assert len(ids) == 3 and np.allclose(matrix, expected)
        assert all(has for _, has, _ in store.db.census_rows())
        assert store.db.meta("later") == "write"  # committed before the crash: replayed
    finally:
        store.close()
    assert not list(tmp_path.glob("memory.lbug.wal.unreplayable-*"))


def _uncheckpointed_commit(path: Path) -> bytes:
    """Commit a transaction in another process that dies before any checkpoint; the WAL."""
    subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, ladybug as lb
        c = lb.Connection(lb.Database({str(path)!r}, max_db_size=1 << 30))
        c.execute("CREATE (:Meta {{key: 'unacknowledged', value: $v}})", {{"v": "x" * 3000}})
        os._exit(0)
    """)], check=True)
    return path.with_name(path.name + ".wal").read_bytes()


def test_damaged_wal_of_any_shape_costs_only_the_unacknowledged_write(tmp_path):
    """kill -9 can leave a WAL cut short or with a zero-filled tail, which LadybugDB refuses
    to replay. Each one must still open with every acknowledged write (the last checkpoint
    holds them), without the write whose commit the damage cut, and with a copy of the
    damaged WAL kept aside."""
    origin = tmp_path / "origin" / "memory.lbug"
    origin.parent.mkdir(mode=0o700)
    db = Database(str(origin), "model", 4, 64, 1)
    with db.transaction():
        db.rows("CREATE (:Meta {key: 'acknowledged', value: 'kept'})")
    db.close()
    wal = _uncheckpointed_commit(origin)
    assert len(wal) > 100
    for cut in range(8, len(wal), max(1, len(wal) // 12)):
        for damage, data in (("cut", wal[:cut]), ("zeros", wal[:cut] + bytes(len(wal) - cut))):
            case = tmp_path / f"{damage}{cut}"
            shutil.copytree(origin.parent, case, ignore=shutil.ignore_patterns("*.wal"))
            (case / "memory.lbug.wal").write_bytes(data)
            reopened = Database(str(case / "memory.lbug"), "model", 4, 64, 1)
            meta = dict(reopened.rows("MATCH (k:Meta) RETURN k.key, k.value"))
            reopened.close()
            assert meta.get("acknowledged") == "kept", (damage, cut)
            assert "unacknowledged" not in meta
            assert list(case.glob("memory.lbug.wal.unreplayable-*")), (damage, cut)


def test_an_engine_crash_while_replaying_a_wal_spares_the_daemon(tmp_path, monkeypatch):
    """Some torn WALs crash the engine outright when it replays them (measured with ladybug
    0.22.0). The replay runs in a child process, so such a WAL is set aside and the database
    opens at its last checkpoint instead of killing the process that opens it."""
    path = tmp_path / "memory.lbug"
    db = Database(str(path), "model", 4, 64, 1)
    with db.transaction():
        db.rows("CREATE (:Meta {key: 'acknowledged', value: 'kept'})")
    db.close()
    _uncheckpointed_commit(path)
    crashing = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"
    monkeypatch.setattr(wal_recovery, "_CHILD", crashing)  # the fault: the engine's crash
    reopened = Database(str(path), "model", 4, 64, 1)
    meta = dict(reopened.rows("MATCH (k:Meta) RETURN k.key, k.value"))
    reopened.close()
    assert meta.get("acknowledged") == "kept" and "unacknowledged" not in meta
    assert list(tmp_path.glob("memory.lbug.wal.unreplayable-*"))


def test_rows_of_a_deferred_write_survive_a_wal_that_cannot_be_replayed(tmp_path):
    """A kill -9 can tear the WAL's tail; then it replays only up to the tear, and a copy
    is set aside. Rows written without a checkpoint after the tear come back from their
    journal, and their embeddings from the model; a write that never committed, or whose
    journal line was torn, is not."""
    path = tmp_path / "memory.lbug"
    now = utcnow()
    texts = ["alpha release", "beta deploy", "gamma rollback"]
    rows = [Memory(id=n, content=t, content_hash=content_hash(t), category="decision",
                   tags=["ops"], importance=4, access_count=0, workspace="/w",
                   created_at=now, updated_at=now, embedding_model="model")
            for n, t in enumerate(texts, 1)]
    subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, pickle, sys
        from memnest_daemon.storage.database import Database
        db = Database({str(path)!r}, "model", 384, 64, 1)
        for m, v in pickle.loads(sys.stdin.buffer.read()):
            with db.transaction(checkpoint=False):
                db.insert(m, v)
        os._exit(0)  # kill -9: nothing of close() runs
    """)], input=pickle.dumps(list(zip(rows, _fake_embed(texts)))), check=True)
    wal = path.with_name(path.name + ".wal")
    journal = path.with_name(path.name + ".deferred")
    saved_wal = wal.read_bytes()
    wal.write_bytes(saved_wal[:len(saved_wal) // 2] + bytes(len(saved_wal) // 2))
    RowJournal(str(journal)).append([rows[0].copy(id=98, content="never committed")])
    with open(journal, "ab") as f:
        f.write(b'[{"id": 99, "content": "torn')

    store = MemoryStore(str(path), "model", 384, 64, 1, embed=_fake_embed)
    try:
        assert list(tmp_path.glob("memory.lbug.wal.unreplayable-*"))  # the case it is about
        assert {m.id: (m.content, m.category, m.tags, m.importance, m.created_at)
                for m in store.catalog.values()} == \
            {m.id: (m.content, m.category, m.tags, m.importance, m.created_at) for m in rows}
        ids, matrix = store.vectors.rows()
        assert np.allclose(matrix, _fake_embed([store.catalog[i].content
                                                for i in ids.tolist()]))
        assert store.db.rows("MATCH (m:Memory)-[:ABOUT]->(t:Topic) RETURN count(t)") == [[3]]
        assert journal.read_bytes() == b""
    finally:
        store.close()


def test_deferred_rows_come_back_from_the_journal_when_no_part_of_the_wal_replays(tmp_path):
    """Rows written without a checkpoint by a process that then dies, and a WAL of which
    nothing replays (as after a kill -9 during a checkpoint, which left a WAL repeating rows
    the database file already had: "duplicated primary key"): every row can only come back
    from the journal. Opening checkpoints before it recovers them (the schema's transaction),
    and that checkpoint must not empty the journal first."""
    path = tmp_path / "memory.lbug"
    subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os
        import numpy as np
        from memnest_daemon.storage.database import Database
        from memnest_daemon.core.records import Memory, content_hash, utcnow

        db = Database({str(path)!r}, "model", 384, 64, 1)
        now, texts = utcnow(), ["delta release", "epsilon deploy"]
        rows = [Memory(id=n, content=t, content_hash=content_hash(t), category="decision",
                       tags=["ops"], importance=4, access_count=0, workspace="/w",
                       created_at=now, updated_at=now, embedding_model="model")
                for n, t in enumerate(texts, 1)]
        for m in rows:
            with db.transaction(checkpoint=False):  # acknowledged from here on
                db.insert(m, np.ones(384, dtype=np.float32))
        os._exit(0)  # kill -9: nothing of close() runs
    """)], check=True)
    wal = path.with_name(path.name + ".wal")
    wal.write_bytes(b"\xff" * wal.stat().st_size)  # not one record of it can be read

    store = MemoryStore(str(path), "model", 384, 64, 1, embed=_fake_embed)
    try:
        assert list(tmp_path.glob("memory.lbug.wal.unreplayable-*"))  # the case it is about
        assert {m.id: (m.content, m.tags, m.importance) for m in store.catalog.values()} == \
            {1: ("delta release", ["ops"], 4), 2: ("epsilon deploy", ["ops"], 4)}
        ids, matrix = store.vectors.rows()
        assert np.allclose(matrix, _fake_embed([store.catalog[i].content
                                                for i in ids.tolist()]))
    finally:
        store.close()


def test_a_journaled_row_the_database_refuses_does_not_keep_it_from_opening(tmp_path,
                                                                           monkeypatch):
    """A database file a crash left half checkpointed may refuse a row the journal brings
    back (its key index already holding the id): the others are written, and it opens."""
    path = tmp_path / "memory.lbug"
    Database(str(path), "model", 384, 64, 1).close()
    now = utcnow()
    rows = [Memory(id=n, content=f"row {n}", content_hash=content_hash(f"row {n}"),
                   category="general", tags=[], importance=3, access_count=0, workspace="/w",
                   created_at=now, updated_at=now, embedding_model="model") for n in (5, 6, 7)]
    journal = RowJournal(str(path) + ".deferred")
    journal.append(rows)
    journal.committed()
    real_insert = Database.insert

    def refusing(db, m, embedding):
        if m.id == 6:
            raise RuntimeError("Found duplicated primary key value 6")
        real_insert(db, m, embedding)

    monkeypatch.setattr(Database, "insert", refusing)
    db = Database(str(path), "model", 384, 64, 1)
    monkeypatch.undo()
    try:
        assert sorted(r[0] for r in db.rows("MATCH (m:Memory) RETURN m.id")) == [5, 7]
        assert Path(str(path) + ".deferred").read_bytes() == b""
    finally:
        db.close()
