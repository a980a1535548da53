"""Sharing memories with the team as a step of a write: refusing a secret before anything is
written, sharing or unsharing what a write just left, and what the caller hears about it."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core.errors import invalid
from ..core.records import Memory
from ..store.store import MemoryStore
from ..team import sync as team


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
