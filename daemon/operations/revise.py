"""Revise: memory_update's work. Each change is admitted, its new text embedded, and the
memory rewritten (content re-hashed, fields replaced, code anchors re-found or refreshed)
in one commit; a change of scope shares or unshares it after. A change naming the version
it was made against (`expected_updated_at`) leaves a memory that changed since alone."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Callable, Literal

import numpy as np

from ..core.errors import invalid, not_found
from ..core.records import Memory, content_hash, normalise_tags, utcnow
from ..core.types import Category, Scope, StoreScope
from ..curation.freshness import refreshed, written_context
from ..store.changes import Changes
from ..store.store import MemoryStore
from . import tiers
from .admitting import LeftOut, clean_tags, private_free
from .context import CallContext, worktree_of
from .personal import make_personal
from .sharing import check_shareable, check_unpublished, merge_sharing, share_after_write
from .versions import moment, still

Staged = dict[int, tuple[Memory, np.ndarray | None]]  # memory id -> as it is to be


@dataclass
class Change:
    """One memory's change; None: that field stays as it is."""
    id: int
    content: str | None = None
    category: Category | None = None
    tags: list[str] | None = None
    importance: int | None = None
    scope: StoreScope | None = None  # "user": move it to the personal tier
    anchors: list[dict[str, Any]] | None = None  # replace the explicit anchors ([]: none)
    refresh_anchors: bool | None = None  # True: re-capture every anchor as the code reads now
    expected_updated_at: str | None = None  # the version seen; None: change it whatever it is
    source: str | None = None  # a new origin session: where an imported memory's text is now

    @property
    def empty(self) -> bool:
        return self.only_scope and self.scope is None

    @property
    def only_scope(self) -> bool:
        return (self.content is None and self.category is None and self.tags is None
                and self.importance is None and self.anchors is None
                and self.refresh_anchors is None and self.source is None)

    @property
    def touches_code(self) -> bool:
        return (self.content is not None or self.anchors is not None
                or self.refresh_anchors is not None)


Status = Literal["updated", "not_found", "changed"]


@dataclass(frozen=True)
class Result:
    """What became of one change: `updated`, `not_found`, or `changed` (the memory is no
    longer the version the change named: left as it is, `current` shows it); the anchors a
    change of code left, and what was dropped on a refresh."""
    id: int
    status: Status
    anchors: list[str] | None = None
    anchor_notes: list[str] = field(default_factory=list)
    current: Memory | None = None
    moved_to: int | None = None  # the personal memory it became (scope "user")


@dataclass(frozen=True)
class Revised:
    results: list[Result]
    updated: list[Memory]  # as the call left them, in the order of the results
    sharing: dict[str, Any]
    left_out: LeftOut


def revise(ctx: CallContext, changes: list[Change], batch: bool) -> Revised:
    """Apply `changes` in one commit (a one-change call, unless `batch`: a memory not found
    is then an error). Changes of personal memories (by their shown ids) are applied in
    the personal tier, in a commit of their own."""
    if any(c.scope == "shared" for c in changes):
        check_unpublished(ctx.workspace)
    moving = [n for n, c in enumerate(changes) if c.scope == "user"]
    if moving:
        return _moved(ctx, changes, moving, batch)
    personal = [n for n, c in enumerate(changes) if tiers.is_personal(c.id)]
    if not personal:
        return _revise(ctx, changes, batch, list(range(len(changes))))
    for n in personal:
        if changes[n].scope is not None:
            raise invalid(f"{f'updates.{n}' if batch else 'arguments'}.scope: memory "
                          f"{changes[n].id} is a personal memory (scope user), kept for you "
                          "alone in every workspace: it is never shared with a team")
    tier = tiers.personal_of(ctx, "cannot update a personal memory")
    chosen = set(personal)
    mine = [n for n in range(len(changes)) if n not in chosen]
    done = _revise(ctx, [changes[n] for n in mine], batch, mine) if mine else \
        Revised([], [], {}, LeftOut())
    theirs = _revise(tier, [replace(changes[n], id=tiers.own_id(changes[n].id))
                            for n in personal], batch, personal, tiers.shown_id)
    results = tiers.in_call_order(chosen, len(changes), done.results,
                                  map(_shown_result, theirs.results))
    done.left_out.notes.update(theirs.left_out.notes)
    return Revised(results, done.updated + [tiers.as_shown(m) for m in theirs.updated],
                   done.sharing, done.left_out)


def _moved(ctx: CallContext, changes: list[Change], moving: list[int],
           batch: bool) -> Revised:
    """Changes of scope to "user": each memory moves to the personal tier (a call of its
    own: a move with other changes or other updates is refused)."""
    where = "updates" if batch else "arguments"
    if len(moving) != len(changes) or any(
            not c.only_scope or tiers.is_personal(c.id) or c.expected_updated_at is not None
            for c in changes):
        raise invalid(f"{where}: scope \"user\" moves a workspace memory to your personal "
                      "tier and takes nothing else: give only id and scope (all updates "
                      "of the call), then edit the moved memory by its new id")
    moved = make_personal(ctx, [c.id for c in changes])
    if not batch and moved.became[changes[0].id] is None:
        raise not_found(f"no memory with id {changes[0].id} in this workspace")
    results = [Result(c.id, "not_found") if moved.became[c.id] is None
               else Result(c.id, "changed") if c.id in moved.changed
               else Result(c.id, "updated", moved_to=moved.became[c.id]) for c in changes]
    updated = [moved.memories[r.moved_to] for r in results if r.moved_to is not None]
    return Revised(results, updated, {}, LeftOut())


def _shown_result(r: Result) -> Result:
    return replace(r, id=tiers.shown_id(r.id),
                   current=None if r.current is None else tiers.as_shown(r.current))


def _revise(ctx: CallContext, changes: list[Change], batch: bool, places: list[int],
            shown: Callable[[int], int] = lambda i: i) -> Revised:
    """revise() in one tier; `places`: each change's index in the call, `shown`: the id a
    caller knows a memory by (what errors name)."""
    left_out = _admit(ctx, changes, batch, places)
    expected = [_expected(c, places[n], batch) for n, c in enumerate(changes)]
    texts = [c.content for c in changes if c.content is not None]
    vectors = iter(ctx.embedder.embed(texts)) if texts else iter(())
    new_vectors = [next(vectors) if c.content is not None else None for c in changes]
    store = ctx.store
    with store.writing():
        results, staged, scoped = _stage(ctx, changes, new_vectors, expected, batch, places,
                                         shown)
        if scoped:  # refused before anything is written when a secret would be shared
            check_shareable(store, [i for i, sc in scoped.items() if sc == "shared"], staged)
        if staged:
            store.commit(Changes(updated=list(staged.values())))
        sharing = _share(store, ctx.workspace, scoped)
        updated = [store.catalog[r.id].copy() for r in results if r.status == "updated"]
    return Revised(results, updated, sharing, left_out)


def _admit(ctx: CallContext, changes: list[Change], batch: bool, places: list[int]
           ) -> LeftOut:
    """Refuse a change of nothing; take private text and secrets out of texts and tags."""
    left_out = LeftOut()  # private text and secrets, never stored (curation/privacy.py)
    for n, change in enumerate(changes):
        where = f"updates.{places[n]}" if batch else "arguments"
        if change.empty:
            raise invalid(f"{where}: nothing to change; give content, category, tags, scope, "
                          "importance, anchors or refresh_anchors")
        if change.content is not None:
            change.content = private_free(change.content, where,
                                          ctx.settings.max_store_chars, left_out)
        if change.tags is not None:
            change.tags = clean_tags(change.tags, where, left_out)
    return left_out


def _expected(change: Change, n: int, batch: bool) -> datetime | None:
    if change.expected_updated_at is None:
        return None
    where = f"updates.{n}.expected_updated_at" if batch else "expected_updated_at"
    return moment(change.expected_updated_at, where)


def _stage(ctx: CallContext, changes: list[Change], vectors: list[np.ndarray | None],
           expected: list[datetime | None], batch: bool, places: list[int],
           shown: Callable[[int], int]) -> tuple[list[Result], Staged, dict[int, Scope]]:
    """Each memory as its changes leave it (several changes of one memory build on each
    other), and the scope asked for each. A change naming a version is checked against the
    memory as the call found it. Write lock held: no write comes between check and commit."""
    store = ctx.store
    now = utcnow()
    results: list[Result] = []
    staged: Staged = {}
    scoped: dict[int, Scope] = {}
    for change, vector, seen in zip(changes, vectors, expected):
        current = staged[change.id][0] if change.id in staged else store.catalog.get(change.id)
        if current is None or current.workspace != ctx.workspace:
            if not batch:
                raise not_found(f"no memory with id {shown(change.id)} in this workspace")
            results.append(Result(change.id, "not_found"))
            continue
        if not still(store.catalog[change.id], seen):
            results.append(Result(change.id, "changed",
                                  current=store.catalog[change.id].copy()))
            continue
        if change.scope is not None and change.scope != "user":
            scoped[change.id] = change.scope
        if change.only_scope:  # only its scope: shared or unshared after the commit
            results.append(Result(change.id, "updated"))
            continue
        m = rewritten(current.copy(updated_at=now), change, store.model)
        result = recode(ctx.checkout, m, change,
                        f"updates.{places[len(results)]}." if batch else "",
                        worktree_of(ctx))
        previous_vector = staged[change.id][1] if change.id in staged else None
        staged[change.id] = (m, vector if vector is not None else previous_vector)
        results.append(result)
    return results, staged, scoped


def rewritten(m: Memory, change: Change, model: str) -> Memory:
    """`m` (a copy) with the change's fields: new content re-hashed, marked as embedded by
    `model`."""
    if change.content is not None:
        m.content, m.content_hash = change.content, content_hash(change.content)
        m.embedding_model = model
    if change.category is not None:
        m.category = change.category
    if change.tags is not None:
        m.tags = normalise_tags(change.tags)
    if change.importance is not None:
        m.importance = change.importance
    if change.source is not None:
        m.origin_session = change.source
    return m


def recode(workspace: str, m: Memory, change: Change, where: str,
           worktree: str = "") -> Result:
    """The memory's code context after this change: anchors given replace the explicit ones,
    new content is searched for citations again, and `refresh_anchors` re-captures every
    anchor as the code reads now. Sets `m.code`; returns what the caller should hear."""
    if not change.touches_code:
        return Result(m.id, "updated")
    context = m.code
    if change.anchors is not None or change.content is not None:
        context = written_context(workspace, m.content, change.anchors, keep=context,
                                  where=where, worktree=worktree)
    notes: list[str] = []
    if change.refresh_anchors:
        context, notes = refreshed(workspace, context)
    m.code = context
    return Result(m.id, "updated", [a.where for a in context.anchors], notes)


def _share(store: MemoryStore, workspace: str, scoped: dict[int, Scope]) -> dict[str, Any]:
    """Share, then unshare, the memories whose scope the call set. Write lock held."""
    sharing: dict[str, Any] = {}
    for scope in ("shared", "private"):
        ids = [i for i, sc in scoped.items() if sc == scope]
        if ids:
            sharing = merge_sharing(sharing, share_after_write(
                store, workspace, [store.catalog[i] for i in ids], scope == "shared"))
    return sharing
