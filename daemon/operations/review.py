"""Review: what was added to a workspace without the person asking (hooks' captures, memories
a teammate's file brought in) since they last looked, the disagreements among what changed
lately, and the memories whose code changed. Keeping marks added memories reviewed; editing
and discarding are memory_update and memory_delete.

The review state lives in the database's Meta table, one key per workspace, so every client
(two tabs, a remote workbench) and a restarted daemon see the same queue. It is bounded: a
watermark (every queued memory with an id up to it is reviewed; ids only grow) and the ids
kept above it, which the watermark absorbs as the queue is worked through. A memory deleted
leaves the queue with it; one rewritten later by a hook keeps its id and stays reviewed.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Final

from ..core.records import Memory, from_iso, iso, utcnow
from ..curation.conflicts import conflicts
from ..store.changes import Changes
from ..store.neighbours import ConflictFlag
from ..store.store import MemoryStore
from .code_checks import stale
from .context import CallContext

# The memories changed last whose disagreements are listed (a pass over the vectors each).
RECENT_FOR_CONFLICTS: Final = 200
STALE_LISTED: Final = 20


def came_unasked(m: Memory) -> bool:
    """Written by a hook, or brought in from a teammate's shared file."""
    return m.origin_via == "hook" or m.from_team


@dataclass
class ReviewState:
    watermark: int = 0
    kept: set[int] = field(default_factory=set)
    since: str | None = None  # when the queue was last kept as a whole

    @classmethod
    def parse(cls, text: str | None) -> ReviewState:
        if not text:
            return cls()
        try:
            raw = json.loads(text)
            since = raw.get("since")
            if since is not None:
                from_iso(str(since))
            return cls(int(raw.get("watermark", 0)), {int(i) for i in raw.get("kept", [])},
                       None if since is None else str(since))
        except (ValueError, TypeError, AttributeError):
            return cls()  # a state this daemon cannot read starts over: nothing is lost

    def text(self) -> str:
        return json.dumps({"watermark": self.watermark, "kept": sorted(self.kept),
                           "since": self.since})

    def reviewed(self, memory_id: int) -> bool:
        return memory_id <= self.watermark or memory_id in self.kept

    def absorb(self, waiting: list[int]) -> None:
        """Raise the watermark past the kept ids that no unreviewed one precedes, and forget
        kept ids that no longer wait (deleted)."""
        first_open = min((i for i in waiting if not self.reviewed(i)), default=None)
        ceiling = max(self.kept, default=self.watermark) if first_open is None \
            else first_open - 1
        self.watermark = max(self.watermark, ceiling)
        self.kept = {i for i in self.kept if i > self.watermark and i in waiting}


@dataclass(frozen=True)
class Disagreement:
    a: Memory
    b: Memory
    kind: str
    similarity: float


@dataclass(frozen=True)
class Queue:
    added: list[Memory]  # one page, newest first
    total: int
    offset: int
    has_more: bool
    since: str | None
    disagreements: list[Disagreement]
    stale_count: int
    stale: list[tuple[int, str]]  # (id, content) of the first STALE_LISTED


@dataclass(frozen=True)
class Kept:
    kept: list[int]
    missing: list[int]  # not waiting for review in this workspace
    remaining: int


def review_key(workspace: str) -> str:
    return f"review:{workspace}"


def _state(store: MemoryStore, workspace: str) -> ReviewState:
    return ReviewState.parse(store.meta(review_key(workspace)))


def _waiting(store: MemoryStore, workspace: str) -> list[Memory]:
    return [m for m in store.in_scope(workspace) if came_unasked(m)]


def queue(ctx: CallContext, limit: int, offset: int) -> Queue:
    store = ctx.store
    with store.reading():
        state = _state(store, ctx.workspace)
        unreviewed = sorted((m for m in _waiting(store, ctx.workspace)
                             if not state.reviewed(m.id)), key=lambda m: -m.id)
        recent = sorted(store.in_scope(ctx.workspace), key=lambda m: (m.updated_at, m.id),
                        reverse=True)[:RECENT_FOR_CONFLICTS]
        found = conflicts(store, recent, ctx.settings, ctx.workspace)
        pairs = _pairs(store, found)
    report = stale(ctx, include_moved=False).report
    listed = [(int(m["id"]), str(m["content"])) for f in report.get("files", [])
              for m in f["memories"]]
    return Queue(unreviewed[offset:offset + limit], len(unreviewed), offset,
                 offset + limit < len(unreviewed), state.since, pairs,
                 int(report.get("stale", 0)), list(dict.fromkeys(listed))[:STALE_LISTED])


def _pairs(store: MemoryStore, found: dict[int, list[ConflictFlag]]) -> list[Disagreement]:
    out: dict[tuple[int, int], Disagreement] = {}
    for memory_id, flags in found.items():
        for flag in flags:
            other = int(flag["memory_id"])
            key = (min(memory_id, other), max(memory_id, other))
            a, b = store.catalog.get(key[0]), store.catalog.get(key[1])
            if key not in out and a is not None and b is not None:
                out[key] = Disagreement(a, b, str(flag["type"]), float(flag["similarity"]))
    return sorted(out.values(), key=lambda d: (-max(d.a.updated_at, d.b.updated_at)
                                               .timestamp(), d.a.id))


def keep(ctx: CallContext, ids: list[int] | None) -> Kept:
    """Mark these added memories reviewed (None: the whole queue, and the review ends now)."""
    store = ctx.store
    with store.writing():
        state = _state(store, ctx.workspace)
        waiting = {m.id for m in _waiting(store, ctx.workspace)}
        if ids is None:
            kept = sorted(i for i in waiting if not state.reviewed(i))
            state.watermark = max([state.watermark, *waiting])
            state.since = iso(utcnow())
            missing: list[int] = []
        else:
            asked = list(dict.fromkeys(ids))
            kept = [i for i in asked if i in waiting and not state.reviewed(i)]
            missing = [i for i in asked if i not in waiting]
            state.kept.update(kept)
        state.absorb(sorted(waiting))
        store.commit(Changes(meta={review_key(ctx.workspace): state.text()}))
        remaining = sum(1 for i in waiting if not state.reviewed(i))
    return Kept(kept, missing, remaining)
