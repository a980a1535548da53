"""Argument schemas and checks shared by the tools, and the notes a memory is shown with."""
from typing import Any, Mapping

from memnest_proto.contract import CATEGORIES

from ..core.anchors import MAX_ANCHORS
from ..core.errors import invalid
from ..core.records import Memory
from ..core.types import CLIENT_VIAS, DAEMON_VIAS, STORE_SCOPES
from ..operations.recall import Notes
from .registry import ToolContext

MAX_IDS = 500
# Provenance filters of memory_search and memory_list.
ORIGIN_FILTERS: dict[str, Any] = {
    "via": {"type": "string", "enum": [*CLIENT_VIAS, *DAEMON_VIAS, "team"],
            "description": "Only memories written this way: an agent's tool call, "
                           "memnest-ctl, a hook, memory_import, a raw memory_query, or "
                           "`team`: brought in from a teammate's shared file (a kind of "
                           "import)."},
    "client": {"type": "string", "minLength": 1, "maxLength": 200,
               "description": "Only memories written by this client (as memory_get shows "
                              "it under origin.client, e.g. claude-code)."},
}
MAX_QUERY_CHARS = 4000
# An ISO 8601 time a caller gives: a memory's updated_at as it read it (the version a guarded
# edit or forget names), a bound of memory_list.
TIME_TEXT: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 64}

# The largest integer a JavaScript client holds exactly (Number.MAX_SAFE_INTEGER): every
# integer a tool takes stays at or below it, so a client never rounds an id.
MAX_SAFE_INT = 2**53 - 1
ID: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": MAX_SAFE_INT}
IDS: dict[str, Any] = {"type": "array", "items": ID, "minItems": 1, "maxItems": MAX_IDS}
TAGS: dict[str, Any] = {"type": "array", "maxItems": 50,
        "items": {"type": "string", "minLength": 1, "maxLength": 100}}
CATEGORY: dict[str, Any] = {"type": "string", "enum": list(CATEGORIES)}
IMPORTANCE: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 5}
PREVIEW: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 100000,
           "description": "Truncate each content to this many characters (default "
                          "MEMORY_MAX_CONTENT); 0 shows none."}
ANCHORS: dict[str, Any] = {
    "type": "array", "maxItems": MAX_ANCHORS,
    "description": "Code this memory is about, so recall can tell when it changed: each a "
                   "file `path` relative to the workspace, optionally `lines` (\"120\" or "
                   "\"120-140\") or a `symbol` (function or class name). Paths named in the "
                   "content (src/app.py:12, `send()` in client/http.py) are anchored "
                   "without being listed here.",
    "items": {"type": "object",
              "properties": {
                  "path": {"type": "string", "minLength": 1, "maxLength": 1024},
                  "lines": {"type": "string", "pattern": "^[1-9][0-9]{0,8}(-[1-9][0-9]{0,8})?$"},
                  "symbol": {"type": "string", "minLength": 1, "maxLength": 200},
              },
              "required": ["path"], "additionalProperties": False},
}
AUTO_ANCHOR: dict[str, Any] = {
    "type": "boolean",
    "description": "Anchor the code paths named in the content (default true)."}
ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "minLength": 1,
                    "description": "The fact, decision or preference to remember."},
        "category": {**CATEGORY, "description": "learning, preference, decision, pattern "
                                                "or general (default)."},
        "tags": {**TAGS, "description": "Topics; each becomes a Topic node."},
        "importance": {**IMPORTANCE, "description": "1 (trivia) to 5 (critical); default "
                                                    "3."},
        "anchors": ANCHORS,
        "auto_anchor": AUTO_ANCHOR,
        "scope": {"type": "string", "enum": list(STORE_SCOPES),
                  "description": "private (default: this workspace, this machine only), "
                                 "shared: also kept as a file under .memnest/shared/ to "
                                 "commit with the code, so teammates' memnest brings it in "
                                 "(refused if it holds a secret), or user: yours in every "
                                 "project (a preference, a habit), kept once in your own "
                                 "data folder and never shared."},
    },
    "required": ["content"],
    "additionalProperties": False,
}


def one_or_many(args: Mapping[str, Any], single: str, many: str) -> tuple[list[Any], bool]:
    """Tools take either one thing or a list of them; exactly one of the two."""
    if (single in args) == (many in args):
        raise invalid(f"give either `{single}` or `{many}`, not both and not neither")
    if single in args:
        return [args[single]], False
    return list(args[many]), True


def preview_chars(ctx: ToolContext, args: Mapping[str, Any]) -> int:
    chars: int = args.get("preview_chars", ctx.settings.max_content_preview)
    return chars


def visible(ctx: ToolContext, m: Memory | None) -> bool:
    return m is not None and m.workspace == ctx.workspace


def noted(item: dict[str, Any], notes: Notes) -> dict[str, Any]:
    """A memory's JSON with what an agent should know about it (operations/recall.py's
    Notes): what replaced it, what it conflicts with, whether it tries to instruct."""
    if notes.supersession_cycle:
        item["supersession_cycle"] = notes.supersession_cycle
    elif notes.superseded_by:
        item["superseded"] = True
        item["superseded_by"] = notes.superseded_by
    if notes.conflicts:
        item["conflicts"] = notes.conflicts
    if notes.untrusted:
        item["untrusted_content"] = notes.untrusted
    return item
