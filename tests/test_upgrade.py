"""Versions and upgrades: a newer client replaces an older daemon without any client seeing an
error; an older client keeps working with a newer daemon while the protocol matches."""
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

from memnest_proto.version import PROTOCOL_VERSION, VERSION
from memnest_shims.client import DaemonClient, DaemonUnavailable, version_key

from support import old_daemon_command, result_json

OLD = "0.0.1"


@pytest.fixture(autouse=True)
def in_process_env(fresh_daemon, monkeypatch):
    """Clients in this process may start daemons: give those the test daemon's environment."""
    for name in ("MEMNEST_SOCKET", "MEMNEST_LOG_FILE", "MEMORY_EMBEDDING_MODEL",
                 "MEMNEST_USER_DIR"):
        monkeypatch.setenv(name, fresh_daemon.env[name])


def start_old_daemon(d) -> subprocess.Popen:
    """A daemon that reports an older version, as one started before an upgrade would."""
    d.proc = subprocess.Popen(old_daemon_command(OLD), env=d.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d.wait_ready()
    return d.proc


def test_version_order():
    assert version_key("0.10.0") > version_key("0.9.9") > version_key("0.9") > (0, 1)
    assert version_key("1.2.3rc1") == (1, 2, 3)
    assert version_key(OLD) < version_key(VERSION)


def test_two_shims_replace_an_older_daemon_and_no_call_fails(fresh_daemon, workspace):
    old_proc = start_old_daemon(fresh_daemon)
    watcher = fresh_daemon.client(autostart=False)
    old_status = watcher.status()
    assert old_status.version == OLD

    # An editor still running the old shim has a long batch in flight when the upgrade starts.
    old_shim = DaemonClient(fresh_daemon.socket, client_name="old-shim", version=OLD)
    items = [{"content": f"meeting note {i}: the {i % 7}th sprint review moved to room {i}",
              "tags": ["batch"]} for i in range(300)]
    pool = ThreadPoolExecutor(max_workers=1)

    async def two_new_shims():
        in_flight = pool.submit(old_shim.call_tool, "memory_store", {"items": items},
                                str(workspace))
        deadline = time.monotonic() + 30
        while watcher.status().calls_in_flight < 1 and not in_flight.done():
            assert time.monotonic() < deadline, "the batch never started"
            await anyio.sleep(0.02)
        assert not in_flight.done(), "the batch finished before the upgrade could start"
        # The new shims' editors connect while the batch runs: the first asks for the upgrade.
        async with fresh_daemon.mcp(workspace) as a, fresh_daemon.mcp(workspace) as b:
            stores, searches = [], []

            async def use(session, n):
                for i in range(3):
                    stores.append(result_json(await session.call_tool("memory_store", {
                        "content": f"shim {n} remembers fact {i} across the upgrade"})))
                    searches.append(result_json(await session.call_tool("memory_search", {
                        "query": f"shim {n} fact {i}"})))

            async with anyio.create_task_group() as tg:
                tg.start_soon(use, a, "A")
                tg.start_soon(use, b, "B")
            return stores, searches, in_flight

    stores, searches, in_flight = anyio.run(two_new_shims)  # result_json raises on errors
    batch = in_flight.result(timeout=120)  # the old shim's call completed, no error
    pool.shutdown()

    # Whatever dedup decided (stored, merged, duplicate), every call got a result.
    assert len(batch["results"]) == len(items) and len(stores) == 6 and len(searches) == 6
    stored = [r["id"] for r in stores]
    # The old daemon drained and left cleanly; exactly one new daemon serves the socket.
    assert old_proc.wait(timeout=60) == 0
    new_status = fresh_daemon.client(autostart=False).status()
    assert new_status.version == VERSION and new_status.pid != old_status.pid
    assert fresh_daemon.pids() == [new_status.pid]
    # Nothing acknowledged before or during the upgrade was lost.
    every_id = sorted(set(stored + [r["id"] for r in batch["results"]]))
    got = fresh_daemon.client().call_tool("memory_get", {"ids": every_id}, str(workspace))
    assert got["missing"] == [] and len(got["memories"]) == len(every_id)
    # The old shim keeps working against the newer daemon.
    assert old_shim.call_tool("memory_stats", {}, str(workspace))["memories"] == len(every_id)
    # The old daemon was asked to make way while the batch ran, and finished it afterwards.
    old_lines = [ln for ln in fresh_daemon.log.read_text().splitlines()
                 if f"[{old_status.pid} " in ln]
    asked = next(i for i, ln in enumerate(old_lines) if "shutdown requested for an upgrade" in ln)
    assert any("memory_store took" in ln for ln in old_lines[asked:]), old_lines[asked:]
    assert "upgraded from 0.0.1" in (fresh_daemon.root / "shim-stderr.log").read_text()


def test_older_client_keeps_working_with_a_newer_daemon(fresh_daemon, workspace):
    fresh_daemon.start()
    pid = fresh_daemon.client().status().pid
    old_client = DaemonClient(fresh_daemon.socket, client_name="old-ctl", version=OLD)
    stored = old_client.call_tool("memory_store", {"content": "written by an older client"},
                                  str(workspace))
    assert stored["status"] == "stored"
    assert old_client.upgraded_from is None
    assert fresh_daemon.client().status().pid == pid  # never asked to make way


def test_newer_daemon_with_another_protocol_is_refused_clearly(fresh_daemon, workspace):
    fresh_daemon.start()
    pid = fresh_daemon.client().status().pid
    stale = DaemonClient(fresh_daemon.socket, client_name="memnest-mcp", version=OLD,
                         protocol=PROTOCOL_VERSION - 1)
    with pytest.raises(DaemonUnavailable) as failure:
        stale.call_tool("memory_stats", {}, str(workspace))
    message = str(failure.value)
    assert f"protocol {PROTOCOL_VERSION}" in message and "update this memnest-mcp" in message
    assert fresh_daemon.client().status().pid == pid  # the newer daemon was left alone


def test_client_that_cannot_start_daemons_does_not_upgrade(fresh_daemon, workspace):
    old_proc = start_old_daemon(fresh_daemon)
    viewer = DaemonClient(fresh_daemon.socket, client_name="viewer", autostart=False)
    assert viewer.call_tool("memory_stats", {}, str(workspace))["memories"] == 0
    assert old_proc.poll() is None


def test_concurrent_upgraders_start_exactly_one_daemon(fresh_daemon, workspace):
    old_proc = start_old_daemon(fresh_daemon)
    clients = [DaemonClient(fresh_daemon.socket, client_name=f"c{i}") for i in range(4)]
    errors, results = [], []

    def use(client):
        try:
            results.append(client.call_tool("memory_stats", {}, str(workspace)))
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            errors.append(exc)

    threads = [threading.Thread(target=use, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert not errors, errors
    assert len(results) == 4
    assert old_proc.wait(timeout=60) == 0
    assert len(fresh_daemon.pids()) == 1
    assert fresh_daemon.client().status().version == VERSION


def test_a_client_that_outlives_its_daemon_checks_the_next_one(fresh_daemon, workspace):
    """gRPC reconnects by itself; the client must still learn which daemon it now talks to."""
    fresh_daemon.start()
    client = DaemonClient(fresh_daemon.socket, client_name="memnest-mcp")
    client.call_tool("memory_stats", {}, str(workspace))
    first = client._checked_pid
    assert first == fresh_daemon.proc.pid
    fresh_daemon.stop()
    fresh_daemon.start()  # replaced behind the client's back
    deadline = time.monotonic() + 10
    while client._checked_pid is not None and time.monotonic() < deadline:
        time.sleep(0.05)  # the channel notices the connection went away
    assert client._checked_pid is None, "the client did not notice its daemon went away"
    client.call_tool("memory_stats", {}, str(workspace))
    assert client._checked_pid == fresh_daemon.proc.pid != first
