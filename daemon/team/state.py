"""Team memory's state for one open store: what it last saw of each workspace's shared
folder. The store registry makes it as the store opens (`outgoing.open_team`, which also
has every commit rewrite the shared files) and drops it as the store closes, so a store
opened again reads every file again, as after a restart."""
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from ..core.records import Memory
from ..store.changes import Changes
from ..store.store import MemoryStore
from .report import Report

Fingerprint = tuple[object, ...]  # folder.fingerprint: the folder's and git's stat results
FileStamp = tuple[int, int]  # a file's (size, mtime in ns)
# MemoryStore.after_commit: (store, changes, deleted memories as they were, ids that lost
# links to them)
CommitHook = Callable[[MemoryStore, Changes, list[Memory], set[int]], None]
KEPT_REPORTS = 20  # syncs memory_sync has not shown yet, at most (the newest are kept)


@dataclass
class FolderState:
    """What one store last saw of one workspace's shared folder."""
    fingerprint: Fingerprint | None = None
    files: dict[str, FileStamp] = field(default_factory=dict)  # global id -> as last read
    problems: dict[str, str] = field(default_factory=dict)  # file name -> what is wrong
    ignored: dict[str, str] = field(default_factory=dict)  # gid -> why its file changed nothing
    unreported: list[Report] = field(default_factory=list)  # reports memory_sync has not shown
    synced_at: datetime | None = None  # when a sync last finished reading the folder
    lock: threading.Lock = field(default_factory=threading.Lock)  # one sync at a time

    def keep_report(self, report: Report) -> None:
        self.unreported = self.unreported[-KEPT_REPORTS:] + [report]


@dataclass
class TeamState:
    """Team memory's state for one open store (the store's `team` slot)."""
    hooks: list[CommitHook]  # the store's after_commit hooks
    hook: CommitHook  # ours among them
    folders: dict[str, FolderState] = field(default_factory=dict)  # by workspace
    lock: threading.Lock = field(default_factory=threading.Lock)

    def folder(self, workspace: str) -> FolderState:
        with self.lock:
            return self.folders.setdefault(workspace, FolderState())

    def close(self) -> None:
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)
        with self.lock:
            self.folders.clear()


def folder_state(store: MemoryStore, workspace: str) -> FolderState:
    """What `store` last saw of the workspace's shared folder. A store opened without team
    memory (outside the registry) gets a new state each time: none of its commits is
    followed, so nothing it saw is worth keeping."""
    team = store.team
    return team.folder(workspace) if isinstance(team, TeamState) else FolderState()


def team_state(store: MemoryStore) -> TeamState | None:
    """The store's team state; None when it was opened without team memory."""
    return store.team if isinstance(store.team, TeamState) else None
