"""memory_stale, the review list of memories whose cited code changed, and the JSON of a
memory's code check (operations/code_checks.py does the checking)."""
from typing import Any, TypedDict

from ..curation.freshness import Freshness
from ..operations.code_checks import stale
from .registry import ToolContext, tool


def code_view(found: Freshness) -> dict[str, Any] | None:
    """A memory's `code`: its anchors' states and branch, None when there is nothing to say."""
    return found.view() or None


class StaleArgs(TypedDict, total=False):
    include_moved: bool


@tool("memory_stale",
      "List the memories whose cited code changed or was deleted since they were written "
      "(anchors: file paths, lines and symbols named in a memory or given with `anchors`), "
      "grouped by file, so you can review them: read the code, then refresh the anchors of "
      "those that still hold with memory_update(updates=[{id, refresh_anchors: true}, …]) "
      "and correct or delete the others.",
      {"type": "object",
       "properties": {"include_moved": {"type": "boolean",
                                        "description": "Also list memories whose code only "
                                                       "moved (re-anchored automatically)."}},
       "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_stale(ctx: ToolContext, args: StaleArgs) -> dict[str, Any]:
    return stale(ctx, bool(args.get("include_moved"))).report
