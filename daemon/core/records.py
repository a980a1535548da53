"""The in-memory shape of one memory, and how it is shown to callers."""
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from .anchors import NO_CODE, CodeContext
from .types import Category, Scope, Via, is_client_via


def utcnow() -> datetime:
    # LadybugDB TIMESTAMP is naive; every stored time is UTC.
    return datetime.now(timezone.utc).replace(tzinfo=None)


def iso(ts: datetime | None) -> str | None:
    return None if ts is None else ts.isoformat(timespec="seconds") + "Z"


def exact_iso(ts: datetime) -> str:
    """To the microsecond (when not whole seconds): a memory's `updated_at` is the version a
    guarded edit names, and two writes may fall in one second."""
    return ts.isoformat() + "Z"


def from_iso(text: str) -> datetime:
    """An ISO 8601 time ("Z" accepted) as naive UTC, the way times are stored; ValueError
    when it is not one."""
    ts = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    if ts.tzinfo is not None:
        ts = ts.astimezone(timezone.utc).replace(tzinfo=None)
    return ts


def content_hash(content: str) -> str:
    normalised = " ".join(content.split()).casefold()
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


def normalise_tags(tags: Iterable[object] | None) -> list[str]:
    seen: dict[str, None] = {}
    for tag in tags or ():
        cleaned = " ".join(str(tag).split()).lower()
        if cleaned:
            seen.setdefault(cleaned, None)
    return list(seen)


# A shared memory's global id (daemon/team/): a UUID4 as 32 lowercase hex digits.
GLOBAL_ID = re.compile(r"[0-9a-f]{32}")
ORIGIN_CHARS = 200
TEAM_SESSION = "team"  # origin session of memories a teammate's file brought in


@dataclass(frozen=True)
class Origin:
    """Who a write comes from (proto Origin), cleaned: bounded, printable, a known `via`."""
    via: Via = ""
    client: str = ""
    session: str = ""

    @classmethod
    def claimed(cls, via: str, client: str, session: str) -> "Origin":
        """What a caller says about itself: it may name only a client's ways of writing."""
        return cls(via if is_client_via(via) else "", _label(client), _label(session))

    def became(self, via: Via) -> "Origin":
        return replace(self, via=via)


def _label(text: str) -> str:
    return "".join(c for c in text if c.isprintable()).strip()[:ORIGIN_CHARS]


@dataclass(slots=True)  # no per-object dict: ~0.4 KB less per memory held in the catalog
class Memory:
    id: int
    content: str
    content_hash: str
    category: Category
    tags: list[str]
    importance: int
    access_count: int
    workspace: str
    created_at: datetime
    updated_at: datetime
    accessed_at: datetime | None = None
    embedding_model: str = ""
    # provenance: how it was written (agent, cli, hook, import, query), by which client,
    # in which of its sessions; "" when unknown (written before provenance was kept)
    origin_via: Via = ""
    origin_client: str = ""
    origin_session: str = ""
    # the code it cites and the git branch it was written on (stored as its JSON, "" for
    # none: CodeContext.parse at the storage edges, to_json where a row is written)
    code: CodeContext = NO_CODE
    # team memory (daemon/team/): "shared" memories are also kept as files under
    # <workspace>/.memnest/shared/, named by `global_id` (a UUID4 hex given when first shared,
    # the same on every machine; "" until then)
    scope: Scope = "private"
    global_id: str = ""

    def copy(self, **changes: Any) -> "Memory":
        return replace(self, tags=list(self.tags), **changes)

    @property
    def from_team(self) -> bool:
        """Brought in from a teammate's shared file (team/sync.py)."""
        return self.origin_via == "import" and self.origin_session == TEAM_SESSION

    def view(self, preview_chars: int | None = None) -> dict[str, object]:
        """The JSON a caller sees. `preview_chars` truncates content (search and list
        results, which leave provenance to memory_get)."""
        content = self.content
        truncated = preview_chars is not None and len(content) > preview_chars
        if truncated:
            content = content[:preview_chars] + "…"
        out: dict[str, object] = {
            "id": self.id,
            "content": content,
            "category": self.category,
            "tags": list(self.tags),
            "importance": self.importance,
            "access_count": self.access_count,
            "workspace": self.workspace,
            "created_at": iso(self.created_at),
            "updated_at": exact_iso(self.updated_at),
        }
        if self.accessed_at is not None:
            out["accessed_at"] = iso(self.accessed_at)
        if preview_chars is None and (self.origin_via or self.origin_client):  # full view
            out["origin"] = {"via": self.origin_via, "client": self.origin_client,
                             "session": self.origin_session}
        if self.scope == "shared":
            out["scope"] = "shared"
            out["global_id"] = self.global_id
        if truncated:
            out["truncated"] = True
            out["content_chars"] = len(self.content)
        return out
