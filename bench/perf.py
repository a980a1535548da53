"""memnest performance targets (issues 8 and 24), each figure a RATIO against a floor measured in the same
run, with PASS/MISS beside it. Prints; asserts nothing (a shared 2-core machine is noisy).

Everything runs against a private memnestd on a temp socket with the offline model (nothing
touches your own daemon, socket or workspaces); daemons and shims are stopped on exit, Ctrl-C
included. Floors are measured in this process with the daemon's own Embedder class while the
daemon is idle, interleaved with the figure they divide (blocks of 50 queries are embedded
here just before the daemon is asked them), so both see the same moment of a noisy machine.

  Search    memory_search through the shim (MCP SDK stdio client -> memnest-mcp -> daemon) at
            N memories (default 10k): p50 <= 3.5x the bare query-embedding p50 (Embedder.embed_one
            on the same, never-repeated query texts); p95 printed. A repeated identical
            query is timed too (an embedding cache should make it cheaper by about one
            embedding). The same figure over gRPC without the shim is shown for reference.
  Store     batched memory_store (`items`, via the shim) >= 0.8x the best raw fastembed rate on
            the same texts (batch sizes 8..128, texts sorted by length, swept before and after
            each store run, daemon idle; best against best); single memory_store
            (one item per call, via the shim, into a 10k workspace) p50 <= 1.5x (one embedding
            + 10 ms).
  Startup   spawn memnest-mcp -> tool list (daemon warm) <= 0.4x spawn bench/bare_mcp_server.py
            -> tool list (same SDK, one no-op tool), median of several spawns each, alternated. Daemon
            cold start (spawn memnestd -> answering, model load included) is printed.
  Memory    daemon RSS after a restart with 3 open 10k workspaces <= 600 MB (and after 1 and 10);
            one idle memnest-mcp <= 35 MB (the bare server's RSS beside it); the daemon with 10
            idle shims connected, all their RSS summed, printed. The ingest's high-water mark
            is printed too.
  Concurrency  8 real shims searching at once: p95 <= 6x the single-shim p50. Searches on
            workspace A while batched stores of 500 run on workspace B: p50/p95 against idle
            p50; reads do not queue behind a write if their p95 stays under half a write call.
  Scale     only with --scale N: memory_import of N memories (progress printed; rate against the
            store target), then a restarted daemon: open -> first search <= 5 s and search p50
            <= 6x embedding (the 100k targets).

The 10k workspace is built once over gRPC (memory_store, 250 items per call) and copied, with
the daemon stopped, into further database files; the copies are opened with the original
workspace path and MEMORY_DB_PATH pointing at the copy (the rows carry their workspace path),
so each is a separate database of N memories. Upkeep, idle close and idle exit are turned off
(MEMNEST_UPKEEP_IDLE_MINUTES / MEMNEST_IDLE_CLOSE_MINUTES / MEMNEST_IDLE_EXIT_MINUTES = 0) so no
dream or close lands inside a measurement. Texts: bench/core.py's seeded synthetic project notes.

Run:  make bench-perf                              (= .venv/bin/python bench/perf.py; ~10 min)
      .venv/bin/python bench/perf.py --quick       smoke run: 1k workspaces, few reps (<4 min)
      .venv/bin/python bench/perf.py --json        also print a JSON summary
      .venv/bin/python bench/perf.py --scale 100000  add the 100k figures (import takes long)
      .venv/bin/python bench/perf.py --shim-rev 48cd622  the same run driving the shim of an
                                         earlier commit (48cd622: the last before the pipe)
"""
import argparse
import json
import os
import shutil
import sys
import threading
import time
from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

import anyio
import psutil
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
import memnest_shims.client as client_module
from core import (
    BATCH,
    OFFLINE_MODEL,
    ShimUnderTest,
    use_shim_from,
    TOP_K,
    Env,
    write_export,
    _git_revision,
    cleaned_up,
    human,
    latency,
    mcp_store,
    note,
    pct,
    synthetic_queries,
    synthetic_texts,
    tool_json,
)
from memnest_shims.client import DaemonClient

BARE_SERVER = Path(__file__).resolve().parent / "bare_mcp_server.py"
PAGE_FILE = "search-page.json"  # a real search result, for the bare server to answer with
RAW_BATCHES = (8, 16, 32, 64, 128)
WRITE_BATCH = 500  # MEMORY_MAX_BATCH: the longest single write a client can ask for
MB = 1024 * 1024
FLEET = 10  # idle editor windows, for the memory of a daemon and its shims
AREAS = ("search", "store", "startup", "memory", "concurrency", "scale")  # the order
# No upkeep dream, idle close or idle exit inside a measurement.
QUIET = {"MEMNEST_UPKEEP_IDLE_MINUTES": "0", "MEMNEST_IDLE_CLOSE_MINUTES": "0",
         "MEMNEST_IDLE_EXIT_MINUTES": "0"}


@dataclass
class Sizes:
    memories: int       # the main workspace (and each copy)
    workspaces: int     # copies opened for the last memory step
    queries: int        # distinct queries for the single-shim search figure
    grpc_queries: int
    repeats: int        # timed repeats of one identical query
    clients: int
    per_client: int
    write_batches: int
    single_stores: int
    store_texts: int
    store_reps: int       # batched-store runs, each after a raw fastembed sweep
    spawns: int
    cold_starts: int


FULL = Sizes(10_000, 10, 200, 60, 30, 8, 20, 2, 50, 1000, 2, 7, 3)
QUICK = Sizes(1_000, 10, 40, 20, 10, 8, 5, 1, 15, 250, 1, 3, 2)


# -- figures ---------------------------------------------------------------------------------

@dataclass
class Figure:
    area: str
    name: str
    value: float
    unit: str
    floor: float | None = None
    floor_name: str = ""
    limit: float | None = None   # the target, as a ratio (or absolute when absolute=True)
    at_least: bool = False       # the value must reach the limit rather than stay under it
    absolute: bool = False       # the limit is in the value's unit, the ratio is context only

    @property
    def ratio(self) -> float | None:
        return self.value / self.floor if self.floor else None

    @property
    def passed(self) -> bool | None:
        if self.limit is None:
            return None
        measured = self.value if self.absolute else self.ratio
        if measured is None:
            return None
        return measured >= self.limit if self.at_least else measured <= self.limit

    def target(self) -> str:
        if self.limit is None:
            return ""
        op = ">=" if self.at_least else "<="
        return f"{op} {_num(self.limit)} {self.unit}" if self.absolute else f"{op} {self.limit}x"


def _num(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"


class Report:
    def __init__(self):
        self.figures: list[Figure] = []
        self.details: dict = {}

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        verdict = {True: "PASS", False: "MISS", None: ""}[figure.passed]
        ratio = f" = {figure.ratio:.2f}x {figure.floor_name}" if figure.ratio else ""
        note(f"{figure.name}: {_num(figure.value)} {figure.unit}{ratio} {verdict}")
        return figure

    def print(self) -> None:
        rows = [("area", "figure", "measured", "floor", "ratio", "target", "")]
        for f in sorted(self.figures, key=lambda f: AREAS.index(f.area)):
            floor = f"{_num(f.floor)} {f.floor_name}" if f.floor else ""
            rows.append((f.area, f.name, f"{_num(f.value)} {f.unit}", floor,
                         f"{f.ratio:.2f}x" if f.ratio else "", f.target(),
                         {True: "PASS", False: "MISS", None: ""}[f.passed]))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        print()
        for r in rows:
            print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        verdicts = [f.passed for f in self.figures if f.passed is not None]
        print(f"\n  {sum(verdicts)} of {len(verdicts)} targets met", flush=True)

    def as_json(self) -> dict:
        return {"figures": [{**asdict(f), "ratio": f.ratio, "passed": f.passed,
                             "target": f.target()} for f in self.figures],
                **self.details}


# -- floors: the daemon's Embedder in this process -------------------------------------------

def load_embedder():
    from memnest_daemon.model.embedder import Embedder

    started = time.perf_counter()
    embedder = Embedder(OFFLINE_MODEL)
    return embedder, time.perf_counter() - started


class Floor:
    """Embeds texts in this process, in blocks, just before the daemon is asked about them, so
    floor and figure see the same moment of a noisy machine (the daemon is idle meanwhile).
    Each text is new to this process, so Embedder.embed_one's query cache cannot answer.
    Blocks, not single texts: two copies of the model evict each other from the CPU caches,
    so strict alternation would slow both sides; the first text of a block pays that."""
    BLOCK = 50

    def __init__(self, embedder):
        self.embedder, self.ms = embedder, []

    def before(self, texts: list[str]) -> None:
        for text in texts:
            started = time.perf_counter()
            self.embedder.embed_one(text)
            self.ms.append((time.perf_counter() - started) * 1000)
        time.sleep(0.2)  # onnxruntime's spinning threads go quiet before the daemon's turn


def blocks(items: list, floor: "Floor | None") -> list[list]:
    """One block when there is no floor to interleave with, else blocks of Floor.BLOCK."""
    size = Floor.BLOCK if floor is not None else max(1, len(items))
    return [items[i:i + size] for i in range(0, len(items), size)]


def raw_rates(embedder, texts: list[str]) -> dict[int, float]:
    """Texts/s of fastembed itself (the TextEmbedding inside Embedder, no lock, no
    normalising) per batch size, on the texts sorted by length as a batcher would."""
    ordered = sorted(texts, key=len)
    model = embedder._model  # fastembed's TextEmbedding: the raw floor under the daemon's path
    list(model.embed(ordered[:64], batch_size=32))  # warm-up
    rates = {}
    for batch in RAW_BATCHES:
        started = time.perf_counter()
        list(model.embed(ordered, batch_size=batch))
        rates[batch] = len(ordered) / (time.perf_counter() - started)
    time.sleep(0.3)  # onnxruntime's spinning threads go quiet before the daemon's turn
    return rates


# -- MCP sessions ----------------------------------------------------------------------------

def shim_params(env: Env, workspace: Path, db_path: Path | None = None) -> StdioServerParameters:
    extra = {"MEMORY_WORKSPACE": str(workspace)}
    if db_path is not None:
        extra["MEMORY_DB_PATH"] = str(db_path)
    return ShimUnderTest.params(workspace, {**env.env, **extra})


def bare_params(env: Env) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(BARE_SERVER)],
                                 env={**env.env, "BARE_PAGE_FILE": str(env.root / PAGE_FILE)},
                                 cwd=str(env.root))


async def spawn_to_tools(env: Env, params: StdioServerParameters) -> float:
    started = time.perf_counter()
    async with stdio_client(params, errlog=env.errlog) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        return time.perf_counter() - started


async def idle_rss(env: Env, params: StdioServerParameters, marker: str) -> int | None:
    """RSS of the server process (found by `marker` in its command line) after a tool list
    and a second of idleness."""
    async with stdio_client(params, errlog=env.errlog) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        await anyio.sleep(1.0)
        return child_rss(marker)


def child_process(marker: str) -> psutil.Process | None:
    for p in psutil.Process().children(recursive=True):
        try:
            if marker in " ".join(p.cmdline()):
                return p
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return None


def child_rss(marker: str) -> int | None:
    p = child_process(marker)
    return None if p is None else p.memory_info().rss


def cpu_seconds(processes: list[psutil.Process]) -> float:
    """CPU time used so far by these processes, every thread counted."""
    return sum(t.user + t.system for t in (p.cpu_times() for p in processes))


async def timed_searches(session: ClientSession, queries: list[str],
                         floor: Floor | None = None) -> list[float]:
    times = []
    for block in blocks(queries, floor):
        if floor is not None:
            floor.before(block)
        for q in block:
            started = time.perf_counter()
            tool_json(await session.call_tool("memory_search", {"query": q, "top_k": TOP_K}))
            times.append((time.perf_counter() - started) * 1000)
    return times


async def shim_search(env: Env, params, warmup: list[str], queries: list[str],
                      repeated: str, repeats: int, floor: Floor) -> dict:
    """Distinct queries, then one query again and again, then the idle shim's RSS."""
    async with stdio_client(params, errlog=env.errlog) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        await timed_searches(session, warmup)
        # The CPU a search costs the shim and the daemon (the floor's embeddings run here, in
        # the bench's own process): on 2 cores, 8 clients at once wait >= 8 x this / 2 each.
        serving = [child_process(ShimUnderTest.marker), *map(psutil.Process, env.daemon_pids())]
        cpu_before = cpu_seconds(serving)
        distinct = await timed_searches(session, queries, floor)
        cpu_ms = (cpu_seconds(serving) - cpu_before) * 1000 / len(queries)
        await timed_searches(session, [repeated])  # first sight: fills any cache
        # a page like the ones timed, for the bare server to carry (bare_calls)
        page = await session.call_tool("memory_search", {"query": repeated, "top_k": TOP_K})
        (env.root / PAGE_FILE).write_text(page.content[0].text)
        again = await timed_searches(session, [repeated] * repeats)
        await anyio.sleep(1.0)
        return {"distinct": distinct, "repeated": again, "shim_rss": child_rss(ShimUnderTest.marker),
                "page_bytes": len(page.content[0].text.encode()), "cpu_ms": cpu_ms}


async def bare_calls(env: Env, tool: str, queries: list[str]) -> list[float]:
    """Round trips of a bare server's tool: `noop`, what an MCP stdio call costs at least;
    `page`, what carrying a search page costs at least (bare_mcp_server.py)."""
    async with stdio_client(bare_params(env), errlog=env.errlog) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        times = []
        for q in queries:
            started = time.perf_counter()
            await session.call_tool(tool, {"query": q})
            times.append((time.perf_counter() - started) * 1000)
        return times[len(times) // 10:]  # the first calls warm the SDK's code paths


async def concurrent_search(env: Env, params, warmup: list[str],
                            slices: list[list[str]]) -> list[float]:
    """One shim per slice; all connect and warm up, then search at the same moment."""
    ready, go, times = [0], anyio.Event(), []

    async def client(queries: list[str]) -> None:
        async with stdio_client(params, errlog=env.errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            await timed_searches(session, warmup)
            ready[0] += 1
            if ready[0] == len(slices):
                go.set()
            await go.wait()
            times.extend(await timed_searches(session, queries))

    async with anyio.create_task_group() as tg:
        for s in slices:
            tg.start_soon(client, s)
    return times


async def single_stores(env: Env, params, texts: list[str], floor: Floor) -> list[float]:
    async with stdio_client(params, errlog=env.errlog) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        tool_json(await session.call_tool("memory_stats", {}))  # opens the database
        times, statuses = [], Counter()
        for block in blocks(texts, floor):
            floor.before(block)
            for t in block:
                started = time.perf_counter()
                out = tool_json(await session.call_tool("memory_store", {"content": t}))
                times.append((time.perf_counter() - started) * 1000)
                statuses[out.get("status", "?")] += 1
        note("single stores: " + ", ".join(f"{n} {k}" for k, n in statuses.items()))
        return times


async def reads_during_writes(env: Env, params, warmup: list[str], idle_q: list[str],
                              busy_q: list[str], write) -> dict:
    """Idle searches on A, then searches on A for as long as `write` (a thread writing to B)
    runs."""
    async with stdio_client(params, errlog=env.errlog) as (read, write_stream), \
            ClientSession(read, write_stream) as session:
        await session.initialize()
        await session.list_tools()
        await timed_searches(session, warmup)
        idle = await timed_searches(session, idle_q)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        await anyio.sleep(0.2)  # the write is in the daemon before the first read
        busy = []
        for q in busy_q:
            if not writer.is_alive():
                break
            busy += await timed_searches(session, [q])
        await anyio.to_thread.run_sync(writer.join)
        return {"idle": idle, "busy": busy}


# -- daemon helpers --------------------------------------------------------------------------

def daemon_rss(env: Env) -> int:
    return psutil.Process(env.client().status().pid).memory_info().rss


def timed_start(env: Env) -> float:
    started = time.perf_counter()
    env.start_daemon()
    return time.perf_counter() - started


def grpc_search_ms(client: DaemonClient, workspace: Path, queries: list[str],
                   db_path: Path | None = None) -> list[float]:
    times = []
    for q in queries:
        started = time.perf_counter()
        client.call_tool("memory_search", {"query": q, "top_k": TOP_K}, str(workspace),
                         str(db_path or ""))
        times.append((time.perf_counter() - started) * 1000)
    return times


def open_db(env: Env, workspace: Path, db_path: Path) -> float:
    started = time.perf_counter()
    env.client().call_tool("memory_stats", {}, str(workspace), str(db_path))
    return time.perf_counter() - started


def ingest(env: Env, workspace: Path, texts: list[str]) -> float:
    """Store texts over gRPC, 250 per memory_store call; returns memories/s. Near-identical
    synthetic texts merge (semantic dedup), so a workspace ends up a little under len(texts)."""
    client, counts = env.client(), {"stored": 0, "duplicates": 0, "merged": 0}
    started = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        out = client.call_tool("memory_store",
                               {"items": [{"content": t} for t in texts[i:i + BATCH]]},
                               str(workspace))
        for key in counts:
            counts[key] += out.get(key, 0)
    rate = len(texts) / (time.perf_counter() - started)
    note(f"ingested {len(texts)} texts over gRPC at {rate:.0f}/s: "
         + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return rate


def len_db(env: Env, workspace: Path, db_path: Path) -> int:
    return env.client().call_tool("memory_stats", {}, str(workspace), str(db_path))["memories"]


def copy_workspace(source: Path, target: Path) -> Path:
    """A copy of the database file(s) of `source` (daemon stopped); returns the copy's db."""
    shutil.copytree(source / ".memnest", target / ".memnest")
    return target / ".memnest" / "memory.lbug"


class QueryPool:
    """Distinct queries handed out once each: no figure may profit from an embedding cache
    warmed by an earlier one."""

    def __init__(self, queries: list[str]):
        self._queries, self._next = queries, 0

    def take(self, n: int) -> list[str]:
        out = self._queries[self._next:self._next + n]
        if len(out) < n:
            raise RuntimeError("query pool exhausted; raise its size")
        self._next += n
        return out


# -- the phases ------------------------------------------------------------------------------

def phase_startup(env: Env, rep: Report, sz: Sizes, model_load: float) -> None:
    cold, loads = [], []
    for _ in range(sz.cold_starts):
        env.stop_daemon()
        cold.append(timed_start(env))
        loads.append(env.client().status().model_load_seconds)
    rep.add(Figure("startup", "daemon cold start: spawn memnestd -> answering", pct(cold, 50),
                   "s", model_load, "model load in-process"))
    rep.details["daemon_model_load_s"] = loads
    shim, bare = shim_params(env, env.workspace("startup")), bare_params(env)
    anyio.run(spawn_to_tools, env, shim)  # untimed: page cache, imports
    anyio.run(spawn_to_tools, env, bare)
    shim_s, bare_s = [], []
    for _ in range(sz.spawns):  # alternated, so background noise hits both alike
        bare_s.append(anyio.run(spawn_to_tools, env, bare))
        shim_s.append(anyio.run(spawn_to_tools, env, shim))
    rep.details["spawn_s"] = {"shim": shim_s, "bare": bare_s}
    rep.add(Figure("startup", "spawn memnest-mcp -> tool list, daemon warm", pct(shim_s, 50),
                   "s", pct(bare_s, 50), "bare SDK server", 0.4))


def phase_store(env: Env, rep: Report, embedder, texts: list[str], reps: int) -> float:
    """Batched memory_store via the shim, each run on a fresh workspace and bracketed by raw
    fastembed sweeps (the daemon idle), so both see the same moment's machine. Best against
    best: what each does at the quietest moment of this phase. Returns the best raw rate."""
    raw = dict.fromkeys(RAW_BATCHES, 0.0)

    def sweep() -> None:
        for batch, rate in raw_rates(embedder, texts).items():
            raw[batch] = max(raw[batch], rate)

    stored = []
    for _ in range(reps):
        sweep()
        stored.append(anyio.run(mcp_store, env, env.workspace("store"), texts))
    sweep()
    best_batch = max(raw, key=raw.get)
    rep.details["raw_fastembed_per_s"] = raw
    rep.details["store_via_shim_per_s"] = stored
    note("raw fastembed texts/s by batch: " + ", ".join(f"{b}: {r:.0f}" for b, r in raw.items()))
    rep.add(Figure("store", f"batched memory_store via shim (items x250), {len(texts)} texts, "
                   f"best of {reps}", max(stored), "memories/s", raw[best_batch],
                   f"raw fastembed (best: batch {best_batch})", 0.8, at_least=True))
    return raw[best_batch]


def phase_memory_open(env: Env, rep: Report, base: Path, dbs: list[Path],
                      queries: list[str], size: str) -> float:
    """Cold daemon: open the first database with a search (floor: the next, warm search),
    then two more databases. Returns the idle daemon's RSS in MB."""
    timed_start(env)
    idle = daemon_rss(env)
    rep.add(Figure("memory", "daemon RSS idle after restart (model loaded)", idle / MB, "MB"))
    first, warm = grpc_search_ms(env.client(), base, queries, dbs[0])
    rep.add(Figure("scale", f"cold daemon: open the {size} workspace -> first search result", first / 1000, "s", warm / 1000,
                   "warm gRPC search"))
    rep.add(Figure("memory", "daemon RSS, 1 workspace reopened", daemon_rss(env) / MB, "MB",
                   idle / MB, "idle daemon"))
    for db in dbs[1:3]:
        open_db(env, base, db)
    rep.details["rss_3_open_bytes"] = daemon_rss(env)
    return idle / MB


def phase_search(env: Env, rep: Report, sz: Sizes, embedder, pool: QueryPool, base: Path,
                 db: Path, label: str, p50_limit: float, p95_limit: float | None) -> float:
    """Single shim on `db`; returns its p50 (ms). Floor: embedding the same queries."""
    warmup, queries = pool.take(5), pool.take(sz.queries)
    repeated, floor = queries[0], Floor(embedder)
    run = anyio.run(shim_search, env, shim_params(env, base, db), warmup, queries, repeated,
                    sz.repeats, floor)
    f50 = pct(floor.ms, 50)
    rep.details[f"search_{label}"] = {"shim_ms": latency(run["distinct"]),
                                      "embed_ms": latency(floor.ms),
                                      "repeated_ms": latency(run["repeated"])}
    p50 = pct(run["distinct"], 50)
    rep.add(Figure("search", f"memory_search via shim at {label} memories: p50", p50, "ms", f50,
                   "embed_one p50", p50_limit))
    share = sz.clients / (os.cpu_count() or 1)
    rep.add(Figure("concurrency", f"CPU per search at {label}, shim + daemon ({sz.clients} "
                   f"clients on {os.cpu_count()} cores: each waits >= {share:.0f}x this)",
                   run["cpu_ms"], "ms", p50, "single-shim p50"))
    rep.add(Figure("search", f"memory_search via shim at {label} memories: p95",
                   pct(run["distinct"], 95), "ms", f50, "embed_one p50", p95_limit))
    # A cache hit skips the embedding: the repeat should save about one embedding.
    rep.add(Figure("search", f"repeated identical query at {label}: p50 (cache saves >= 1/2 "
                   "embedding?)", pct(run["repeated"], 50), "ms", p50, "distinct p50",
                   round(max(0.0, 1 - 0.5 * f50 / p50), 2)))
    grpc = grpc_search_ms(env.client(), base, pool.take(sz.grpc_queries), db)
    rep.add(Figure("search", f"memory_search over gRPC, no shim, at {label}: p50",
                   pct(grpc, 50), "ms", f50, "embed_one p50"))
    # What MCP stdio alone costs per call, and per call carrying a page like the ones just
    # returned: the p50 target cannot be below 1 + the second ratio.
    noop = anyio.run(bare_calls, env, "noop", queries)
    rep.details[f"noop_call_{label}"] = latency(noop)
    rep.add(Figure("search", "no-op tool call on the bare SDK server (MCP stdio floor): p50",
                   pct(noop, 50), "ms", f50, "embed_one p50"))
    page = anyio.run(bare_calls, env, "page", queries)
    rep.details[f"page_call_{label}"] = latency(page)
    rep.add(Figure("search", f"bare SDK server answering with a {run['page_bytes'] / 1000:.0f} KB "
                   "search page (MCP floor for that result): p50", pct(page, 50), "ms", f50,
                   "embed_one p50"))
    if run["shim_rss"]:
        rep.details["shim_idle_rss_bytes"] = run["shim_rss"]
    return p50


async def idle_fleet(env: Env, params, count: int) -> int:
    """RSS of `count` shims, each initialized, its tools listed and one call made, then idle."""
    async with AsyncExitStack() as stack:
        for _ in range(count):
            read, write = await stack.enter_async_context(stdio_client(params,
                                                                       errlog=env.errlog))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            await session.list_tools()
            tool_json(await session.call_tool("memory_stats", {}))
        await anyio.sleep(1.0)
        shims = [p for p in psutil.Process().children(recursive=True)
                 if ShimUnderTest.marker in " ".join(p.cmdline())]
        return sum(p.memory_info().rss for p in shims)


def phase_fleet(env: Env, rep: Report, base: Path, db: Path, count: int) -> None:
    alone = daemon_rss(env)
    shims = anyio.run(idle_fleet, env, shim_params(env, base, db), count)
    total = daemon_rss(env) + shims
    rep.details["fleet_shims_rss_bytes"] = shims
    rep.add(Figure("memory", f"daemon + {count} idle {ShimUnderTest.label} (RSS summed)",
                   total / MB, "MB", alone / MB, "daemon alone"))


def phase_concurrency(env: Env, rep: Report, sz: Sizes, pool: QueryPool, base: Path, db: Path,
                      single_p50: float) -> None:
    slices = [pool.take(sz.per_client) for _ in range(sz.clients)]
    times = anyio.run(concurrent_search, env, shim_params(env, base, db), pool.take(2), slices)
    rep.details["concurrent_ms"] = latency(times)
    rep.add(Figure("concurrency", f"{sz.clients} shims searching at once: p95",
                   pct(times, 95), "ms", single_p50, "single-shim p50", 6.0))


def phase_read_while_write(env: Env, rep: Report, sz: Sizes, pool: QueryPool, base: Path,
                           db_a: Path, texts: list[str]) -> None:
    """Searches on A (a 10k copy) while another client stores batches of 500 into B."""
    workspace_b = env.workspace("writer")
    writes: list[float] = []

    def write() -> None:
        client = DaemonClient(env.socket, client_name="bench-writer", autostart=False)
        try:
            for i in range(0, len(texts), WRITE_BATCH):
                started = time.perf_counter()
                client.call_tool("memory_store", {"items": [{"content": t} for t in
                                                            texts[i:i + WRITE_BATCH]]},
                                 str(workspace_b))
                writes.append((time.perf_counter() - started) * 1000)
        finally:
            client.close()

    env.client().call_tool("memory_stats", {}, str(workspace_b))  # B exists before the clock
    run = anyio.run(reads_during_writes, env, shim_params(env, base, db_a), pool.take(3),
                    pool.take(30), pool.take(300), write)
    idle50, write50 = pct(run["idle"], 50), pct(writes, 50)
    rep.details["read_while_write"] = {"idle_ms": latency(run["idle"]),
                                       "busy_ms": latency(run["busy"]), "write_call_ms": writes}
    note(f"{len(writes)} write calls of {WRITE_BATCH} took "
         f"{', '.join(f'{w:.0f}' for w in writes)} ms; {len(run['busy'])} searches meanwhile")
    rep.add(Figure("concurrency", "search on A during writes on B: p50", pct(run["busy"], 50),
                   "ms", idle50, "idle p50 on A"))
    # Queued reads would take about as long as a write call: stay well under one.
    busy95 = pct(run["busy"], 95)
    rep.add(Figure("concurrency", f"search on A during writes on B: p95 (no queueing: "
                   f"< half a write call = {write50 / 2:.0f} ms)", busy95, "ms", idle50,
                   "idle p50 on A", round(0.5 * write50 / idle50, 1)))


def phase_single_store(env: Env, rep: Report, embedder, base: Path, db: Path,
                       texts: list[str], size: str) -> None:
    floor = Floor(embedder)
    times = anyio.run(single_stores, env, shim_params(env, base, db), texts, floor)
    floor_ms = pct(floor.ms, 50) + 10
    rep.details["single_store_ms"] = latency(times)
    rep.add(Figure("store", f"single memory_store via shim into a {size} workspace: p50",
                   pct(times, 50), "ms", floor_ms, "embed_one p50 + 10 ms", 1.5))


def phase_scale(env: Env, rep: Report, sz: Sizes, embedder, pool: QueryPool, n: int,
                texts: list[str], raw_best: float) -> None:
    """Import N memories, restart, open cold -> first result, then search at N."""
    workspace = env.workspace(f"scale{human(n)}")
    export = env.root / f"import-{n}.json"
    write_export(export, texts)
    env.client().call_tool("memory_stats", {}, str(workspace))
    last = [0.0]

    def progress(done, total, message):
        if time.perf_counter() - last[0] > 15 or done == total:
            last[0] = time.perf_counter()
            note(f"import: {message} ({(time.perf_counter() - started) :.0f} s)")

    # One call: 100k memories run far past the client's default 10-minute deadline.
    client_module.CALL_DEADLINE_S = max(client_module.CALL_DEADLINE_S, 6 * 3600)
    started = time.perf_counter()
    out = env.client().call_tool("memory_import", {"path": str(export)}, str(workspace),
                                 on_progress=progress)
    rate = len(texts) / (time.perf_counter() - started)
    rep.details["import"] = out
    rep.add(Figure("scale", f"memory_import of {human(n)} memories (gRPC)", rate,
                   "memories/s", raw_best, "raw fastembed best", 0.8, at_least=True))
    env.stop_daemon()
    timed_start(env)
    first_q = pool.take(1)
    started = time.perf_counter()
    grpc_search_ms(env.client(), workspace, first_q)
    first = time.perf_counter() - started
    warm = grpc_search_ms(env.client(), workspace, pool.take(5))
    big = n >= 100_000  # the targets are for 100k; smaller N are printed only
    rep.add(Figure("scale", f"cold daemon: open {human(n)} workspace -> first search result",
                   first, "s", pct(warm, 50) / 1000, "warm gRPC search", 5.0 if big else None,
                   absolute=True))
    phase_search(env, rep, sz, embedder, pool, workspace, workspace / ".memnest/memory.lbug",
                 human(n), 6.0 if big else None, None)


# -- main ------------------------------------------------------------------------------------

def run(args, sz: Sizes, env: Env, rep: Report) -> None:
    n = sz.memories
    scale = args.scale or 0
    texts = synthetic_texts(n + sz.store_texts + sz.write_batches * WRITE_BATCH
                            + sz.single_stores + scale)
    base_texts, rest = texts[:n], texts[n:]
    store_texts, rest = rest[:sz.store_texts], rest[sz.store_texts:]
    write_texts, rest = rest[:sz.write_batches * WRITE_BATCH], rest[sz.write_batches * WRITE_BATCH:]
    single_texts, scale_texts = rest[:sz.single_stores], rest[sz.single_stores:]
    pool = QueryPool(synthetic_queries(1600, set(texts)))  # ~1,700 exist
    env.env.update(QUIET)

    print("[1/8] floor in this process: load the daemon's Embedder", flush=True)
    embedder, model_load = load_embedder()
    note(f"model loaded in {model_load:.2f} s")

    print("[2/8] start-up: daemon cold start; memnest-mcp vs bare SDK server", flush=True)
    phase_startup(env, rep, sz, model_load)
    bare_rss = anyio.run(idle_rss, env, bare_params(env), BARE_SERVER.name)

    print(f"[3/8] build the {human(n)} workspace over gRPC; batched store via shim vs raw "
          "fastembed", flush=True)
    base = env.workspace("base")
    env.client().call_tool("memory_stats", {}, str(base))
    rate = ingest(env, base, base_texts)
    rep.details["ingest_grpc_per_s"] = rate
    raw_best = phase_store(env, rep, embedder, store_texts, sz.store_reps)
    rep.add(Figure("memory", f"daemon RSS after ingesting {human(n)} (high-water mark)",
                   daemon_rss(env) / MB, "MB"))

    print(f"[4/8] restart; reopen 1 then 3 copies of the {human(n)} workspace", flush=True)
    dbs = [base / ".memnest" / "memory.lbug"]
    size = f"{len_db(env, base, dbs[0]):,}"  # semantic merge folds some near-identical texts
    env.stop_daemon()
    dbs += [copy_workspace(base, env.root / f"copy{i}") for i in range(1, sz.workspaces)]
    idle_daemon = phase_memory_open(env, rep, base, dbs, pool.take(2), size)

    print(f"[5/8] search through the shim at {human(n)}; repeated query", flush=True)
    single_p50 = phase_search(env, rep, sz, embedder, pool, base, dbs[0], size, 3.5, None)
    rss3 = max(rep.details["rss_3_open_bytes"], daemon_rss(env))
    rep.add(Figure("memory", f"daemon RSS, 3 workspaces of {size} open (after restart)",
                   rss3 / MB, "MB", idle_daemon, "idle daemon", 600, absolute=True))
    shim_rss = rep.details.get("shim_idle_rss_bytes")
    if shim_rss and bare_rss:
        rep.add(Figure("memory", f"{ShimUnderTest.label} RSS, idle", shim_rss / MB, "MB",
                       bare_rss / MB, "bare SDK server", 35, absolute=True))
    phase_fleet(env, rep, base, dbs[0], FLEET)

    print(f"[6/8] concurrency: {sz.clients} shims at once; reads on A during writes on B",
          flush=True)
    phase_concurrency(env, rep, sz, pool, base, dbs[0], single_p50)
    phase_read_while_write(env, rep, sz, pool, base, dbs[1], write_texts)

    print("[7/8] single memory_store via the shim; open 10 workspaces", flush=True)
    phase_single_store(env, rep, embedder, base, dbs[2], single_texts, size)
    for db in dbs[3:]:
        open_db(env, base, db)
    rep.add(Figure("memory", f"daemon RSS, {len(dbs)} workspaces of {size} open "
                   "(+ the writer's workspace B)", daemon_rss(env) / MB, "MB", idle_daemon,
                   "idle daemon"))

    if scale:
        print(f"[8/8] scale: import {human(scale)}, cold open, search", flush=True)
        phase_scale(env, rep, sz, embedder, pool, scale, scale_texts, raw_best)
    else:
        print("[8/8] scale: skipped (--scale N)", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 1k workspaces, few repetitions (< 4 minutes)")
    parser.add_argument("--scale", type=int, metavar="N",
                        help="also import N memories and measure open/search at N (100000 for "
                             "the issue's targets; takes many minutes)")
    parser.add_argument("--json", action="store_true", help="also print a JSON summary")
    parser.add_argument("--shim-rev", metavar="REV",
                        help="drive the memnest-mcp of this git revision (its sources, this "
                             "daemon), to compare shims in the same machine state")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temp dir (daemon log, workspaces) and print its path")
    args = parser.parse_args()
    sz = QUICK if args.quick else FULL

    print(f"memnest perf targets: model {OFFLINE_MODEL}, {psutil.cpu_count()} CPUs, "
          f"{human(sz.memories)} memories per workspace, code {_git_revision()}, load average "
          f"{psutil.getloadavg()[0]:.1f}", flush=True)
    env, rep = Env(), Report()
    if args.shim_rev:
        use_shim_from(args.shim_rev, env.root)
        note(f"driving {ShimUnderTest.label}")
    rep.details.update({"sizes": asdict(sz), "scale": args.scale, "model": OFFLINE_MODEL,
                        "revision": _git_revision(),
                        "loadavg_start": [round(x, 2) for x in psutil.getloadavg()]})
    started = time.perf_counter()
    with cleaned_up(env, args.keep) as stopped:
        run(args, sz, env, rep)
    if stopped.interrupted:
        return 130
    rep.details["runtime_s"] = time.perf_counter() - started
    rep.details["loadavg_end"] = [round(x, 2) for x in psutil.getloadavg()]
    print(f"\nmemnest perf figures (run took {rep.details['runtime_s']:.0f} s; load average "
          f"{rep.details['loadavg_start'][0]:.1f} at start, {rep.details['loadavg_end'][0]:.1f} "
          "at end; floors measured in this run)")
    rep.print()
    if args.json:
        print(json.dumps(rep.as_json(), indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
