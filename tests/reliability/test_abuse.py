"""Clients that misbehave: one hangs up in the middle of a big streamed batch, one gives up
at its deadline while the daemon still works, one floods 1,000 calls without waiting. The
daemon keeps serving everyone else, stays one process, keeps its indexes healthy, writes
nothing for the callers that left, and its resident memory stays bounded (printed
before/after)."""
import time

import grpc
import psutil
import pytest

from memnest_proto import memnest_pb2 as pb
from memnest_proto import memnest_pb2_grpc as pb_grpc
from memnest_proto.paths import grpc_target

FLOOD = 1000


def _batch(tag: str, n: int) -> str:
    import json
    return json.dumps({"items": [{"content": f"{tag} item {i}: a note about shard {i * 7919 % 997}"
                                             f" and replica {i * 104729 % 991}"}
                                 for i in range(n)]})


def _served(stub, ws) -> float:
    """Another client is served while the misbehaving one runs; returns its latency."""
    t0 = time.perf_counter()
    out = stub.CallTool(pb.CallToolRequest(tool="memory_search", workspace=str(ws),
                                           arguments_json='{"query": "shard replica"}'),
                        timeout=60)
    assert out.HasField("result_json"), out
    return time.perf_counter() - t0


def test_hang_up_deadline_and_flood(fresh_daemon, workspace):
    fresh_daemon.start()
    proc = psutil.Process(fresh_daemon.pids()[0])
    other = grpc.insecure_channel(grpc_target(fresh_daemon.socket))
    stub = pb_grpc.MemnestStub(other)
    stub.CallTool(pb.CallToolRequest(tool="memory_store", workspace=str(workspace),
                                     arguments_json='{"content": "warm-up note on shards"}'),
                  timeout=60)
    _served(stub, workspace)
    rss_before = proc.memory_info().rss

    # 1. Hang up mid-call: read the first progress event of a big batch, then close.
    rude = grpc.insecure_channel(grpc_target(fresh_daemon.socket))
    events = pb_grpc.MemnestStub(rude).CallToolStream(pb.CallToolRequest(
        tool="memory_store", workspace=str(workspace), arguments_json=_batch("hangup", 200)),
        timeout=120)
    next(events)
    events.cancel()
    rude.close()
    during_hangup = _served(stub, workspace)

    # 2. A deadline shorter than the work.
    with pytest.raises(grpc.RpcError) as late:
        stub.CallTool(pb.CallToolRequest(tool="memory_store", workspace=str(workspace),
                                         arguments_json=_batch("deadline", 200)), timeout=0.3)
    assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    during_deadline = _served(stub, workspace)

    # 3. A flood of calls with no waiting, on a connection of its own (as another process
    # would have), mixed reads and status.
    flood = grpc.insecure_channel(grpc_target(fresh_daemon.socket),
                                  options=[("grpc.use_local_subchannel_pool", 1)])
    fstub = pb_grpc.MemnestStub(flood)
    t0 = time.monotonic()
    futures = []
    for i in range(FLOOD):
        if i % 10 == 0:
            futures.append(fstub.Status.future(pb.StatusRequest(), timeout=300))
        else:
            futures.append(fstub.CallTool.future(pb.CallToolRequest(
                tool="memory_search", workspace=str(workspace),
                arguments_json=f'{{"query": "shard {i}", "top_k": 3}}'), timeout=300))
    during_flood = _served(stub, workspace)
    flood_done_first = sum(f.done() for f in futures)
    results = [f.result() for f in futures]
    flood_s = time.monotonic() - t0
    flood.close()
    assert all(not isinstance(r, pb.CallToolResponse) or r.HasField("result_json")
               for r in results)
    # Calls are taken in turns between clients: the other client waited for the calls
    # already running, not for the flood to drain.
    assert flood_done_first < FLOOD // 2, flood_done_first

    # Everyone else is still served; the work that was abandoned left nothing inconsistent.
    deadline = time.monotonic() + 120  # the abandoned batches finish in the background
    while stub.Status(pb.StatusRequest(), timeout=10).calls_in_flight > 1 and \
            time.monotonic() < deadline:
        time.sleep(0.5)
    stats = stub.CallTool(pb.CallToolRequest(tool="memory_stats", workspace=str(workspace)),
                          timeout=60)
    import json
    health = json.loads(stats.result_json)["index_health"]
    assert health["healthy"], health
    # Neither abandoned batch was written: their callers could never learn the ids.
    abandoned = stub.CallTool(pb.CallToolRequest(
        tool="memory_query", workspace=str(workspace), arguments_json=json.dumps({
            "cypher_query": "MATCH (m:Memory) WHERE m.content STARTS WITH 'hangup' OR "
                            "m.content STARTS WITH 'deadline' RETURN count(m) AS n"})),
        timeout=60)
    assert json.loads(abandoned.result_json)["rows"] == [{"n": 0}], abandoned
    assert "cancelled" in fresh_daemon.log.read_text()
    assert fresh_daemon.pids() == [proc.pid]
    rss_after = proc.memory_info().rss
    other.close()
    print(f"\nanother client served during: hang-up {during_hangup * 1e3:.0f} ms, deadline "
          f"{during_deadline * 1e3:.0f} ms, flood {during_flood * 1e3:.0f} ms (after {flood_done_first} of "
          f"{FLOOD} flooded calls); the flood took {flood_s:.1f} s; {health['rows_in_database']} rows kept; daemon RSS "
          f"{rss_before / 2**20:.0f} MB before, {rss_after / 2**20:.0f} MB after")
    assert rss_after < 2 * rss_before + 200 * 2**20
