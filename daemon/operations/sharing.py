"""Sharing memories with the team: as a step of a write (refusing a secret before anything is
written, sharing or unsharing what a write just left, and what the caller hears about it),
as an operation of its own (share, unshare), and bringing teammates' shared files in now
(sync_now)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import ToolError, invalid
from ..core.records import Memory
from ..store.store import MemoryStore
from ..team import folder, published
from ..team import sync as team
from . import tiers
from .context import CallContext


def check_unpublished(workspace: str) -> None:
    """Refuse to share, before anything is written, while git would also publish the
    workspace's private files (sharing asks the user to `git add .memnest`)."""
    files = published.exposed(workspace)
    if files:
        raise ToolError("failed_precondition", "not shared: " + published.warning(files))


def check_shareable(store: MemoryStore, ids: list[int],
                    staged: dict[int, tuple[Memory, np.ndarray | None]]) -> None:
    """Refuse (before anything is written) to share a memory holding a secret. `staged`:
    memories as an update is about to leave them."""
    memories = [staged[i][0] if i in staged else store.catalog[i] for i in ids]
    found = {m.id: team.secrets_in(m) for m in memories}
    found = {i: kinds for i, kinds in found.items() if kinds}
    if found:
        named = "; ".join(f"memory {i}: {', '.join(k)}" for i, k in found.items())
        raise invalid(f"not shared: a secret was found ({named}). Shared memories are "
                      "committed to git; remove the secret (memory_update) and share again. "
                      "Nothing was changed.")


def share_after_write(store: MemoryStore, workspace: str, memories: list[Memory],
                      shared: bool = True) -> dict[str, Any]:
    """Share (or unshare) memories just written (write lock held); what the caller hears."""
    if not memories:
        return {}
    try:
        done = team.set_scope(store, workspace, memories, shared)
    except team.SecretFound as exc:
        raise invalid(str(exc)) from None
    out: dict[str, Any] = {"scope": "shared" if shared else "private",
                 "shared_files": [f".memnest/shared/{store.catalog[m.id].global_id}.json"
                                  for m in memories]} if shared else \
        {"scope": "private", "removed_files": done["removed_files"]}
    return out


def merge_sharing(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two sharing reports of one call as one: lists joined, the later scope's facts kept."""
    if not a:
        return b
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, list):
            out[key] = out.get(key, []) + value
        elif key != "scope":
            out[key] = value
    return out


# -- share, unshare and sync: memory_share's and memory_sync's work ----------------------------

@dataclass(frozen=True)
class SharedMemory:
    id: int
    global_id: str  # "" once unshared
    file: str  # its file under .memnest/shared/, relative to the workspace (when shared)


@dataclass(frozen=True)
class Sharing:
    """What share() did: the memories found (in the order asked) and the ids not found."""
    shared: bool  # False: unshared
    memories: list[SharedMemory]
    changed: list[int]  # ids whose scope changed (the others were so already)
    missing: list[int]  # ids not in this workspace
    removed_files: list[str]  # unsharing: the files removed, relative to the workspace
    retired_global_ids: list[str]  # unsharing: ids no file may use again


def share(ctx: CallContext, ids: list[int], shared: bool = True) -> Sharing:
    """Share the workspace's memories with these ids (their files are written under
    .memnest/shared/), or unshare them (their files removed, their global ids retired).
    Refused, before anything changes, when a memory to share holds a secret."""
    personal = [i for i in ids if tiers.is_personal(i)]
    if personal:
        raise invalid(f"memory {personal[0]} is a personal memory (scope user), kept for you "
                      "alone in every project: it is never shared with a team")
    if shared:
        check_unpublished(ctx.workspace)
    store = ctx.store
    asked = list(dict.fromkeys(ids))
    with store.writing():
        ctx.check_still_wanted()
        found = [m for i in asked
                 if (m := store.catalog.get(i)) is not None and m.workspace == ctx.workspace]
        try:
            done = team.set_scope(store, ctx.workspace, found, shared)
        except team.SecretFound as exc:
            raise invalid(str(exc)) from None
        now = [store.catalog[m.id] for m in found]
    memories = [SharedMemory(m.id, m.global_id, f".memnest/shared/{m.global_id}.json")
                for m in now]
    found_ids = {m.id for m in found}
    return Sharing(shared, memories, list(done["changed"]),
                   [i for i in asked if i not in found_ids],
                   list(done["removed_files"]), list(done["retired"]))


@dataclass(frozen=True)
class Synced:
    """What sync_now() found: this sync's report and those of the syncs calls did on their
    own since memory_sync last showed them, and the state of the shared folder."""
    reports: list[team.Report]
    problems: list[str]  # shared files that could not be imported, with why
    ignored: Sequence[Mapping[str, object]]  # files naming a memory not shared here
    shared_memories: int  # memories of the workspace shared now
    folder: str  # the shared folder, absolute


def sync_now(ctx: CallContext, everything: bool = False) -> Synced:
    """Bring teammates' shared files in now (only those changed since the last look, or
    `everything`)."""
    store = ctx.store  # opening it may already have brought in what changed
    now = team.sync(store, ctx.workspace, ctx.embedder.embed, ctx.settings,
                    everything=everything)
    reports = team.unreported(store, ctx.workspace)
    if not any(r is now for r in reports):
        reports.append(now)
    problems = team.warnings(store, ctx.workspace)
    ignored = team.ignored(store, ctx.workspace)
    with store.reading():
        shared = sum(m.scope == "shared" for m in store.in_scope(ctx.workspace))
    return Synced(reports, problems, ignored, shared, folder.shared_path(ctx.workspace))
