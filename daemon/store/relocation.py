"""A workspace moved or copied on disk keeps its memory. Its own database
(<workspace>/.memnest/memory.lbug) travels with the folder, but its rows still name the old
path; the first call from the new path takes them over, through the one write path.

Only rows of a workspace that clearly left are taken: its folder is gone, or it holds a
database of its own that is another file (the folder was copied). A workspace whose rows
share a file chosen with MEMORY_DB_PATH is left alone."""
import logging
import os

import numpy as np

from ..core.records import Memory
from .changes import Changes
from .registry import database_path
from .store import MemoryStore

log = logging.getLogger(__name__)


def take_over_moved(store: MemoryStore, workspace: str) -> list[str]:
    """In `workspace`'s own database, the rows of the workspaces it was moved or copied from
    become its own. Returns those old paths. Checked once per open store."""
    if workspace in store.settled:
        return []
    store.settled.add(workspace)
    with store.reading():
        others = [w for w, n in store.per_workspace.items() if n > 0 and w != workspace]
    left = [w for w in others if _left(w, store.db_path)]
    if not left:
        return []
    with store.writing():
        moved: list[tuple[Memory, np.ndarray | None]] = [
            (m.copy(workspace=workspace), None) for m in store.catalog.values()
            if m.workspace in left]
        if moved:
            store.commit(Changes(updated=moved))
    log.info("%s: %d memories of %s are now this workspace's (moved or copied here)",
             store.db_path, len(moved), ", ".join(left))
    return left


def _left(old: str, db_path: str) -> bool:
    if not os.path.isdir(old):
        return True
    theirs = database_path(old, "")
    try:
        return os.path.exists(theirs) and not os.path.samefile(theirs, db_path)
    except OSError:
        return False
