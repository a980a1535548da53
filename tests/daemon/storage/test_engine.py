"""The storage engine alone, without memnest: what memnest relies on LadybugDB to get right.

Each test here reduces something the engine once got wrong (or could) to a few statements, so
that an engine upgrade that brings it back fails here, by name, before anything built on top.
real-ladybug 0.15.3, which memnest used before, fails the first two: after three rounds of
`SET` on one row's STRING[] plus CHECKPOINT, other rows held shifted lists; and in random
histories of writes, deletes, checkpoints and reopens, rows came back with other rows' tags
or content, invalid UTF-8, or a file that no longer opened (bench/RESULTS.md#storage-engine).
"""
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import ladybug as lb
import pytest

from memnest_daemon.storage import wal_recovery
from memnest_daemon.storage.database import Database

STEPS = int(os.environ.get("MEMNEST_ENGINE_STEPS", "3000" if os.environ.get("MEMNEST_SOAK")
                           else "600"))


def _rows(conn, query: str) -> list[list]:
    result = conn.execute(query)
    out = []
    while result.has_next():
        out.append(result.get_next())
    return out


def test_setting_one_rows_list_leaves_the_other_rows_alone(tmp_path):
    path = str(tmp_path / "db")
    db = lb.Database(path)
    conn = lb.Connection(db)
    conn.execute("CREATE NODE TABLE M(id INT64 PRIMARY KEY, tags STRING[])")
    expected = {i: ["common", f"t{i}a", f"t{i}b"] for i in range(10)}
    for i, tags in expected.items():
        conn.execute("CREATE (:M {id: $id, tags: $tags})", {"id": i, "tags": tags})
    for n in range(3):
        expected[5] = ["common", f"new{n}"]
        conn.execute("MATCH (m:M) WHERE m.id = 5 SET m.tags = $t", {"t": expected[5]})
        conn.execute("CHECKPOINT")
        assert dict(_rows(conn, "MATCH (m:M) RETURN m.id, m.tags")) == expected, n
    conn.close()
    db.close()
    db = lb.Database(path)
    assert dict(_rows(lb.Connection(db), "MATCH (m:M) RETURN m.id, m.tags")) == expected


def test_a_random_history_reads_back_exactly_what_was_written(tmp_path):
    """Creates, rewrites of every column (strings, a list, an array, an integer), detach
    deletes, checkpoints and reopens, compared with a plain model every few steps."""
    rng = random.Random(20261201)
    path = str(tmp_path / "db")
    db = lb.Database(path)
    conn = lb.Connection(db)
    conn.execute("CREATE NODE TABLE M(id INT64 PRIMARY KEY, content STRING, tags STRING[], "
                 "n INT64, e FLOAT[4])")
    conn.execute("CREATE NODE TABLE T(name STRING PRIMARY KEY)")
    conn.execute("CREATE REL TABLE A(FROM M TO T)")
    model: dict[int, dict] = {}

    def words(k: int) -> list[str]:
        return [rng.choice(["alpha", "beta", "gamma", f"t{rng.randint(0, 50)}",
                            "x" * rng.randint(1, 40)]) for _ in range(k)]

    def row(memory_id: int) -> dict:
        return {"id": memory_id, "content": " ".join(words(rng.randint(1, 30))),
                "tags": words(rng.randint(0, 4)), "n": rng.randint(0, 9),
                "e": [float(rng.randint(0, 99)) for _ in range(4)]}

    next_id = 0
    for step in range(STEPS):
        op = rng.random()
        if op < 0.3 or len(model) < 5:
            next_id += 1
            model[next_id] = row(next_id)
            conn.execute("CREATE (:M {id: $id, content: $content, tags: $tags, n: $n, e: $e})",
                         model[next_id])
            for tag in set(model[next_id]["tags"]):
                conn.execute("MERGE (t:T {name: $name})", {"name": tag})
                conn.execute("MATCH (m:M), (t:T) WHERE m.id = $id AND t.name = $name "
                             "MERGE (m)-[:A]->(t)", {"id": next_id, "name": tag})
        elif op < 0.55:
            memory_id = rng.choice(list(model))
            fresh = row(memory_id)
            model[memory_id] = {k: fresh[k] if rng.random() < 0.5 else v
                                for k, v in model[memory_id].items()}
            conn.execute("MATCH (m:M) WHERE m.id = $id SET m.content = $content, "
                         "m.tags = $tags, m.n = $n, m.e = $e", model[memory_id])
        elif op < 0.65:
            memory_id = rng.choice(list(model))
            conn.execute("MATCH (m:M) WHERE m.id = $id DETACH DELETE m", {"id": memory_id})
            del model[memory_id]
        elif op < 0.8:
            conn.execute("CHECKPOINT")
        elif op < 0.85:
            conn.close()
            db.close()
            db = lb.Database(path)
            conn = lb.Connection(db)
        if step % 10 == 0 or step == STEPS - 1:
            got = {r[0]: {"id": r[0], "content": r[1], "tags": r[2], "n": r[3], "e": r[4]}
                   for r in _rows(conn, "MATCH (m:M) RETURN m.id, m.content, m.tags, m.n, m.e")}
            assert got == model, f"step {step}"


def test_a_torn_wal_replays_whole_transactions_up_to_the_tear(tmp_path):
    """What wal_recovery relies on: replaying up to the first damaged record keeps every
    transaction committed before it, whole, and none after it."""
    origin = tmp_path / "origin"
    origin.mkdir()
    path = origin / "db"
    subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, ladybug as lb
        conn = lb.Connection(lb.Database({str(path)!r}))
        conn.execute("CREATE NODE TABLE M(id INT64 PRIMARY KEY, content STRING, "
                     "tags STRING[], e FLOAT[384])")
        conn.execute("CHECKPOINT")
        for t in range(12):
            conn.execute("BEGIN TRANSACTION")
            for k in range(3):
                i = t * 3 + k
                conn.execute("CREATE (:M {{id: $i, content: $c, tags: $g, e: $e}})",
                             {{"i": i, "c": "row %d " % i * 50, "g": ["t%d" % t],
                               "e": [float(i)] * 384}})
            conn.execute("COMMIT")
        os._exit(0)  # kill -9: no checkpoint, no close
    """)], check=True)
    wal = Path(str(path) + ".wal").read_bytes()
    seen = set()
    for cut in range(0, len(wal), len(wal) // 15):
        case = tmp_path / f"cut{cut}"
        case.mkdir()
        (case / "db").write_bytes(path.read_bytes())
        (case / "db.wal").write_bytes(wal[:cut])
        wal_recovery.replay(str(case / "db"), 1 << 30)  # in a child: a crash spares pytest
        db = lb.Database(str(case / "db"))
        rows = _rows(lb.Connection(db), "MATCH (m:M) RETURN m.id, m.content, m.tags, m.e[1]")
        db.close()
        assert len(rows) % 3 == 0, cut
        assert sorted(rows) == [[i, "row %d " % i * 50, ["t%d" % (i // 3)], float(i)]
                                for i in range(len(rows))], cut
        seen.add(len(rows))
    assert len(seen) >= 5  # cuts fell between many different transactions


def test_closing_a_database_releases_it_to_other_processes(tmp_path):
    path = tmp_path / "memory.lbug"
    db = Database(str(path), "model", 4, 64, 1)
    with db.transaction():
        db.set_meta("key", "value")  # a prepared statement, which held the file open
    db.close()
    opened = subprocess.run([sys.executable, "-c",
                             f"import ladybug as lb; lb.Database({str(path)!r}); print('ok')"],
                            capture_output=True, text=True)
    assert opened.stdout.strip() == "ok", opened.stderr[-300:]


@pytest.mark.parametrize("whole", [True, False])
def test_a_wal_held_by_another_process_is_left_alone(tmp_path, whole):
    """A database another process has open is not replayed or set aside under it."""
    path = tmp_path / "db"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, ladybug as lb
        conn = lb.Connection(lb.Database({str(path)!r}))
        conn.execute("CREATE NODE TABLE M(id INT64 PRIMARY KEY)")
        conn.execute("CREATE (:M {{id: 1}})")
        print("holding", flush=True)
        sys.stdin.read()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        assert wal_recovery.needs_replay(str(path))
        with pytest.raises(wal_recovery.DatabaseLocked):
            wal_recovery._replay_in_child(str(path), whole, 1 << 30)
        assert not list(tmp_path.glob("*.unreplayable-*"))
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
