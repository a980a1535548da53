"""How fast the workbench renders at scale: the first page of the memories, a search page, a
page deep in the list and one memory, each asked over HTTP of a real `memnest-ctl ui` over a
private daemon holding N memories (default 100k, stored in batches). Beside each
page, the tool call it is made of, asked over gRPC directly, so what the page adds to the
daemon's work shows. Prints medians and p95; asserts nothing.

Run:  .venv/bin/python bench/workbench_pages.py            (100k; the import takes minutes)
      .venv/bin/python bench/workbench_pages.py --n 10000 --reps 20
"""
import argparse
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from core import BATCH, BIN, Env, cleaned_up, pct, synthetic_queries, synthetic_texts


def timed(work: Callable[[], object], reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        started = time.perf_counter()
        work()
        out.append((time.perf_counter() - started) * 1000)
    return out


def line(name: str, ms: list[float]) -> None:
    print(f"  {name:<44} median {statistics.median(ms):7.1f} ms   p95 {pct(ms, 95):7.1f} ms",
          flush=True)


def fill(env: Env, workspace: Path, n: int) -> None:
    """N memories, stored over gRPC in batches (faster than memory_import, which works out
    each memory's conflict neighbours as it goes)."""
    started = time.perf_counter()
    texts = synthetic_texts(n)
    for i in range(0, n, BATCH):
        env.client().call_tool("memory_store", {"items": [
            {"content": t, "keep_as_is": True} for t in texts[i:i + BATCH]]}, str(workspace))
        if i and i % (20 * BATCH) == 0:
            print(f"  stored {i} ({time.perf_counter() - started:.0f} s)", flush=True)
    held = env.client().call_tool("memory_stats", {}, str(workspace))["memories"]
    print(f"stored {held} memories in {time.perf_counter() - started:.0f} s", flush=True)


def signed_in(url: str) -> httpx.Client:
    """A client holding the session cookie, asking under the launch's root (guard.py)."""
    base, key = url.split("?key=")
    http = httpx.Client(base_url=base.rstrip("/"), timeout=60)
    answer = http.get(f"/?key={key}")
    assert answer.status_code == 200, answer.text
    root = re.search(r'content="0;url=(/[^/"]+)/"', answer.text)
    assert root is not None, answer.text
    http.base_url = httpx.URL(base.rstrip("/") + root.group(1))
    return http


def measure(env: Env, workspace: Path, http: httpx.Client, reps: int) -> None:
    grpc = env.client()
    queries = iter(synthetic_queries(4 * reps + 10, set()))
    ws = str(workspace)

    def page(path: str) -> Callable[[], object]:
        def get() -> object:
            answer = http.get(path)
            assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])
            return answer
        return get
    first = re.search(r'id="m(\d+)"', http.get("/").text)
    some_id = first.group(1) if first else "1"
    print("pages (HTTP, the whole page rendered):", flush=True)
    line("/ (first page, 50 newest)", timed(page("/"), reps))
    line("/?q=... (search page, 50 hits, explained)",
         timed(lambda: page(f"/?q={next(queries)}")(), reps))
    line("/?page=1000 (50 memories at offset 49,950)", timed(page("/?page=1000"), reps))
    line(f"/memory/{some_id}", timed(page(f"/memory/{some_id}"), reps))
    print("the tool calls they are made of (gRPC, no page):", flush=True)
    line("memory_list limit 50", timed(lambda: grpc.call_tool(
        "memory_list", {"limit": 50, "preview_chars": 400}, ws), reps))
    line("memory_search top_k 50, explain", timed(lambda: grpc.call_tool(
        "memory_search", {"query": next(queries), "top_k": 50, "explain": True,
                          "preview_chars": 400}, ws), reps))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories in the workspace")
    parser.add_argument("--reps", type=int, default=30, help="requests per figure")
    args = parser.parse_args()
    env = Env()
    with cleaned_up(env, keep=False):
        env.start_daemon()
        workspace = env.workspace("workbench")
        fill(env, workspace, args.n)
        ui = subprocess.Popen([str(BIN / "memnest-ctl"), "ui", "--no-browser", "--workspace",
                               str(workspace)], env=env.env, stdout=subprocess.PIPE, text=True)
        try:
            assert ui.stdout is not None
            http = signed_in(ui.stdout.readline().strip())
            http.get("/")  # the first request opens nothing new, but warms the page cache
            measure(env, workspace, http, args.reps)
        finally:
            ui.terminate()
            ui.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
