"""Hostile input through the gRPC API: random argument values for every tool (random types,
huge strings (2 MB in the pathological cases), deep JSON, unicode edge cases, NUL bytes,
negative and enormous numbers, the paths of decoy files and folders, also as the request's
database path) and malformed gRPC payloads from a raw client. The daemon never dies, every
failure is a structured ToolFailure whose code is never `internal`, and no decoy (nor /etc,
/etc/passwd) changes after any call (tests/decoys.py)."""
import json
import os
import tempfile
from pathlib import Path

import grpc
import pytest
from decoys import Decoys
from hypothesis import HealthCheck, given, settings, strategies as st

from memnest_proto import memnest_pb2 as pb
from memnest_proto.paths import grpc_target
from memnest_shims.client import ToolFailure

EXAMPLES = int(os.environ.get("MEMNEST_HOSTILE_EXAMPLES",
                              "2000" if os.environ.get("MEMNEST_SOAK") else "400"))
# The slow, whole-workspace tools get a separate, smaller budget.
SLOW = {"memory_dream", "memory_reindex"}

EDGE_TEXT = ["", " ", "\x00", "a\x00b", "\ud7ff", "\ufeff", "\u202e", "\U0010ffff", "é" * 3,
             "e\u0301", "🧠" * 50, "\r\n", "../../etc/passwd", "/etc/passwd", "~", ".memnest",
             "MATCH (n) DETACH DELETE n", "'; DROP TABLE x; --", "%s%n", "{}", "null"]
# Ordinary files and folders of the user's, made once for the module: hostile calls name them.
DECOYS = Decoys(Path(tempfile.mkdtemp(prefix="memnest-decoys-")) / "decoys")
DECOY_PATHS = [str(p) for p in DECOYS.hostile().values()] + \
    [str(DECOYS.folder / "memory.lbug"), str(DECOYS.file) + ".lbug",
     str(DECOYS.link / ".memnest" / "memory.lbug"), str(DECOYS.others / "x.lbug")]
numbers = st.one_of(st.integers(), st.integers(min_value=-2**70, max_value=2**70),
                    st.sampled_from([0, -1, 2**31, 2**63, -2**63, 10**30]),
                    st.floats(allow_nan=True, allow_infinity=True))
text = st.one_of(st.text(max_size=60), st.sampled_from(EDGE_TEXT), st.sampled_from(DECOY_PATHS),
                 st.builds(lambda c, n: c * n, st.sampled_from(["x", "é", "\x00", "🧠"]),
                           st.sampled_from([1_000, 100_000])))
leaf = st.one_of(st.none(), st.booleans(), numbers, text)
value = st.recursive(leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=10), inner, max_size=5)),
    max_leaves=20)


def _tools(daemon) -> dict[str, list[str]]:
    client = daemon.client()
    try:
        return {t.name: list(json.loads(t.input_schema_json).get("properties", {}))
                for t in client.list_tools()}
    finally:
        client.close()


@pytest.fixture(scope="module")
def hostile_ws():
    return Path(tempfile.mkdtemp(prefix="memnest-hostile-")).resolve()


def _check_call(client, tool, arguments_json, ws, db_path: str = "") -> None:
    request = pb.CallToolRequest(tool=tool, workspace=str(ws), arguments_json=arguments_json,
                                 client="hostile-test", db_path=db_path)
    response = client._connect().CallTool(request, timeout=120)
    if response.HasField("error"):
        assert response.error.code and response.error.code != "internal", \
            f"{tool} {arguments_json[:300]!r}: {response.error.code}: {response.error.message}"
        assert response.error.message.strip()


@pytest.mark.parametrize("slow", [False, True], ids=["fast tools", "dream and reindex"])
def test_random_arguments_on_every_tool(daemon, hostile_ws, slow):
    tools = _tools(daemon)
    client = daemon.client()
    pid = client.status().pid
    client.call_tool("memory_store", {"content": "a memory the hostile input may touch"},
                     str(hostile_ws))
    names = sorted(SLOW if slow else set(tools) - SLOW)

    @settings(max_examples=max(20, EXAMPLES // 10) if slow else EXAMPLES, deadline=None,
              database=None,
              suppress_health_check=list(HealthCheck))
    @given(tool=st.sampled_from(names), data=st.data())
    def run(tool, data):
        props = tools[tool]
        keys = st.one_of(st.sampled_from(props), st.text(max_size=8)) if props else st.text(
            max_size=8)
        arguments = data.draw(st.dictionaries(keys, value, max_size=4), label="arguments")
        db_path = data.draw(st.one_of(st.just(""), st.sampled_from(DECOY_PATHS + EDGE_TEXT)),
                            label="db_path")
        try:
            raw = json.dumps(arguments, ensure_ascii=data.draw(st.booleans()))
        except ValueError:
            return
        _check_call(client, tool, raw, hostile_ws, db_path)
        DECOYS.assert_untouched()

    try:
        run()
        assert client.status().pid == pid, "the daemon died"
    finally:
        client.close()


@pytest.mark.parametrize("raw", [
    "[" * 100_000 + "]" * 100_000,
    '{"content": ' + "[" * 50_000 + "]" * 50_000 + "}",
    '{"content": "\\ud800"}',
    '{"content": "a\\u0000b"}',
    '{"query": 1e999}',
    '{"id": 1e400}',
    '{"id": -9223372036854775809}',
    '{"ids": [' + ",".join(["1"] * 200_000) + "]}",
    '{"content": "' + "x" * 2_000_000 + '"}',
    '{"items": [' + ",".join(['{"content": "' + "é" * 100_000 + '"}'] * 20) + "]}",
    "\x00", "{", "nan", '{"content": NaN}', '{"content": Infinity}',
    '{"a":1,"a":2}',
])
def test_pathological_json_on_every_tool(daemon, hostile_ws, raw):
    tools = _tools(daemon)
    client = daemon.client()
    pid = client.status().pid
    try:
        for tool in sorted(tools) + ["no_such_tool"]:
            _check_call(client, tool, raw, hostile_ws)
        assert client.status().pid == pid
    finally:
        client.close()


def test_malformed_grpc_payloads_do_not_crash_the_server(daemon, hostile_ws):
    client = daemon.client()
    pid = client.status().pid
    good = pb.CallToolRequest(tool="memory_stats", workspace=str(hostile_ws)).SerializeToString()
    payloads = [b"\xff" * 64, b"\x0a\xff\xff\xff\xff\x0f", good[: len(good) // 2],
                b"\x1a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", os.urandom(4096),
                b"\x0a" + b"\x80" * 20, b""]
    channel = grpc.insecure_channel(grpc_target(daemon.socket), options=[
        ("grpc.max_send_message_length", 200 * 1024 * 1024)])
    try:
        for method in ("CallTool", "ListTools", "Status", "CallToolStream"):
            path = f"/memnest.v1.Memnest/{method}"
            for payload in payloads:
                if method == "CallToolStream":
                    rpc = channel.unary_stream(path, request_serializer=None,
                                               response_deserializer=None)
                    try:
                        list(rpc(payload, timeout=30))
                    except grpc.RpcError:
                        pass
                else:
                    rpc = channel.unary_unary(path, request_serializer=None,
                                              response_deserializer=None)
                    try:
                        rpc(payload, timeout=30)
                    except grpc.RpcError:
                        pass
        # Over the 64 MiB message limit: refused by gRPC, not by a crash.
        huge = pb.CallToolRequest(tool="memory_store", workspace=str(hostile_ws),
                                  arguments_json='{"content": "' + "x" * (70 << 20) + '"}')
        rpc = channel.unary_unary("/memnest.v1.Memnest/CallTool", request_serializer=None,
                                  response_deserializer=None)
        with pytest.raises(grpc.RpcError) as refused:
            rpc(huge.SerializeToString(), timeout=60)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        # An unknown method.
        with pytest.raises(grpc.RpcError) as unknown:
            channel.unary_unary("/memnest.v1.Memnest/Nope", request_serializer=None,
                                response_deserializer=None)(b"", timeout=10)
        assert unknown.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        channel.close()
    assert client.status().pid == pid
    assert client.call_tool("memory_stats", {}, str(hostile_ws)) is not None
    client.close()
