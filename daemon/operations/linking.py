"""Links between a workspace's memories: relating and unrelating them (memory_relate,
memory_unrelate), recording that look-alikes both hold (memory_keep_separate), and the
topics their tags make (memory_topics). Each write is one commit."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.errors import ToolError, invalid, not_found
from ..core.types import Relation
from ..store.changes import Changes, Edge
from ..store.graph import pair
from ..store.store import MemoryStore
from .context import CallContext

LinkStatus = Literal["created", "exists", "invalid", "not_found"]
UnlinkStatus = Literal["removed", "not_found"]
VerdictStatus = Literal["recorded", "exists"]


@dataclass(frozen=True)
class Link:
    """A relation asked for: from_id `relationship` to_id."""
    from_id: int
    to_id: int
    relationship: Relation = "RELATED_TO"


@dataclass(frozen=True)
class Linked:
    """What became of one link asked for; `error` says why it could not be made."""
    link: Link
    status: LinkStatus
    error: str = ""


@dataclass(frozen=True)
class Relating:
    """memory_relate's outcome: each link, and for a single SUPERSEDES link the cycle it
    closes (none of its members is demoted while it lasts)."""
    results: list[Linked]
    supersession_cycle: list[int] | None = None

    def count(self, status: LinkStatus) -> int:
        return sum(r.status == status for r in self.results)


@dataclass(frozen=True)
class Unrelating:
    """memory_unrelate's outcome: the links removed, and those the other way it kept."""
    removed: list[Edge]
    kept_other_direction: list[Edge]

    @property
    def status(self) -> UnlinkStatus:
        return "removed" if self.removed else "not_found"


@dataclass(frozen=True)
class Verdict:
    pair: tuple[int, int]  # smaller id first
    status: VerdictStatus


@dataclass(frozen=True)
class Topic:
    name: str
    count: int  # memories carrying the tag


@dataclass(frozen=True)
class Topics:
    shown: list[Topic]  # most used first, then by name
    total: int  # topics at or above the minimum count, shown or not


def endpoint_problem(ctx: CallContext, a: int, b: int) -> ToolError | None:
    """Why a link from `a` to `b` cannot be made in this workspace, or None."""
    if a == b:
        return invalid(f"memory {a} cannot be related to itself")
    catalog = ctx.store.catalog
    missing = [i for i in (a, b) if (m := catalog.get(i)) is None or m.workspace != ctx.workspace]
    if missing:
        return not_found("no memory with id " + " or ".join(map(str, missing)) +
                         " in this workspace")
    return None


def relate(ctx: CallContext, links: list[Link], batch: bool) -> Relating:
    """Make these links (one commit). A link already there is `exists`; in a `batch` a link
    that cannot be made is reported with its error, alone it raises."""
    store = ctx.store
    results: list[Linked] = []
    created: list[Edge] = []
    with store.writing():
        for link in links:
            edge: Edge = (link.relationship, link.from_id, link.to_id)
            problem = endpoint_problem(ctx, link.from_id, link.to_id)
            if problem is not None:
                if not batch:
                    raise problem
                status: LinkStatus = "invalid" if problem.code == "invalid_argument" \
                    else "not_found"
                results.append(Linked(link, status, str(problem)))
                continue
            known = edge in store.graph.edges or edge in created
            results.append(Linked(link, "exists" if known else "created"))
            if not known:
                created.append(edge)
        if created:
            store.commit(Changes(edges_added=created))
    return Relating(results, None if batch else _cycle_closed(store, links[0]))


def _cycle_closed(store: MemoryStore, link: Link) -> list[int] | None:
    if link.relationship != "SUPERSEDES":
        return None
    return store.graph.supersession_cycle(link.from_id)


def unrelate(ctx: CallContext, a: int, b: int, relationship: Relation | None = None,
             both_directions: bool = False) -> Unrelating:
    """Remove the links from `a` to `b` (of one type, or every type when `relationship` is
    None), and from `b` to `a` too when `both_directions`."""
    directions = {(a, b), (b, a)} if both_directions else {(a, b)}
    store = ctx.store
    with store.writing():
        problem = endpoint_problem(ctx, a, b)
        if problem is not None:
            raise problem
        doomed = [e for e in store.graph.between(a, b) if (e[1], e[2]) in directions
                  and relationship in (None, e[0])]
        if doomed:
            store.commit(Changes(edges_removed=doomed))
        kept = [e for e in store.graph.between(a, b)
                if (e[1], e[2]) == (b, a) and relationship in (None, e[0])]
    return Unrelating(doomed, kept)


def keep_separate(ctx: CallContext, pairs: list[tuple[int, int]]) -> list[Verdict]:
    """Record that the memories of each pair both hold (one commit): they are not merged or
    flagged as look-alikes again. A pair that cannot be recorded refuses them all."""
    store = ctx.store
    results: list[Verdict] = []
    new: list[tuple[int, int]] = []
    with store.writing():
        for a, b in pairs:
            problem = endpoint_problem(ctx, a, b)
            if problem is not None:
                raise problem
            key = pair(a, b)
            known = store.graph.kept_separate(a, b) or key in new
            results.append(Verdict(key, "exists" if known else "recorded"))
            if not known:
                new.append(key)
        if new:
            store.commit(Changes(kept_separate=new))
    return results


def topics(ctx: CallContext, limit: int, min_count: int = 1) -> Topics:
    """The workspace's tags with how many memories carry each: those carried by at least
    `min_count`, most used first (then by name), the first `limit` of them."""
    counts: dict[str, int] = {}
    store = ctx.store
    with store.reading():
        for m in store.in_scope(ctx.workspace):
            for t in m.tags:
                counts[t] = counts.get(t, 0) + 1
    ranked = sorted((Topic(t, n) for t, n in counts.items() if n >= min_count),
                    key=lambda topic: (-topic.count, topic.name))
    return Topics(ranked[:limit], len(ranked))
