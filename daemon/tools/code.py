"""Memories anchored to code: what recall adds to a memory whose code moved or changed, the
re-anchoring of code that only moved, and memory_stale, the review list of stale memories."""
import numpy as np

from ..core.anchors import CodeContext
from ..core.records import Memory
from ..curation.freshness import Freshness, freshness, stale_report
from ..search.ranking import demote
from ..store.changes import Changes
from .registry import ToolContext, tool

# Memories past the page whose code is checked too, so that a stale memory demoted out of
# the page is replaced by the next fresh one.
CHECK_BEYOND_PAGE = 10


def rank_by_code(ranked: list, shown: int) -> tuple[list, dict[int, Freshness]]:
    """Check the code of the first `shown` (+ a margin) ranked memories and rank those whose
    code changed or went, or that come from an unmerged branch, lower."""
    found = freshness([r.memory for r in ranked[:shown + CHECK_BEYOND_PAGE]])
    factors = {i: f.factor for i, f in found.items() if f.factor != 1.0}
    return (demote(ranked, factors, "code") if factors else ranked), found


def follow_moved_code(store, found: dict[int, Freshness]) -> None:
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
            updated.append((m.copy(code=f.reanchored.to_json()), None))
        if updated:
            store.commit(Changes(updated=updated))


def code_view(found: dict[int, Freshness], memory_id: int) -> dict | None:
    f = found.get(memory_id)
    if f is None:
        return None
    return f.view() or None


@tool("memory_stale",
      "List the memories whose cited code changed or was deleted since they were written "
      "(anchors: file paths, lines and symbols named in a memory or given with `anchors`), "
      "grouped by file, so you can review them: read the code, then refresh the anchors of "
      "those that still hold with memory_update(updates=[{id, refresh_anchors: true}, …]) "
      "and correct or delete the others.",
      {"type": "object",
       "properties": {"include_moved": {"type": "boolean",
                                        "description": "Also list memories whose code only "
                                                       "moved (re-anchored automatically)."}},
       "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_stale(ctx: ToolContext, args: dict) -> dict:
    store = ctx.store
    with store.reading():
        anchored = [m for m in store.in_scope(ctx.workspace)
                    if m.code and CodeContext.parse(m.code).anchors]
    report, found = stale_report(anchored, bool(args.get("include_moved")))
    follow_moved_code(store, found)
    return report
