"""Listing: memory_list's work. The workspace's memories a filter admits, without ranking, in
one order, a page at a time to any depth. The cheap filters (fields, provenance, scope, time,
supersession) see every memory; the two that cost a look at code or at neighbours (stale,
conflicted) see at most CHECKED_AT_MOST of those in order, and the listing says so."""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Callable, Literal

from ..core.records import Memory, normalise_tags
from ..core.types import StoreScope
from ..curation.conflicts import conflicts
from ..curation.freshness import freshness
from ..search.ranking import SearchFilter
from . import tiers
from .code_checks import Checks, checkouts_of, follow_moved_code
from .context import CallContext

Order = Literal["recent", "created", "importance", "accessed"]
ORDERS: dict[str, Callable[[Memory], tuple[Any, ...]]] = {
    "recent": lambda m: (m.updated_at, m.id),
    "created": lambda m: (m.created_at, m.id),
    "importance": lambda m: (m.importance, m.updated_at, m.id),
    "accessed": lambda m: (m.access_count, m.updated_at, m.id),
}
# How many memories, in the order asked, a stale or conflicted filter looks at: each costs a
# read of its cited files or a pass over the vectors, and a page must come back quickly.
CHECKED_AT_MOST = 2000


@dataclass(frozen=True)
class Listing:
    memories: list[Memory]
    total: int  # memories the filter admits (of those checked, when `checked_only`)
    offset: int
    has_more: bool
    checked_only: int | None = None  # stale/conflicted looked at only this many, in order


@dataclass(frozen=True)
class ListAsk:
    """What memory_list asks. None: MEMORY_LIST_LIMIT, or no bound."""
    order_by: Order = "recent"
    category: str | None = None
    topic: str | None = None
    min_importance: int = 1
    via: str | None = None
    client: str | None = None
    limit: int | None = None
    offset: int = 0
    scope: StoreScope | None = None  # "user": the personal tier's memories
    since: datetime | None = None  # changed (updated_at) at or after
    until: datetime | None = None  # changed before
    superseded: bool | None = None  # True: only those a newer memory replaced; False: none
    stale: bool = False  # only those whose cited code changed or went
    conflicted: bool = False  # only those that look like contradicting another, unsettled

    @property
    def checks(self) -> bool:
        return self.stale or self.conflicted


def list_memories(ctx: CallContext, ask: ListAsk) -> Listing:
    """The workspace's memories the filter admits, in `order_by` order, one page of them;
    with scope "user", the personal tier's (by their shown ids)."""
    if ask.scope == "user":
        tier = tiers.personal_of(ctx, "cannot list personal memories")
        if tier is ctx or not tiers.has_personal(ctx):
            return Listing([], 0, ask.offset, False)
        page = _listed(tier, replace(ask, scope=None))
        return replace(page, memories=[tiers.as_shown(m) for m in page.memories])
    return _listed(ctx, ask)


def _listed(ctx: CallContext, ask: ListAsk) -> Listing:
    limit = ask.limit or ctx.settings.list_limit
    store = ctx.store
    with store.reading():
        admits = _admitter(ctx, ask)
        rows = [m for m in store.in_scope(ctx.workspace) if admits(m)]
        rows.sort(key=ORDERS[ask.order_by], reverse=True)
        checked_only: int | None = None
        found: Checks = {}
        if ask.checks:
            if len(rows) > CHECKED_AT_MOST:
                rows, checked_only = rows[:CHECKED_AT_MOST], CHECKED_AT_MOST
            rows, found = _checked(ctx, ask, rows)
    if ask.stale:
        follow_moved_code(store, found)
    return Listing(rows[ask.offset:ask.offset + limit], len(rows), ask.offset,
                   ask.offset + limit < len(rows), checked_only)


def _admitter(ctx: CallContext, ask: ListAsk) -> Callable[[Memory], bool]:
    """The cheap filters, as one test of a memory. Read lock held while it is used."""
    topic = normalise_tags([ask.topic])[0] if (ask.topic or "").strip() else None
    flt = SearchFilter(workspace=ctx.workspace, category=ask.category,
                       tags=[topic] if topic else [], min_importance=ask.min_importance,
                       via=ask.via, client=ask.client)
    graph = ctx.store.graph

    def admits(m: Memory) -> bool:
        return (flt.admits(m)
                and (ask.scope is None or m.scope == ask.scope)
                and (ask.since is None or m.updated_at >= ask.since)
                and (ask.until is None or m.updated_at < ask.until)
                and (ask.superseded is None
                     or bool(graph.superseded_by(m.id)) == ask.superseded)
                and (not ask.stale or bool(m.code.anchors)))
    return admits


def _checked(ctx: CallContext, ask: ListAsk, rows: list[Memory]
             ) -> tuple[list[Memory], Checks]:
    """The rows whose code is stale and that carry an unsettled conflict, as asked; the code
    checks made (to re-anchor code that only moved). Read lock held."""
    found = freshness(rows, checkouts_of(ctx.workspace, ctx.checkout)) if ask.stale else {}
    if ask.stale:
        rows = [m for m in rows if (f := found.get(m.id)) is not None and f.stale]
    if ask.conflicted and rows:
        flagged = conflicts(ctx.store, rows, ctx.settings, ctx.workspace)
        rows = [m for m in rows if flagged.get(m.id)]
    return rows, found
