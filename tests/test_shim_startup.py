"""memnest-mcp is a pipe: it imports gRPC and the generated messages, none of the MCP SDK,
starts the daemon when its editor first speaks (not before), and upgrades an older one then.
The daemon runs the session; a daemon replaced behind the shim's back is reconnected to with
the editor's handshake replayed, and told the editor that its tools may have changed."""
import subprocess
import sys

import anyio
import mcp_types as types
import psutil

from memnest_proto.version import VERSION

from support import BIN, old_daemon_command, result_json


def test_the_shim_imports_neither_grpc_nor_the_mcp_sdk():
    probe = ("import sys, memnest_shims.mcp.main, memnest_shims.mcp.pipe,"
             " memnest_shims.mcp.transports;"
             "print(','.join(m for m in ('grpc', 'google.protobuf', 'mcp', 'mcp_types',"
             " 'pydantic', 'anyio', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "", f"the shim imported {out}"


def test_a_running_shim_has_loaded_no_grpc(daemon, workspace):
    """Also once it has connected: grpcio is in a process of its own only to start one."""
    async def body():
        async with daemon.mcp(workspace) as s:
            result_json(await s.call_tool("memory_stats", {}))
            shims = [p for p in psutil.Process().children(recursive=True)
                     if "memnest-mcp" in " ".join(p.cmdline())]
            assert shims
            for shim in shims:
                loaded = {m.path for m in shim.memory_maps()}
                assert not any("cygrpc" in path or "_upb" in path for path in loaded), loaded
    anyio.run(body)


def test_the_version_flag_answers_without_a_daemon(fresh_daemon):
    out = subprocess.run([str(BIN / "memnest-mcp"), "--version"], capture_output=True,
                         text=True, env=fresh_daemon.env, timeout=30)
    assert out.stdout.strip() == f"memnest-mcp {VERSION}" and fresh_daemon.pids() == []


def test_a_shim_starts_no_daemon_until_its_editor_speaks(fresh_daemon, workspace):
    shim = subprocess.Popen([str(BIN / "memnest-mcp")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=fresh_daemon.env, cwd=workspace)
    try:
        assert shim.wait(timeout=1.0) is None
    except subprocess.TimeoutExpired:
        pass
    assert fresh_daemon.pids() == []
    shim.stdin.close()
    assert shim.wait(timeout=10) == 0
    assert fresh_daemon.pids() == []

    async def body():
        async with fresh_daemon.mcp(workspace) as s:
            assert len(fresh_daemon.pids()) == 1  # started by the initialize
            assert result_json(await s.call_tool("memory_stats", {}))["memories"] == 0
    anyio.run(body)


def test_an_older_daemon_is_replaced_when_the_editor_connects(fresh_daemon, workspace):
    fresh_daemon.proc = subprocess.Popen(
        old_daemon_command("0.0.1"), env=fresh_daemon.env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fresh_daemon.wait_ready()
    old_pid = fresh_daemon.proc.pid

    async def body():
        async with fresh_daemon.mcp(workspace) as s:
            assert {t.name for t in (await s.list_tools()).tools} >= {"memory_store"}
    anyio.run(body)
    status = fresh_daemon.client(autostart=False).status()
    assert status.version == VERSION and status.pid != old_pid


def test_a_replaced_daemon_gets_the_handshake_and_the_editor_hears_of_new_tools(
        fresh_daemon, workspace):
    fresh_daemon.start()
    heard: list[str] = []

    async def on_message(message) -> None:
        if isinstance(message, types.ServerNotification):
            heard.append(message.method)

    async def body():
        async with fresh_daemon.mcp(workspace, message_handler=on_message) as s:
            stored = result_json(await s.call_tool("memory_store", {
                "content": "The staging database is reset every Monday at 06:00"}))
            fresh_daemon.stop()  # drains: the session is closed, the shim reconnects later
            fresh_daemon.proc = subprocess.Popen(
                old_daemon_command("9.9.9"), env=fresh_daemon.env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            fresh_daemon.wait_ready()
            # Same editor session, no new initialize from the editor: the shim replayed it.
            assert {t.name for t in (await s.list_tools()).tools} >= {"memory_store"}
            got = result_json(await s.call_tool("memory_get", {"id": stored["id"]}))
            assert got["content"].startswith("The staging database")
            await anyio.sleep(0.2)
    anyio.run(body)
    assert "notifications/tools/list_changed" in heard


def test_a_daemon_without_sessions_is_refused_with_a_version_message(fresh_daemon, workspace):
    env = {**fresh_daemon.env, "MEMNEST_TEST_NO_SESSIONS": "1"}
    fresh_daemon.proc = subprocess.Popen(old_daemon_command("9.9.9"), env=env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fresh_daemon.wait_ready()

    async def body():
        async with fresh_daemon.mcp(workspace) as s:
            pass
    try:
        anyio.run(body)
        raise AssertionError("initialize succeeded against a daemon without sessions")
    except Exception as exc:  # the SDK client raises the JSON-RPC error of initialize
        text = repr(exc)
        assert "memnestd 9.9.9" in text and "predates MCP sessions" in text, text
