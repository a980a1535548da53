"""The version of a memory a caller saw, and times a caller names: an edit or a forget that
names the `updated_at` it was shown is refused when the memory changed since (no lost update
between a person's page and an agent), and memory_list's time bounds. Only writes change
`updated_at`; reads (access counts) and re-anchoring code that moved do not."""
from __future__ import annotations

from datetime import datetime

from ..core.errors import invalid
from ..core.records import Memory, from_iso

MAX_TIME_CHARS = 64


def moment(text: str, where: str) -> datetime:
    """An ISO 8601 time a caller gave ("Z" or an offset accepted), as naive UTC; a clear
    error when it is not one."""
    try:
        if len(text) > MAX_TIME_CHARS:
            raise ValueError
        return from_iso(text.strip())
    except (ValueError, OverflowError):
        raise invalid(f"{where}: {text[:MAX_TIME_CHARS]!r} is not an ISO 8601 time "
                      "(e.g. 2026-12-04T09:30:00Z or 2026-12-04)") from None


def still(m: Memory, expected: datetime | None) -> bool:
    """Whether `m` is the version the caller saw (always, when it named none). Write lock
    held, in the same hold as the write it guards."""
    return expected is None or m.updated_at == expected
