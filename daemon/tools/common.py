"""Argument schemas and checks shared by the tools."""
from collections.abc import Callable
from typing import Any

from memnest_proto.contract import CATEGORIES

from ..core.anchors import MAX_ANCHORS
from ..core.errors import invalid
from ..core.records import Memory
from ..curation import admission
from .registry import ToolContext

MAX_IDS = 500
# Provenance filters of memory_search and memory_list.
ORIGIN_FILTERS: dict[str, Any] = {
    "via": {"type": "string", "enum": ["agent", "cli", "hook", "import", "query"],
            "description": "Only memories written this way: an agent's tool call, "
                           "memnest-ctl, a hook, memory_import, a raw memory_query."},
    "client": {"type": "string", "minLength": 1, "maxLength": 200,
               "description": "Only memories written by this client (as memory_get shows "
                              "it under origin.client, e.g. claude-code)."},
}
MAX_QUERY_CHARS = 4000

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
        "scope": {"type": "string", "enum": ["private", "shared"],
                  "description": "private (default: this machine only) or shared: also kept "
                                 "as a file under .memnest/shared/ to commit with the code, "
                                 "so teammates' memnest brings it in (refused if it holds a "
                                 "secret)."},
    },
    "required": ["content"],
    "additionalProperties": False,
}


def one_or_many(args: dict, single: str, many: str) -> tuple[list, bool]:
    """Tools take either one thing or a list of them; exactly one of the two."""
    if (single in args) == (many in args):
        raise invalid(f"give either `{single}` or `{many}`, not both and not neither")
    if single in args:
        return [args[single]], False
    return list(args[many]), True


class LeftOut:
    """What curation/privacy.py took out of one call's texts, for the call's result: a note per
    item, keyed as errors name items ("items.3", "updates.0", "memories.12")."""

    MAX_SHOWN = 20

    def __init__(self) -> None:
        self.notes: dict[str, list[str]] = {}

    def add(self, where: str, note: str | None) -> None:
        if note:
            self.notes.setdefault(where, []).append(note)

    def report(self, single: bool) -> dict[str, Any]:
        """`privacy` for a result: the note alone for a one-item call, else the notes by item
        (the first MAX_SHOWN; `privacy_more` counts the rest). Empty when nothing was left
        out, so results without private text or secrets look as they always did."""
        if not self.notes:
            return {}
        notes = {where: "; ".join(parts) for where, parts in self.notes.items()}
        if single:
            return {"privacy": "; ".join(notes.values())}
        shown = dict(list(notes.items())[:self.MAX_SHOWN])
        out: dict[str, Any] = {"privacy": shown}
        if len(notes) > len(shown):
            out["privacy_more"] = len(notes) - len(shown)
        return out


def clean_content(ctx: ToolContext, content: str, where: str,
                  left_out: LeftOut | None = None) -> str:
    """The text to store, as curation/admission.py admits it (what was taken out goes to
    `left_out`)."""
    return private_free(content, where, ctx.settings.max_store_chars, left_out, invalid)


def private_free(content: str, where: str, limit: int, left_out: LeftOut | None,
                 error: Callable[[str], Exception]) -> str:
    """clean_content without a call: `error` makes the exception a refused text raises."""
    try:
        admitted = admission.admit(content, where, limit)
    except admission.Refused as exc:
        raise error(str(exc)) from None
    if left_out is not None:
        left_out.add(where, admitted.note)
    return admitted.text


def clean_tags(tags, where: str, left_out: LeftOut | None = None) -> list[str]:
    """The tags to keep, as curation/admission.py admits them."""
    try:
        kept, note = admission.admit_tags(tags, where)
    except admission.Refused as exc:
        raise invalid(str(exc)) from None
    if left_out is not None:
        left_out.add(where, note)
    return kept


def preview_chars(ctx: ToolContext, args: dict) -> int:
    return args.get("preview_chars", ctx.settings.max_content_preview)


def visible(ctx: ToolContext, m: Memory | None) -> bool:
    return m is not None and m.workspace == ctx.workspace


EMBED_CHUNK = 64


def embed_with_progress(ctx: ToolContext, texts: list[str]) -> list:
    """Embed in chunks so a long batch reports progress to a streaming caller. Chunks are
    cut from the texts in length order, since a batch pads to its longest text."""
    if len(texts) <= EMBED_CHUNK:
        return list(ctx.embedder.embed(texts))
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    vectors: list = [None] * len(texts)
    for start in range(0, len(order), EMBED_CHUNK):
        chunk = order[start:start + EMBED_CHUNK]
        for i, vector in zip(chunk, ctx.embedder.embed([texts[i] for i in chunk])):
            vectors[i] = vector
        done = start + len(chunk)
        ctx.progress(done, len(texts), f"embedded {done} of {len(texts)}")
    return vectors
