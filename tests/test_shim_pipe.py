"""memnest-mcp relays JSON-RPC lines; the daemon runs the MCP session. What an editor relies
on still works through the pipe: roots, cancellation, a client that is not the MCP SDK, a
workspace pinned across a daemon that died, and bad input answered rather than dropped."""
import json
import os
import re
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import anyio
import grpc
import mcp_types as types
import pytest
from support import BIN, result_json
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from memnest_daemon.server import session_pipe
from memnest_daemon.server.mcp_session import Caller, folder_of_root
from memnest_proto import memnest_pb2 as pb
from memnest_proto.contract import MAX_MESSAGE_BYTES, SESSION_PREFACE

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                   "clientInfo": {"name": "raw-client", "version": "1"}}}


class RawClient:
    """An editor that writes JSON-RPC lines by hand (not the MCP SDK)."""

    def __init__(self, env: dict, cwd: Path):
        self.proc = subprocess.Popen([str(BIN / "memnest-mcp")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, cwd=cwd)

    def send(self, message) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict:
        line = self.proc.stdout.readline()
        assert line, "the shim closed stdout"
        return json.loads(line)

    def answer(self, request_id) -> dict:
        """The reply to `request_id` (notifications on the way are skipped)."""
        while True:
            message = self.read()
            if message.get("id") == request_id and "method" not in message:
                return message

    def close(self) -> int:
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


@pytest.fixture
def raw(daemon, workspace):
    client = RawClient(daemon.env, workspace)
    client.send(INIT)
    assert client.answer(1)["result"]["serverInfo"]["name"] == "memnest"
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    yield client
    if client.proc.poll() is None:
        client.close()


def test_a_hand_written_client_on_an_older_protocol_is_served(raw):
    raw.send({"jsonrpc": "2.0", "id": "ping-1", "method": "ping"})
    assert raw.answer("ping-1")["result"] == {}
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    names = {t["name"] for t in raw.answer(2)["result"]["tools"]}
    assert {"memory_store", "memory_search"} <= names
    raw.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "memory_store", "arguments": {"content": "The CI cache key includes the lockfile"}}})
    stored = raw.answer(3)["result"]
    assert not stored.get("isError") and json.loads(stored["content"][0]["text"])["id"]
    # Ids 1 and "1" are different requests; each gets its own answer.
    raw.send({"jsonrpc": "2.0", "id": "1", "method": "ping"})
    assert raw.answer("1")["result"] == {}
    assert raw.close() == 0


def test_broken_and_oversized_lines_are_answered_and_the_pipe_goes_on(raw):
    raw.send(b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list"')  # cut short
    broken = raw.read()
    assert broken["error"]["code"] in (-32700, -32600)
    big = b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"x": "' + \
        b"a" * MAX_MESSAGE_BYTES + b'"}}'
    raw.send(big)
    refused = raw.answer(6)
    assert refused["error"]["code"] == -32600 and "larger than" in refused["error"]["message"]
    raw.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
              "params": {"name": "no_such_tool", "arguments": {}}})
    assert raw.answer(7)["error"]["code"] == -32602
    raw.send({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
              "params": {"name": "memory_search", "arguments": {"query": 5}}})
    bad = raw.answer(8)["result"]
    assert bad["isError"] and "query" in bad["content"][0]["text"]
    raw.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})
    assert raw.answer(9)["result"] == {}


def test_calls_answered_directly_answer_as_the_sdk_does(raw, daemon, workspace):
    """Once the session is initialized and its workspace known, a call asking for no
    progress is answered without the SDK's dispatch (session_pipe: answered directly); one
    that asks for progress goes through it. Both answer alike: results, tool errors,
    protocol errors, and the editor's name in what it stores."""
    raw.send({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {
        "name": "memory_store", "arguments": {"content": "The release train leaves on Tuesdays"}}})
    first = json.loads(raw.answer(20)["result"]["content"][0]["text"])
    calls = [("memory_get", {"id": first["id"]}), ("memory_get", {"id": 999999}),
             ("memory_search", {"query": "release train"}), ("memory_search", {"query": 5}),
             ("no_such_tool", {})]
    for n, (name, arguments) in enumerate(calls):
        direct, via_sdk = 100 + 2 * n, 101 + 2 * n
        raw.send({"jsonrpc": "2.0", "id": direct, "method": "tools/call",
                  "params": {"name": name, "arguments": arguments}})
        raw.send({"jsonrpc": "2.0", "id": via_sdk, "method": "tools/call",
                  "params": {"name": name, "arguments": arguments,
                             "_meta": {"progressToken": f"p{n}"}}})
        answers: dict = {}
        while len(answers) < 2:  # in either order: they run side by side
            message = raw.read()
            if message.get("id") in (direct, via_sdk) and "method" not in message:
                answers[message["id"]] = message
        a, b = answers[direct], answers[via_sdk]
        assert ("error" in a) == ("error" in b), name
        if "error" in a:
            assert a["error"] == b["error"], name
            continue
        a, b = a["result"], b["result"]
        assert bool(a.get("isError")) == bool(b.get("isError")), name
        if a.get("isError"):
            assert a["content"] == b["content"], name
            continue
        assert a["structuredContent"] == json.loads(a["content"][0]["text"]), name
        # what a read changes between the two (access counts, times) aside
        strip = re.compile(r'"(access_count|accessed_at)":\s*[^,}]+')
        assert strip.sub("", a["content"][0]["text"]) == strip.sub("", b["content"][0]["text"])
    got = daemon.client().call_tool("memory_get", {"id": first["id"]}, str(workspace))
    assert got["origin"]["client"] == "raw-client"


def test_a_cancelled_write_stores_nothing(raw, daemon, workspace):
    items = [{"content": f"deployment note {i}: service {i % 13} moved to rack {i}"}
             for i in range(400)]
    raw.send({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
              "params": {"name": "memory_store", "arguments": {"items": items}}})
    raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": 10, "reason": "the user pressed stop"}})
    client = daemon.client()
    deadline = time.monotonic() + 60
    while client.status().calls_in_flight and time.monotonic() < deadline:
        time.sleep(0.1)
    raw.send({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
              "params": {"name": "memory_stats", "arguments": {}}})
    stats = json.loads(raw.answer(11)["result"]["content"][0]["text"])
    assert stats["memories"] == 0


def test_the_workspace_comes_from_the_editors_roots(daemon, tmp_path):
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    asked = []

    async def list_roots(context) -> types.ListRootsResult:
        asked.append(True)
        return types.ListRootsResult(roots=[
            types.Root(uri=(tmp_path / "gone").as_uri()),  # no such folder: skipped
            types.Root(uri=project.as_uri(), name="project")])

    async def body():
        params = StdioServerParameters(command=str(BIN / "memnest-mcp"), cwd=str(elsewhere),
                                       env=daemon.env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, list_roots_callback=list_roots) as s:
                await s.initialize()
                result_json(await s.call_tool("memory_store", {"content": "roots decide"}))
                stats = result_json(await s.call_tool("memory_stats", {}))
                assert stats["workspace"] == str(project.resolve())
    anyio.run(body)
    assert asked == [True]  # asked once, then remembered


def test_a_pinned_workspace_survives_a_killed_daemon(fresh_daemon, tmp_path):
    start, other = tmp_path / "start", tmp_path / "other"
    start.mkdir()
    other.mkdir()

    async def body():
        async with fresh_daemon.mcp(start) as s:
            result_json(await s.call_tool("memory_set_workspace", {"workspace": str(other)}))
            result_json(await s.call_tool("memory_store", {"content": "kept in other"}))
            pid = fresh_daemon.client(autostart=False).status().pid
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while pid in fresh_daemon.pids() and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            stats = result_json(await s.call_tool("memory_stats", {}))
            assert stats["workspace"] == str(other.resolve()) and stats["memories"] == 1
    anyio.run(body)


def test_a_stream_that_does_not_start_with_start_is_refused(daemon):
    client = daemon.client()
    client.ensure_running()
    frames = iter([pb.SessionFrame(message=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}')])
    with pytest.raises(grpc.RpcError) as refused:
        list(client.open_session(frames))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    client.close()


def test_start_fields_are_bounded_and_roots_must_be_local_folders(tmp_path):
    caller = Caller.from_start(pb.SessionStart(
        workspace="w" * 100_000, client="c" * 100_000, session_id="s" * 1000,
        response_format="yaml", use_roots=True), identity="laptop")
    assert len(caller.workspace) <= 4096 and len(caller.client) <= 200
    assert len(caller.session_id) <= 64 and caller.response_format == "json"
    assert caller.use_roots is False  # a TLS client's folders are not the daemon's
    assert folder_of_root(tmp_path.as_uri()) == str(tmp_path.resolve())
    for uri in ("file://otherhost/etc", "https://example.com/x", "file:relative/path",
                (tmp_path / "missing").as_uri(), "file:///tmp/%00nul", "x" * 100_000):
        assert folder_of_root(uri) is None


def test_a_session_with_too_many_unanswered_requests_is_told_to_wait():
    hub = session_pipe.SessionHub(service=None)
    caller = Caller.from_start(pb.SessionStart(session_id="flood"), identity=None)
    pipe = session_pipe.Pipe(hub, caller, "peer")
    accepted = 0
    with pipe._cond:
        for n in range(session_pipe.MAX_IN_FLIGHT + 5):
            if pipe._track(types.JSONRPCRequest(jsonrpc="2.0", id=n, method="tools/call")):
                accepted += 1
    assert accepted == session_pipe.MAX_IN_FLIGHT
    refusals = [json.loads(pipe.out.get_nowait().message) for _ in range(5)]
    assert {r["error"]["code"] for r in refusals} == {session_pipe.SERVER_ERROR}
    assert "unanswered" in refusals[0]["error"]["message"]


def test_large_messages_cross_the_pipe_both_ways_intact(raw):
    """Larger than HTTP/2's first windows (64 KiB) and frames (16 KiB) in both directions:
    the shim waits for the daemon's window as it sends and grants its own as it reads."""
    contents = [(f"note {n}: " + f"{n:04d} lorem ipsum dolor sit amet " * 500).strip()
                for n in range(40)]
    raw.send({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": {
        "name": "memory_store", "arguments": {"items": [{"content": c} for c in contents]}}})
    stored = json.loads(raw.answer(20)["result"]["content"][0]["text"])
    ids = [r["id"] for r in stored["results"]]
    raw.send({"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": {
        "name": "memory_get", "arguments": {"ids": ids}}})
    reply = raw.answer(21)["result"]
    got = {m["content"] for m in json.loads(reply["content"][0]["text"])["memories"]}
    assert got == set(contents) and len(json.dumps(reply)) > 1_000_000
    huge_query = "x" * 3_000_000
    raw.send({"jsonrpc": "2.0", "id": 22, "method": "tools/call", "params": {
        "name": "memory_search", "arguments": {"query": huge_query}}})
    refused = raw.answer(22)["result"]
    assert refused["isError"] and "query" in refused["content"][0]["text"]


def test_random_garbage_lines_leave_the_session_serving(raw, daemon):
    """Lines no editor would send: the session answers what has an id, drops the rest, and
    keeps serving."""
    import random
    rng = random.Random(7)
    shapes = [b"\xff\xfe\x00garbage", b"[]", b"[1, 2, 3]", b"42", b'"text"', b"null",
              b'{"jsonrpc": "2.0"}', b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}',
              b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}',
              b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}',
              b'{"jsonrpc": "2.0", "id": 3, "result": {}}',  # an answer nobody asked for
              b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 5}',
              b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": []}',
              b'{"jsonrpc": "2.0", "id": 5, "method": "\\u0000" }']
    for _ in range(200):
        raw.send(rng.choice(shapes) if rng.random() < 0.7 else
                 bytes(rng.randrange(32, 256) for _ in range(rng.randrange(1, 300)))
                 .replace(b"\n", b" "))
    raw.send({"jsonrpc": "2.0", "id": "still-there", "method": "ping"})
    assert raw.answer("still-there")["result"] == {}
    raw.send({"jsonrpc": "2.0", "id": "search", "method": "tools/call", "params": {
        "name": "memory_search", "arguments": {"query": "anything"}}})
    assert not raw.answer("search")["result"].get("isError")
    log = daemon.log.read_text()
    assert "session reader failed" not in log
    assert not re.search(r"MCP session \S+ failed", log)


def _session_socket(daemon, first: bytes = SESSION_PREFACE) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(30)
    conn.connect(str(daemon.socket))
    conn.sendall(first)
    return conn


def _frame(frame: pb.SessionFrame) -> bytes:
    data = frame.SerializeToString()
    return struct.pack(">BI", 0, len(data)) + data


def _frames_until_closed(conn: socket.socket) -> list[pb.SessionFrame]:
    out, data = [], b""
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    while len(data) >= 5:
        size = struct.unpack(">I", data[1:5])[0]
        out.append(pb.SessionFrame.FromString(data[5:5 + size]))
        data = data[5 + size:]
    return out


@pytest.mark.parametrize("sent", [
    b"\x01" + struct.pack(">I", 3) + b"abc",  # compressed
    b"\x00" + struct.pack(">I", MAX_MESSAGE_BYTES + 1),  # larger than any frame may be
    b"\x00" + struct.pack(">I", 4) + b"\xff\xff\xff\xff",  # not a SessionFrame
    _frame(pb.SessionFrame(message=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}')),
    b"\x00\x00",  # a frame cut short, then the shim goes
])
def test_a_socket_session_with_broken_frames_is_closed_and_the_daemon_serves_on(daemon, sent):
    """The session framing without gRPC (SESSION_PREFACE): what a shim may not send ends
    that connection, nothing else."""
    daemon.client().ensure_running()
    conn = _session_socket(daemon, SESSION_PREFACE + sent)
    conn.shutdown(socket.SHUT_WR)
    assert _frames_until_closed(conn) == []
    conn.close()
    conn = _session_socket(daemon)
    conn.sendall(_frame(pb.SessionFrame(start=pb.SessionStart(session_id="after"))) +
                 _frame(pb.SessionFrame(message=json.dumps(INIT).encode())))
    conn.shutdown(socket.SHUT_WR)
    replies = [json.loads(f.message) for f in _frames_until_closed(conn) if f.message]
    assert replies and replies[0]["result"]["serverInfo"]["name"] == "memnest"
    conn.close()
    assert daemon.client().status().version


def _still_open(conn: socket.socket) -> bool:
    """The daemon has not closed its end (nothing to read yet, or bytes but no EOF)."""
    conn.setblocking(False)
    try:
        return conn.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        conn.settimeout(30)


def test_a_silent_or_half_sent_preface_holds_up_no_one(daemon):
    """Connections that stop inside the preface wait on their own thread: gRPC calls and
    sessions of other clients go on meanwhile."""
    daemon.client().ensure_running()
    stuck = [_session_socket(daemon, b""), _session_socket(daemon, SESSION_PREFACE[:7]),
             _session_socket(daemon, b"PRI * HTTP/2")]
    try:
        assert daemon.client().status().version
        conn = _session_socket(daemon)
        conn.sendall(_frame(pb.SessionFrame(start=pb.SessionStart(session_id="other"))) +
                     _frame(pb.SessionFrame(message=json.dumps(INIT).encode())))
        conn.shutdown(socket.SHUT_WR)
        assert any(f.message for f in _frames_until_closed(conn))
        conn.close()
        # ...while the stuck ones still wait: served before them, not after they timed out
        # (the daemon drops a silent connection after listener.PREFACE_SECONDS)
        assert all(_still_open(c) for c in stuck)
    finally:
        for conn in stuck:
            conn.close()


def test_sessions_past_the_limit_are_closed_as_they_open(monkeypatch):
    """Beyond MAX_SESSIONS a connection is closed with no frame (a shim then tells its
    editor after a few tries); the sessions already open are not disturbed."""
    from memnest_daemon.server import session_socket

    monkeypatch.setattr(session_socket, "MAX_SESSIONS", 1)
    release = threading.Event()

    def serve(frames, context, identity):
        next(frames, None)
        release.wait(10)
        yield pb.SessionFrame(closing=pb.SessionClosing(reason="done"))

    sockets = session_socket.SessionSockets(serve)
    first, first_peer = socket.socketpair()
    worker = threading.Thread(target=sockets.serve, args=(first,), daemon=True)
    worker.start()
    first_peer.sendall(_frame(pb.SessionFrame(start=pb.SessionStart(session_id="a"))))
    time.sleep(0.2)
    second, second_peer = socket.socketpair()
    sockets.serve(second)  # refused at once, in this thread
    second_peer.settimeout(5)
    assert second_peer.recv(10) == b""
    release.set()
    worker.join(5)
    first_peer.shutdown(socket.SHUT_WR)
    first_peer.settimeout(5)
    assert [f.closing.reason for f in _frames_until_closed(first_peer)] == ["done"]
