"""A JSON-RPC request nested deeper than the SDK can parse gets an error reply with its id
(it used to get none, and the caller waited forever); the shim keeps serving."""
import json
import subprocess

from support import BIN
from memnest_daemon.server.jsonrpc_guard import MAX_DEPTH, depth_and_id


def test_depth_and_id_are_read_without_recursion():
    line = '{"jsonrpc": "2.0", "id": "a\\"b", "params": {"id": 5, "x": "[[[{{"}}'
    assert depth_and_id(line) == (2, 'a"b')
    deep = '{"id": 9, "params": ' + "[" * 100_000 + "]" * 100_000 + "}"
    depth, request_id = depth_and_id(deep)
    assert depth > MAX_DEPTH and request_id == 9


def test_a_deeply_nested_request_is_answered_with_an_error(daemon, workspace):
    shim = subprocess.Popen([str(BIN / "memnest-mcp")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**daemon.env, "MEMORY_WORKSPACE": str(workspace)})

    def send(message) -> dict:
        shim.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
        shim.stdin.flush()
        return json.loads(shim.stdout.readline())

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}})
        shim.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
                         + "\n")
        nested = "[" * 250 + "]" * 250
        reply = send('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": '
                     '{"name": "memory_search", "arguments": {"query": ' + nested + "}}}")
        assert reply["id"] == 7 and reply["error"]["code"] == -32600
        assert "levels deep" in reply["error"]["message"]
        listed = send({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})
        assert listed["id"] == 8 and listed["result"]["tools"]
    finally:
        shim.stdin.close()
        shim.wait(timeout=30)
