"""What tests share: a daemon environment on a temp socket with the offline model, the real
memnest-mcp shim driven by the MCP SDK's stdio client, direct edits of LadybugDB files, and
reading tool results. conftest.py turns these into fixtures."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path

import psutil
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from memnest_proto.contract import OFFLINE_MODEL
from memnest_shims.client import DaemonClient

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent  # the checkout
DATA = ROOT / "tests" / "data"  # payloads, corpora and fixtures the tests read


def old_daemon_command(version: str, *args: str) -> list[str]:
    """memnestd posing as an older release (tests/old_memnestd.py)."""
    return [sys.executable, str(Path(__file__).with_name("old_memnestd.py")), version, *args]


class Daemon:
    """A daemon environment: its socket, log and the env that points clients at it."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(root, 0o700)
        self.socket = root / "memnestd.sock"
        self.log = root / "memnestd.log"
        self.env = {**os.environ, "MEMNEST_SOCKET": str(self.socket),
                    "MEMNEST_LOG_FILE": str(self.log),
                    "MEMORY_EMBEDDING_MODEL": OFFLINE_MODEL,
                    "MEMNEST_USER_DIR": str(root / "personal")}
        self.env.pop("MEMORY_WORKSPACE", None)
        self.env.pop("MEMORY_DB_PATH", None)
        self.proc: subprocess.Popen | None = None

    def start(self, *extra: str, wait: bool = True) -> subprocess.Popen:
        self.proc = subprocess.Popen([str(BIN / "memnestd"), *extra], env=self.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if wait:
            self.wait_ready()
        return self.proc

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        client = self.client(autostart=False)
        while time.monotonic() < deadline:
            if client.is_running():
                client.close()
                return
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"memnestd exited: {self.proc.stderr.read()}")
            time.sleep(0.05)
        raise TimeoutError("memnestd did not become ready")

    def client(self, autostart: bool = True) -> DaemonClient:
        return DaemonClient(self.socket, client_name="tests", autostart=autostart)

    def pids(self) -> list[int]:
        """Every live memnestd process serving this socket."""
        found = []
        for p in psutil.process_iter(["cmdline", "pid"]):
            try:
                cmd = " ".join(p.info["cmdline"] or [])
                if "memnestd" in cmd and "pytest" not in cmd and \
                        p.environ().get("MEMNEST_SOCKET") == str(self.socket) and \
                        p.status() != psutil.STATUS_ZOMBIE:
                    found.append(p.info["pid"])
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return found

    def stop(self) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 40
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in self.pids():
            os.kill(pid, signal.SIGKILL)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    @asynccontextmanager
    async def mcp(self, cwd: Path, message_handler=None, **env):
        """A real memnest-mcp process, spoken to by the MCP SDK's stdio client."""
        params = StdioServerParameters(command=str(BIN / "memnest-mcp"), cwd=str(cwd),
                                       env={**self.env, **env})
        with open(self.root / "shim-stderr.log", "a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write,
                                         message_handler=message_handler) as session:
                    await session.initialize()
                    yield session


def db_edit(workspace: Path, statements: list[tuple[str, dict]]) -> None:
    """Edit a workspace's database directly while its daemon is stopped (as an older version
    or a crash would have left it), in a process of its own."""
    script = textwrap.dedent(f"""
        import json, sys, ladybug as lb
        c = lb.Connection(lb.Database({str(workspace / '.memnest' / 'memory.lbug')!r}))
        for query, params in json.loads(sys.stdin.read()):
            c.execute(query, params)
    """)
    subprocess.run([sys.executable, "-c", script], input=json.dumps(statements), text=True,
                   check=True)


def put_memories(store, memories, vectors) -> None:
    """Write these memories into an open MemoryStore through its one write path, as the
    daemon would: new ids are taken from the store (tests choose ids in order), known ids are
    rewritten. Takes the write lock."""
    from memnest_daemon.store.changes import Changes
    changes = Changes()
    with store.writing():
        for m, vector in zip(memories, vectors):
            if m.id in store.catalog:
                changes.update(m, vector)
                continue
            while store.next_id() <= m.id:
                store.allocate_id()
            changes.insert(m, vector)
        store.commit(changes)


def some_memories(store, ids, workspace: str) -> None:
    """Memories `ids` of `workspace`, each a distinct text with a random unit vector of the
    store's dimension, written through put_memories: for tests of what holds the store, not
    of what it finds."""
    import numpy as np
    from memnest_daemon.core.records import Memory, content_hash, utcnow
    now, rng = utcnow(), np.random.default_rng(len(ids))
    memories = [Memory(id=n, content=f"memory number {n}", content_hash=content_hash(
        f"memory number {n}"), category="general", tags=[], importance=3, access_count=0,
        workspace=workspace, created_at=now, updated_at=now, embedding_model=store.model)
        for n in ids]
    vectors = rng.normal(size=(len(ids), store.vectors.dim)).astype(np.float32)
    put_memories(store, memories, list(vectors / np.linalg.norm(vectors, axis=1)[:, None]))


def result_json(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def error_text(result) -> str:
    assert result.is_error, f"expected a tool error, got {result.content[0].text[:300]}"
    return result.content[0].text


# -- operations in process (tests/daemon/operations/) ----------------------------------------

_LOADED: dict = {}


def offline_embedder():
    """The offline embedding model, loaded once in this process."""
    if "offline" not in _LOADED:
        from memnest_daemon.model.embedder import Embedder
        _LOADED["offline"] = Embedder(OFFLINE_MODEL, threads=1)
    return _LOADED["offline"]


class OperationContext:
    """A CallContext (daemon/operations/context.py) over a real MemoryStore opened in this
    process on `root`/memory.lbug, for the workspace `root`/project, with the offline model:
    what an operation's unit test hands it. `settings`: Settings fields to override.
    `gone = True` makes check_still_wanted() refuse, as for a caller that hung up."""

    def __init__(self, root: Path, workspace: str | None = None, **settings):
        from dataclasses import replace

        from memnest_daemon.core.config import Settings
        from memnest_daemon.core.records import Origin
        from memnest_daemon.store.store import MemoryStore
        from memnest_daemon.team import sync as team
        root.mkdir(mode=0o700, parents=True, exist_ok=True)  # as a database's folder must be
        project = root / "project"
        project.mkdir(exist_ok=True)
        self.workspace = workspace or str(project.resolve())
        self.settings = replace(Settings.from_env(), **settings)
        self.origin = Origin(via="agent", client="unit-test")
        self.embedder = offline_embedder()
        self.store = MemoryStore(str(root / "memory.lbug"), self.embedder.name,
                                 self.embedder.dim, 64, 1, embed=self.embedder.embed)
        team.attach(self.store)
        self.progressed: list[tuple[float, float, str]] = []
        self.gone = False

    def progress(self, done: float, total: float, message: str) -> None:
        self.progressed.append((done, total, message))

    def check_still_wanted(self) -> None:
        from memnest_daemon.core.errors import ToolError
        if self.gone:
            raise ToolError("cancelled", "the caller hung up")

    @property
    def checkout(self) -> str:
        """Where the call runs: the workspace itself, unless a test sets `worktree`."""
        return self.__dict__.get("worktree") or self.workspace

    def personal(self):
        """The personal tier: a test gives one with `personal_tier`; None otherwise."""
        return self.__dict__.get("personal_tier")

    def elsewhere(self, workspace: str):
        from memnest_daemon.core.errors import ToolError
        raise ToolError("permission_denied", "unit-test contexts reach no other workspace")

    def known_workspaces(self) -> list[str]:
        return []

    def other(self, workspace: str) -> "OperationContext":
        """A context of another workspace on the same store."""
        twin = object.__new__(OperationContext)
        twin.__dict__.update(self.__dict__, workspace=workspace, progressed=[])
        return twin

    def close(self) -> None:
        self.store.close()


def stored_memories(ctx, *texts: str, tags: tuple[str, ...] = ()) -> list[int]:
    """Memories of `ctx`'s workspace (an OperationContext), one per text, written through
    curation/ingest.py as memory_store writes them; the texts should not merge."""
    from memnest_daemon.curation.ingest import Item, ingest
    vectors = ctx.embedder.embed(list(texts))
    with ctx.store.writing():
        outcomes = ingest(ctx.store, ctx.workspace, [Item(t, tags=list(tags)) for t in texts],
                          vectors, ctx.settings)
    return [o.memory.id for o in outcomes]


# -- ranking in process: memories and a store double with hand-made vectors ------------------

RANKING_DIM = 8
RANKING_T0 = datetime(2025, 3, 1, 12, 0, 0)


def ranking_memory(i: int, content: str, workspace: str = "/ws", tags=(),
                   minutes: float = 0.0):
    """A memory written `minutes` after RANKING_T0."""
    from memnest_daemon.core.records import Memory, content_hash
    at = RANKING_T0 + timedelta(minutes=minutes)
    return Memory(id=i, content=content, content_hash=content_hash(content), category="general",
                  tags=list(tags), importance=3, access_count=0, workspace=workspace,
                  created_at=at, updated_at=at)


def unit_vector(seed: int):
    import numpy as np
    x = np.random.default_rng(seed).standard_normal(RANKING_DIM).astype(np.float32)
    return x / np.linalg.norm(x)


def ranking_store(memories, vectors=None):
    """What search.ranking reads of a MemoryStore, built from `memories` (each with the
    vector `vectors` gives it, else a random one)."""
    from collections import Counter
    from types import SimpleNamespace

    from memnest_daemon.search.indexes import KeywordIndex, VectorIndex
    from memnest_daemon.search.memory_columns import MemoryColumns
    from memnest_daemon.search.timeline import Timeline
    class Store(SimpleNamespace):  # beside.py keeps views by weak reference to the store
        __hash__ = object.__hash__

    store = Store(catalog={m.id: m for m in memories},
                            vectors=VectorIndex(RANKING_DIM), keywords=KeywordIndex(),
                            timeline=Timeline.of(memories), columns=MemoryColumns.of(memories),
                            per_workspace=Counter(m.workspace for m in memories),
                            version=0, scopes=(-1, {}))
    for m in memories:
        store.vectors.upsert(m.id, (vectors or {}).get(m.id, unit_vector(1000 + m.id)))
    store.keywords.upsert_many(memories)
    return store


def rank_context(store, query, vector=None, workspace="/ws"):
    """search.ranking's context mode over `store` for `query`."""
    from memnest_daemon.search import ranking
    vector = unit_vector(7) if vector is None else vector
    return ranking.rank(store, query, vector, ranking.SearchFilter(workspace=workspace),
                        pool=100, mode="context", rrf_k=60)


# -- team memory: clones of one repository, each with its daemon -------------------------------

def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=check, capture_output=True,
                          text=True)


class TeamSide:
    """One clone of a team's repository and its own daemon (tests of team memory)."""

    def __init__(self, root: Path, name: str, origin: Path):
        git(root, "clone", "-q", str(origin), name)
        self.repo = (root / name).resolve()
        git(self.repo, "config", "pull.rebase", "false")
        self.daemon = Daemon(root / f"run-{name}")
        self.daemon.start()
        self.client = self.daemon.client()

    def call(self, tool: str, **arguments) -> dict:
        return self.client.call_tool(tool, arguments, str(self.repo))

    def fails(self, tool: str, **arguments) -> str:
        import pytest
        from memnest_shims.client import ToolFailure
        with pytest.raises(ToolFailure) as info:
            self.call(tool, **arguments)
        return info.value.message

    def ctl(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "memnest-ctl"), *args], cwd=self.repo, env=self.daemon.env,
                              capture_output=True, text=True, timeout=120)

    def shared(self) -> Path:
        return self.repo / ".memnest" / "shared"

    def publish(self, message: str = "memories") -> None:
        git(self.repo, "add", ".memnest")
        git(self.repo, "commit", "-qm", message)
        git(self.repo, "push", "-q", "origin", "HEAD")

    def pull(self, check: bool = True) -> subprocess.CompletedProcess:
        return git(self.repo, "pull", "-q", "origin", "main", check=check)

    def stop(self) -> None:
        self.client.close()
        self.daemon.stop()


# -- a real browser ------------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Debian's packages of the two, installed by install_chromium when they are missing.
CHROMIUM_PACKAGES = {CHROMIUM: "chromium", CHROMEDRIVER: "chromium-driver"}
# Chromium with nothing of its own on the network: this machine's network refuses it.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-default-apps",
                  "--disable-extensions", "--no-default-browser-check"]


def install_chromium() -> str | None:
    """Debian's chromium and chromium-driver, installed with apt-get when missing and running
    as root; the reason they cannot be, or None once both are there."""
    missing = [package for path, package in CHROMIUM_PACKAGES.items() if not os.path.exists(path)]
    if not missing:
        return None
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return (f"{', '.join(missing)} not installed and this is not root on a Debian-like "
                f"system to install them (apt-get install {' '.join(missing)})")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wait = ["-o", "DPkg::Lock::Timeout=600"]
    for command in (["apt-get", *wait, "update", "-q"],
                    ["apt-get", *wait, "install", "-y", "-q", *missing]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}"
                               f"\n{done.stderr[-2000:]}")
    gone = [path for path in CHROMIUM_PACKAGES if not os.path.exists(path)]
    if gone:
        raise RuntimeError(f"apt-get installed {' '.join(missing)}, but {gone} are missing")
    return None


def selenium_chrome(width: int = 1280, height: int = 900):
    """Chromium driven by Selenium through Debian's chromedriver; nothing is downloaded
    (Selenium's own driver manager is never asked)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*CHROMIUM_FLAGS, f"--window-size={width},{height}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # A home of its own: Chromium writes its crash-report settings (~/.config/chromium) and
    # dconf (~/.cache/dconf) under the user's home otherwise (tests/tripwire.py).
    home = tempfile.mkdtemp(prefix="memnest-chromium-home-")
    env = {**os.environ, "HOME": home}
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env.pop(name, None)
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER, env=env))


class Workbench:
    """`memnest-ctl ui --no-browser` for a workspace, run against a test daemon; `url` is the
    address with its key, as the command printed it."""

    def __init__(self, daemon: "Daemon", workspace: Path):
        self.proc = subprocess.Popen(
            [str(BIN / "memnest-ctl"), "ui", "--no-browser", "--workspace", str(workspace)],
            env=daemon.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self.proc.kill()
            raise RuntimeError(f"memnest-ctl ui printed {self.url!r}: {self.proc.stderr.read()}")
        self.base = self.url.split("?")[0].rstrip("/")
        self.port = int(self.base.rsplit(":", 1)[1])
        self.key = self.url.split("key=", 1)[1]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
