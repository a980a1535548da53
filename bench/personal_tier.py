"""What the personal tier costs a search: a workspace of N memories (default 10,000,
synthetic) searched over gRPC by a private daemon, with the personal tier empty (today's
search), then holding P memories of its own (default 200 and 1,000), recalled beside the
workspace's. Two kinds of personal tier: a person's preferences and habits (what the tier is
for: few project questions come near them), and texts like the project's own (the worst
case: every question comes near, so the tier is ranked on every search). The daemon
restarts between phases, which run in turn for several rounds so that background noise
falls on each alike; prints p50/p95 per phase and the ratio of the medians; asserts
nothing.

Run:  .venv/bin/python bench/personal_tier.py                 (10,000 + 200 / 1,000)
      .venv/bin/python bench/personal_tier.py --n 2000 --rounds 2
"""
import argparse
import statistics
import sys

from core import (
    BATCH,
    Env,
    cleaned_up,
    grpc_search,
    ingest,
    latency,
    note,
    synthetic_queries,
    synthetic_texts,
)

TOOLS = ["pytest", "ruff", "black", "mypy", "poetry", "uv", "tox", "nox", "vim", "emacs",
         "tmux", "zsh", "fish", "docker", "podman", "make", "just", "bazel", "git", "jj"]
HABITS = ["Answer in British English", "Keep commit subjects under 72 characters",
          "Explain a shell command before running it", "Never push directly to main",
          "Write docstrings in the imperative mood", "Prefer small pull requests",
          "Show diffs instead of whole files", "Use metric units", "Ask before adding a "
          "dependency", "Run the formatter before every commit"]


def preferences(n: int) -> list[str]:
    """n distinct texts of the kind a person keeps in the personal tier."""
    out: list[str] = []
    for a in TOOLS:
        for b in TOOLS:
            if a != b:
                out.append(f"I prefer {a} over {b} in my own projects")
    for habit in HABITS:
        for tool in TOOLS:
            out.append(f"{habit}, also when working with {tool}")
    return out[:n]


def fill_personal(env: Env, workspace: str, texts: list[str]) -> None:
    client = env.client()
    for i in range(0, len(texts), BATCH):
        items = [{"content": t, "scope": "user", "keep_as_is": True}
                 for t in texts[i:i + BATCH]]
        client.call_tool("memory_store", {"items": items}, workspace)


def forget_personal(env: Env, workspace: str) -> None:
    client = env.client()
    while True:
        listed = client.call_tool("memory_list", {"scope": "user", "limit": 500,
                                                  "preview_chars": 0}, workspace)["memories"]
        if not listed:
            return
        client.call_tool("memory_delete", {"ids": [m["id"] for m in listed]}, workspace)


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
        ratios: dict[str, list[float]] = {}  # each phase's p50 over the one before it
        kinds = (("preferences", preferences(max(args.personal))),
                 ("project-like", texts[args.n:]))
        for kind, personal in kinds:
            have = 0
            for size in sorted(args.personal):
                fill_personal(env, ws, personal[have:size])
                have = size
                held = env.client().call_tool("memory_stats", {}, ws)["personal"]["memories"]
                note(f"personal tier: {held} memories ({kind})")
                for _ in range(args.rounds):
                    for label, recall in (("no personal tier", False),
                                          (f"{held} {kind}", True)):
                        found = latency(phase(env, ws, queries, recall))
                        rows.setdefault(label, []).append(found)
                        if recall:  # paired with the phase just before it
                            ratios.setdefault(label, []).append(
                                found["p50"] / rows["no personal tier"][-1]["p50"])
                        note(f"{label}: p50 {found['p50']:.1f} ms, "
                             f"p95 {found['p95']:.1f} ms")
            forget_personal(env, ws)
        print(f"\nsearch over gRPC, {args.n} memories in the workspace, "
              f"{args.queries} queries x {args.rounds} rounds per phase")
        print("  (ratio: the median, over rounds, of a phase's p50 over the phase before it)")
        for label, found in rows.items():
            p50 = statistics.median(r["p50"] for r in found)
            p95 = statistics.median(r["p95"] for r in found)
            paired = statistics.median(ratios[label]) if label in ratios else 1.0
            print(f"  {label:<26} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  {paired:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
