"""Core performance figures for memnest, measured end to end with the offline model.

What it measures (against a private memnestd on a temp socket; nothing touches your own
daemon, socket, log or workspaces):

1. Shim start-up: wall time from spawning `memnest-mcp` to receiving the MCP tool list,
   (a) with the daemon already warm and (b) cold, with no daemon running, so the shim starts
   memnestd on demand (this includes loading the embedding model).
2. `memory_search` latency (p50/p95, top_k=10) through the shim, spoken to by the MCP SDK's
   stdio client, at each workspace size in --sizes (default 1,000 and 10,000 memories). The
   same queries over the direct gRPC client are shown beside it, to split out the shim's share.
   Memories are ingested over gRPC with batched `memory_store` calls (`items`, 250 per call).
3. Batched store throughput (memories/s through `memory_store` with `items`, via the shim)
   next to raw fastembed throughput on the same texts (the daemon's Embedder class, in this
   process, with the daemon idle).
4. RSS of the daemon: idle with the model loaded, after each ingest (this includes the
   ingest's high-water mark), and after a restart that reopens the largest workspace (which
   also times that reopen); and RSS of one idle `memnest-mcp` process.

Texts are synthetic project-memory sentences built from word lists with a fixed seed
(`--corpus locomo` uses the LOCOMO dialogue turns from ../shared/locomo instead, cycled
with a numeric suffix; queries then come from the session summaries). Queries never repeat
stored texts. The script prints figures and asserts nothing; medians and percentiles are
reported because a small shared machine is noisy.

Run:  make bench                        (= .venv/bin/python bench/core.py)
      .venv/bin/python bench/core.py --quick          smoke run: sizes 200,1000, fewer reps
      .venv/bin/python bench/core.py --sizes 1000,10000 --json
"""
import argparse
import json
import os
import platform
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import anyio
import numpy as np
import psutil
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memnest_shims.client import DaemonClient

BIN = Path(sys.executable).parent
SHIM = BIN / "memnest-mcp"


class ShimUnderTest:
    """The memnest-mcp the benches drive: this install's, or (use_shim_from) the one of an
    earlier commit, run from that commit's sources against this daemon: the same machine
    state measures today's shim beside an older one."""
    command: list[str] = [str(SHIM)]
    pythonpath = ""
    marker = "memnest-mcp"  # in its command line, to find its process
    label = "memnest-mcp"

    @classmethod
    def params(cls, cwd: Path, env: dict) -> StdioServerParameters:
        if cls.pythonpath:
            env = {**env, "PYTHONPATH": cls.pythonpath}
        return StdioServerParameters(command=cls.command[0], args=cls.command[1:],
                                     cwd=str(cwd), env=env)


def use_shim_from(rev: str, root: Path) -> None:
    """Drive the shim of git revision `rev` (its shims/ and proto/ as the packages they
    install as), e.g. the last commit before the shim became a pipe."""
    repo = Path(__file__).resolve().parents[1]
    target = root / f"shim-{rev}"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(repo), "archive", rev, "shims", "proto"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    (target / "shims").rename(target / "memnest_shims")
    (target / "proto").rename(target / "memnest_proto")
    ShimUnderTest.command = [sys.executable, "-m", "memnest_shims.mcp.main"]
    ShimUnderTest.pythonpath = str(target)
    ShimUnderTest.marker = "memnest_shims.mcp.main"
    ShimUnderTest.label = f"memnest-mcp@{rev}"
OFFLINE_MODEL = "memnest/all-MiniLM-L6-v2-int8"
LOCOMO_DIR = Path(os.environ.get("MEMNEST_LOCOMO_DIR",
                               Path(__file__).resolve().parents[2] / "shared" / "locomo"))
LOCOMO_FILES = ("conv-26.json", "conv-30.json")
BATCH = 250
TOP_K = 10


# -- texts -----------------------------------------------------------------------------------

COMPONENTS = ["billing service", "auth gateway", "search indexer", "web dashboard",
              "mobile API", "payment worker", "notification queue", "report generator",
              "user profile store", "CI pipeline", "feature flag service", "image resizer",
              "export job", "rate limiter", "session cache", "audit log", "GraphQL layer",
              "onboarding flow", "invoice mailer", "metrics collector", "admin console",
              "webhook dispatcher", "recommendation model", "data warehouse sync"]
PEOPLE = ["Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Gustavo", "Hiro", "Ines", "Jonas",
          "Kemal", "Lena", "Mateo", "Nadia", "Oskar", "Priya"]
TEAMS = ["The platform team", "The backend team", "The data team", "The infra group",
         "The mobile team", "The security team", "Our on-call rotation", "The frontend team"]
ACTIONS = ["rewrite", "split", "deprecate", "move", "cache", "shard", "containerise",
           "pin the dependencies of", "add retries to", "rate limit", "feature-flag",
           "move to async IO in", "drop the ORM from", "add tracing to"]
REASONS = ["because p99 latency kept creeping up", "to cut the cloud bill",
           "after the outage in March", "since nobody could reason about the old code",
           "so that deploys stop blocking each other", "to meet the new compliance audit",
           "because the vendor SDK is end-of-life", "to unblock the EU launch",
           "because flaky tests were eating a day a week", "to simplify local development"]
PROBLEMS = ["leaks file descriptors", "deadlocks", "returns stale data", "times out",
            "double-charges customers", "drops messages", "runs out of memory",
            "logs secrets in plain text", "retries forever", "serves the wrong locale",
            "corrupts UTF-8 names", "spins at 100% CPU"]
CONDITIONS = ["the Redis connection is reset", "two requests race on the same row",
              "the queue backs up past 10k messages", "a user has more than 500 items",
              "daylight saving time changes", "the upstream returns a 429",
              "the disk is nearly full", "a deploy overlaps with the nightly batch",
              "the JWT is about to expire", "the payload contains emoji"]
FIXES = ["bound the pool size", "wrap the write in a transaction",
         "add an idempotency key", "set an explicit timeout of five seconds",
         "move the work to a background job", "normalise strings to NFC first",
         "reuse one HTTP client per process", "add jitter to the retry backoff",
         "pin the library to the previous minor version", "stream the rows instead of loading them"]
TOOLS = ["Postgres", "SQLite", "Redis", "Kafka", "RabbitMQ", "pytest", "ruff", "mypy", "uv",
         "Docker Compose", "Terraform", "Grafana", "Sentry", "TypeScript", "Go", "Rust",
         "FastAPI", "Django", "React", "htmx"]
TASKS = ["integration tests", "schema migrations", "local development", "load testing",
         "feature prototypes", "batch jobs", "dashboards", "background workers",
         "code review", "incident timelines"]
WHYS = ["it is faster to iterate with", "the error messages are clearer",
        "the whole team already knows it", "it keeps the dependency tree small",
        "it catches more bugs before review", "it runs fine on a laptop"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday"]
CHANGES = ["connection pool change", "Python 3.12 upgrade", "new index on orders",
           "switch to gRPC", "logging refactor", "move to ARM instances", "ORM upgrade"]
ENVS = ["staging", "production", "QA", "demo", "analytics"]
EVENTS = ["a release is tagged", "the schema migration runs", "a customer import starts",
          "the quarterly audit", "switching traffic to the new region", "merging to main"]
CONSEQUENCES = ["the rollback takes hours", "half the dashboards go blank",
                "customers get duplicate emails", "the on-call gets paged all night",
                "the nightly export silently skips rows", "the cache serves old prices"]

STATEMENTS = [
    "{team} decided to {action} the {component} {reason}.",
    "The {component} {problem} when {condition}; the fix was to {fix}.",
    "{person} prefers {tool} over {tool2} for {task} because {why}.",
    "Deploys of the {component} go out on {day} after the {hour}:00 sync, never on Fridays.",
    "The {component} reads its settings from {tool} and falls back to environment variables.",
    "{person} noticed {component} latency rose to {ms} ms after the {change}.",
    "Lesson learned: the {component} must be drained before {event}, otherwise {consequence}.",
    "The {env} database for the {component} is backed up every {hours} hours and kept {days} days.",
    "Meeting note: {person} owns moving the {component} to {tool} by the end of sprint {sprint}.",
    "Bug {num} in the {component}: it {problem} when {condition}; workaround is to {fix}.",
    "We use {tool} for {task} in the {component} repo; {person} set it up.",
    "Do not {action} the {component} during {event}; {person} learned that the hard way.",
]
QUESTIONS = [
    "why did we decide to {action} the {component}?",
    "what goes wrong in the {component} when {condition}?",
    "which tool does {person} like for {task}?",
    "on which day can the {component} be deployed?",
    "where does the {component} get its configuration from?",
    "what is the workaround when the {component} {problem}?",
    "who is responsible for migrating the {component} to {tool}?",
    "how often do we back up the {env} database?",
    "did the {change} make anything slower?",
    "what must we do before {event}?",
    "what do we use {tool} for?",
    "has the {component} ever {problem_past}?",
]


def _fill(rng: random.Random, template: str) -> str:
    tool, tool2 = rng.sample(TOOLS, 2)
    problem = rng.choice(PROBLEMS)
    return template.format(
        team=rng.choice(TEAMS), action=rng.choice(ACTIONS), component=rng.choice(COMPONENTS),
        reason=rng.choice(REASONS), problem=problem, condition=rng.choice(CONDITIONS),
        fix=rng.choice(FIXES), person=rng.choice(PEOPLE), tool=tool, tool2=tool2,
        task=rng.choice(TASKS), why=rng.choice(WHYS), day=rng.choice(DAYS),
        hour=rng.randint(9, 16), ms=rng.randrange(120, 2000, 10), change=rng.choice(CHANGES),
        event=rng.choice(EVENTS), consequence=rng.choice(CONSEQUENCES), env=rng.choice(ENVS),
        hours=rng.choice([1, 4, 6, 12, 24]), days=rng.choice([7, 14, 30, 90]),
        sprint=rng.randint(1, 60), num=f"#{rng.randint(100, 9999)}",
        problem_past=rng.choice(["deadlocked", "timed out", "dropped messages",
                                 "run out of memory", "returned stale data"]))


def synthetic_texts(n: int, seed: int = 1234) -> list[str]:
    rng, seen, out = random.Random(seed), set(), []
    while len(out) < n:
        text = _fill(rng, rng.choice(STATEMENTS))
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def synthetic_queries(n: int, avoid: set[str], seed: int = 99) -> list[str]:
    rng, seen, out = random.Random(seed), set(), []
    while len(out) < n:
        q = _fill(rng, rng.choice(QUESTIONS))
        if q not in seen and q not in avoid:
            seen.add(q)
            out.append(q)
    return out


def _locomo_conversations() -> list[dict]:
    convs = []
    for name in LOCOMO_FILES:
        data = json.loads((LOCOMO_DIR / name).read_text())
        convs.append(data.get("conversation", data))  # the dataset wraps it; these files may not
    return convs


def locomo_texts(n: int) -> list[str]:
    turns = []
    for conv in _locomo_conversations():
        sessions = sorted((k for k, v in conv.items() if re.fullmatch(r"session_\d+", k)
                           and isinstance(v, list)), key=lambda k: int(k.split("_")[1]))
        for key in sessions:
            turns += [f"{t['speaker']}: {t['text']}" for t in conv[key] if t.get("text")]
    return [turns[i % len(turns)] + ("" if i < len(turns) else f" ({i // len(turns)})")
            for i in range(n)]


def locomo_queries(n: int, avoid: set[str]) -> list[str]:
    sentences = []
    for conv in _locomo_conversations():
        for key, value in conv.items():
            if key.endswith("_summary") and isinstance(value, str):
                sentences += [s.strip() for s in re.split(r"(?<=[.!?])\s+", value)
                              if len(s.strip()) > 30 and s.strip() not in avoid]
    random.Random(99).shuffle(sentences)
    return sentences[:n]


# -- statistics and output -------------------------------------------------------------------

def pct(values: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), p))


def spread(values: list[float]) -> dict:
    return {"n": len(values), "median": pct(values, 50), "min": min(values), "max": max(values)}


def latency(values: list[float]) -> dict:
    return {"n": len(values), "p50": pct(values, 50), "p95": pct(values, 95),
            "mean": float(np.mean(values)), "max": max(values)}


def human(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def note(message: str) -> None:
    print(f"  .. {message}", flush=True)


# -- the private daemon environment ----------------------------------------------------------

class Env:
    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="memnest-bench-"))
        os.chmod(self.root, 0o700)
        self.socket = self.root / "memnestd.sock"
        self.log = self.root / "memnestd.log"
        self.env = {**os.environ, "MEMNEST_SOCKET": str(self.socket),
                    "MEMNEST_LOG_FILE": str(self.log), "MEMORY_EMBEDDING_MODEL": OFFLINE_MODEL,
                    "MEMNEST_USER_DIR": str(self.root / "personal")}
        for key in ("MEMORY_WORKSPACE", "MEMORY_DB_PATH"):
            self.env.pop(key, None)
        self.errlog = open(self.root / "shim-stderr.log", "a")
        self._client: DaemonClient | None = None
        self._workspaces = 0

    def client(self) -> DaemonClient:
        if self._client is None:
            self._client = DaemonClient(self.socket, client_name="bench", autostart=False)
        return self._client

    def workspace(self, name: str) -> Path:
        self._workspaces += 1
        path = self.root / f"ws{self._workspaces}-{name}"
        path.mkdir()
        return path.resolve()

    def params(self, cwd: Path) -> StdioServerParameters:
        return ShimUnderTest.params(cwd, self.env)

    def daemon_pids(self) -> list[int]:
        """Live memnestd processes serving this bench's socket (and only this one)."""
        found = []
        for p in psutil.process_iter(["pid", "cmdline"]):
            try:
                if "memnestd" in " ".join(p.info["cmdline"] or []) and \
                        p.environ().get("MEMNEST_SOCKET") == str(self.socket) and \
                        p.status() != psutil.STATUS_ZOMBIE:
                    found.append(p.info["pid"])
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def start_daemon(self) -> None:
        proc = subprocess.Popen([str(BIN / "memnestd"), "--spawned"], env=self.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 120
        while not self.client().is_running():
            if proc.poll() not in (None, 0) or time.monotonic() > deadline:
                raise RuntimeError(f"memnestd did not start; see {self.log}")
            time.sleep(0.05)

    def stop_daemon(self, timeout: float = 40) -> None:
        """Shutdown RPC, then wait; SIGTERM/SIGKILL whatever of ours is left."""
        client = self.client()
        if client.is_running():
            try:
                client.shutdown("bench")
            except Exception:
                pass
        client.close()
        procs = []
        for pid in self.daemon_pids():
            try:
                procs.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                pass
        _, alive = psutil.wait_procs(procs, timeout=timeout)
        for p in alive:
            p.terminate()
        _, alive = psutil.wait_procs(alive, timeout=5)
        for p in alive:
            p.kill()

    def cleanup(self, keep: bool = False) -> None:
        me = psutil.Process()
        shims = [p for p in me.children(recursive=True) if _is_shim(p)]
        for p in shims:
            p.terminate()
        psutil.wait_procs(shims, timeout=5)
        try:
            self.stop_daemon(timeout=20)
        finally:
            self.errlog.close()
            if keep:
                print(f"kept {self.root} (daemon log: {self.log})", flush=True)
            else:
                shutil.rmtree(self.root, ignore_errors=True)


def _is_shim(p: psutil.Process) -> bool:
    try:
        return "memnest-mcp" in " ".join(p.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _git_revision() -> str:
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                              text=True, timeout=5, cwd=Path(__file__).resolve().parent
                              ).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _is_interrupt(exc: BaseException) -> bool:
    if isinstance(exc, KeyboardInterrupt):
        return True
    return any(_is_interrupt(e) for e in getattr(exc, "exceptions", ()))


@contextmanager
def interrupts_raise():
    """Ctrl-C and SIGTERM raise KeyboardInterrupt wherever the bench is, so the cleanup runs.
    (Left to itself, the asyncio runner turns Ctrl-C into a cancellation that an MCP call in
    flight can absorb.)"""
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def cleaned_up(env: "Env", keep: bool):
    """Run a bench's body: daemons, shims and temp files are cleaned up however it ends, and
    Ctrl-C or SIGTERM stops it quietly (`.interrupted` is then true; nothing is raised)."""
    outcome = SimpleNamespace(interrupted=False)
    try:
        with interrupts_raise():
            yield outcome
    except BaseException as exc:  # noqa: B036 - anyio may wrap Ctrl-C in an exception group
        if not _is_interrupt(exc):
            raise
        print("interrupted; cleaning up", file=sys.stderr)
        outcome.interrupted = True
    finally:
        env.cleanup(keep=keep)


def tool_json(result) -> dict:
    if result.is_error:
        raise RuntimeError(f"tool error: {result.content[0].text[:300]}")
    return json.loads(result.content[0].text)


# -- 1. shim start-up ------------------------------------------------------------------------

async def spawn_to_tools(env: Env, cwd: Path) -> tuple[float, float, int]:
    """Seconds from spawning memnest-mcp to the initialize answer and to the tool list."""
    started = time.perf_counter()
    async with stdio_client(env.params(cwd), errlog=env.errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            initialized = time.perf_counter()
            tools = await session.list_tools()
            listed = time.perf_counter()
    return initialized - started, listed - started, len(tools.tools)


def bench_startup(env: Env, cold_reps: int, warm_reps: int) -> dict:
    cwd = env.workspace("startup")
    cold, cold_init, model_load = [], [], []
    for i in range(cold_reps):
        env.stop_daemon()
        init, listed, n_tools = anyio.run(spawn_to_tools, env, cwd)
        cold.append(listed)
        cold_init.append(init)
        model_load.append(env.client().status().model_load_seconds)
        note(f"cold {i + 1}/{cold_reps}: {listed:.2f}s to {n_tools} tools")
    if not env.client().is_running():
        env.start_daemon()
    anyio.run(spawn_to_tools, env, cwd)  # one untimed run: page cache, imports
    warm, warm_init = [], []
    for i in range(warm_reps):
        init, listed, _ = anyio.run(spawn_to_tools, env, cwd)
        warm.append(listed)
        warm_init.append(init)
    note(f"warm: {', '.join(f'{t:.2f}' for t in warm)} s")
    return {"warm_tools_s": spread(warm), "warm_initialize_s": spread(warm_init),
            "cold_tools_s": spread(cold), "cold_initialize_s": spread(cold_init),
            "cold_model_load_s": spread(model_load)}


# -- 2. ingest + search ----------------------------------------------------------------------

def ingest(env: Env, workspace: Path, texts: list[str]) -> float:
    """Store texts over gRPC in batches; returns memories/s."""
    client = env.client()
    started = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        out = client.call_tool("memory_store",
                               {"items": [{"content": t} for t in texts[i:i + BATCH]]},
                               str(workspace))
        if out["stored"] != len(texts[i:i + BATCH]):
            note(f"batch at {i}: {out['stored']} stored, {out['duplicates']} duplicates")
    return len(texts) / (time.perf_counter() - started)


async def mcp_search(env: Env, workspace: Path, queries: list[str], warmup: list[str]) -> dict:
    async with stdio_client(env.params(workspace), errlog=env.errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            for q in warmup:
                tool_json(await session.call_tool("memory_search", {"query": q, "top_k": TOP_K}))
            times, hits = [], []
            for q in queries:
                started = time.perf_counter()
                result = await session.call_tool("memory_search", {"query": q, "top_k": TOP_K})
                times.append((time.perf_counter() - started) * 1000)
                hits.append(len(tool_json(result)["results"]))
            await anyio.sleep(1.0)  # idle: let the shim settle before reading its RSS
            shim_rss = shim_rss_bytes()
    return {"ms": times, "hits": hits, "shim_rss": shim_rss}


def shim_rss_bytes() -> int | None:
    shims = [p for p in psutil.Process().children(recursive=True) if _is_shim(p)]
    return shims[0].memory_info().rss if shims else None


def grpc_search(env: Env, workspace: Path, queries: list[str]) -> list[float]:
    client, times = env.client(), []
    for q in queries:
        started = time.perf_counter()
        client.call_tool("memory_search", {"query": q, "top_k": TOP_K}, str(workspace))
        times.append((time.perf_counter() - started) * 1000)
    return times


def bench_search(env: Env, sizes: list[int], texts: list[str], queries: list[str],
                 warmup: list[str], passes: int) -> tuple[dict, dict, Path]:
    """Grow one workspace to each size in turn and measure search there."""
    workspace = env.workspace("search")
    env.client().call_tool("memory_stats", {}, str(workspace))  # untimed: creates the database
    results, rss = {}, {}
    have = 0
    for size in sizes:
        rate = ingest(env, workspace, texts[have:size])
        note(f"ingested {size - have} memories over gRPC at {rate:.0f}/s "
             f"(workspace now {size})")
        grown_from, have = have, size
        stats = env.client().call_tool("memory_stats", {}, str(workspace))
        status = env.client().status()
        rss[size] = {"rss_bytes": psutil.Process(status.pid).memory_info().rss,
                     "status_rss_bytes": status.rss_bytes}
        shim_ms, direct_ms, hits, shim_rss = [], [], [], None
        for _ in range(passes):  # alternate, so that background noise hits both alike
            run = anyio.run(mcp_search, env, workspace, queries, warmup)
            shim_ms += run["ms"]
            hits += run["hits"]
            shim_rss = run["shim_rss"]
            direct_ms += grpc_search(env, workspace, queries)
        results[size] = {"memories": stats["memories"], "grown_from": grown_from,
                         "ingest_per_s": rate, "mcp_ms": latency(shim_ms),
                         "grpc_ms": latency(direct_ms), "mean_hits": float(np.mean(hits)),
                         "shim_rss_bytes": shim_rss}
        note(f"search at {human(size)}: MCP p50 {results[size]['mcp_ms']['p50']:.1f} ms, "
             f"p95 {results[size]['mcp_ms']['p95']:.1f} ms; gRPC p50 "
             f"{results[size]['grpc_ms']['p50']:.1f} ms")
    return results, rss, workspace


def reopen(env: Env, workspace: Path, query: str) -> dict:
    """Restart the daemon and open the big workspace again: what a restart costs, and the
    steady-state RSS (without the ingest's high-water mark)."""
    env.stop_daemon()
    env.start_daemon()
    idle = psutil.Process(env.client().status().pid).memory_info().rss
    started = time.perf_counter()
    env.client().call_tool("memory_stats", {}, str(workspace))
    opened = time.perf_counter() - started
    started = time.perf_counter()
    env.client().call_tool("memory_search", {"query": query, "top_k": TOP_K}, str(workspace))
    first_search = time.perf_counter() - started
    status = env.client().status()
    return {"idle_rss_bytes": idle, "open_s": opened, "first_search_s": first_search,
            "rss_bytes": psutil.Process(status.pid).memory_info().rss}


# -- 3. store throughput vs raw fastembed ----------------------------------------------------

async def mcp_store(env: Env, workspace: Path, texts: list[str]) -> float:
    async with stdio_client(env.params(workspace), errlog=env.errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            # Untimed: opens (creates) the workspace's database.
            tool_json(await session.call_tool("memory_stats", {}))
            started = time.perf_counter()
            for i in range(0, len(texts), BATCH):
                chunk = texts[i:i + BATCH]
                out = tool_json(await session.call_tool(
                    "memory_store", {"items": [{"content": t} for t in chunk]}))
                if out["stored"] != len(chunk):
                    note(f"store batch at {i}: {out['duplicates']} duplicates")
            return len(texts) / (time.perf_counter() - started)


def raw_embed_rates(texts: list[str], reps: int) -> tuple[list[float], float]:
    from memnest_daemon.model.embedder import Embedder

    started = time.perf_counter()
    embedder = Embedder(OFFLINE_MODEL)
    load = time.perf_counter() - started
    embedder.embed(texts[:32])  # warm-up
    rates = []
    for _ in range(reps):
        started = time.perf_counter()
        embedder.embed(texts)
        rates.append(len(texts) / (time.perf_counter() - started))
    return rates, load


# -- main ------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000",
                        help="workspace sizes for search latency (default 1000,10000)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: sizes 200,1000 and fewer repetitions")
    parser.add_argument("--json", action="store_true", help="also print a JSON summary")
    parser.add_argument("--corpus", choices=["synthetic", "locomo"], default="synthetic",
                        help="stored texts: seeded synthetic sentences or LOCOMO turns")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temp dir (daemon log, workspaces) and print its path")
    args = parser.parse_args()

    if args.quick:
        sizes, cold_reps, warm_reps, n_queries, passes, n_store, store_reps, embed_reps = \
            [200, 1000], 2, 3, 30, 1, 200, 1, 1
    else:
        sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
        cold_reps, warm_reps, n_queries, passes, n_store, store_reps, embed_reps = \
            3, 5, 100, 3, 1000, 3, 3

    # Search corpus (grown to each size) plus a separate set for the store-throughput run.
    n_total = sizes[-1] + n_store
    if args.corpus == "locomo":
        all_texts = locomo_texts(n_total)
        store_texts = [f"{t} [store run]" for t in all_texts[sizes[-1]:]]
        queries = locomo_queries(n_queries + 5, set(all_texts))
    else:
        all_texts = synthetic_texts(n_total)
        store_texts = all_texts[sizes[-1]:]
        queries = synthetic_queries(n_queries + 5, set(all_texts))
    texts = all_texts[:sizes[-1]]
    warmup, queries = queries[:5], queries[5:]

    cpu = platform.processor() or platform.machine()
    summary_rev = _git_revision()
    print(f"memnest core bench: model {OFFLINE_MODEL}, {psutil.cpu_count()} CPUs ({cpu}), "
          f"Python {platform.python_version()}, corpus {args.corpus}, sizes "
          f"{', '.join(map(human, sizes))}, {len(queries)} queries x {passes}, "
          f"code {summary_rev}", flush=True)
    mean_len = np.mean([len(t) for t in texts])
    print(f"  .. mean stored text {mean_len:.0f} chars; e.g. {texts[0]!r}", flush=True)
    print(f"  .. query e.g. {queries[0]!r}", flush=True)

    env = Env()
    summary: dict = {"model": OFFLINE_MODEL, "cpus": psutil.cpu_count(), "corpus": args.corpus,
                     "sizes": sizes, "queries": len(queries), "passes": passes,
                     "batch": BATCH, "top_k": TOP_K, "revision": summary_rev}
    summary["loadavg_start"] = [round(x, 2) for x in psutil.getloadavg()]
    bench_started = time.perf_counter()
    with cleaned_up(env, args.keep) as stopped:
        print("[1/5] shim start-up", flush=True)
        summary["startup"] = bench_startup(env, cold_reps, warm_reps)
        status = env.client().status()
        summary["daemon_idle_rss_bytes"] = psutil.Process(status.pid).memory_info().rss

        print("[2/5] ingest + memory_search", flush=True)
        summary["search"], summary["daemon_rss"], big_workspace = bench_search(
            env, sizes, texts, queries, warmup, passes)
        shim_rss = summary["search"][sizes[-1]]["shim_rss_bytes"]
        summary["shim_idle_rss_bytes"] = shim_rss

        print("[3/5] batched store via MCP", flush=True)
        store_rates = [anyio.run(mcp_store, env, env.workspace(f"store{i}"), store_texts)
                       for i in range(store_reps)]  # a fresh workspace each time
        summary["store_mcp_per_s"] = spread(store_rates)
        note(f"memory_store via MCP: {', '.join(f'{r:.0f}' for r in store_rates)}/s")
        summary["daemon_final_rss_bytes"] = psutil.Process(
            env.client().status().pid).memory_info().rss

        print(f"[4/5] daemon restart, reopen the {human(sizes[-1])} workspace", flush=True)
        summary["reopen"] = reopen(env, big_workspace, queries[0])
        note(f"opened in {summary['reopen']['open_s']:.2f}s, RSS "
             f"{summary['reopen']['rss_bytes'] / 2**20:.0f} MB")
        env.stop_daemon()  # the raw run gets the CPUs to itself

        print("[5/5] raw fastembed, in this process", flush=True)
        rates, load = raw_embed_rates(store_texts, embed_reps)
        summary["raw_embed_per_s"] = spread(rates)
        summary["raw_model_load_s"] = load
        note(f"raw fastembed: {', '.join(f'{r:.0f}' for r in rates)}/s")
    if stopped.interrupted:
        return 130
    summary["runtime_s"] = time.perf_counter() - bench_started
    summary["loadavg_end"] = [round(x, 2) for x in psutil.getloadavg()]

    report(summary, sizes, n_store)
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    return 0


def report(s: dict, sizes: list[int], n_store: int) -> None:
    st = s["startup"]
    mb = 1024 * 1024

    def secs(d: dict) -> str:
        return f"{d['median']:.2f} s (min {d['min']:.2f}, max {d['max']:.2f}, n={d['n']})"

    rows = [
        ("spawn memnest-mcp -> tool list, daemon warm", secs(st["warm_tools_s"])),
        ("  of which spawn -> initialize answered", secs(st["warm_initialize_s"])),
        ("spawn memnest-mcp -> tool list, daemon cold", secs(st["cold_tools_s"])),
        ("  of which model load (daemon's own figure)", secs(st["cold_model_load_s"])),
    ]
    for size in sizes:
        r = s["search"][size]
        rows.append((f"memory_search via MCP at {human(size)} memories",
                     f"p50 {r['mcp_ms']['p50']:.1f} ms, p95 {r['mcp_ms']['p95']:.1f} ms "
                     f"(n={r['mcp_ms']['n']}, top_k={s['top_k']})"))
        rows.append(("  same queries over gRPC, no shim",
                     f"p50 {r['grpc_ms']['p50']:.1f} ms, p95 {r['grpc_ms']['p95']:.1f} ms"))
    for size in sizes:
        r = s["search"][size]
        rows.append((f"ingest over gRPC, {human(r['grown_from'])} -> {human(size)} memories",
                     f"{r['ingest_per_s']:.0f} memories/s (items x{s['batch']})"))
    store, raw = s["store_mcp_per_s"], s["raw_embed_per_s"]

    def rate(d: dict, unit: str) -> str:
        return f"{d['median']:.0f} {unit}/s (min {d['min']:.0f}, max {d['max']:.0f}, n={d['n']})"

    rows += [
        (f"memory_store via MCP, items x{s['batch']}, {human(n_store)} texts",
         rate(store, "memories")),
        ("raw fastembed on the same texts, same model", rate(raw, "texts")),
        ("daemon RSS, idle (model loaded, no workspace)",
         f"{s['daemon_idle_rss_bytes'] / mb:.0f} MB"),
    ]
    for size in sizes:
        rows.append((f"daemon RSS after ingest to {human(size)}",
                     f"{s['daemon_rss'][size]['rss_bytes'] / mb:.0f} MB"))
    rows.append(("daemon RSS at the end (all workspaces open)",
                 f"{s['daemon_final_rss_bytes'] / mb:.0f} MB"))
    ro = s["reopen"]
    rows.append((f"daemon restarted, {human(sizes[-1])} workspace reopened: RSS",
                 f"{ro['rss_bytes'] / mb:.0f} MB (open {ro['open_s']:.2f} s, first search "
                 f"{ro['first_search_s'] * 1000:.0f} ms)"))
    rows.append(("memnest-mcp RSS, idle",
                 f"{s['shim_idle_rss_bytes'] / mb:.0f} MB" if s["shim_idle_rss_bytes"]
                 else "n/a"))
    width = max(len(k) for k, _ in rows)
    print()
    print(f"memnest core figures ({s['cpus']} CPUs, {s['model']}, {s['corpus']} corpus, "
          f"run took {s['runtime_s']:.0f} s; load average {s['loadavg_start'][0]:.1f} at "
          f"start, {s['loadavg_end'][0]:.1f} at end)")
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")


if __name__ == "__main__":
    sys.exit(main())


def write_export(path: Path, texts: list[str]) -> None:
    """A memnest-export v1 file with these texts, for memory_import."""
    doc = {"format": "memnest-export", "version": 1,
           "memories": [{"key": f"m{i}", "content": t} for i, t in enumerate(texts)]}
    path.write_text(json.dumps(doc))
