"""A worktree that kept a memory of its own (before worktrees shared their repository's, or
while MEMNEST_WORKTREES=own) brings it into the repository's memory once: every memory, its
links and keep-separate verdicts, through memory_import's path (dedup, merges, conflict
pairs), keeping each memory's provenance and recording the worktree it was written in.

The worktree's database is left in place, marked as merged (so it is merged once), and the
repository's memory keeps a report of each merge, which memory_stats shows."""
from __future__ import annotations

import dataclasses
import json
import logging
import threading
from dataclasses import dataclass

from ..core.records import Memory, Origin, utcnow
from ..curation.ingest import Item
from ..store.changes import Changes
from ..store.store import MemoryStore
from .context import CallContext
from .exporting import read_content
from .importing import load
from .transfer import Parsed

log = logging.getLogger(__name__)

MERGED_INTO = "merged_into"  # Meta of the worktree's database: where its memories went
MERGES = "worktree_merges"  # Meta of the repository's database: the reports, newest last
MAX_REPORTS = 50
_merging = threading.Lock()  # one merge at a time: a second call waits, then finds it done


@dataclass(frozen=True)
class MergeReport:
    worktree: str
    database: str
    memories: int
    stored: int
    duplicates: int
    merged: int
    links: int
    at: str

    def view(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def merge_worktree(ctx: CallContext, source: MemoryStore, worktree: str) -> MergeReport | None:
    """Bring the memories `source` (the worktree's own database) holds for `worktree` into
    `ctx`'s workspace, unless they were brought already."""
    with _merging:
        if source.meta(MERGED_INTO):
            return None
        found = read_content(source, worktree)
        memories = found.memories
        place = {m.id: n for n, m in enumerate(memories)}
        parsed = Parsed([_item(m, worktree) for m in memories], [f"m{m.id}" for m in memories],
                        [(rel, place[a], place[b]) for rel, a, b in found.edges],
                        [(place[a], place[b]) for a, b in found.verdicts], found.model)
        done = load(ctx, parsed, source.db_path)
        report = MergeReport(worktree, source.db_path, len(memories), done.memories.stored,
                             done.memories.duplicate, done.memories.merged, done.edges.new,
                             utcnow().isoformat() + "Z")
        _record(ctx.store, report)
        with source.writing():
            source.commit(Changes(meta={MERGED_INTO: json.dumps(
                {"workspace": ctx.workspace, "at": report.at})}))
    log.info("merged the memory of worktree %s into %s: %s", worktree, ctx.workspace,
             report.view())
    return report


def merges(store: MemoryStore) -> list[dict[str, object]]:
    """The reports of the worktree databases merged into this one (memory_stats)."""
    try:
        found = json.loads(store.meta(MERGES) or "[]")
    except ValueError:
        return []
    return found if isinstance(found, list) else []


def _record(store: MemoryStore, report: MergeReport) -> None:
    with store.writing():
        kept = (merges(store) + [report.view()])[-MAX_REPORTS:]
        store.commit(Changes(meta={MERGES: json.dumps(kept)}))


def _item(m: Memory, worktree: str) -> Item:
    """The memory as the repository's memory takes it: every field and its provenance, and
    the worktree it was written in. A shared memory comes in private: its file stays in
    that worktree's branch, and team sync brings it in where the branch is merged."""
    return Item(m.content, m.category, list(m.tags), m.importance, m.created_at, m.updated_at,
                m.access_count, m.accessed_at,
                dataclasses.replace(m.code, worktree=m.code.worktree or worktree),
                origin=Origin(m.origin_via, m.origin_client, m.origin_session))
