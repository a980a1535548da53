"""memnest-mcp starts with a warm-up thread that loads the gRPC client and fetches the tools of
a daemon already running, while the main thread imports the MCP SDK. The warm-up never starts
or replaces a daemon: that stays with the first call."""
import subprocess
import sys

import anyio

from memnest_proto.version import VERSION

from conftest import old_daemon_command, result_json


def test_the_entry_module_imports_neither_grpc_nor_the_mcp_sdk():
    probe = ("import sys, memnest_shims.mcp.main;"
             "print(','.join(m for m in ('grpc', 'google.protobuf', 'mcp', 'mcp_types')"
             " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "", f"importing the entry module imported {out}"


def test_the_server_is_imported_without_the_sdk_client_yet_the_whole_package_stays_usable():
    probe = ("import sys, memnest_shims.mcp.server;"
             "left_out = 'mcp.client.session' not in sys.modules;"
             "from mcp import ClientSession; import mcp.server;"
             "print(left_out, ClientSession.__name__, mcp.server.MCPServer.__name__)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "ClientSession", "MCPServer"]


def test_a_shim_starts_no_daemon_until_its_first_call(fresh_daemon, workspace):
    async def body():
        async with fresh_daemon.mcp(workspace) as s:
            await anyio.sleep(1.0)  # ample time for the warm-up to finish
            assert fresh_daemon.pids() == []
            assert result_json(await s.call_tool("memory_stats", {}))["memories"] == 0
    anyio.run(body)
    assert len(fresh_daemon.pids()) == 1


def test_an_older_daemon_is_replaced_by_the_first_call_not_the_warmup(fresh_daemon, workspace):
    fresh_daemon.proc = subprocess.Popen(
        old_daemon_command("0.0.1"), env=fresh_daemon.env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fresh_daemon.wait_ready()
    old_pid = fresh_daemon.proc.pid

    async def body():
        async with fresh_daemon.mcp(workspace) as s:
            await anyio.sleep(1.0)
            assert fresh_daemon.pids() == [old_pid]
            assert {t.name for t in (await s.list_tools()).tools} >= {"memory_store"}
    anyio.run(body)
    status = fresh_daemon.client(autostart=False).status()
    assert status.version == VERSION and status.pid != old_pid


def test_tools_are_listed_after_the_daemon_was_replaced_since_start(fresh_daemon, workspace):
    fresh_daemon.start()

    async def body():
        async with fresh_daemon.mcp(workspace) as s:
            await anyio.sleep(1.0)  # the warm-up has fetched the first daemon's tools
            fresh_daemon.stop()
            fresh_daemon.start()
            assert {t.name for t in (await s.list_tools()).tools} >= {"memory_store"}
            assert result_json(await s.call_tool("memory_stats", {}))["memories"] == 0
    anyio.run(body)
