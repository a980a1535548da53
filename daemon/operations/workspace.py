"""Workspace: the project a client's later calls go to (memory_set_workspace).

The daemon serves every client, so it keeps no per-client state: the new workspace is
checked, its database opened (so a bad one fails now, not on the next call) and counted;
the client applies the switch to its own later calls. A folder with no memory yet is
checked as opening would check it, and nothing is created there until the first write."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from ..core.errors import ToolError, invalid
from ..store.registry import StoreRegistry, check_database, database_path, has_memory
from ..store.resolution import resolve
from .context import CallContext


class WorkspaceReach(Protocol):
    """A remote caller (tools' Confinement): who it is and the folders it may use."""

    @property
    def identity(self) -> str: ...

    def allows_workspace(self, workspace: str) -> bool: ...

    def where(self) -> str: ...


@dataclass(frozen=True)
class Switched:
    workspace: str  # resolved, absolute
    db_path: str  # as given ("" for the workspace's own file)
    database: str  # the file it leads to
    memories: int  # the workspace's memories there


def switch_workspace(ctx: CallContext, stores: StoreRegistry, given: str, db_path: str = "",
                     reach: WorkspaceReach | None = None) -> Switched:
    """The workspace `given` (relative to `ctx`'s, `~` expanded) with `db_path` (another
    database file, ":memory:" for an ephemeral one), opened and counted."""
    target = os.path.expanduser(given.strip())
    if not target:
        raise invalid("workspace is empty")
    where = resolve(os.path.join(ctx.checkout, target), ctx.settings.worktrees,
                    ctx.settings.user_dir)
    workspace = where.checkout  # what the session sends; each call resolves it again
    db_path = db_path.strip()
    if reach is not None:
        # the server checked the path as sent; this is where it led when it was resolved
        if db_path:
            raise ToolError("permission_denied", f"tls client {reach.identity!r} may not "
                            "choose the database file: memory_set_workspace takes no db_path "
                            "over TLS")
        if not reach.allows_workspace(workspace) or \
                not reach.allows_workspace(where.workspace):
            raise ToolError("permission_denied",
                            f"tls client {reach.identity!r} may not use workspace "
                            f"{given.strip()!r}: {reach.where()}")
    database = database_path(where.workspace, db_path)  # a caller's path is checked here
    if not has_memory(where.workspace, db_path):  # nothing to count, and nothing created
        check_database(database)  # what opening it would refuse is said now
        return Switched(workspace, db_path, database, 0)
    store = stores.acquire(where.workspace, db_path)  # opens it now: errors surface here
    try:
        with store.reading():
            memories = len(store.in_scope(where.workspace))
    finally:
        stores.release(store)
    return Switched(workspace, db_path, database, memories)
