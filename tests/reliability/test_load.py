"""Concurrency and load: 8 real memnest-mcp shims, each driven by the MCP SDK's client, run
mixed operations (store, search, update, relate, delete) on 2 workspaces at once through one
daemon. No call fails, the final counts equal what was acknowledged, exactly one daemon runs,
and the latency distribution is printed. Default 8 x 60 operations; MEMNEST_SOAK=1 runs the
full 8 x 300 (MEMNEST_LOAD_OPS overrides)."""
import json
import os
import random
import statistics
import time

import anyio

SHIMS = 8
OPS = int(os.environ.get("MEMNEST_LOAD_OPS", "300" if os.environ.get("MEMNEST_SOAK") else "60"))
WORDS = ("alpha bravo cache delta echo index ledger mirror queue replica schema shard token "
         "tenant webhook worker").split()


def _ok(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_eight_shims_mixed_operations_on_two_workspaces(fresh_daemon, tmp_path):
    workspaces = [tmp_path / "ws-a", tmp_path / "ws-b"]
    for ws in workspaces:
        ws.mkdir()
    fresh_daemon.start()
    latencies: dict[str, list[float]] = {}
    live: dict[int, set[int]] = {0: set(), 1: set()}  # acknowledged, not deleted, per workspace
    counts = {"store": 0, "search": 0, "update": 0, "relate": 0, "delete": 0}

    async def shim(n: int):
        rng = random.Random(1000 + n)
        w = n % 2
        mine: list[int] = []
        async with fresh_daemon.mcp(workspaces[w]) as s:
            async def call(op, tool, args):
                t0 = time.perf_counter()
                out = _ok(await s.call_tool(tool, args))
                latencies.setdefault(op, []).append(time.perf_counter() - t0)
                counts[op] += 1
                return out
            for i in range(OPS):
                r = rng.random()
                if len(mine) < 3 or r < 0.35:
                    words = " ".join(rng.choice(WORDS) for _ in range(6))
                    out = await call("store", "memory_store", {
                        "content": f"shim {n} note {i}: {words} {rng.getrandbits(40):x}",
                        "tags": [f"shim{n}"]})
                    if out["status"] == "stored":
                        mine.append(out["id"])
                        live[w].add(out["id"])
                elif r < 0.60:
                    await call("search", "memory_search",
                               {"query": " ".join(rng.sample(WORDS, 2)), "top_k": 5})
                elif r < 0.75:
                    await call("update", "memory_update",
                               {"id": rng.choice(mine), "importance": rng.randint(1, 5)})
                elif r < 0.90:
                    a, b = rng.sample(mine, 2)
                    await call("relate", "memory_relate", {"from_id": a, "to_id": b})
                else:
                    victim = mine.pop(rng.randrange(len(mine)))
                    out = await call("delete", "memory_delete", {"id": victim})
                    assert out["deleted"] == [victim]
                    live[w].discard(victim)

    async def main():
        async with anyio.create_task_group() as tg:
            for n in range(SHIMS):
                tg.start_soon(shim, n)

    t0 = time.monotonic()
    anyio.run(main)
    elapsed = time.monotonic() - t0

    assert len(fresh_daemon.pids()) == 1
    client = fresh_daemon.client(autostart=False)
    try:
        for w, ws in enumerate(workspaces):
            listed = client.call_tool("memory_list", {"limit": 1}, str(ws))
            assert listed["total"] == len(live[w]), (w, listed["total"], len(live[w]))
            health = client.call_tool("memory_stats", {}, str(ws))["index_health"]
            assert health["healthy"], health
    finally:
        client.close()
    every = sorted(x for v in latencies.values() for x in v)
    p = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(len(xs) * q))] * 1e3  # noqa: E731
    print(f"\n{SHIMS} shims x {OPS} ops in {elapsed:.1f} s ({len(every) / elapsed:.0f} ops/s), "
          f"counts {counts}; latency p50 {statistics.median(every) * 1e3:.1f} ms, "
          f"p95 {p(every, 0.95):.1f} ms, max {every[-1] * 1e3:.0f} ms; " +
          ", ".join(f"{op} p95 {p(v, 0.95):.0f} ms" for op, v in sorted(latencies.items())))
