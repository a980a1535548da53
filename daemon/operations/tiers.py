"""The personal tier beside a workspace: one database per user (MEMNEST_USER_DIR) whose
memories are recalled in every workspace, next to the workspace's own.

Each database gives its own ids from 1, so a personal memory is shown with its id moved up
by PERSONAL_ID_BASE: a caller can then name it in memory_get, memory_update or
memory_delete like any other memory, and never reaches a workspace memory by mistake.
(Workspace stores serve ids far below it: store.servable_id_limit.)"""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TypeVar

from ..core.errors import ToolError
from ..core.records import Memory
from ..store.registry import database_path
from .context import CallContext

PERSONAL_ID_BASE = 10_000_000_000


def is_personal(memory_id: int) -> bool:
    return memory_id > PERSONAL_ID_BASE


def shown_id(memory_id: int) -> int:
    """A personal memory's id as callers see it."""
    return memory_id + PERSONAL_ID_BASE


def own_id(memory_id: int) -> int:
    """The personal tier's own id of a shown one."""
    return memory_id - PERSONAL_ID_BASE


def split_ids(ids: Iterable[int]) -> tuple[list[int], list[int]]:
    """(the workspace's ids, the personal tier's own ids), each in the order given."""
    mine: list[int] = []
    personal: list[int] = []
    for i in ids:
        (personal if is_personal(i) else mine).append(i)
    return mine, [own_id(i) for i in personal]


T = TypeVar("T")


def in_call_order(chosen: set[int], count: int, ours: Iterable[T], theirs: Iterable[T]
                  ) -> list[T]:
    """The results of a call split between the workspace (`ours`) and the personal tier
    (`theirs`, for the items at the places in `chosen`), back in the call's order."""
    mine, others = iter(ours), iter(theirs)
    return [next(others) if n in chosen else next(mine) for n in range(count)]


def as_shown(m: Memory) -> Memory:
    """A personal memory as callers see it: its shown id."""
    return m.copy(id=shown_id(m.id))


def shifted(ids: Iterable[int]) -> list[int]:
    return [shown_id(i) for i in ids]


def personal_of(ctx: CallContext, why: str) -> CallContext:
    """The personal tier of `ctx`, or a ToolError saying why this caller cannot reach it."""
    personal = ctx.personal()
    if personal is None:
        raise ToolError("permission_denied", f"{why}: this remote client's certificate is "
                        "not allowed the personal tier (the daemon's allow-list grants it "
                        "with \"@personal\")")
    return personal


def has_personal(ctx: CallContext) -> bool:
    """The personal tier's database exists (a memory was stored there once)."""
    return bool(ctx.settings.user_dir) and \
        os.path.exists(database_path(ctx.settings.user_dir, ""))


def recalls_personal(ctx: CallContext) -> CallContext | None:
    """The personal tier a search of `ctx` recalls beside the workspace: None when it is
    the personal tier itself, when MEMNEST_USER_TIER is off, when the caller may not reach
    it, or when it holds nothing (an empty tier costs a search nothing)."""
    if not ctx.settings.user_recall or not has_personal(ctx):
        return None  # never stored a personal memory: nothing is opened or made
    personal = ctx.personal()
    if personal is None or personal is ctx:
        return None
    if not personal.store.per_workspace.get(personal.workspace, 0):
        return None
    return personal
