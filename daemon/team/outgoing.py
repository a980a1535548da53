"""Out: the files of shared memories follow the store.

Every commit of the store (its one write path) that touches a shared memory rewrites that
memory's file after the database transaction (the `after_commit` hook): the database is
the source of truth and the file a copy of what it holds, so a crash between the two leaves
a file one step behind (rewritten by the next write or `memnest-ctl sync`), never a file
describing a change the database refused. Deleting a shared memory leaves a tombstone.
"""
import getpass
import logging
import os
from collections import defaultdict

from ..core.records import Memory
from ..store.changes import Changes
from ..store.store import MemoryStore
from . import folder
from .format import Shared, dump, file_name, of_memory
from .state import FolderState, TeamState, folder_state

log = logging.getLogger(__name__)


def _author() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment
        return ""


AUTHOR = _author()


def open_team(store: MemoryStore) -> TeamState:
    """Team memory for a store that has just opened (the store registry calls it): its
    state, and every commit rewriting the files of the shared memories it touches."""
    state = TeamState(store.after_commit, _after_commit)
    store.after_commit.append(_after_commit)
    return state


def attach(store: MemoryStore) -> None:
    """Team memory for a store opened outside the registry (a test's), as the registry
    gives it on open; a store that has it already is left as it is."""
    if store.team is None:
        store.team = open_team(store)


def _after_commit(store: MemoryStore, changes: Changes, gone: list[Memory],
                  unlinked: set[int]) -> None:
    touched = {m.id for m in changes.memories() if m.scope == "shared"}
    touched |= {i for i in unlinked if catalog_shared(store, i)}
    for _rel, a, _b in (*changes.edges_added, *changes.edges_removed):
        if catalog_shared(store, a):
            touched.add(a)
    try:
        write_files(store, [store.catalog[i] for i in touched if i in store.catalog])
        for m in gone:
            if m.scope == "shared" and m.global_id and m.workspace:
                write_one(store, m.workspace, m.global_id,
                          dump(Shared(m.global_id, deleted=True)))
    except Exception:  # noqa: BLE001 - the database holds the change; the file follows later
        log.exception("writing shared memory files failed")


def catalog_shared(store: MemoryStore, memory_id: int) -> bool:
    m = store.catalog.get(memory_id)
    return m is not None and m.scope == "shared"


def _relations(store: MemoryStore, memories: list[Memory]) -> dict[int, list[tuple[str, str]]]:
    """Each memory's links to shared memories of its workspace, by their global ids."""
    wanted = {m.id for m in memories}
    out: dict[int, list[tuple[str, str]]] = defaultdict(list)
    catalog = store.catalog
    for rel, a, b in store.graph.edges:
        if a in wanted:
            other = catalog.get(b)
            if other is not None and other.scope == "shared" and other.global_id and \
                    other.workspace == catalog[a].workspace:
                out[a].append((rel, other.global_id))
    return out


def write_files(store: MemoryStore, memories: list[Memory]) -> list[str]:
    """Write the files of these shared memories (only those whose bytes change); returns
    the global ids written."""
    memories = [m for m in memories if m.scope == "shared" and m.global_id and m.workspace]
    if not memories:
        return []
    relations = _relations(store, memories)
    written = []
    for m in memories:
        data = dump(of_memory(m, relations.get(m.id, []), AUTHOR))
        if write_one(store, m.workspace, m.global_id, data):
            written.append(m.global_id)
    return written


def write_one(store: MemoryStore, workspace: str, gid: str, data: bytes) -> bool:
    """Write one file unless a merge of it is in progress; True when its bytes changed."""
    state = folder_state(store, workspace)
    name = file_name(gid)
    if name in state.problems and "conflict" in state.problems[name]:
        return False  # the user's merge in progress: never written over
    try:
        written = folder.write(workspace, gid, data)
    except Exception as exc:  # noqa: BLE001 - ToolError from safe_files, OSError
        state.problems[name] = f"could not be written: {exc}"
        return False
    if written:
        _remember(state, workspace, gid)
    return written


def _remember(state: FolderState, workspace: str, gid: str) -> None:
    """Our own write is not news: note its (size, mtime) and the folder's new fingerprint."""
    try:
        st = os.stat(os.path.join(folder.shared_path(workspace), file_name(gid)),
                     follow_symlinks=False)
        state.files[gid] = (st.st_size, st.st_mtime_ns)
    except OSError:
        state.files.pop(gid, None)
    if state.fingerprint is not None:
        state.fingerprint = folder.fingerprint(workspace)


def forget_file(store: MemoryStore, workspace: str, gid: str) -> None:
    """A file we removed ourselves (unsharing): not news either."""
    folder_state(store, workspace).files.pop(gid, None)
