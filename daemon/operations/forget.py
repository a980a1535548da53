"""Forget: memory_delete's work. The workspace's memories with the ids given are deleted
with their relationships in one commit; ids it does not hold are reported missing."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..store.changes import Changes
from .context import CallContext

Status = Literal["deleted", "partial", "not_found"]


@dataclass(frozen=True)
class Forgotten:
    deleted: list[int]
    missing: list[int]  # ids not in this workspace

    @property
    def status(self) -> Status:
        if not self.missing:
            return "deleted"
        return "partial" if self.deleted else "not_found"


def forget(ctx: CallContext, ids: list[int]) -> Forgotten:
    """Delete the workspace's memories with these ids (each once, in the order asked)."""
    asked = list(dict.fromkeys(ids))
    store = ctx.store
    with store.writing():
        deleted = [i for i in asked
                   if (m := store.catalog.get(i)) is not None and m.workspace == ctx.workspace]
        if deleted:
            store.commit(Changes(deleted=deleted))
    return Forgotten(deleted, [i for i in asked if i not in deleted])
