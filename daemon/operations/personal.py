"""Moving a workspace's memories into the personal tier (memory_update with scope "user",
`memnest-ctl personal`): each is stored there through the one write path (dedup against
what the tier holds), then deleted from the workspace only if it is still the version that
was copied, so a concurrent edit is never lost."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import invalid
from ..core.records import Memory, Origin, exact_iso
from ..curation.ingest import Outcome
from .context import CallContext
from .forget import forget
from .remember import Entry, remember
from .tiers import personal_of


@dataclass(frozen=True)
class Moved:
    """Each id asked: the personal memory it became (its shown id; a duplicate of one the
    tier held is that one), or None when the workspace holds no such memory; and the ids
    left in the workspace because they changed while they were copied."""
    became: dict[int, int | None]
    changed: list[int]
    memories: dict[int, Memory]  # each personal memory made, by its shown id


def make_personal(ctx: CallContext, ids: list[int]) -> Moved:
    tier = personal_of(ctx, "cannot move memories to the personal tier")
    asked = list(dict.fromkeys(ids))
    store = ctx.store
    with store.reading():
        found = [m.copy() for i in asked if (m := store.catalog.get(i)) is not None
                 and m.workspace == ctx.workspace]
    shared = [m.id for m in found if m.scope == "shared"]
    if shared:
        raise invalid(f"memory {shared[0]} is shared with the team (.memnest/shared/): "
                      "moving it to your personal tier would delete it for everyone; "
                      "unshare it first (scope private), then move it")
    if not found:
        return Moved({i: None for i in asked}, [], {})
    done = remember(tier, [_entry(m) for m in found], batch=True)
    made = {m.id: o.memory for m, o in zip(found, done.outcomes) if isinstance(o, Outcome)}
    copied = {i: m.id for i, m in made.items()}
    gone = forget(ctx, list(copied), {m.id: exact_iso(m.updated_at) for m in found
                                      if m.id in copied})
    return Moved({i: copied.get(i) for i in asked}, [m.id for m in gone.changed],
                 {m.id: m for m in made.values()})


def _entry(m: Memory) -> Entry:
    """The memory as the personal tier stores it: its text and fields, its provenance; no
    code anchors (the tier belongs to no workspace) and no second judging."""
    return Entry(m.content, m.category, list(m.tags), m.importance, anchors=None,
                 auto_anchor=False, scope="user", keep_as_is=True,
                 origin=Origin(m.origin_via, m.origin_client, m.origin_session))
