"""Every acknowledged write survives kill -9: a client stores batches in a loop while the
daemon is killed at seeded-random moments and restarted; afterwards every acknowledged memory
is there with its exact content and the database reports healthy indexes."""
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import real_ladybug

from memnest_daemon.database import Database
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


def _uncheckpointed_commit(path: Path) -> bytes:
    """Commit a transaction in another process that dies before any checkpoint; the WAL."""
    subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, real_ladybug as lb
        c = lb.Connection(lb.Database({str(path)!r}, max_db_size=1 << 30))
        c.execute("CREATE (:Meta {{key: 'unacknowledged', value: $v}})", {{"v": "x" * 3000}})
        os._exit(0)
    """)], check=True)
    return path.with_name(path.name + ".wal").read_bytes()


def test_damaged_wal_of_any_shape_costs_only_the_unacknowledged_write(tmp_path):
    """kill -9 can leave a WAL cut short or with a zero-filled tail; LadybugDB then fails
    to open in many different ways. Each one must still open the database at its last
    checkpoint, which holds every acknowledged write."""
    origin = tmp_path / "origin" / "memory.lbug"
    db = Database(str(origin), "model", 4, 64, 1)
    with db.transaction():
        db.rows("CREATE (:Meta {key: 'acknowledged', value: 'kept'})")
    db.close()
    wal = _uncheckpointed_commit(origin)
    assert len(wal) > 100
    errors = set()
    for cut in range(8, len(wal), max(1, len(wal) // 40)):
        for damage, data in (("cut", wal[:cut]), ("zeros", wal[:cut] + bytes(len(wal) - cut))):
            case = tmp_path / f"{damage}{cut}"
            shutil.copytree(origin.parent, case, ignore=shutil.ignore_patterns("*.wal"))
            (case / "memory.lbug.wal").write_bytes(data)
            try:
                real_ladybug.Database(str(case / "memory.lbug"), max_db_size=1 << 30).close()
            except Exception as exc:
                errors.add(str(exc).split(":")[0][:40])
            else:
                continue  # LadybugDB took this one itself (a cut at a record boundary)
            shutil.rmtree(case)
            shutil.copytree(origin.parent, case, ignore=shutil.ignore_patterns("*.wal"))
            (case / "memory.lbug.wal").write_bytes(data)
            reopened = Database(str(case / "memory.lbug"), "model", 4, 64, 1)
            meta = dict(reopened.rows("MATCH (k:Meta) RETURN k.key, k.value"))
            reopened.close()
            assert meta.get("acknowledged") == "kept", (damage, cut)
            assert "unacknowledged" not in meta
            assert list(case.glob("memory.lbug.wal.unreplayable-*"))
    assert len(errors) >= 2, errors  # the damage really took several shapes
