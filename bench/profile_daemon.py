"""Profile the daemon's own work (no gRPC, no shim) on a workspace of N memories: where a
memory_search and a memory_store spend their time, next to the bare embedding they wrap.

The tool handlers run in this process against a real LadybugDB file in a temp dir, with
the offline model; cProfile output for the slowest part goes to stdout.

Run:  .venv/bin/python bench/profile_daemon.py --size 10000 [--profile search|store|none]
"""
import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).parent))
import memnest_daemon  # noqa: E402,F401  (sets the BLAS thread count before numpy loads)
from core import OFFLINE_MODEL, synthetic_queries, synthetic_texts  # noqa: E402

from memnest_daemon.core.config import Settings  # noqa: E402
from memnest_daemon.model.embedder import Embedder  # noqa: E402
from memnest_daemon.tools import TOOLS, ToolContext  # noqa: E402
from memnest_daemon.store.registry import StoreRegistry  # noqa: E402


def call(ctx_args: dict, tool: str, args: dict) -> dict:
    ctx = ToolContext(**ctx_args)
    try:
        return TOOLS[tool].handler(ctx, args)
    finally:
        ctx.close()


def median_ms(fn, reps: int) -> float:
    times = []
    for i in range(reps):
        t0 = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--profile", choices=("search", "store", "none"), default="search")
    parser.add_argument("--keep", type=Path, help="workspace folder to build once and reuse")
    opts = parser.parse_args()
    os.environ.setdefault("MEMORY_EMBEDDING_MODEL", OFFLINE_MODEL)
    settings = Settings.from_env()
    embedder = Embedder(settings.embedding_model)
    root = opts.keep or Path(tempfile.mkdtemp(prefix="memnest-profile-"))
    root.mkdir(parents=True, exist_ok=True)
    stores = StoreRegistry(embedder.name, embedder.dim, settings.buffer_pool_mb,
                           settings.max_db_gb)
    ctx_args = dict(workspace=str(root), db_path="", stores=stores, embedder=embedder,
                    settings=settings, runtime=lambda: {})
    texts = synthetic_texts(opts.size + opts.reps)
    t0 = time.perf_counter()
    have = call(ctx_args, "memory_stats", {})["memories"]
    for start in range(have, opts.size, 250):
        call(ctx_args, "memory_store", {"items": [{"content": t}
                                                  for t in texts[start:start + 250]]})
    print(f"ingested {opts.size - have} in {time.perf_counter() - t0:.1f}s; this process's RSS "
          f"{psutil.Process().memory_info().rss / 2**20:.0f} MB (buffer pool "
          f"{settings.buffer_pool_mb} MB)")
    queries = synthetic_queries(opts.reps, set(texts))
    extra = texts[opts.size:]

    # embed(), not embed_one(): the query cache must not answer the searches that follow
    embed_ms = median_ms(lambda i: embedder.embed([queries[i]]), opts.reps)
    search_ms = median_ms(lambda i: call(ctx_args, "memory_search", {"query": queries[i]}),
                          opts.reps)
    store_ms = median_ms(lambda i: call(ctx_args, "memory_store", {"content": extra[i] + " x"}),
                         opts.reps)
    print(f"embed one query p50 {embed_ms:.1f} ms; memory_search p50 {search_ms:.1f} ms "
          f"({search_ms / embed_ms:.2f}x); single memory_store p50 {store_ms:.1f} ms")
    if opts.profile != "none":
        profiler = cProfile.Profile()
        profiler.enable()
        for i in range(opts.reps):
            if opts.profile == "search":
                call(ctx_args, "memory_search", {"query": queries[i] + " again"})
            else:
                call(ctx_args, "memory_store", {"content": extra[i] + " profiled"})
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    stores.close_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
