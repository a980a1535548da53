"""Upkeep tools: memory_dream (consolidation), memory_reindex and memory_verify."""
import time

from ..curation.dream import DreamReport, dream
from ..store.verify import verify
from .registry import ToolContext, tool


@tool("memory_dream",
      "Consolidate this workspace's memory: prune stale, unimportant, unlinked memories; merge "
      "near-identical pairs (their edges and access counts carried over); report clusters that "
      "need your decision and SUPERSEDES cycles; re-embed rows of another model; refresh the "
      "graph signal used by search. Runs only when enough has changed since the last dream "
      "unless `force`; `dry_run` reports what it would do and changes nothing.",
      {"type": "object",
       "properties": {"dry_run": {"type": "boolean"}, "force": {"type": "boolean"}},
       "additionalProperties": False},
      destructive=True, long_running=True)
def memory_dream(ctx: ToolContext, args: dict) -> DreamReport:
    return dream(ctx.store, ctx.workspace, ctx.embedder, ctx.settings.dream,
                 dry_run=args.get("dry_run", False), force=args.get("force", False),
                 progress=ctx.progress)


@tool("memory_reindex",
      "Rebuild the vector and keyword search indexes from the database and report their "
      "counts. Other calls on this workspace wait while it runs (about a second per ten "
      "thousand memories).",
      {"type": "object", "properties": {}, "additionalProperties": False},
      idempotent=True, long_running=True)
def memory_reindex(ctx: ToolContext, args: dict) -> dict:
    store = ctx.store
    started = time.monotonic()
    ctx.progress(0, 1, "rebuilding indexes")
    with store.writing():
        store.reload()
        counts = {"memories": len(store.catalog), "vector_indexed": len(store.vectors),
                  "keyword_indexed": len(store.keywords)}
    ctx.progress(1, 1, "done")
    return {**counts, "duration_ms": round((time.monotonic() - started) * 1000, 1)}


@tool("memory_verify",
      "Check this workspace's database against everything derived from it (the search "
      "indexes, the graph, topics and tags, the vector snapshot, the journal of deferred "
      "writes) and list each mismatch. `repair` fixes what can be fixed from the database "
      "itself and says what it could not; `quick` skips comparing every stored vector.",
      {"type": "object",
       "properties": {"repair": {"type": "boolean"}, "quick": {"type": "boolean"}},
       "additionalProperties": False},
      idempotent=True, long_running=True)
def memory_verify(ctx: ToolContext, args: dict) -> dict:
    ctx.progress(0, 1, "verifying")
    report = verify(ctx.store, repair=args.get("repair", False), quick=args.get("quick", False))
    ctx.progress(1, 1, "done")
    return report
