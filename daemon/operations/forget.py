"""Forget: memory_delete's work. The workspace's memories with the ids given are deleted
with their relationships in one commit; ids it does not hold are reported missing, and a
memory that is no longer the version the caller named (`expected`) is kept and reported
changed, with how it reads now."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from ..core.errors import invalid
from ..core.records import Memory
from ..store.changes import Changes
from . import tiers
from .context import CallContext
from .versions import moment, still

Status = Literal["deleted", "partial", "changed", "not_found"]


@dataclass(frozen=True)
class Forgotten:
    deleted: list[int]
    missing: list[int]  # ids not in this workspace
    changed: list[Memory] = field(default_factory=list)  # kept: changed since seen, as now

    @property
    def status(self) -> Status:
        if not self.missing and not self.changed:
            return "deleted"
        if self.deleted:
            return "partial"
        return "changed" if self.changed else "not_found"


def forget(ctx: CallContext, ids: list[int], expected: Mapping[int, str] | None = None
           ) -> Forgotten:
    """Delete the workspace's memories with these ids (each once, in the order asked; a
    personal memory by its shown id); `expected`: by id, the `updated_at` the caller saw; a
    memory changed since stays."""
    asked = list(dict.fromkeys(ids))
    seen = _seen(asked, expected or {})
    mine, personal_ids = tiers.split_ids(asked)
    done = _forget(ctx, mine, seen)
    if not personal_ids:
        return done
    personal = tiers.personal_of(ctx, "cannot delete a personal memory")
    theirs = _forget(personal, personal_ids,
                     {tiers.own_id(i): t for i, t in seen.items() if tiers.is_personal(i)})
    deleted = set(done.deleted) | set(tiers.shifted(theirs.deleted))
    return Forgotten([i for i in asked if i in deleted],
                     done.missing + tiers.shifted(theirs.missing),
                     done.changed + [tiers.as_shown(m) for m in theirs.changed])


def _forget(ctx: CallContext, asked: list[int], seen: dict[int, datetime]) -> Forgotten:
    if not asked:
        return Forgotten([], [])
    store = ctx.store
    with store.writing():  # checked and deleted in one hold: no write comes between
        held = [i for i in asked
                if (m := store.catalog.get(i)) is not None and m.workspace == ctx.workspace]
        changed = [store.catalog[i].copy() for i in held
                   if not still(store.catalog[i], seen.get(i))]
        gone = {m.id for m in changed}
        deleted = [i for i in held if i not in gone]
        if deleted:
            store.commit(Changes(deleted=deleted))
    return Forgotten(deleted, [i for i in asked if i not in held], changed)


def _seen(asked: list[int], expected: Mapping[int, str]) -> dict[int, datetime]:
    stray = sorted(set(expected) - set(asked))
    if stray:
        raise invalid(f"expected_updated_at names memory {stray[0]}, which is not among the "
                      "ids to delete")
    return {i: moment(text, f"expected_updated_at.{i}") for i, text in expected.items()}
