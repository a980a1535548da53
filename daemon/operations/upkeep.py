"""Upkeep: consolidating a workspace's memory (curation/dream.py), rebuilding the search
indexes from the database, and checking everything derived from it (store/verify.py);
memory_dream, memory_reindex and memory_verify."""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..curation.dream import DreamReport, dream
from ..store.verify import verify
from .context import CallContext


@dataclass(frozen=True)
class Reindexed:
    memories: int
    vector_indexed: int
    keyword_indexed: int
    duration_ms: float


def consolidate(ctx: CallContext, dry_run: bool = False, force: bool = False) -> DreamReport:
    """A dream over `ctx`'s workspace: only when enough changed since the last one unless
    `force`; `dry_run` reports what it would do and changes nothing."""
    return dream(ctx.store, ctx.workspace, ctx.embedder, ctx.settings.dream,
                 dry_run=dry_run, force=force, progress=ctx.progress)


def reindex(ctx: CallContext) -> Reindexed:
    """The catalog and every search index rebuilt from the database, with their counts."""
    store = ctx.store
    started = time.monotonic()
    ctx.progress(0, 1, "rebuilding indexes")
    with store.writing():
        store.reload()
        counts = len(store.catalog), len(store.vectors), len(store.keywords)
    ctx.progress(1, 1, "done")
    return Reindexed(*counts, round((time.monotonic() - started) * 1000, 1))


def check_derived(ctx: CallContext, repair: bool = False, quick: bool = False
                  ) -> dict[str, object]:
    """The database against everything derived from it, each mismatch listed; `repair`
    fixes what the database itself can; `quick` skips comparing every stored vector."""
    ctx.progress(0, 1, "verifying")
    report = verify(ctx.store, repair=repair, quick=quick)
    ctx.progress(1, 1, "done")
    return report
