"""What the personal tier costs a search: a workspace of N memories (default 10,000,
synthetic) searched over gRPC by a private daemon, with the personal tier empty (today's
search), then holding P memories of its own (default 200 and 1,000), recalled beside the
workspace's. The daemon restarts between phases, which run in turn for several rounds so
that background noise falls on each alike; prints p50/p95 per phase and the ratio of the
medians; asserts nothing.

Run:  .venv/bin/python bench/personal_tier.py                 (10,000 + 200 / 1,000)
      .venv/bin/python bench/personal_tier.py --n 2000 --rounds 2
"""
import argparse
import statistics
import sys

from core import (BATCH, Env, cleaned_up, grpc_search, ingest, latency, note, synthetic_queries,
                  synthetic_texts)


def fill_personal(env: Env, workspace: str, texts: list[str]) -> None:
    client = env.client()
    for i in range(0, len(texts), BATCH):
        client.call_tool("memory_store", {"items": [{"content": t, "scope": "user"}
                                                    for t in texts[i:i + BATCH]]}, workspace)


def phase(env: Env, workspace: str, queries: list[str], recall: bool) -> list[float]:
    env.env["MEMNEST_USER_TIER"] = "true" if recall else "false"
    env.stop_daemon()
    env.start_daemon()
    grpc_search(env, workspace, queries[:10])  # warm: the databases open, caches fill
    return grpc_search(env, workspace, queries)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories in the workspace")
    parser.add_argument("--personal", type=int, nargs="+", default=[200, 1000],
                        help="sizes of the personal tier to measure")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    env = Env()
    with cleaned_up(env, keep=False):
        env.start_daemon()
        workspace = env.workspace("personal-tier")
        ws = str(workspace)
        texts = synthetic_texts(args.n + max(args.personal))
        rate = ingest(env, workspace, texts[:args.n])
        note(f"workspace: {args.n} memories stored at {rate:.0f}/s")
        queries = synthetic_queries(args.queries, set(texts))
        rows: dict[str, list[dict]] = {}
        have = 0
        for size in sorted(args.personal):
            fill_personal(env, ws, texts[args.n + have:args.n + size])
            have = size
            for _ in range(args.rounds):
                for label, recall in (("no personal tier", False),
                                      (f"personal tier of {size}", True)):
                    found = latency(phase(env, ws, queries, recall))
                    rows.setdefault(label, []).append(found)
                    note(f"{label}: p50 {found['p50']:.1f} ms, p95 {found['p95']:.1f} ms")
        base = statistics.median(r["p50"] for r in rows["no personal tier"])
        print(f"\nsearch over gRPC, {args.n} memories in the workspace, "
              f"{args.queries} queries x {args.rounds} rounds per phase")
        for label, found in rows.items():
            p50 = statistics.median(r["p50"] for r in found)
            p95 = statistics.median(r["p95"] for r in found)
            print(f"  {label:<26} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  "
                  f"{p50 / base:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
