"""The in-memory shape of one memory, and how it is shown to callers."""
import hashlib
from dataclasses import dataclass, replace
from datetime import datetime, timezone


def utcnow() -> datetime:
    # LadybugDB TIMESTAMP is naive; every stored time is UTC.
    return datetime.now(timezone.utc).replace(tzinfo=None)


def iso(ts: datetime | None) -> str | None:
    return None if ts is None else ts.isoformat(timespec="seconds") + "Z"


def content_hash(content: str) -> str:
    normalised = " ".join(content.split()).casefold()
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


def normalise_tags(tags) -> list[str]:
    seen: dict[str, None] = {}
    for tag in tags or ():
        cleaned = " ".join(str(tag).split()).lower()
        if cleaned:
            seen.setdefault(cleaned, None)
    return list(seen)


@dataclass(slots=True)  # no per-object dict: ~0.4 KB less per memory held in the catalog
class Memory:
    id: int
    content: str
    content_hash: str
    category: str
    tags: list[str]
    importance: int
    access_count: int
    workspace: str
    created_at: datetime
    updated_at: datetime
    accessed_at: datetime | None = None
    embedding_model: str = ""

    def copy(self, **changes) -> "Memory":
        return replace(self, tags=list(self.tags), **changes)

    def view(self, preview_chars: int | None = None) -> dict:
        """The JSON a caller sees. `preview_chars` truncates content (search and list results)."""
        content = self.content
        truncated = preview_chars is not None and len(content) > preview_chars
        if truncated:
            content = content[:preview_chars] + "…"
        out = {
            "id": self.id,
            "content": content,
            "category": self.category,
            "tags": list(self.tags),
            "importance": self.importance,
            "access_count": self.access_count,
            "workspace": self.workspace,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
        }
        if self.accessed_at is not None:
            out["accessed_at"] = iso(self.accessed_at)
        if truncated:
            out["truncated"] = True
            out["content_chars"] = len(self.content)
        return out
