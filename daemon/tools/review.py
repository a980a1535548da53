"""memory_review: the queue of what was added without asking, disagreements to settle and
stale code (operations/review.py), and marking added memories reviewed."""
from datetime import datetime
from typing import Any, TypedDict

from ..core.errors import invalid
from ..core.records import exact_iso
from ..operations.review import Queue, keep, queue
from .common import IDS, PREVIEW, preview_chars
from .registry import ToolContext, tool

DEFAULT_LIMIT = 20


class ReviewArgs(TypedDict, total=False):
    keep: list[int]
    keep_all: bool
    limit: int
    offset: int
    preview_chars: int


@tool("memory_review",
      "What to review in this workspace: `added`, the memories hooks captured or teammates' "
      "shared files brought in that nobody has reviewed yet (newest first, paged with "
      "`limit` and `offset`); `disagreements` among the memories changed lately (settle each "
      "with memory_keep_separate, memory_relate SUPERSEDES or memory_delete); `stale`, the "
      "memories whose cited code changed. `keep` marks added memories reviewed (they leave "
      "the queue, nothing else changes); `keep_all` marks the whole queue reviewed. Edit "
      "with memory_update, discard with memory_delete.",
      {"type": "object",
       "properties": {
           "keep": {**IDS, "description": "Added memories to mark reviewed."},
           "keep_all": {"type": "boolean",
                        "description": "Mark every added memory waiting now reviewed."},
           "limit": {"type": "integer", "minimum": 1, "maximum": 500,
                     "description": f"Added memories per page (default {DEFAULT_LIMIT})."},
           "offset": {"type": "integer", "minimum": 0, "maximum": 10**9,
                      "description": "Skip this many added memories."},
           "preview_chars": PREVIEW,
       },
       "additionalProperties": False})
def memory_review(ctx: ToolContext, args: ReviewArgs) -> dict[str, Any]:
    if "keep" in args and args.get("keep_all"):
        raise invalid("give `keep` (some ids) or `keep_all`, not both")
    out: dict[str, Any] = {}
    ctx.reading = "keep" not in args and not args.get("keep_all")  # a look creates nothing
    if "keep" in args or args.get("keep_all"):
        done = keep(ctx, None if args.get("keep_all") else list(args["keep"]))
        out = {"kept": done.kept, "missing": done.missing, "remaining": done.remaining}
    return {**out, **_queue_view(queue(ctx, args.get("limit", DEFAULT_LIMIT),
                                       args.get("offset", 0)), preview_chars(ctx, args))}


def _queue_view(q: Queue, preview: int) -> dict[str, Any]:
    return {
        "added": [{**m.view(preview), "origin": {"via": m.origin_via, "client": m.origin_client,
                                                 "session": m.origin_session}}
                  for m in q.added],
        "total": q.total, "offset": q.offset, "has_more": q.has_more, "since": q.since,
        "disagreements": [{"type": d.kind, "similarity": round(d.similarity, 3),
                           "a": _brief(d.a.id, d.a.content, d.a.updated_at),
                           "b": _brief(d.b.id, d.b.content, d.b.updated_at)}
                          for d in q.disagreements],
        "stale": {"count": q.stale_count,
                  "memories": [{"id": i, "content": c[:preview]} for i, c in q.stale]},
    }


def _brief(memory_id: int, content: str, updated_at: datetime) -> dict[str, Any]:
    return {"id": memory_id, "content": content[:300], "updated_at": exact_iso(updated_at)}
