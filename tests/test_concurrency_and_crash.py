"""Many editor windows on one daemon, and a daemon that dies under them."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import psutil

from support import result_json


def test_two_shims_store_concurrently_with_one_daemon(fresh_daemon, workspace):
    """Neither shim finds a daemon: both race to start one; exactly one must win."""
    per_shim = 50

    async def shim_worker(name: str, stored: list):
        async with fresh_daemon.mcp(workspace) as s:
            for n in range(per_shim):
                r = result_json(await s.call_tool("memory_store", {
                    "content": f"{name} window note {n}: the build step {n * 7} runs in CI",
                    "tags": [name]}))
                assert r["status"] == "stored", r
                stored.append(r["id"])

    async def body():
        stored_a, stored_b = [], []
        async with anyio.create_task_group() as tg:
            tg.start_soon(shim_worker, "alpha", stored_a)
            tg.start_soon(shim_worker, "beta", stored_b)
        return stored_a, stored_b

    stored_a, stored_b = anyio.run(body)
    assert len(set(stored_a) | set(stored_b)) == 2 * per_shim
    client = fresh_daemon.client(autostart=False)
    listed = client.call_tool("memory_list", {"limit": 500}, str(workspace))
    assert listed["total"] == 2 * per_shim
    assert {m["id"] for m in listed["memories"]} == set(stored_a) | set(stored_b)
    assert len(fresh_daemon.pids()) == 1, fresh_daemon.pids()


def test_kill_9_between_calls_next_call_succeeds(fresh_daemon, workspace):
    async def body():
        async with fresh_daemon.mcp(workspace) as s:
            ids = []
            for n in range(5):
                r = result_json(await s.call_tool("memory_store", {
                    "content": f"Durable fact number {n}: the cache TTL is {n * 10} seconds"}))
                ids.append(r["id"])
            first_pid = fresh_daemon.client(autostart=False).status().pid
            os.kill(first_pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while first_pid in fresh_daemon.pids() and time.monotonic() < deadline:
                await anyio.sleep(0.05)

            # Same shim, next call: the daemon is restarted and every memory is there.
            found = result_json(await s.call_tool("memory_search", {
                "query": "cache TTL", "top_k": 10}))
            assert {r["id"] for r in found["results"]} == set(ids)
            more = result_json(await s.call_tool("memory_store", {"content": "After the crash"}))
            assert more["id"] not in ids
            health = result_json(await s.call_tool("memory_stats", {}))["index_health"]
            assert health["healthy"] and health["rows_in_database"] == 6
        pids = fresh_daemon.pids()
        assert len(pids) == 1 and pids[0] != first_pid

    anyio.run(body)


def test_closing_a_window_leaves_only_the_daemon(fresh_daemon, workspace):
    async def body():
        async with fresh_daemon.mcp(workspace) as s:
            result_json(await s.call_tool("memory_stats", {}))
    anyio.run(body)
    time.sleep(0.5)
    mine = []
    for p in psutil.process_iter(["cmdline"]):
        try:  # other tests' shims (another xdist worker's) come and go meanwhile
            if "memnest-mcp" in " ".join(p.info["cmdline"] or []) and \
                    p.status() != psutil.STATUS_ZOMBIE and \
                    p.environ().get("MEMNEST_SOCKET") == str(fresh_daemon.socket):
                mine.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    assert mine == []
    assert len(fresh_daemon.pids()) == 1


def test_shim_exits_by_itself_when_stdin_closes(daemon, workspace):
    shim = subprocess.Popen([str(Path(sys.executable).parent / "memnest-mcp")], cwd=workspace,
                            env=daemon.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    init = ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
            '"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n')
    shim.stdin.write(init.encode())
    shim.stdin.flush()
    assert b'"result"' in shim.stdout.readline()
    shim.stdin.close()
    assert shim.wait(timeout=15) == 0
    assert daemon.client(autostart=False).is_running()
