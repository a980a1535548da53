"""A call that reached the daemon is never sent again when the daemon dies running it: a
poisoned call would kill it twice, and a write could be applied twice. The caller learns
that the outcome is unknown; a call that could not reach any daemon is sent once a daemon
has been started."""
import json
import os
import signal
import threading
import time

import pytest

from memnest_shims.client import never_sent
from memnest_shims.errors import OutcomeUnknown


@pytest.fixture
def spawning(fresh_daemon, monkeypatch):
    """A daemon environment whose clients, in this process, start the daemon themselves."""
    for name in ("MEMNEST_SOCKET", "MEMNEST_LOG_FILE", "MEMORY_EMBEDDING_MODEL",
                 "MEMNEST_USER_DIR"):
        monkeypatch.setenv(name, fresh_daemon.env[name])
    fresh_daemon.start()
    return fresh_daemon


def _kill_when_busy(daemon, after_s: float) -> threading.Thread:
    def kill():
        time.sleep(after_s)
        for pid in daemon.pids():
            os.kill(pid, signal.SIGKILL)
    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def test_a_call_the_daemon_died_running_is_not_repeated(spawning, workspace):
    fresh_daemon = spawning
    client = fresh_daemon.client(autostart=True)
    client.call_tool("memory_stats", {}, str(workspace))
    first_pid = fresh_daemon.pids()
    items = [{"content": f"note {i}: the worker pool drains queue q{i} before shutdown"}
             for i in range(400)]
    killer = _kill_when_busy(fresh_daemon, 1.0)
    with pytest.raises(OutcomeUnknown, match="whether it took effect is unknown"):
        client.call_tool("memory_store", {"items": items}, str(workspace))
    killer.join()
    time.sleep(1.0)
    assert fresh_daemon.pids() == [], "the client started a daemon to repeat the call"
    # The next call starts the daemon again, and nothing was written twice.
    listed = client.call_tool("memory_list", {"limit": 500}, str(workspace))
    assert fresh_daemon.pids() and fresh_daemon.pids() != first_pid
    contents = [m["content"] for m in listed["memories"]]
    assert len(contents) == len(set(contents)) <= len(items)
    client.close()


def test_a_call_that_found_no_daemon_is_sent_once_one_runs(spawning, workspace):
    fresh_daemon = spawning
    client = fresh_daemon.client(autostart=True)
    client.call_tool("memory_stats", {}, str(workspace))
    for pid in fresh_daemon.pids():
        os.kill(pid, signal.SIGKILL)
    fresh_daemon.proc.wait(timeout=10)
    stored = client.call_tool("memory_store", {"content": "Sent after the restart"},
                              str(workspace))
    assert stored["status"] == "stored"
    client.close()


def test_what_grpc_says_when_nothing_was_sent():
    assert never_sent("failed to connect to all addresses; last error: FAILED_PRECONDITION: "
                      "unix:/run/memnestd.sock: connect failed: ... Connection refused")
    assert not never_sent("Stream removed (Socket closed)")


async def _store_through_the_shim(daemon, workspace, items):
    async with daemon.mcp(workspace, MEMORY_WORKSPACE=str(workspace)) as session:
        await session.call_tool("memory_stats", {})
        killer = _kill_when_busy(daemon, 1.0)
        result = await session.call_tool("memory_store", {"items": items})
        killer.join()
        return result


def test_the_shim_reports_an_unknown_outcome(fresh_daemon, workspace):
    import anyio
    fresh_daemon.start()
    items = [{"content": f"note {i}: the cache warmer refills shard s{i} at noon"}
             for i in range(400)]
    result = anyio.run(_store_through_the_shim, fresh_daemon, workspace, items)
    assert result.is_error
    assert result.content[0].text.startswith("outcome_unknown:"), result.content[0].text
    assert "memory_get" in result.content[0].text
    assert json.dumps(items[0]) not in result.content[0].text
