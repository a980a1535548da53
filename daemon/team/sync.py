"""Team memory: shared memories as files that travel with git (format.py, folder.py).

Out: every commit of the store (its one write path) that touches a shared memory rewrites
that memory's file after the database transaction (the `after_commit` hook): the database is
the source of truth and the file a copy of what it holds, so a crash between the two leaves
a file one step behind (rewritten by the next write or `memnest-ctl sync`), never a file
describing a change the database refused. Deleting a shared memory leaves a tombstone.

In: a call of a workspace first compares a cheap fingerprint of its shared/ folder (and the
git index and HEAD) with the last one seen; only when it differs are the files whose (size,
mtime) changed read, and what they hold comes in through the store's write path: new
memories through curation/ingest.py (dedup, merge, conflict flags as for a local write),
known global ids as updates, tombstones as deletes, relations as edges. A file that cannot
be read (conflict markers, bad JSON, a link, too big) is not imported: its memory keeps its
last good version and the problem is reported until the file is fixed.
"""
import getpass
import json
import logging
import os
import threading
import uuid
from collections import defaultdict
from dataclasses import dataclass, field

from ..core.anchors import CodeContext
from ..core.records import Memory, Origin, content_hash
from ..curation import privacy
from ..curation.conflicts import with_resolutions
from ..curation.ingest import Item, ingest
from ..store.changes import Changes
from . import folder
from .format import (
    RESOLVE_HINT,
    TEAM_SESSION,
    Shared,
    Unreadable,
    dump,
    of_memory,
    parse,
    shared_anchors,
)

log = logging.getLogger(__name__)
ALIASES = "team_aliases"  # Meta key: JSON {merged-away global id: the one it merged into}


def new_global_id() -> str:
    return uuid.uuid4().hex


def _author() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment
        return ""


AUTHOR = _author()


@dataclass
class _State:
    """What one store last saw of one workspace's shared folder."""
    fingerprint: tuple | None = None
    files: dict[str, tuple[int, int]] = field(default_factory=dict)  # gid -> (size, mtime)
    problems: dict[str, str] = field(default_factory=dict)  # file name -> what is wrong
    unreported: list = field(default_factory=list)  # reports memory_sync has not shown yet
    lock: threading.Lock = field(default_factory=threading.Lock)


_states: dict[tuple[str, str], _State] = {}
_states_lock = threading.Lock()


def _state(store, workspace: str) -> _State:
    key = (store.db_path, workspace)
    with _states_lock:
        state = _states.get(key)
        if state is None:
            state = _states[key] = _State()
        return state


def warnings(store, workspace: str) -> list[str]:
    """The shared files that could not be imported (memory_stats, doctor)."""
    state = _state(store, workspace)
    return [f".memnest/shared/{name}: {why}" for name, why in sorted(state.problems.items())]


# -- out: files follow the store ------------------------------------------------------------

def attach(store) -> None:
    """Have every commit of `store` rewrite the files of the shared memories it touches."""
    if _after_commit not in store.after_commit:
        store.after_commit.append(_after_commit)


def _after_commit(store, changes: Changes, gone: list[Memory], unlinked: set[int]) -> None:
    touched = {m.id for m in changes.memories() if m.scope == "shared"}
    touched |= {i for i in unlinked if catalog_shared(store, i)}
    for _rel, a, _b in (*changes.edges_added, *changes.edges_removed):
        m = store.catalog.get(a)
        if m is not None and m.scope == "shared":
            touched.add(a)
    try:
        write_files(store, [store.catalog[i] for i in touched if i in store.catalog])
        for m in gone:
            if m.scope == "shared" and m.global_id and m.workspace:
                _write_one(store, m.workspace, m.global_id, dump(Shared(m.global_id,
                                                                        deleted=True)))
    except Exception:  # noqa: BLE001 - the database holds the change; the file follows later
        log.exception("writing shared memory files failed")


def _relations(store, memories: list[Memory]) -> dict[int, list[tuple[str, str]]]:
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


def write_files(store, memories: list[Memory]) -> list[str]:
    """Write the files of these shared memories (only those whose bytes change)."""
    memories = [m for m in memories if m.scope == "shared" and m.global_id and m.workspace]
    if not memories:
        return []
    relations = _relations(store, memories)
    written = []
    for m in memories:
        data = dump(of_memory(m, relations.get(m.id, []), AUTHOR))
        if _write_one(store, m.workspace, m.global_id, data):
            written.append(m.global_id)
    return written


def _write_one(store, workspace: str, gid: str, data: bytes) -> bool:
    state = _state(store, workspace)
    name = gid + ".json"
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


def _remember(state: _State, workspace: str, gid: str) -> None:
    """Our own write is not news: note its (size, mtime) and the folder's new fingerprint."""
    try:
        st = os.stat(os.path.join(folder.shared_path(workspace), gid + ".json"),
                     follow_symlinks=False)
        state.files[gid] = (st.st_size, st.st_mtime_ns)
    except OSError:
        state.files.pop(gid, None)
    if state.fingerprint is not None:
        state.fingerprint = folder.fingerprint(workspace)


# -- sharing ---------------------------------------------------------------------------------

class SecretFound(ValueError):
    pass


def secrets_in(m: Memory) -> list[str]:
    """Kinds of secret (or private sections) privacy.clean finds in content and tags."""
    found: list[str] = []
    for text in (m.content, *m.tags):
        cleaned = privacy.clean(text)
        if cleaned.changed:
            found += list(cleaned.removed)
    return list(dict.fromkeys(found))


def set_scope(store, workspace: str, memories: list[Memory], shared: bool) -> dict:
    """Share or unshare these memories (write lock held): one commit, then their files
    (written by the commit hook, or removed here). Refuses, before writing anything, to
    share a memory in which a secret is found."""
    memories = _unique(memories)  # a batch's items may have become one memory
    if shared:
        refused = {m.id: secrets_in(m) for m in memories}
        refused = {i: kinds for i, kinds in refused.items() if kinds}
        if refused:
            named = "; ".join(f"memory {i}: {', '.join(kinds)}" for i, kinds in refused.items())
            raise SecretFound(
                f"not shared: a secret was found ({named}). Shared memories are committed to "
                "git; remove the secret with memory_update (or delete the memory), then "
                "share again. Nothing was shared.")
    changed = []
    for m in memories:
        if shared and m.scope != "shared":
            changed.append(m.copy(scope="shared", global_id=m.global_id or new_global_id()))
        elif not shared and m.scope == "shared":
            changed.append(m.copy(scope="private"))
    if changed:
        store.commit(Changes(updated=[(m, None) for m in changed]))
    removed = []
    if shared:
        # the memories that now link to them name them in their files too
        ids = {m.id for m in changed}
        linking = {a for _rel, a, b in store.graph.edges if b in ids and a not in ids}
        write_files(store, [store.catalog[i] for i in linking])
    else:
        for m in changed:
            if folder.remove(workspace, m.global_id):
                removed.append(f".memnest/shared/{m.global_id}.json")
                _state(store, workspace).files.pop(m.global_id, None)
        ids = {m.id for m in changed}
        linking = {a for _rel, a, b in store.graph.edges if b in ids and a not in ids}
        write_files(store, [store.catalog[i] for i in linking])
    return {"changed": [m.id for m in changed],
            "global_ids": {m.id: store.catalog[m.id].global_id for m in memories},
            "removed_files": removed}


# -- in: files into the store ----------------------------------------------------------------

@dataclass
class Report:
    came_in: list[dict] = field(default_factory=list)
    updated: list[dict] = field(default_factory=list)
    merged: list[dict] = field(default_factory=list)
    deleted: list[dict] = field(default_factory=list)
    unshared: list[dict] = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    relations: int = 0
    files_read: int = 0

    def view(self) -> dict:
        out = {"came_in": self.came_in, "updated": self.updated, "merged": self.merged,
               "deleted": self.deleted, "unshared": self.unshared,
               "conflicts": self.conflicts, "relations_added": self.relations,
               "files_read": self.files_read, "problems": self.problems}
        if self.problems:
            out["how_to_fix"] = RESOLVE_HINT
        return out

    def __bool__(self) -> bool:
        return bool(self.came_in or self.updated or self.merged or self.deleted
                    or self.unshared or self.relations)


def check(store, workspace: str, embed, settings) -> Report | None:
    """At the start of a call: sync only when the shared folder's fingerprint changed."""
    state = _state(store, workspace)
    now = folder.fingerprint(workspace)
    if now == state.fingerprint:
        return None
    return sync(store, workspace, embed, settings)


def sync(store, workspace: str, embed, settings, everything: bool = False) -> Report:
    """Bring what the shared folder holds into the store. `everything`: read every file,
    not only those whose (size, mtime) changed."""
    attach(store)
    state = _state(store, workspace)
    report = Report()
    with state.lock:
        fingerprint = folder.fingerprint(workspace)
        listed = folder.listing(workspace)
        problems = {name: why for name, why in listed.skipped.items()}
        changed = [g for g, seen in listed.files.items()
                   if everything or state.files.get(g) != seen]
        pulled: dict[str, Shared] = {}
        for gid in sorted(changed):
            name = gid + ".json"
            try:
                pulled[gid] = parse(gid, folder.read(workspace, gid), settings.max_store_chars)
            except (Unreadable, ValueError, OSError) as exc:
                problems[name] = str(exc) if isinstance(exc, Unreadable) else \
                    f"cannot be read: {exc}"
                continue
        # names still wrong keep being reported; fixed ones are forgotten
        for name, why in state.problems.items():
            gid = name[:-5]
            if name not in problems and gid in listed.files and gid not in changed and \
                    gid not in pulled:
                problems[name] = why
        report.files_read = len(changed)
        state.problems = problems  # before the writes below: a conflicted file is not written
        # set first so that our own writes below (_remember) move it along with them
        state.fingerprint = fingerprint
        seen_before = dict(state.files)
        try:
            _bring_in(store, workspace, embed, settings, pulled, listed, report)
        except BaseException:
            state.fingerprint = None  # look again on the next call
            raise
        report.problems = warnings(store, workspace)
        state.files = {**{g: s for g, s in listed.files.items()
                          if f"{g}.json" not in problems},
                       **_rewritten(state, seen_before, listed)}
        if report:
            state.unreported = state.unreported[-20:] + [report]
    return report


def _rewritten(state: _State, seen_before: dict, listed: folder.Listing) -> dict:
    """Files this sync wrote itself (a merge rewrote one): as _remember saw them."""
    return {g: seen for g, seen in state.files.items()
            if g in listed.files and seen != seen_before.get(g)}


def unreported(store, workspace: str) -> list[Report]:
    """The syncs that brought something in since memory_sync last showed them."""
    state = _state(store, workspace)
    with state.lock:
        out, state.unreported = state.unreported, []
    return out


def _bring_in(store, workspace: str, embed, settings, pulled: dict[str, Shared],
              listed: folder.Listing, report: Report) -> None:
    with store.reading():
        by_gid = {m.global_id: m for m in store.catalog.values()
                  if m.global_id and m.workspace == workspace}
        before = {i for i, m in store.catalog.items() if m.workspace == workspace}
    new = [s for s in pulled.values() if not s.deleted and s.global_id not in by_gid]
    edits = [s for s in pulled.values() if not s.deleted and s.global_id in by_gid
             and _differs(by_gid[s.global_id], s)]
    gone = listed.complete and any(m.scope == "shared" and g not in listed.files
                                   for g, m in by_gid.items())
    if not (new or edits or gone or any(s.deleted and s.global_id in by_gid
                                        for s in pulled.values())
            or any(not s.deleted for s in pulled.values())):
        return  # nothing to write: no write lock taken
    texts = [s.content for s in new] + list(dict.fromkeys(
        s.content for s in edits if s.content != by_gid[s.global_id].content))
    vectors = list(embed(texts)) if texts else []  # slow: outside the lock
    new_vectors = vectors[:len(new)]
    edit_vectors = dict(zip(texts[len(new):], vectors[len(new):]))
    with store.writing():
        catalog = store.catalog
        by_gid = {m.global_id: m for m in catalog.values()
                  if m.global_id and m.workspace == workspace}
        changes = Changes()
        for s in edits:
            m = by_gid.get(s.global_id)
            if m is None:
                continue
            vector = None
            if s.content != m.content:
                vector = edit_vectors.get(s.content)
                if vector is None:  # changed here meanwhile: embedded now, rarely
                    vector = embed([s.content])[0]
            after = m.copy(content=s.content, content_hash=content_hash(s.content),
                           category=s.category, importance=s.importance,
                           scope="shared", updated_at=s.updated_at or m.updated_at,
                           code=_with_anchors(m.code, s.anchors))
            after.tags = list(s.tags)
            if vector is not None:
                after.embedding_model = store.model
            changes.update(after, vector)
            report.updated.append({"id": m.id, "global_id": s.global_id,
                                   "content": _brief(s.content)})
        deleted = []
        for s in pulled.values():
            m = by_gid.get(s.global_id)
            if s.deleted and m is not None:
                deleted.append(m.id)
                report.deleted.append({"id": m.id, "global_id": s.global_id,
                                       "content": _brief(m.content)})
        if listed.complete:  # a teammate unshared it: the file went, the memory stays ours
            for gid, m in by_gid.items():
                if m.scope == "shared" and gid not in listed.files and \
                        m.id not in deleted and f"{gid}.json" not in listed.skipped:
                    changes.update(m.copy(scope="private"))
                    report.unshared.append({"id": m.id, "global_id": gid})
        changes.delete(deleted)
        if changes:
            store.commit(changes)
        # global ids merged into a memory that has another one: not brought in again (a
        # restart reads every file) but left alone, and their edits with them
        aliases: dict[str, str] = json.loads(store.db.meta(ALIASES) or "{}") if new else {}
        added_aliases: dict[str, str] = {}
        # new memories: by author, so each keeps who wrote it
        groups: dict[str, list[int]] = defaultdict(list)
        for n, s in enumerate(new):
            if aliases.get(s.global_id) not in by_gid:
                groups[s.author].append(n)
        for author, members in groups.items():
            items = [Item(new[n].content, new[n].category, list(new[n].tags),
                          new[n].importance, created_at=new[n].created_at,
                          updated_at=new[n].updated_at,
                          code=_with_anchors("", new[n].anchors)) for n in members]
            # as memory_import: a teammate's memories are already distinct from each other,
            # so they merge only with what was here before
            outcomes = ingest(store, workspace, items, [new_vectors[n] for n in members],
                              settings, merge_into=before,
                              origin=Origin("import", author, TEAM_SESSION))
            adopted: dict[int, str] = {}  # memory id -> the global id it takes
            for n, outcome in zip(members, outcomes):
                s, m = new[n], outcome.memory
                entry = {"id": m.id, "global_id": s.global_id, "content": _brief(s.content)}
                if outcome.status == "stored":
                    adopted[m.id] = s.global_id
                    if outcome.conflicts:
                        report.conflicts.append(
                            {**entry, "conflicts": with_resolutions(m.id, outcome.conflicts)})
                    report.came_in.append(entry)
                    continue
                name = store.catalog[m.id].global_id or adopted.get(m.id)
                if not name:  # a private memory takes the shared name
                    name = adopted[m.id] = s.global_id
                elif name != s.global_id:
                    added_aliases[s.global_id] = name
                report.merged.append({**entry, "status": outcome.status, "into": name})
            if adopted:
                store.commit(Changes(updated=[
                    (store.catalog[i].copy(scope="shared", global_id=g), None)
                    for i, g in adopted.items()]))
        if added_aliases:
            store.commit(Changes(meta={ALIASES: json.dumps({**aliases, **added_aliases},
                                                           sort_keys=True)}))
        by_gid = {m.global_id: m for m in store.catalog.values()
                  if m.global_id and m.workspace == workspace}
        edges_added, edges_removed = [], []
        for s in pulled.values():
            m = by_gid.get(s.global_id)
            if s.deleted or m is None:
                continue
            wanted = {(rel, by_gid[to].id) for rel, to in s.relations
                      if to in by_gid and by_gid[to].id != m.id}
            have = {(rel, b) for rel, a, b in store.graph.edges
                    if a == m.id and catalog_shared(store, b)}
            edges_added += [(rel, m.id, b) for rel, b in sorted(wanted - have)]
            edges_removed += [(rel, m.id, b) for rel, b in sorted(have - wanted)]
        if edges_added or edges_removed:
            store.commit(Changes(edges_added=edges_added, edges_removed=edges_removed))
            report.relations = len(edges_added)


def _brief(text: str) -> str:
    return text if len(text) <= 80 else text[:80] + "…"


def catalog_shared(store, memory_id: int) -> bool:
    m = store.catalog.get(memory_id)
    return m is not None and m.scope == "shared"


def _unique(memories: list[Memory]) -> list[Memory]:
    return list({m.id: m for m in memories}.values())


def _differs(m: Memory, s: Shared) -> bool:
    return (m.scope != "shared" or m.content != s.content or m.category != s.category
            or list(m.tags) != list(s.tags) or m.importance != s.importance
            or shared_anchors(m.code) != s.anchors)


def _with_anchors(code: str, anchors: tuple) -> str:
    """The memory's code context with a teammate's anchors (its branch stays as it was)."""
    if shared_anchors(code) == tuple(anchors):
        return code
    here = CodeContext.parse(code)
    return CodeContext(tuple(anchors), here.branch, here.commit).to_json()
