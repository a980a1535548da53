"""After a raw Cypher write (memory_query): bring the Memory rows it made or changed up to
what every tool's write leaves, before the store is rebuilt from the database."""
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypedDict

from ..core.anchors import MAX_CODE_JSON, CodeContext
from ..core.errors import invalid
from ..core.records import Memory, Origin, content_hash, normalise_tags, utcnow
from ..cypher import run as query_run
from ..storage.database import MEMORY_COLUMNS, Database
from .store import Embed, MemoryStore

NOTHING_LEFT = "everything in the content was inside <private>…</private>; nothing stored"
# What a raw write's text goes through before it is indexed, as every tool's write: the
# privacy rules (curation/privacy.py), handed down by the caller since they live above the
# store. text -> (the text to keep, a note of what was taken out, None when nothing was)
Cleaner = Callable[[str], tuple[str, str | None]]


def reconcile(store: MemoryStore, embed_texts: Embed, workspace: str,
              clean: Cleaner, origin: Origin = Origin()) -> "Reconciliation":
    """Give every Memory row a raw Cypher write left what the daemon's indexes need.

    New rows (and rows whose content changed) get a content hash and an embedding from the
    daemon's model; missing category, importance, access count, workspace (the caller's) and
    timestamps get the defaults memory_store would give; tags are normalised and linked to
    Topic nodes. Memories that disappeared lose their verdicts and orphaned topics. The
    caller rebuilds the store from the database afterwards (MemoryStore.reload).

    The text of new and changed rows goes through the installed cleaner first, and the
    cleaned content is written back in the same transaction (`privacy` in the result says
    what was taken out, by memory id); a tag holding private text or a secret is dropped. A
    row whose content was all private is not kept: a new one is deleted, a changed one keeps
    the content it had; then, once the rest is written, the call fails saying so. New rows
    that name no origin get the caller's, as written by a query."""
    with store.db.transaction() as db:
        out = _reconciled(store, db, embed_texts, workspace, clean, origin.became("query"))
    if out["withheld"]:
        ids = ", ".join(str(i) for i in out["withheld"])
        raise invalid(f"Memory {ids}: {NOTHING_LEFT} (a new memory was removed, a changed one "
                      "kept its content; the query's other writes stand)")
    return out


def _cleaned(clean: Cleaner, content: str, tags: list[str]) -> tuple[str, list[str], list[str]]:
    """Content and tags as the cleaner leaves them, and its notes."""
    text, note = clean(content)
    notes = [note] if note else []
    if note:
        text = text.strip()
    kept = [t for t in tags if not clean(t)[1]]
    dropped = len(tags) - len(kept)
    if dropped:
        notes.append(f"{dropped} tag{'s' if dropped > 1 else ''} with private text or a "
                     "secret left out")
    return (text if note else content), kept, notes


class Reconciliation(TypedDict):
    indexed: list[int]  # rows brought up to what the indexes need
    removed: list[int]  # memories the write deleted
    embedded: int  # rows embedded again
    privacy: dict[int, str]  # memory id -> what the cleaner took out of it
    withheld: list[int]  # rows whose content was all private
    scope_kept: list[int]  # rows whose scope or global id the write tried to change


Row = dict[str, Any]  # a Memory row by column (MEMORY_COLUMNS), as the database holds it


class _Pass:
    """One reconciliation: each row the write left, fixed in turn, then written back."""

    def __init__(self, store: MemoryStore, db: Database, workspace: str, clean: Cleaner,
                 origin: Origin):
        self.store, self.db, self.workspace = store, db, workspace
        self.clean, self.origin, self.now = clean, origin, utcnow()
        self.next_id = int(db.meta("next_id") or 1)
        # (the memory as it is to be, whether to embed it, its tags before)
        self.pending: list[tuple[Memory, bool, list[str]]] = []
        self.present: set[int] = set()
        self.out = Reconciliation(indexed=[], removed=[], embedded=0, privacy={}, withheld=[],
                                  scope_kept=[])

    def row(self, values: Row, no_vector: bool) -> None:
        memory_id = values["id"]
        self.present.add(memory_id)
        old = self.store.catalog.get(memory_id)
        self._check(values, old)
        fixed = _with_defaults(values, self.workspace, self.now)
        cleaned = False
        if old is None or values["content"] != old.content or fixed["tags"] != old.tags:
            text = self._cleaned(fixed, old)
            if text is None:  # never a memory: gone again, with its topic links
                self.db.delete([memory_id], normalise_tags(values["tags"]))
                return
            cleaned = text != values["content"]
            fixed["content"] = text
        self._provenance(fixed, values, old)
        digest = content_hash(fixed["content"])
        content_changed = values["content_hash"] != digest
        fixed["content_hash"] = digest
        if values["updated_at"] is None or (old is not None and content_changed
                                            and values["updated_at"] == old.updated_at):
            fixed["updated_at"] = self.now if old is not None else fixed["created_at"]
        embed = no_vector or content_changed or cleaned or (
            old is None and values["embedding_model"] != self.store.model)
        if embed:
            fixed["embedding_model"] = self.store.model
        fixed["embedding_model"] = fixed["embedding_model"] or ""
        if embed or fixed != values or old is None:
            memory = Memory(**{**fixed, "code": CodeContext.parse(fixed["code"])})
            self.pending.append((memory, embed, list(old.tags) if old else []))

    def _check(self, values: Row, old: Memory | None) -> None:
        """A row no tool could have left: refused, and the whole write with it."""
        memory_id, content = values["id"], values.get("content")
        if not isinstance(content, str) or not content.strip():
            raise invalid(f"Memory {memory_id} would have no content; every Memory node needs "
                          "a non-empty `content` (delete memories with memory_delete)")
        if old is None and memory_id < self.next_id:
            free = max(self.next_id, max(self.store.catalog, default=0) + 1)
            raise invalid(f"Memory id {memory_id} belonged to a deleted memory and ids are "
                          f"never reused; use id {free} or above (memory_schema shows "
                          "next_memory_id)")

    def _cleaned(self, fixed: Row, old: Memory | None) -> str | None:
        """The row's text as the cleaner leaves it (its tags too, in `fixed`); None for a
        new row that was all private (a changed one keeps the content it had)."""
        memory_id = fixed["id"]
        text, tags, notes = _cleaned(self.clean, fixed["content"], fixed["tags"])
        if not text:
            self.out["withheld"].append(memory_id)
            if old is None:
                return None
            text = old.content
        if notes:
            self.out["privacy"][memory_id] = "; ".join(notes)
        fixed["tags"] = tags
        return text

    def _provenance(self, fixed: Row, values: Row, old: Memory | None) -> None:
        """Origin, code and scope as only the daemon's own writes set them."""
        if old is None:  # written by this query, whatever the row claims
            fixed["origin_via"] = self.origin.via
            fixed["origin_client"] = values["origin_client"] or self.origin.client
            fixed["origin_session"] = values["origin_session"] or self.origin.session
        for key in ("origin_via", "origin_client", "origin_session", "code"):
            fixed[key] = fixed[key] or ""
        if len(fixed["code"]) > MAX_CODE_JSON or \
                (fixed["code"] and not CodeContext.parse(fixed["code"])):
            fixed["code"] = ""  # only what the daemon could have written stays
        # Scope is a boundary only memory_share crosses (it refuses secrets and retires
        # global ids): a raw write keeps a memory's scope and global id as they were.
        fixed["scope"], fixed["global_id"] = (old.scope, old.global_id) if old is not None \
            else ("private", "")
        if (fixed["scope"], fixed["global_id"]) != (values["scope"] or "private",
                                                    values["global_id"] or ""):
            self.out["scope_kept"].append(fixed["id"])

    def write(self, embed_texts: Embed) -> Reconciliation:
        """The fixed rows written back, the memories the write deleted forgotten."""
        db, catalog = self.db, self.store.catalog
        if self.pending:
            texts = [m.content for m, embed, _ in self.pending if embed]
            vectors = iter(embed_texts(texts)) if texts else iter(())
            for m, embed, old_tags in self.pending:
                db.update(m, next(vectors) if embed else None, old_tags)
        gone = [i for i in catalog if i not in self.present]
        if gone:
            db.delete(gone, sorted({t for i in gone for t in catalog[i].tags}))
        if self.present and max(self.present) + 1 > self.next_id:
            db.set_meta("next_id", str(max(self.present) + 1))
        self.out["indexed"] = sorted(m.id for m, _, _ in self.pending)
        self.out["removed"] = sorted(gone)
        self.out["embedded"] = sum(1 for _, embed, _ in self.pending if embed)
        return self.out


def _with_defaults(values: Row, workspace: str, now: datetime) -> Row:
    """The row with what memory_store would have given where it has nothing."""
    fixed = dict(values)
    fixed["category"] = values["category"] or "general"
    importance = values["importance"]
    fixed["importance"] = 3 if importance is None else min(5, max(1, int(importance)))
    fixed["access_count"] = min(query_run.MAX_ACCESS_COUNT,
                                max(0, int(values["access_count"] or 0)))
    fixed["workspace"] = values["workspace"] or workspace
    fixed["tags"] = normalise_tags(values["tags"])
    fixed["created_at"] = values["created_at"] or now
    return fixed


def _reconciled(store: MemoryStore, db: Database, embed_texts: Embed, workspace: str,
                clean: Cleaner, origin: Origin) -> Reconciliation:
    cols = ", ".join(f"m.{c}" for c in MEMORY_COLUMNS)
    reconciling = _Pass(store, db, workspace, clean, origin)
    for row in db.rows(f"MATCH (m:Memory) RETURN {cols}, m.embedding IS NULL"):
        reconciling.row(dict(zip(MEMORY_COLUMNS, row[:-1])), row[-1])
    return reconciling.write(embed_texts)
