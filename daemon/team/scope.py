"""Sharing and unsharing memories, and the global ids no file may use again.

A memory shared gets a new global id; unsharing it retires that id for good, so no file
that still names it (in git history, on an old branch, in a teammate's commit) can change
the memory or share it again. A memory whose file went away is `withdrawn`: private now,
and shared again only if the file comes back before the memory changed here.
"""
import json
import uuid
from typing import Literal, TypedDict

from ..core.records import Memory, content_hash
from ..curation import admission
from ..store.changes import Changes
from ..store.store import MemoryStore
from . import folder
from .outgoing import forget_file, write_files
from .report import shared_file

RETIRED = "team_retired"  # Meta key: JSON {global id: RetiredId}
Retirement = Literal["unshared", "withdrawn"]
UNSHARED: Retirement = "unshared"
WITHDRAWN: Retirement = "withdrawn"


class _RetiredId(TypedDict):
    why: Retirement
    id: int  # the memory that had it


class RetiredId(_RetiredId, total=False):
    mark: str  # a withdrawn memory as it was (_mark): its file may bring it back while so


class ScopeChange(TypedDict):
    """What set_scope did: the ids of the memories whose scope changed, each memory's
    global id now, the global ids retired, the files removed."""
    changed: list[int]
    global_ids: dict[int, str]
    retired: list[str]
    removed_files: list[str]


class SecretFound(ValueError):
    pass


def new_global_id() -> str:
    return uuid.uuid4().hex


def secrets_in(m: Memory) -> list[str]:
    """Kinds of secret (or private sections) admission finds in content and tags."""
    return admission.secrets_in((m.content, *m.tags))


def retired(store: MemoryStore, workspace: str) -> dict[str, RetiredId]:
    """The global ids no shared file may use to change a memory here: those recorded, and
    those of private memories that still name one (written before ids were retired), which
    count as unshared."""
    out = recorded(store)
    for m in store.catalog.values():
        if m.scope != "shared" and m.global_id and m.workspace == workspace:
            out.setdefault(m.global_id, {"why": UNSHARED, "id": m.id})
    return out


def mark(m: Memory) -> str:
    """What a withdrawn memory looked like: the file may bring it back only while it still
    does (nothing of the owner's has been added since)."""
    return content_hash(json.dumps([m.content_hash, m.category, m.tags, m.importance]))


def recorded(store: MemoryStore) -> dict[str, RetiredId]:
    """The retired global ids as the database records them."""
    found: dict[str, RetiredId] = json.loads(store.meta(RETIRED) or "{}")
    return found


def retiring(store: MemoryStore, entries: dict[str, RetiredId],
             restored: set[str] | frozenset[str] = frozenset()) -> dict[str, str]:
    """The Meta change that adds these global ids to the retired ones and takes the
    `restored` ones out (write lock held)."""
    known = {**recorded(store), **entries}
    return {RETIRED: json.dumps({g: e for g, e in known.items() if g not in restored},
                                sort_keys=True)}


def _refuse_secrets(memories: list[Memory]) -> None:
    refused = {m.id: kinds for m in memories if (kinds := secrets_in(m))}
    if refused:
        named = "; ".join(f"memory {i}: {', '.join(kinds)}" for i, kinds in refused.items())
        raise SecretFound(
            f"not shared: a secret was found ({named}). Shared memories are committed to "
            "git; remove the secret with memory_update (or delete the memory), then "
            "share again. Nothing was shared.")


def _rescoped(store: MemoryStore, memories: list[Memory],
              shared: bool) -> tuple[list[Memory], dict[str, RetiredId]]:
    """The memories as sharing (or unsharing) leaves them, and the global ids it retires."""
    changed: list[Memory] = []
    retiring_ids: dict[str, RetiredId] = {}
    for m in memories:
        if shared and m.scope != "shared":
            changed.append(m.copy(scope="shared", global_id=new_global_id()))
        elif not shared and m.scope == "shared":
            changed.append(m.copy(scope="private", global_id=""))
            retiring_ids[m.global_id] = {"why": UNSHARED, "id": m.id}
    # the owner has decided: an id its file once had no longer brings the memory back
    ids = {m.id for m in changed}
    for gid, entry in recorded(store).items():
        if entry.get("why") == WITHDRAWN and entry.get("id") in ids:
            retiring_ids[gid] = {**entry, "why": UNSHARED}
    return changed, retiring_ids


def set_scope(store: MemoryStore, workspace: str, memories: list[Memory],
              shared: bool) -> ScopeChange:
    """Share or unshare these memories (write lock held): one commit, then their files
    (written by the commit hook, or removed here). Refuses, before writing anything, to
    share a memory in which a secret is found."""
    memories = list({m.id: m for m in memories}.values())  # a batch's items may be one
    if shared:
        _refuse_secrets(memories)
    changed, retiring_ids = _rescoped(store, memories, shared)
    if changed:
        store.commit(Changes(updated=[(m, None) for m in changed],
                             meta=retiring(store, retiring_ids) if retiring_ids else {}))
    removed = []
    unshared = [m.global_id for m in memories if not shared and m.scope == "shared"]
    for gid in unshared:
        if folder.remove(workspace, gid):
            removed.append(shared_file(gid))
            forget_file(store, workspace, gid)
    # the memories that link to them name them in their files too (or no longer do)
    ids = {m.id for m in changed}
    linking = {a for _rel, a, b in store.graph.edges if b in ids and a not in ids}
    write_files(store, [store.catalog[i] for i in linking])
    return {"changed": [m.id for m in changed],
            "global_ids": {m.id: store.catalog[m.id].global_id for m in memories},
            "retired": unshared, "removed_files": removed}
