"""Memories anchored to code, as recall meets them: ranking lower those whose code changed or
went, re-anchoring code that only moved, and the review list of stale memories."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..core.records import Memory
from ..curation.freshness import Freshness, freshness, stale_report
from ..search.ranking import Ranked, demote
from ..store.changes import Changes
from ..store.store import MemoryStore
from .context import CallContext

# Memories past the page whose code is checked too, so that a stale memory demoted out of
# the page is replaced by the next fresh one.
CHECK_BEYOND_PAGE = 10

Checks = dict[int, Freshness]  # memory id -> how its cited code looks now


def rank_by_code(ranked: list[Ranked], shown: int, workspace: str = "",
                 checkout: str = "") -> tuple[list[Ranked], Checks]:
    """Check the code of the first `shown` (+ a margin) ranked memories and rank those whose
    code changed or went, or that come from an unmerged branch, lower. The `workspace`'s
    memories are checked in `checkout`, where the call runs (a worktree)."""
    found = freshness([r.memory for r in ranked[:shown + CHECK_BEYOND_PAGE]],
                      checkouts_of(workspace, checkout))
    factors = {i: f.factor for i, f in found.items() if f.factor != 1.0}
    return (demote(ranked, factors, "code") if factors else ranked), found


def check_code(memories: Sequence[Memory], workspace: str = "", checkout: str = "") -> Checks:
    """The code checks of memories shown by id (memory_get)."""
    return freshness(list(memories), checkouts_of(workspace, checkout))


def checkouts_of(workspace: str, checkout: str) -> dict[str, str] | None:
    return {workspace: checkout} if workspace and checkout and checkout != workspace else None


def follow_moved_code(store: MemoryStore, found: Checks) -> None:
    """Anchors whose code only moved now point where it is (unless the memory changed since
    it was checked). Called after the read that found them, outside its lock."""
    moved = {i: f for i, f in found.items() if f.reanchored is not None}
    if not moved:
        return
    with store.writing():
        updated: list[tuple[Memory, np.ndarray | None]] = []
        for memory_id, f in moved.items():
            m = store.catalog.get(memory_id)
            if m is None or m.code != f.checked or f.reanchored is None:
                continue
            updated.append((m.copy(code=f.reanchored), None))
        if updated:
            store.commit(Changes(updated=updated))


@dataclass(frozen=True)
class StaleReport:
    """memory_stale's review list, as curation.freshness.stale_report words it: how many
    memories cite code, how many of them are stale, and those grouped by file."""
    report: dict[str, Any]


def stale(ctx: CallContext, include_moved: bool) -> StaleReport:
    """The workspace's memories whose cited code changed or went (and, asked, only moved),
    grouped by file; code that only moved is re-anchored on the way."""
    store = ctx.store
    with store.reading():
        anchored = [m for m in store.in_scope(ctx.workspace)
                    if m.code.anchors]
    report, found = stale_report(anchored, include_moved,
                                 checkouts_of(ctx.workspace, ctx.checkout))
    follow_moved_code(store, found)
    return StaleReport(report)
