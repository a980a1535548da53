"""Argument schemas and checks shared by the tools."""
from typing import Any

from memnest_proto.contract import CATEGORIES

from ..core.errors import invalid
from ..core.records import Memory
from .registry import ToolContext

MAX_IDS = 500
MAX_QUERY_CHARS = 4000

ID: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 2**62}
IDS: dict[str, Any] = {"type": "array", "items": ID, "minItems": 1, "maxItems": MAX_IDS}
TAGS: dict[str, Any] = {"type": "array", "maxItems": 50,
        "items": {"type": "string", "minLength": 1, "maxLength": 100}}
CATEGORY: dict[str, Any] = {"type": "string", "enum": list(CATEGORIES)}
IMPORTANCE: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 5}
PREVIEW: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 100000,
           "description": "Truncate each content to this many characters (default "
                          "MEMORY_MAX_CONTENT); 0 shows none."}
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


def clean_content(ctx: ToolContext, content: str, where: str) -> str:
    text = content.strip()
    if not text:
        raise invalid(f"{where}: content is empty or only whitespace")
    limit = ctx.settings.max_store_chars
    if len(text) > limit:
        raise invalid(f"{where}: content is {len(text)} characters, over the limit of {limit} "
                      "(MEMORY_MAX_STORE_CHARS); split it into several memories")
    return text


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
