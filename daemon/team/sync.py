"""In: teammates' shared files into the store, one phase at a time.

A call of a workspace first compares a cheap fingerprint of its shared/ folder (and the
git index and HEAD) with the last one seen (`check`); only when it differs does `sync` run:
it reads the files whose (size, mtime) changed (`read_folder`), decides what each does to
the store as it is (`plan_changes`), embeds the new texts outside the write lock
(`embed_texts`), then writes each kind of change through the store's write path: edits,
tombstones and withdrawals in one commit (`apply_known`), new memories through
curation/ingest.py with its dedup, merge and conflict flags (`apply_new`), relations as
edges (`apply_relations`); last it records what it saw (`record`). A file that cannot be
read (conflict markers, bad JSON, a link, too big) is not imported: its memory keeps its
last good version and the problem is reported until the file is fixed. A crash between
two commits leaves each whole; the next call reads the folder again.

The out side (files follow the store) is outgoing.py, sharing and retired ids scope.py;
the tools and operations reach team memory through this module, which names what they
use of those.
"""
import dataclasses
import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from ..core.anchors import NO_CODE, Anchor, CodeContext
from ..core.config import Settings
from ..core.records import TEAM_SESSION, Memory, Origin, content_hash, utcnow
from ..curation import admission
from ..curation.conflicts import with_resolutions
from ..curation.ingest import Item, Outcome, ingest
from ..store.changes import Changes, Edge
from ..store.store import MemoryStore
from . import folder
from .format import (
    Shared,
    Unreadable,
    file_name,
    global_id_of,
    parse,
    shared_anchors,
)
from .outgoing import attach as attach
from .outgoing import catalog_shared
from .report import IgnoredEntry, Ignoring, MemoryEntry, UpdatedEntry, shared_file
from .report import Report as Report
from .scope import UNSHARED, WITHDRAWN, RetiredId, mark, retiring
from .scope import SecretFound as SecretFound
from .scope import retired as retired
from .scope import secrets_in as secrets_in
from .scope import set_scope as set_scope
from .state import FileStamp, Fingerprint, FolderState, folder_state

ALIASES = "team_aliases"  # Meta key: JSON {merged-away global id: the one it merged into}
Vector = npt.NDArray[np.float32]
Embed = Callable[[list[str]], npt.NDArray[np.float32]]

# Why a file changed nothing (Report.ignored): it names a memory that is not shared here.
_WHY_IGNORED: dict[Ignoring, str] = {
    "unshared": "it names a memory that was unshared here, so no file may change it, delete "
                "it or share it again; if nobody should share it, delete the file (git rm) "
                "and commit",
    "withdrawn": "it names a memory whose file had gone away and that has changed here "
                 "since, so it stays private; share it again with memory_share (it gets a "
                 "new global id), or delete this file",
    "missing": "it names a memory that was unshared or withdrawn here and is gone now; "
               "delete the file if nobody needs it",
}


# -- what the last syncs saw ----------------------------------------------------------------

def warnings(store: MemoryStore, workspace: str) -> list[str]:
    """The shared files that could not be imported (memory_stats, doctor)."""
    return _warnings(folder_state(store, workspace))


def last_synced(store: MemoryStore, workspace: str) -> datetime | None:
    """When this store last finished a sync of the workspace's folder (since it opened)."""
    return folder_state(store, workspace).synced_at


def _warnings(state: FolderState) -> list[str]:
    return [f".memnest/shared/{name}: {why}" for name, why in sorted(state.problems.items())]


def ignored(store: MemoryStore, workspace: str) -> list[IgnoredEntry]:
    """The shared files that name a memory not shared here, as the last sync saw them."""
    state = folder_state(store, workspace)
    return [{"global_id": gid, "file": shared_file(gid), "why": why}
            for gid, why in sorted(state.ignored.items())]


def unreported(store: MemoryStore, workspace: str) -> list[Report]:
    """The syncs that brought something in since memory_sync last showed them."""
    state = folder_state(store, workspace)
    with state.lock:
        out, state.unreported = state.unreported, []
    return out


# -- a sync, phase by phase -----------------------------------------------------------------

@dataclass
class Pulled:
    """What one read of the shared folder found (read_folder), for the phases after it."""
    fingerprint: Fingerprint
    listed: folder.Listing
    read: list[str]  # the global ids whose files were read: changed since last seen, or all
    files: dict[str, Shared] = field(default_factory=dict)  # as admission lets them in
    problems: dict[str, str] = field(default_factory=dict)  # file name -> why not imported


def check(store: MemoryStore, workspace: str, embed: Embed,
          settings: Settings) -> Report | None:
    """At the start of a call: sync only when the shared folder's fingerprint changed."""
    if folder.fingerprint(workspace) == folder_state(store, workspace).fingerprint:
        return None
    return sync(store, workspace, embed, settings)


def sync(store: MemoryStore, workspace: str, embed: Embed, settings: Settings,
         everything: bool = False) -> Report:
    """Bring what the shared folder holds into the store. `everything`: read every file,
    not only those whose (size, mtime) changed."""
    state = folder_state(store, workspace)
    report = Report()
    with state.lock:
        pulled = read_folder(workspace, state, settings.max_store_chars, everything, report)
        seen_before = begin(state, pulled, report)
        try:
            bring_in(store, workspace, embed, settings, pulled, report)
        except BaseException:
            state.fingerprint = None  # look again on the next call
            raise
        record(state, pulled, seen_before, report)
    return report


def read_folder(workspace: str, state: FolderState, limit: int, everything: bool,
                report: Report) -> Pulled:
    """Phase 1: the folder's listing, and the changed files as admission lets them in
    (what it took out goes to `report`); those that cannot be read become problems."""
    fingerprint = folder.fingerprint(workspace)  # before the listing: later news shows
    listed = folder.listing(workspace)
    pulled = Pulled(fingerprint, listed,
                    sorted(g for g, seen in listed.files.items()
                           if everything or state.files.get(g) != seen),
                    problems=dict(listed.skipped))
    for gid in pulled.read:
        try:
            pulled.files[gid] = _admitted(parse(gid, folder.read(workspace, gid), limit),
                                          limit, report)
        except (ValueError, OSError) as exc:  # Unreadable, admission.Refused among them
            pulled.problems[file_name(gid)] = str(exc) \
                if isinstance(exc, (Unreadable, admission.Refused)) else \
                f"cannot be read: {exc}"
    # files still wrong and not read again keep being reported; fixed ones are forgotten
    read = set(pulled.read)
    for name, why in state.problems.items():
        named = global_id_of(name)
        if name not in pulled.problems and named in listed.files and named not in read:
            pulled.problems[name] = why
    return pulled


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


def begin(state: FolderState, pulled: Pulled, report: Report) -> dict[str, FileStamp]:
    """Phase 2, before any write: the problems found (a file in conflict is not written
    over) and the fingerprint (set first, so that our own writes move it along with them).
    Returns the files as seen before this sync."""
    report.files_read = len(pulled.read)
    state.problems = pulled.problems
    state.fingerprint = pulled.fingerprint
    return dict(state.files)


def record(state: FolderState, pulled: Pulled, seen_before: dict[str, FileStamp],
           report: Report) -> None:
    """Last phase, once every write is done: what the next sync compares with."""
    listed = pulled.listed
    state.ignored = {g: why for g, why in state.ignored.items()
                     if g in listed.files and g not in pulled.files}
    state.ignored.update({e["global_id"]: e["why"] for e in report.ignored})
    report.problems = _warnings(state)
    # files this sync wrote itself (a merge rewrote one): as outgoing._remember saw them
    rewritten = {g: seen for g, seen in state.files.items()
                 if g in listed.files and seen != seen_before.get(g)}
    state.files = {**{g: seen for g, seen in listed.files.items()
                      if file_name(g) not in state.problems}, **rewritten}
    state.synced_at = utcnow()
    if report:
        state.keep_report(report)


# -- deciding: what each file does to the store ---------------------------------------------

@dataclass
class Plan:
    """What the pulled files do to the store, decided from the catalog as it is now."""
    shared: dict[str, Memory]  # global id -> the memory shared now by it
    new: list[Shared] = field(default_factory=list)
    edits: list[tuple[Memory, Shared]] = field(default_factory=list)  # incl. restored ones
    restored: set[str] = field(default_factory=set)
    deleted: list[tuple[Memory, Shared]] = field(default_factory=list)
    withdrawn: list[Memory] = field(default_factory=list)
    ignored: list[tuple[Shared, Ignoring]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.new or self.edits or self.deleted or self.withdrawn or self.ignored)


def _shared_now(store: MemoryStore, workspace: str) -> dict[str, Memory]:
    return {m.global_id: m for m in store.catalog.values()
            if m.scope == "shared" and m.global_id and m.workspace == workspace}


def plan_changes(store: MemoryStore, workspace: str, pulled: Pulled) -> Plan:
    """Scope is a boundary: a file changes or deletes only the memory shared now under its
    own global id. One naming a retired id changes nothing (and is reported), except that a
    withdrawn memory the owner has not touched since is shared again by its file."""
    plan = Plan(_shared_now(store, workspace))
    gone = retired(store, workspace)
    for gid, s in pulled.files.items():
        m = plan.shared.get(gid)
        if m is None:
            _plan_unshared(store, workspace, plan, s, gone.get(gid))
        elif s.deleted:
            plan.deleted.append((m, s))
        elif _differs(m, s):
            plan.edits.append((m, s))
    listed = pulled.listed
    if listed.complete:  # a teammate unshared it, or a checkout without its file
        plan.withdrawn = [m for g, m in plan.shared.items()
                          if g not in listed.files and file_name(g) not in listed.skipped
                          and g not in pulled.files]
    return plan


def _plan_unshared(store: MemoryStore, workspace: str, plan: Plan, s: Shared,
                   entry: RetiredId | None) -> None:
    """A file whose global id no memory here is shared by: new, or (`entry`: the id is
    retired) ignored, or restoring a withdrawn memory."""
    if entry is None:
        if not s.deleted:
            plan.new.append(s)
        return
    owner = store.catalog.get(entry.get("id", 0))
    why: Ignoring
    if owner is None or owner.workspace != workspace:
        why = "missing"
    elif entry.get("why") == WITHDRAWN and not s.deleted and owner.scope == "private" \
            and not owner.global_id and mark(owner) == entry.get("mark"):
        plan.edits.append((owner, s))
        plan.restored.add(s.global_id)
        return
    else:
        why = WITHDRAWN if entry.get("why") == WITHDRAWN else UNSHARED
    plan.ignored.append((s, why))


def _differs(m: Memory, s: Shared) -> bool:
    return (m.scope != "shared" or m.content != s.content or m.category != s.category
            or list(m.tags) != list(s.tags) or m.importance != s.importance
            or shared_anchors(m.code) != s.anchors)


# -- writing: each kind of change through the store's write path ----------------------------

@dataclass
class Vectors:
    """Embeddings made before the write lock is taken (the slow part), by text; a text the
    plan under the lock wants and these lack (changed here meanwhile) is embedded then."""
    embed: Embed
    new: dict[str, Vector] = field(default_factory=dict)  # of new memories
    edits: dict[str, Vector] = field(default_factory=dict)  # of edited contents

    def of_new(self, text: str) -> Vector:
        found = self.new.get(text)
        return found if found is not None else self.embed([text])[0]

    def of_edit(self, text: str) -> Vector:
        found = self.edits.get(text)
        return found if found is not None else self.embed([text])[0]


def bring_in(store: MemoryStore, workspace: str, embed: Embed, settings: Settings,
             pulled: Pulled, report: Report) -> None:
    """Phase 3: plan under the read lock, embed outside any lock, then plan again under
    the write lock (the store may have changed) and write: each step's commit is whole."""
    with store.reading():
        plan = plan_changes(store, workspace, pulled)
        before = {i for i, m in store.catalog.items() if m.workspace == workspace}
    if not plan and not any(not s.deleted for s in pulled.files.values()):
        return  # nothing to write: no write lock taken
    vectors = embed_texts(plan, embed)
    with store.writing():
        plan = plan_changes(store, workspace, pulled)
        apply_known(store, plan, vectors, report)
        apply_new(store, workspace, settings, plan, vectors, before, report)
        report.ignored += [{"global_id": s.global_id, "file": shared_file(s.global_id),
                            "why": _WHY_IGNORED[why]} for s, why in plan.ignored]
        apply_relations(store, workspace, pulled, report)


def embed_texts(plan: Plan, embed: Embed) -> Vectors:
    """The new memories' texts and the edited contents, embedded in one batch."""
    new = [s.content for s in plan.new]
    edited = list(dict.fromkeys(s.content for m, s in plan.edits if s.content != m.content))
    texts = new + edited
    vectors = list(embed(texts)) if texts else []
    return Vectors(embed, dict(zip(new, vectors[:len(new)])),
                   dict(zip(edited, vectors[len(new):])))


def apply_known(store: MemoryStore, plan: Plan, vectors: Vectors, report: Report) -> None:
    """Edits, restorations, tombstones and withdrawals, in one commit (write lock held)."""
    changes = Changes()
    for m, s in plan.edits:
        changes.update(*_edited(m, s, vectors, store.model))
        entry: UpdatedEntry = {"id": m.id, "global_id": s.global_id, "content": _brief(s.content)}
        if s.global_id in plan.restored:
            entry["shared_again"] = True
        report.updated.append(entry)
    for m, s in plan.deleted:
        changes.delete([m.id])
        report.deleted.append(_entry(m.id, s.global_id, m.content))
    withdrawing: dict[str, RetiredId] = {}
    for m in plan.withdrawn:  # the memory stays ours, private
        after = m.copy(scope="private", global_id="")
        changes.update(after)
        withdrawing[m.global_id] = {"why": WITHDRAWN, "id": m.id, "mark": mark(after)}
        report.unshared.append({"id": m.id, "global_id": m.global_id})
    if withdrawing or plan.restored:  # a restored id is its memory's again
        changes.meta = retiring(store, withdrawing, plan.restored)
    if changes:
        store.commit(changes)


def _edited(m: Memory, s: Shared, vectors: Vectors, model: str) -> tuple[Memory, Vector | None]:
    """The memory as its teammate's file leaves it, with a new embedding if its text
    changed."""
    vector = vectors.of_edit(s.content) if s.content != m.content else None
    after = m.copy(content=s.content, content_hash=content_hash(s.content),
                   category=s.category, importance=s.importance,
                   scope="shared", global_id=s.global_id,
                   # the file's time is to the second: never before the memory began
                   updated_at=max(s.updated_at or m.updated_at, m.created_at),
                   code=_with_anchors(m.code, s.anchors))
    after.tags = list(s.tags)
    if vector is not None:
        after.embedding_model = model
    return after, vector


def apply_new(store: MemoryStore, workspace: str, settings: Settings, plan: Plan,
              vectors: Vectors, before: set[int], report: Report) -> None:
    """Memories new here, through the write path every memory takes (write lock held):
    shared ones, joined only with what was here before; one ingest per author, then the
    global ids merged into another in one commit."""
    if not plan.new:
        return
    # global ids merged into a memory that has another one: not brought in again (a
    # restart reads every file) but left alone, and their edits with them
    aliases: dict[str, str] = json.loads(store.meta(ALIASES) or "{}")
    added: dict[str, str] = {}
    shared = _shared_now(store, workspace)  # after this sync's deletes and withdrawals
    by_author: dict[str, list[Shared]] = defaultdict(list)  # each keeps who wrote it
    for s in plan.new:
        if aliases.get(s.global_id) not in shared:
            by_author[s.author].append(s)
    for author, members in by_author.items():
        outcomes = _ingest(store, workspace, settings, author, members, vectors, before)
        added.update(_came_in(store, members, outcomes, report))
    if added:
        store.commit(Changes(meta={ALIASES: json.dumps({**aliases, **added},
                                                       sort_keys=True)}))


def _ingest(store: MemoryStore, workspace: str, settings: Settings, author: str,
            members: list[Shared], vectors: Vectors, before: set[int]) -> list[Outcome]:
    """One author's new memories, as memory_import brings an export's: already distinct
    from each other, so they merge only with what was here before."""
    items = [Item(s.content, s.category, list(s.tags), s.importance,
                  created_at=s.created_at, updated_at=s.updated_at,
                  code=_with_anchors(NO_CODE, s.anchors), scope="shared",
                  global_id=s.global_id) for s in members]
    return ingest(store, workspace, items, [vectors.of_new(s.content) for s in members],
                  settings, merge_into=before, origin=Origin("import", author, TEAM_SESSION))


def _came_in(store: MemoryStore, members: list[Shared], outcomes: list[Outcome],
             report: Report) -> dict[str, str]:
    """Report what ingest made of each file; returns the global ids merged into another
    (the alias each is to be remembered by)."""
    aliases: dict[str, str] = {}
    for s, outcome in zip(members, outcomes):
        m = outcome.memory
        entry = _entry(m.id, s.global_id, s.content)
        if outcome.status == "stored":
            if outcome.conflicts:
                report.conflicts.append(
                    {**entry, "conflicts": with_resolutions(m.id, outcome.conflicts)})
            report.came_in.append(entry)
            continue
        name = store.catalog[m.id].global_id  # a shared memory: ingest joins no other
        if name != s.global_id:
            aliases[s.global_id] = name
        report.merged.append({**entry, "status": outcome.status, "into": name})
    return aliases


def apply_relations(store: MemoryStore, workspace: str, pulled: Pulled,
                    report: Report) -> None:
    """The files' relations, between memories shared now only, in one commit (write lock
    held)."""
    by_gid = _shared_now(store, workspace)
    edges_added: list[Edge] = []
    edges_removed: list[Edge] = []
    for s in pulled.files.values():
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


def _entry(memory_id: int, global_id: str, content: str) -> MemoryEntry:
    return {"id": memory_id, "global_id": global_id, "content": _brief(content)}


def _brief(text: str) -> str:
    return text if len(text) <= 80 else text[:80] + "…"


def _with_anchors(code: CodeContext, anchors: tuple[Anchor, ...]) -> CodeContext:
    """The memory's code context with a teammate's anchors (its branch stays as it was)."""
    if shared_anchors(code) == tuple(anchors):
        return code
    return CodeContext(tuple(anchors), code.branch, code.commit, code.worktree)
