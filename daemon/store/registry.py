"""Which database a workspace uses, and the registry that opens each database once, keeps
it while it is used and closes it when idle (or when too many are open). What a higher
layer keeps for one open store (team memory's state) is made as the store opens and goes
when it closes."""
import gc
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from memnest_proto import paths

from ..code.git_cli import tracked
from ..core.errors import ToolError, invalid
from ..core.storage_errors import ModelMismatch
from ..storage import db_files
from ..storage.db_files import OWN_FOLDER, UnsafeLocation, unresolved
from .known import KnownWorkspaces
from .store import MemoryStore
from .team_slot import TeamSlot

# Makes team memory's state for a store that has just opened (team/outgoing.py's
# open_team, given by the daemon's main: the store layer cannot import team).
OpenTeam = Callable[[MemoryStore], TeamSlot]
Embed = Callable[[list[str]], np.ndarray]  # texts -> vectors (model.embedder.Embedder.embed)
# (store, similarity floor, at most this many memories) -> rows found: conflicts.fill_rows
FillRows = Callable[[MemoryStore, float, int], int]

log = logging.getLogger(__name__)

# Idle databases get their conflict neighbour rows found in the background: rows for this
# many memories at a time (under the read lock), for at most FILL_SECONDS per housekeeping
# tick, once no call has used the database for FILL_AFTER_IDLE_S.
FILL_ROWS = 64
FILL_SECONDS = 1.0
FILL_AFTER_IDLE_S = 2.0
MAX_OPEN = 16  # databases open at once (MEMNEST_MAX_OPEN_DATABASES)


def database_path(workspace: str, db_path: str) -> str:
    """Where a workspace's memories live: MEMORY_DB_PATH when the caller set one (relative
    paths are taken from the workspace), else <workspace>/.memnest/memory.lbug. A caller's
    path is checked here, before any file is touched (caller_database)."""
    own = str(Path(workspace) / OWN_FOLDER / "memory.lbug")
    if db_path == ":memory:":
        return db_path
    if db_path:
        return caller_database(workspace, db_path)
    return own


def caller_database(workspace: str, db_path: str) -> str:
    """A database file a caller named (memory_set_workspace, the gRPC field, MEMORY_DB_PATH):
    only a file in a `.memnest/` folder that exists (or the workspace's own, which memnest
    creates), so no call can have memnest create, chmod or write anything elsewhere."""
    if "\x00" in db_path:
        raise invalid("db_path must not contain NUL characters")
    path = Path(db_path).expanduser()
    full = os.path.abspath(path if path.is_absolute() else Path(workspace) / path)
    folder, name = os.path.split(full)
    ours = os.path.join(workspace, OWN_FOLDER)
    if os.path.basename(folder) != OWN_FOLDER or name in ("", ".", ".."):
        raise ToolError("permission_denied",
                        f"db_path {db_path!r} is not a file in a {OWN_FOLDER}/ folder; "
                        "memnest keeps databases only in its own folders and touches nothing "
                        f"else. Use a name in the workspace's own ({ours}/NAME.lbug), or "
                        f"create a folder for a shared one (mkdir -m 700 DIR/{OWN_FOLDER}) "
                        f"and name DIR/{OWN_FOLDER}/NAME.lbug")
    if folder != ours and not os.path.lexists(folder):
        raise ToolError("permission_denied",
                        f"db_path {db_path!r}: {folder} does not exist, and memnest creates "
                        f"no folder but a workspace's own {OWN_FOLDER}/: create it first "
                        f"(mkdir -m 700 {folder}), or use the workspace's own")
    return full


def refuse_tracked(db_path: str) -> None:
    """A database git tracks is never opened: what memnest wrote there would be published by
    the next `git add`, and a stranger's repository may carry one made to be trusted."""
    folder, name = os.path.split(db_path)
    found = tracked(folder, [name + suffix for suffix in db_files.SUFFIXES])
    if found:
        shown = ", ".join(os.path.join(folder, f) for f in found)
        raise ToolError("permission_denied",
                        f"{shown} is tracked by git, so memnest will not use it: what it "
                        "writes there would be published by the next commit (a repository "
                        "may also carry a database made to be trusted). Untrack it with "
                        f"`git rm --cached {' '.join(found)}` in {folder} (and commit), or "
                        "delete it to start this workspace's memory afresh")


def has_memory(workspace: str, db_path: str) -> bool:
    """The workspace has a database to read, or a `.memnest/` folder (teammates' shared
    files; a database made on the first write): opening it creates nothing outside
    memnest's own folder. Otherwise a read must not open it."""
    if db_path == ":memory:":
        return True
    path = database_path(workspace, db_path)
    if db_path:
        return os.path.lexists(path)
    return os.path.lexists(os.path.dirname(path))


def check_database(path: str) -> None:
    """What opening the database at `path` would refuse, found without changing anything."""
    try:
        db_files.check(unresolved(path))
    except UnsafeLocation as exc:
        raise ToolError("permission_denied", f"will not open the database {path}: {exc}") \
            from None


def check_workspace(workspace: str) -> str:
    if not workspace:
        raise invalid("no workspace was given: set MEMORY_WORKSPACE or start the client in a "
                      "project directory")
    if "\x00" in workspace or not os.path.isabs(workspace):
        raise invalid(f"workspace {workspace!r} must be an absolute directory path")
    resolved = os.path.realpath(workspace)
    if not os.path.isdir(resolved):
        raise invalid(f"workspace {workspace!r} is not an existing directory; check "
                      "MEMORY_WORKSPACE or the directory the client runs in")
    if paths.system_folder(resolved):
        raise ToolError("permission_denied",
                        f"{resolved} is a system folder, not a project: memnest keeps no "
                        "memories there. Start the client in a project directory or set "
                        "MEMORY_WORKSPACE")
    owner = os.stat(resolved).st_uid
    if owner != os.geteuid():
        raise ToolError("permission_denied",
                        f"{resolved} belongs to another user (uid {owner}); memnest keeps "
                        "memories only in folders of the user it runs as")
    return resolved


class StoreRegistry:
    """Opens each database once, on first use, keeps it open while it is used, and closes it
    after it has been idle for a while (an ephemeral `:memory:` database stays open)."""

    def __init__(self, model: str, dim: int, buffer_pool_mb: int, max_db_gb: int,
                 db_threads: int = 2, embed: Embed | None = None, max_open: int = MAX_OPEN,
                 open_team: OpenTeam | None = None, personal_dir: str = ""):
        self._open_args = (model, dim, buffer_pool_mb, max_db_gb, db_threads, embed)
        self.max_open = max_open
        self._open_team = open_team  # None: stores without team memory (tests, benchmarks)
        # the personal tier's folder (MEMNEST_USER_DIR): its database never has a team
        self._personal = os.path.realpath(personal_dir) + os.sep if personal_dir else ""
        self.known = KnownWorkspaces(personal_dir)  # for a search of all the user's workspaces
        self._stores: dict[str, MemoryStore] = {}
        self._opening: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.workspaces: dict[str, str] = {}  # caller workspace -> database path
        self._empty: MemoryStore | None = None  # what a read of a folder with no memory sees

    def acquire(self, workspace: str, db_path: str) -> MemoryStore:
        """The store for a workspace, marked in use until release()."""
        path = database_path(workspace, db_path)
        key = path if path == ":memory:" else unresolved(path)
        if db_path and key != ":memory:" and self._personal and \
                os.path.realpath(key).startswith(self._personal):
            raise ToolError("permission_denied",
                            f"db_path {db_path!r} is the personal tier's database: it is "
                            "reached with scope \"user\" from any workspace, never as a "
                            "workspace's database")
        with self._lock:
            store = self._stores.get(key)
            if store is None:
                opening = self._opening.setdefault(key, threading.Lock())
        if store is None:
            with opening:  # one thread opens a given file; others wait for it
                with self._lock:
                    store = self._stores.get(key)
                if store is None:
                    self._close_same_file(key)
                    self._make_room()
                    store = self._open(key)
                    with self._lock:
                        self._stores[key] = store
        with self._lock:
            if self._stores.get(key) is not store:  # closed as idle in between: open again
                return self.acquire(workspace, db_path)
            store.users += 1
            self.workspaces[workspace] = key
        return store

    def acquire_empty(self) -> MemoryStore:
        """An empty ephemeral store, for a read of a workspace that has no memory: reading
        creates nothing (no `.memnest/`, no database). One per daemon, never written; marked
        in use until release()."""
        with self._lock:
            store = self._empty
        if store is None:
            store = self._open_database(":memory:")
            with self._lock:
                if self._empty is None:
                    self._empty, store = store, None
            if store is not None:  # another thread made one first
                store.close()
        with self._lock:
            assert self._empty is not None
            self._empty.users += 1
            return self._empty

    def hold_open(self, workspace: str) -> MemoryStore | None:
        """The store of a workspace if it is open now, marked in use (release() it after);
        None if it is not open. For upkeep, which must not reopen what was closed."""
        with self._lock:
            store = self._stores.get(self.workspaces.get(workspace, ""))
            if store is not None:
                store.users += 1
            return store

    def release(self, store: MemoryStore, used: bool = True) -> None:
        """`used`: a caller's call ends now, so the idle clock restarts (upkeep's own holds
        pass False)."""
        with self._lock:
            store.users -= 1
            if used:
                store.last_used = time.monotonic()

    def _close_same_file(self, key: str) -> None:
        """A database open under another path is the same file when its folder was moved
        or renamed while open: that store is closed first, so the file is never open twice."""
        if key == ":memory:" or not os.path.exists(key):
            return
        with self._lock:
            same = [(k, s) for k, s in self._stores.items() if k != ":memory:"
                    and _same_file(k, s.db.inode, key)]
            for old_key, store in same:
                if store.users:
                    raise ToolError("unavailable", f"the database {key} is open under its "
                                    f"old path {old_key} by a call still running; retry in a "
                                    "moment")
                del self._stores[old_key]
            self.workspaces = {w: k for w, k in self.workspaces.items() if k in self._stores}
        if same:
            log.info("closing %s: its folder moved to %s", same[0][0], key)
            self._closed([s for _, s in same])

    def _make_room(self) -> None:
        """Before another database opens: at `max_open` open ones, close the one used least
        recently that no call is using (each open database holds ~35 MB and its threads:
        opening workspace after workspace ran a daemon out of memory)."""
        with self._lock:
            if len(self._stores) < self.max_open:
                return
            free = [s for key, s in self._stores.items() if key != ":memory:" and s.users == 0]
            if not free:
                raise ToolError("resource_exhausted",
                                f"{len(self._stores)} databases are open and every one is in "
                                f"use (at most {self.max_open}, MEMNEST_MAX_OPEN_DATABASES); "
                                "retry in a moment")
            victim = min(free, key=lambda s: s.last_used)
            del self._stores[victim.db_path]
            self.workspaces = {w: k for w, k in self.workspaces.items() if k in self._stores}
        log.info("closing %s: %d databases are open, the most at once", victim.db_path,
                 self.max_open)
        doomed = [victim]
        del victim
        self._closed(doomed)

    def _open(self, key: str) -> MemoryStore:
        store = self._open_database(key)
        personal = bool(self._personal) and os.path.realpath(key).startswith(self._personal)
        if self._open_team is not None and not personal:
            try:
                store.team = self._open_team(store)
            except BaseException:
                store.close()
                raise
        return store

    def _open_database(self, key: str) -> MemoryStore:
        if key != ":memory:":
            refuse_tracked(key)
        try:
            return MemoryStore(key, *self._open_args)
        except ModelMismatch as exc:
            raise ToolError("model_mismatch", str(exc)) from None
        except UnsafeLocation as exc:
            raise ToolError("permission_denied", f"will not open the database {key}: {exc}") \
                from None
        except (OSError, RuntimeError) as exc:
            raise ToolError("storage_error", f"cannot open database {key}: {exc}") from None

    def flush_deferred(self) -> None:
        """Write what calls left for later: access counts and deferred embeddings."""
        for store in self.stores():
            for chore in (store.flush_access, store.flush_embeddings):
                try:
                    chore()
                except Exception:
                    log.exception("%s: %s failed", store.db_path, chore.__name__)

    def fill_neighbours(self, fill: FillRows, floor: float,
                        budget_s: float = FILL_SECONDS) -> int:
        """Find conflict neighbour rows (`fill`: curation.conflicts.fill_rows) in databases
        no call has used for FILL_AFTER_IDLE_S, for at most `budget_s`; stops as soon as a
        call uses one. Returns how many rows were found."""
        started, found = time.monotonic(), 0
        for store in self.stores():
            while time.monotonic() - started < budget_s:
                with self._lock:
                    idle = store.users == 0 and \
                        time.monotonic() - store.last_used >= FILL_AFTER_IDLE_S
                    if idle:
                        store.users += 1  # not closed under our feet
                if not idle:
                    break
                try:
                    added = fill(store, floor, FILL_ROWS)
                finally:
                    self.release(store, used=False)
                found += added
                if not added:
                    break
        return found

    def close_idle(self, idle_seconds: float) -> list[str]:
        """Close databases no call has used for `idle_seconds`; returns their paths."""
        now = time.monotonic()
        with self._lock:
            idle = [s for key, s in self._stores.items() if key != ":memory:"
                    and s.users == 0 and now - s.last_used >= idle_seconds]
            for path in [s.db_path for s in idle]:  # no name is left holding a store
                del self._stores[path]
            self.workspaces = {w: k for w, k in self.workspaces.items() if k in self._stores}
        closed = [s.db_path for s in idle]
        for path, used in [(s.db_path, s.last_used) for s in idle]:
            log.info("closing %s after %.0fs idle", path, now - used)
        self._closed(idle)
        return closed

    @staticmethod
    def _closed(stores: list[MemoryStore]) -> None:
        """Close stores already taken out of the registry, and free what they held."""
        if not stores:
            return
        for store in stores:
            _close(store)
        del store
        stores.clear()  # the caller's list: nothing keeps the closed stores alive
        # What the closed stores held may sit in reference cycles among frozen objects:
        # thaw everything, collect, and freeze what the open stores still hold.
        gc.unfreeze()
        gc.collect()
        gc.freeze()

    def stores(self) -> list[MemoryStore]:
        with self._lock:
            return list(self._stores.values())

    def close_all(self) -> None:
        with self._lock:
            stores, self._stores = list(self._stores.values()), {}
            if self._empty is not None:
                stores.append(self._empty)
                self._empty = None
        for store in stores:
            _close(store)


def _same_file(old_key: str, inode: tuple[int, int] | None, key: str) -> bool:
    """`old_key` no longer leads to its database (moved), and `key` is that file now."""
    if os.path.exists(old_key):
        return False
    try:
        info = os.stat(key)
    except OSError:
        return False
    return inode is not None and inode == (info.st_dev, info.st_ino)


def _close(store: MemoryStore) -> None:
    """Close a store taken out of the registry; its team state goes with it."""
    team, store.team = store.team, None
    if team is not None:
        team.close()  # plain memory: stops following commits, forgets what it saw
    try:
        store.close()
    except Exception:
        log.exception("closing %s failed", store.db_path)
