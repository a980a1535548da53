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
import dataclasses
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
from ..curation import admission
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
    ignored: dict[str, str] = field(default_factory=dict)  # gid -> why its file changed nothing
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


def ignored(store, workspace: str) -> list[dict]:
    """The shared files that name a memory not shared here, as the last sync saw them."""
    state = _state(store, workspace)
    return [{"global_id": gid, "file": f".memnest/shared/{gid}.json", "why": why}
            for gid, why in sorted(state.ignored.items())]


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
    """Kinds of secret (or private sections) admission finds in content and tags."""
    return admission.secrets_in((m.content, *m.tags))


# -- retired global ids ----------------------------------------------------------------------

RETIRED = "team_retired"  # Meta key: JSON {global id: {"why": ..., "id": ..., "mark": ...}}
UNSHARED, WITHDRAWN = "unshared", "withdrawn"


def retired(store, workspace: str) -> dict[str, dict]:
    """The global ids no shared file may use to change a memory here: those its owner
    unshared (for good), and those whose file went away (`withdrawn`: its memory is private
    now and is shared again only if the file comes back before the memory changed here). A
    private memory that still names a global id (written before ids were retired) counts as
    unshared."""
    out = _recorded(store)
    for m in store.catalog.values():
        if m.scope != "shared" and m.global_id and m.workspace == workspace:
            out.setdefault(m.global_id, {"why": UNSHARED, "id": m.id})
    return out


def _mark(m: Memory) -> str:
    """What a withdrawn memory looked like: the file may bring it back only while it still
    does (nothing of the owner's has been added since)."""
    return content_hash(json.dumps([m.content_hash, m.category, m.tags, m.importance]))


def _recorded(store) -> dict[str, dict]:
    """The retired global ids as the database records them."""
    return json.loads(store.db.meta(RETIRED) or "{}")


def _retiring(store, entries: dict[str, dict], restored=()) -> dict[str, str]:
    """The Meta change that adds these global ids to the retired ones and takes the
    `restored` ones out (write lock held)."""
    known = {**_recorded(store), **entries}
    return {RETIRED: json.dumps({g: e for g, e in known.items() if g not in restored},
                                sort_keys=True)}


def set_scope(store, workspace: str, memories: list[Memory], shared: bool) -> dict:
    """Share or unshare these memories (write lock held): one commit, then their files
    (written by the commit hook, or removed here). Refuses, before writing anything, to
    share a memory in which a secret is found. A memory shared again gets a new global id:
    unsharing retires the old one for good, so no file that still names it (in git history,
    on an old branch, in a teammate's commit) can change the memory or share it again."""
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
    changed, retiring = [], {}
    for m in memories:
        if shared and m.scope != "shared":
            changed.append(m.copy(scope="shared", global_id=new_global_id()))
        elif not shared and m.scope == "shared":
            changed.append(m.copy(scope="private", global_id=""))
            retiring[m.global_id] = {"why": UNSHARED, "id": m.id}
    # the owner has decided: an id its file once had no longer brings the memory back
    ids = {m.id for m in changed}
    retiring.update({g: {**e, "why": UNSHARED}
                     for g, e in _recorded(store).items()
                     if e.get("why") == WITHDRAWN and e.get("id") in ids})
    if changed:
        store.commit(Changes(updated=[(m, None) for m in changed],
                             meta=_retiring(store, retiring) if retiring else {}))
    removed = []
    unshared = [m.global_id for m in memories if not shared and m.scope == "shared"]
    for gid in unshared:
        if folder.remove(workspace, gid):
            removed.append(f".memnest/shared/{gid}.json")
            _state(store, workspace).files.pop(gid, None)
    # the memories that link to them name them in their files too (or no longer do)
    linking = {a for _rel, a, b in store.graph.edges if b in ids and a not in ids}
    write_files(store, [store.catalog[i] for i in linking])
    return {"changed": [m.id for m in changed],
            "global_ids": {m.id: store.catalog[m.id].global_id for m in memories},
            "retired": unshared, "removed_files": removed}


# -- in: files into the store ----------------------------------------------------------------

@dataclass
class Report:
    came_in: list[dict] = field(default_factory=list)
    updated: list[dict] = field(default_factory=list)
    merged: list[dict] = field(default_factory=list)
    deleted: list[dict] = field(default_factory=list)
    unshared: list[dict] = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)
    # files naming a memory that is not shared here: they changed nothing
    ignored: list[dict] = field(default_factory=list)
    # what admission took out of files (private sections, secrets) or flagged in them
    privacy: list[dict] = field(default_factory=list)
    untrusted: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    relations: int = 0
    files_read: int = 0

    def view(self) -> dict:
        out = {"came_in": self.came_in, "updated": self.updated, "merged": self.merged,
               "deleted": self.deleted, "unshared": self.unshared,
               "conflicts": self.conflicts, "ignored": self.ignored,
               "relations_added": self.relations, "files_read": self.files_read,
               "problems": self.problems}
        if self.privacy:
            out["privacy"] = self.privacy
        if self.untrusted:
            out["untrusted_content"] = self.untrusted
        if self.problems:
            out["how_to_fix"] = RESOLVE_HINT
        return out

    def __bool__(self) -> bool:
        return bool(self.came_in or self.updated or self.merged or self.deleted
                    or self.unshared or self.ignored or self.relations)


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
                pulled[gid] = _admitted(parse(gid, folder.read(workspace, gid),
                                              settings.max_store_chars),
                                        settings.max_store_chars, report)
            except (Unreadable, ValueError, OSError) as exc:
                problems[name] = str(exc) if isinstance(exc, (Unreadable, admission.Refused)) else \
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
        state.ignored = {g: why for g, why in state.ignored.items()
                         if g in listed.files and g not in pulled}
        state.ignored.update({e["global_id"]: e["why"] for e in report.ignored})
        report.problems = warnings(store, workspace)
        state.files = {**{g: s for g, s in listed.files.items()
                          if f"{g}.json" not in problems},
                       **_rewritten(state, seen_before, listed)}
        if report:
            state.unreported = state.unreported[-20:] + [report]
    return report


def _admitted(s: Shared, limit: int, report: Report) -> Shared:
    """A teammate's file as admission (curation/admission.py) lets it in, as for every
    other write: private sections left out, secrets redacted, tags with either dropped.
    Raises admission.Refused when nothing storable is left. What was taken out or flagged
    goes to the report; the file itself is rewritten from the store afterwards."""
    if s.deleted:
        return s
    admitted = admission.admit(s.content, "content", limit)
    tags, tag_note = admission.admit_tags(s.tags, "tags")
    notes = [n for n in (admitted.note, tag_note) if n]
    if notes:
        report.privacy.append({"global_id": s.global_id, "left_out": "; ".join(notes)})
    if admitted.markers:
        report.untrusted.append({"global_id": s.global_id, "markers": list(admitted.markers)})
    return dataclasses.replace(s, content=admitted.text, tags=tags)


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


# Why a file changed nothing (Report.ignored): it names a memory that is not shared here.
_WHY_IGNORED = {
    UNSHARED: "it names a memory that was unshared here, so no file may change it, delete it "
              "or share it again; if nobody should share it, delete the file (git rm) and "
              "commit",
    WITHDRAWN: "it names a memory whose file had gone away and that has changed here since, "
               "so it stays private; share it again with memory_share (it gets a new global "
               "id), or delete this file",
    "missing": "it names a memory that was unshared or withdrawn here and is gone now; "
               "delete the file if nobody needs it",
}


@dataclass
class _Plan:
    """What the pulled files do to the store, decided from the catalog as it is now."""
    shared: dict[str, Memory]                 # global id -> the memory shared now by it
    new: list[Shared] = field(default_factory=list)
    edits: list[tuple[Memory, Shared]] = field(default_factory=list)  # incl. restored ones
    restored: set[str] = field(default_factory=set)
    deleted: list[tuple[Memory, Shared]] = field(default_factory=list)
    withdrawn: list[Memory] = field(default_factory=list)
    ignored: list[tuple[Shared, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.new or self.edits or self.deleted or self.withdrawn or self.ignored)


def _shared_now(store, workspace: str) -> dict[str, Memory]:
    return {m.global_id: m for m in store.catalog.values()
            if m.scope == "shared" and m.global_id and m.workspace == workspace}


def _plan(store, workspace: str, pulled: dict[str, Shared], listed: folder.Listing) -> _Plan:
    """Scope is a boundary: a file changes or deletes only the memory shared now under its
    own global id. One naming a retired id changes nothing (and is reported), except that a
    withdrawn memory the owner has not touched since is shared again by its file."""
    plan = _Plan(_shared_now(store, workspace))
    gone = retired(store, workspace)
    for gid, s in pulled.items():
        m = plan.shared.get(gid)
        if m is not None:
            if s.deleted:
                plan.deleted.append((m, s))
            elif _differs(m, s):
                plan.edits.append((m, s))
            continue
        entry = gone.get(gid)
        if entry is None:
            if not s.deleted:
                plan.new.append(s)
            continue
        owner = store.catalog.get(entry.get("id"))
        if owner is None or owner.workspace != workspace:
            why = "missing"
        elif entry.get("why") == WITHDRAWN and not s.deleted and owner.scope == "private" \
                and not owner.global_id and _mark(owner) == entry.get("mark"):
            plan.edits.append((owner, s))
            plan.restored.add(gid)
            continue
        else:
            why = entry.get("why", UNSHARED)
        plan.ignored.append((s, why if why in _WHY_IGNORED else UNSHARED))
    if listed.complete:  # a teammate unshared it, or a checkout without its file
        plan.withdrawn = [m for g, m in plan.shared.items()
                          if g not in listed.files and f"{g}.json" not in listed.skipped
                          and g not in pulled]
    return plan


def _bring_in(store, workspace: str, embed, settings, pulled: dict[str, Shared],
              listed: folder.Listing, report: Report) -> None:
    with store.reading():
        plan = _plan(store, workspace, pulled, listed)
        before = {i for i, m in store.catalog.items() if m.workspace == workspace}
    if not plan and not any(not s.deleted for s in pulled.values()):
        return  # nothing to write: no write lock taken
    texts = [s.content for s in plan.new] + list(dict.fromkeys(
        s.content for m, s in plan.edits if s.content != m.content))
    vectors = list(embed(texts)) if texts else []  # slow: outside the lock
    new_vectors = dict(zip(texts[:len(plan.new)], vectors[:len(plan.new)]))
    edit_vectors = dict(zip(texts[len(plan.new):], vectors[len(plan.new):]))
    with store.writing():
        plan = _plan(store, workspace, pulled, listed)  # as it is now, under the lock
        _apply_known(store, plan, edit_vectors, embed, report)
        _apply_new(store, workspace, settings, plan, new_vectors, embed, before, report)
        for s, why in plan.ignored:
            report.ignored.append({"global_id": s.global_id,
                                   "file": f".memnest/shared/{s.global_id}.json",
                                   "why": _WHY_IGNORED[why]})
        _apply_relations(store, workspace, pulled, report)


def _apply_known(store, plan: _Plan, edit_vectors: dict, embed, report: Report) -> None:
    """Edits, restorations, tombstones and withdrawals, in one commit (write lock held)."""
    changes = Changes()
    for m, s in plan.edits:
        vector = None
        if s.content != m.content:
            vector = edit_vectors.get(s.content)
            if vector is None:  # changed here meanwhile: embedded now, rarely
                vector = embed([s.content])[0]
        after = m.copy(content=s.content, content_hash=content_hash(s.content),
                       category=s.category, importance=s.importance,
                       scope="shared", global_id=s.global_id,
                       # the file's time is to the second: never before the memory began
                       updated_at=max(s.updated_at or m.updated_at, m.created_at),
                       code=_with_anchors(m.code, s.anchors))
        after.tags = list(s.tags)
        if vector is not None:
            after.embedding_model = store.model
        changes.update(after, vector)
        entry = {"id": m.id, "global_id": s.global_id, "content": _brief(s.content)}
        if s.global_id in plan.restored:
            entry["shared_again"] = True
        report.updated.append(entry)
    for m, s in plan.deleted:
        changes.delete([m.id])
        report.deleted.append({"id": m.id, "global_id": s.global_id,
                               "content": _brief(m.content)})
    retiring = {}
    for m in plan.withdrawn:  # the memory stays ours, private
        after = m.copy(scope="private", global_id="")
        changes.update(after)
        retiring[m.global_id] = {"why": WITHDRAWN, "id": m.id, "mark": _mark(after)}
        report.unshared.append({"id": m.id, "global_id": m.global_id})
    if retiring or plan.restored:  # a restored id is its memory's again
        changes.meta = _retiring(store, retiring, plan.restored)
    if changes:
        store.commit(changes)


def _apply_new(store, workspace: str, settings, plan: _Plan, new_vectors: dict, embed,
               before: set[int], report: Report) -> None:
    """Memories new here, through the write path every memory takes (write lock held):
    shared ones, joined only with what is shared here already."""
    if not plan.new:
        return
    # global ids merged into a memory that has another one: not brought in again (a
    # restart reads every file) but left alone, and their edits with them
    aliases: dict[str, str] = json.loads(store.db.meta(ALIASES) or "{}")
    added_aliases: dict[str, str] = {}
    groups: dict[str, list[Shared]] = defaultdict(list)  # by author: each keeps who wrote it
    shared = _shared_now(store, workspace)  # after this sync's deletes and withdrawals
    for s in plan.new:
        if aliases.get(s.global_id) not in shared:
            groups[s.author].append(s)
    for author, members in groups.items():
        items = [Item(s.content, s.category, list(s.tags), s.importance,
                      created_at=s.created_at, updated_at=s.updated_at,
                      code=_with_anchors("", s.anchors), scope="shared",
                      global_id=s.global_id) for s in members]
        vectors = [new_vectors.get(s.content) for s in members]
        vectors = [v if v is not None else embed([s.content])[0]
                   for v, s in zip(vectors, members)]
        # as memory_import: a teammate's memories are already distinct from each other,
        # so they merge only with what was here before
        outcomes = ingest(store, workspace, items, vectors, settings, merge_into=before,
                          origin=Origin("import", author, TEAM_SESSION))
        for s, outcome in zip(members, outcomes):
            m = outcome.memory
            entry = {"id": m.id, "global_id": s.global_id, "content": _brief(s.content)}
            if outcome.status == "stored":
                if outcome.conflicts:
                    report.conflicts.append(
                        {**entry, "conflicts": with_resolutions(m.id, outcome.conflicts)})
                report.came_in.append(entry)
                continue
            name = store.catalog[m.id].global_id  # a shared memory: ingest joins no other
            if name != s.global_id:
                added_aliases[s.global_id] = name
            report.merged.append({**entry, "status": outcome.status, "into": name})
    if added_aliases:
        store.commit(Changes(meta={ALIASES: json.dumps({**aliases, **added_aliases},
                                                       sort_keys=True)}))


def _apply_relations(store, workspace: str, pulled: dict[str, Shared], report: Report) -> None:
    """The files' relations, between memories shared now only (write lock held)."""
    by_gid = _shared_now(store, workspace)
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
