"""memnestd as a process: one per socket, stale sockets, permissions, SIGTERM, model checks."""
import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from memnest_shims.client import ToolFailure


def test_second_start_exits_zero_saying_already_running(fresh_daemon):
    fresh_daemon.start()
    second = subprocess.run([str(fresh_daemon.proc.args[0])], env=fresh_daemon.env,
                            capture_output=True, text=True, timeout=60)
    assert second.returncode == 0
    assert "already running" in second.stderr
    assert len(fresh_daemon.pids()) == 1


def test_socket_and_folder_are_private(fresh_daemon):
    fresh_daemon.start()
    assert stat.S_IMODE(fresh_daemon.socket.stat().st_mode) == 0o600
    assert stat.S_IMODE(fresh_daemon.socket.parent.stat().st_mode) == 0o700


def test_loose_socket_folder_is_refused(fresh_daemon):
    os.chmod(fresh_daemon.root, 0o755)
    proc = subprocess.run([sys.executable, "-m", "memnest_daemon"], env=fresh_daemon.env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "chmod 700" in proc.stderr


def test_stale_socket_from_a_crashed_daemon_is_replaced(fresh_daemon, workspace):
    # A socket file nobody listens on, as a crashed daemon leaves it.
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(fresh_daemon.socket))
    stale.close()
    assert fresh_daemon.socket.exists()
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    assert client.call_tool("memory_stats", {}, str(workspace))["memories"] == 0


def test_sigterm_drains_closes_and_removes_the_socket(fresh_daemon, workspace):
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    client.call_tool("memory_store", {"content": "written before SIGTERM"}, str(workspace))
    fresh_daemon.proc.send_signal(signal.SIGTERM)
    assert fresh_daemon.proc.wait(timeout=60) == 0
    assert not fresh_daemon.socket.exists()
    # The database was closed cleanly: a new daemon opens it and finds the memory.
    fresh_daemon.start()
    found = fresh_daemon.client(autostart=False).call_tool(
        "memory_search", {"query": "SIGTERM"}, str(workspace))
    assert found["results"][0]["content"] == "written before SIGTERM"
    log = fresh_daemon.log.read_text()
    assert "received SIGTERM" in log and "memnestd stopped" in log


def test_database_of_another_model_is_refused_naming_both(fresh_daemon, workspace):
    db = workspace / ".memnest" / "memory.lbug"
    script = textwrap.dedent(f"""
        import ladybug as lb
        db = lb.Database({str(db)!r}); c = lb.Connection(db)
        c.execute("CREATE NODE TABLE Meta(key STRING PRIMARY KEY, value STRING)")
        c.execute("CREATE (:Meta {{key: 'embedding_model', value: 'BAAI/bge-base-en-v1.5'}})")
        c.execute("CREATE (:Meta {{key: 'embedding_dim', value: '768'}})")
    """)
    db.parent.mkdir()
    subprocess.run([sys.executable, "-c", script], check=True)
    fresh_daemon.start()
    with pytest.raises(ToolFailure) as failure:
        fresh_daemon.client(autostart=False).call_tool("memory_stats", {}, str(workspace))
    assert failure.value.code == "model_mismatch"
    assert "BAAI/bge-base-en-v1.5" in failure.value.message
    assert "memnest/all-MiniLM-L6-v2-int8" in failure.value.message
    # The daemon still serves other workspaces.
    other = workspace.parent / "other"
    other.mkdir()
    assert fresh_daemon.client(autostart=False).call_tool(
        "memory_stats", {}, str(other))["memories"] == 0


def test_unreplayable_wal_loses_nothing_acknowledged(fresh_daemon, workspace):
    """A kill -9 that tears the WAL's tail leaves a WAL LadybugDB refuses to replay whole;
    the daemon replays what was committed before the tear, keeps a copy of the WAL aside
    and keeps every acknowledged write."""
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    acked = client.call_tool("memory_store", {"content": "acknowledged before the crash"},
                             str(workspace))
    fresh_daemon.stop()
    db = workspace / ".memnest" / "memory.lbug"
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import ladybug as lb, time
        db = lb.Database({str(db)!r}); c = lb.Connection(db)
        c.execute("MATCH (m:Memory) SET m.content = $c", {{"c": "x" * 8000}})
        print("committed", flush=True); time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "committed"
    writer.kill()
    writer.wait()
    wal = db.with_name("memory.lbug.wal")
    torn = wal.read_bytes()
    wal.write_bytes(torn[:len(torn) // 2])  # the tear cuts the foreign write's records
    fresh_daemon.start()
    got = fresh_daemon.client(autostart=False).call_tool("memory_get", {"id": acked["id"]},
                                                         str(workspace))
    assert got["content"] == "acknowledged before the crash"
    assert list(db.parent.glob("memory.lbug.wal.unreplayable-*"))
    assert "could not be replayed" in fresh_daemon.log.read_text()


def test_shim_reports_a_daemon_that_cannot_start(fresh_daemon, workspace):
    env = {**fresh_daemon.env, "MEMORY_FUSION": "bogus"}
    ctl = os.path.join(os.path.dirname(sys.executable), "memnest-ctl")
    proc = subprocess.run([ctl, "start"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "MEMORY_FUSION" in proc.stderr and "Traceback" not in proc.stderr


def test_idle_databases_are_closed_and_reopen_on_use(fresh_daemon, workspace):
    fresh_daemon.env["MEMNEST_IDLE_CLOSE_MINUTES"] = "0.02"  # 1.2 s
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    stored = client.call_tool("memory_store", {"content": "kept across an idle close"},
                              str(workspace))
    assert [w.workspace for w in client.status().workspaces] == [str(workspace)]
    deadline = time.monotonic() + 15
    while client.status().workspaces and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not client.status().workspaces, "the idle database was not closed"
    got = client.call_tool("memory_get", {"id": stored["id"]}, str(workspace))
    assert got["content"] == "kept across an idle close"
    assert "after" in fresh_daemon.log.read_text() and "idle" in fresh_daemon.log.read_text()


def test_a_log_file_that_is_a_link_stops_memnestd_before_it_writes(fresh_daemon, tmp_path):
    """memnestd appends to its log by name: a link planted there (MEMNEST_LOG_FILE, or the
    default log folder) would have it write another file. It refuses to start, and the
    link's target is unchanged."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "memnestd.log"
    link.symlink_to(victim)
    fresh_daemon.env["MEMNEST_LOG_FILE"] = str(link)
    proc = fresh_daemon.start(wait=False)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "not a log file of its own" in err
    assert victim.read_text() == "keep me\n"
