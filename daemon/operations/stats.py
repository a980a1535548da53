"""Stats: what a workspace holds, which workspaces own the rows of its database file, and
the census of the search indexes against the database itself (memory_stats)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from ..core.records import Memory
from ..curation.dream import LastDream, last_dream
from ..store.store import MemoryStore
from ..team import sync as team
from . import tiers
from .context import CallContext
from .worktree_merge import merges

TOP_MEMORIES = 5


@dataclass(frozen=True)
class Stats:
    memories: int
    shared_memories: int
    categories: dict[str, int]  # by name
    topics: Counter[str]  # memories per topic (tag)
    top: list[Memory]  # the most important, then most used
    last_updated: datetime | None
    census: dict[str, int | bool]  # index_census()
    owners: dict[str, int]  # workspace -> memories, of every workspace in the database file
    team_warnings: list[str]  # shared files that could not be imported
    team_synced_at: datetime | None  # when the shared folder was last read
    last_dream: LastDream | None  # what the last dream did
    personal_memories: int | None  # in the personal tier; None: this caller may not see it
    worktree_merges: list[dict[str, object]]  # worktrees' own memories merged into this one


def stats(ctx: CallContext) -> Stats:
    """The workspace's counts and the database's index census, under one read lock."""
    store = ctx.store
    with store.reading():
        mine = store.in_scope(ctx.workspace)
        categories = Counter(m.category for m in mine)
        topics = Counter(t for m in mine for t in m.tags)
        top = sorted(mine, key=lambda m: (m.importance, m.access_count, m.id),
                     reverse=True)[:TOP_MEMORIES]
        census = index_census(store)
        owners = {w: n for w, n in store.per_workspace.items() if n > 0}
        newest = max((m.updated_at for m in mine), default=None)
        shared = sum(m.scope == "shared" for m in mine)
    return Stats(len(mine), shared, dict(sorted(categories.items())), topics, top, newest,
                 census, owners, team.warnings(store, ctx.workspace),
                 team.last_synced(store, ctx.workspace), last_dream(store, ctx.workspace),
                 personal_count(ctx), merges(store))


def personal_count(ctx: CallContext) -> int | None:
    """How many memories the personal tier holds (0 before the first); None when this
    caller may not reach it."""
    tier = ctx.personal()
    if tier is None:
        return None
    if not tiers.has_personal(ctx):
        return 0
    with tier.store.reading():
        return tier.store.per_workspace.get(tier.workspace, 0)


def index_census(store: MemoryStore) -> dict[str, int | bool]:
    """Count, against the database itself, every row the search indexes should hold and do
    not (or hold and should not). Healthy only when every count of a problem is zero."""
    rows = store.census_rows()  # (id, has embedding, embedding model) of every row
    in_db = {i for i, _, _ in rows}
    embedded = {i for i, has_vector, _ in rows if has_vector}
    vector_ids, keyword_ids = store.vectors.ids(), store.keywords.ids()
    problems = {
        "missing_from_vector_index": len(embedded - vector_ids),
        "missing_from_keyword_index": len(in_db - keyword_ids),
        "stray_in_vector_index": len(vector_ids - embedded),
        "stray_in_keyword_index": len(keyword_ids - in_db),
        "rows_without_embedding": len(in_db - embedded),
        "stale_embedding_signature": sum(1 for _, _, model in rows if model != store.model),
    }
    return {"rows_in_database": len(in_db), "rows_with_embedding": len(embedded),
            "vector_indexed": len(vector_ids), "keyword_indexed": len(keyword_ids),
            **problems, "healthy": not any(problems.values())}
