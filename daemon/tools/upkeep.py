"""Upkeep tools: memory_dream (consolidation), memory_reindex and memory_verify, over
operations/upkeep.py."""
from dataclasses import asdict
from typing import Any, TypedDict

from ..curation.dream import DreamReport
from ..operations.upkeep import check_derived, consolidate, reindex
from .registry import ToolContext, tool


class DreamArgs(TypedDict, total=False):
    dry_run: bool
    force: bool


class ReindexArgs(TypedDict, total=False):
    """memory_reindex takes no arguments."""


class VerifyArgs(TypedDict, total=False):
    repair: bool
    quick: bool


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
def memory_dream(ctx: ToolContext, args: DreamArgs) -> DreamReport:
    return consolidate(ctx, args.get("dry_run", False), args.get("force", False))


@tool("memory_reindex",
      "Rebuild the vector and keyword search indexes from the database and report their "
      "counts. Other calls on this workspace wait while it runs (about a second per ten "
      "thousand memories).",
      {"type": "object", "properties": {}, "additionalProperties": False},
      idempotent=True, long_running=True)
def memory_reindex(ctx: ToolContext, args: ReindexArgs) -> dict[str, Any]:
    return asdict(reindex(ctx))


@tool("memory_verify",
      "Check this workspace's database against everything derived from it (the search "
      "indexes, the graph, topics and tags, the vector snapshot, the journal of deferred "
      "writes) and list each mismatch. `repair` fixes what can be fixed from the database "
      "itself and says what it could not; `quick` skips comparing every stored vector.",
      {"type": "object",
       "properties": {"repair": {"type": "boolean"}, "quick": {"type": "boolean"}},
       "additionalProperties": False},
      idempotent=True, long_running=True)
def memory_verify(ctx: ToolContext, args: VerifyArgs) -> dict[str, Any]:
    return check_derived(ctx, args.get("repair", False), args.get("quick", False))
