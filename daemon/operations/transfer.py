"""The export file (format "memnest-export", version 1): its shape, and the checks a file
passes, part by part, before anything of it is imported.

The file names memories by an export key ("m<id>" of the exporting database) rather than by
id, so an import can give them whatever ids the receiving database has free and rewire the
relations and verdicts to those. Embeddings are not written: they belong to one model, would
multiply the size of the file many times over, and an import must not trust vectors that
need not match their text; the importing daemon embeds the text with its own model.
exporting.py writes the file, importing.py loads it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypedDict, cast

from memnest_proto.contract import CATEGORIES

from ..code.files import AnchorError, clean_path
from ..core import strict_json
from ..core.anchors import MAX_CODE_JSON, NO_CODE, CodeContext
from ..core.config import Settings
from ..core.errors import invalid
from ..core.records import from_iso
from ..core.strict_schema import StrictValidator
from ..core.types import RELATION_TYPES, SCOPES, Category, Scope
from ..curation import admission
from ..curation.ingest import Item
from ..store.changes import Edge
from .admitting import LeftOut, clean_tags, private_free

FORMAT = "memnest-export"
VERSION_1 = 1
SIGNATURE = b'{\n "format": "memnest-export"'  # how a file we may overwrite starts
MAX_IMPORT_BYTES = 64 * 1024 * 1024
MAX_IMPORT_MEMORIES = 100_000
MAX_IMPORT_LINKS = 200_000  # edges, and keep-separate verdicts, per file
MAX_SAFE_INT = 2**53 - 1  # the largest integer a JavaScript reader holds exactly
ERRORS_SHOWN = 3  # schema errors named in one refusal

CountName = Literal["memories", "edges", "keep_separate"]


class _MemoryKeys(TypedDict):
    key: str
    content: str


class MemoryRow(_MemoryKeys, total=False):
    """One memory of the file."""
    category: Category
    tags: list[str]
    importance: int
    access_count: int
    created_at: str | None
    updated_at: str | None
    accessed_at: str | None
    embedding_model: str
    workspace: str
    code: dict[str, Any]  # CodeContext as JSON (core/anchors.py)
    scope: Scope
    global_id: str  # a shared memory's file name in .memnest/shared/


EdgeRow = TypedDict("EdgeRow", {"type": str, "from": str, "to": str})


class _FileKeys(TypedDict):
    format: str
    version: int
    memories: list[MemoryRow]


class ExportFile(_FileKeys, total=False):
    tier: str  # "user": the personal tier's memories (reached only with its grant)
    exported_at: str | None
    generator: str
    embedding_model: str
    workspace: str
    counts: dict[CountName, int]
    edges: list[EdgeRow]
    keep_separate: list[list[str]]


_KEY = {"type": "string", "minLength": 1, "maxLength": 100}
_STAMP = {"type": ["string", "null"], "maxLength": 64}
_MEMORY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "key": _KEY,
        "content": {"type": "string", "minLength": 1},
        "category": {"enum": list(CATEGORIES)},
        "tags": {"type": "array", "maxItems": 50,
                 "items": {"type": "string", "minLength": 1, "maxLength": 100}},
        "importance": {"type": "integer", "minimum": 1, "maximum": 5},
        "access_count": {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INT},
        "created_at": _STAMP, "updated_at": _STAMP, "accessed_at": _STAMP,
        "embedding_model": {"type": "string", "maxLength": 200},
        "workspace": {"type": "string", "maxLength": 4096},
        "code": {"type": "object"},
        "scope": {"enum": list(SCOPES)},
        "global_id": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
    },
    "required": ["key", "content"],
    "additionalProperties": False,
}
FILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "format": {"const": FORMAT},
        "version": {"type": "integer"},
        "tier": {"const": "user"},
        "exported_at": _STAMP,
        "generator": {"type": "string", "maxLength": 200},
        "embedding_model": {"type": "string", "maxLength": 200},
        "workspace": {"type": "string", "maxLength": 4096},
        "counts": {"type": "object",
                   "properties": {k: {"type": "integer", "minimum": 0}
                                  for k in ("memories", "edges", "keep_separate")},
                   "additionalProperties": False},
        "memories": {"type": "array", "maxItems": MAX_IMPORT_MEMORIES, "items": _MEMORY_SCHEMA},
        "edges": {
            "type": "array", "maxItems": MAX_IMPORT_LINKS,
            "items": {"type": "object",
                      "properties": {"type": {"enum": list(RELATION_TYPES)},
                                     "from": _KEY, "to": _KEY},
                      "required": ["type", "from", "to"], "additionalProperties": False},
        },
        "keep_separate": {
            "type": "array", "maxItems": MAX_IMPORT_LINKS,
            "items": {"type": "array", "items": _KEY, "minItems": 2, "maxItems": 2},
        },
    },
    "required": ["format", "version", "memories"],
    "additionalProperties": False,
}
_VALIDATOR = StrictValidator(FILE_SCHEMA)


@dataclass
class Parsed:
    """A checked file, ready to import: each memory as an item to ingest, links and verdicts
    naming items by their place in `items`."""
    items: list[Item]
    keys: list[str]
    edges: list[Edge]
    verdicts: list[tuple[int, int]]
    model: str | None  # the model the exporting daemon embedded with
    left_out: LeftOut = field(default_factory=LeftOut)  # private text and secrets not imported
    personal: bool = False  # an export of the personal tier


class Bad(ValueError):
    """What is wrong with an export file, and where."""


def parse_export(data: bytes, shown: str, settings: Settings) -> Parsed:
    """Check every part of the file before anything is written; errors name the file and
    the place in it."""
    try:
        doc = checked_document(data)
        items, index, left_out = memory_items(doc["memories"], settings)
        edges = linked_edges(doc.get("edges", []), index)
        verdicts = linked_verdicts(doc.get("keep_separate", []), index)
        check_counts(doc.get("counts"), {"memories": len(items), "edges": len(edges),
                                         "keep_separate": len(verdicts)})
    except Bad as exc:
        raise invalid(f"{shown} is not a usable memnest export: {exc}") from None
    return Parsed(items, list(index), edges, verdicts, doc.get("embedding_model"), left_out,
                  doc.get("tier") == "user")


# -- the document as a whole -----------------------------------------------------------------

def checked_document(data: bytes) -> ExportFile:
    """The file as JSON of the export's shape: UTF-8, strict JSON, the format and version
    this memnest reads, every field of the schema."""
    doc = decoded(data)
    check_version(doc)
    check_schema(doc)
    return cast(ExportFile, doc)


def decoded(data: bytes) -> dict[str, Any]:
    """The file's JSON object, when it is one with the export's "format" field."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Bad(f"not UTF-8 text (byte {exc.start})") from None
    try:
        doc = strict_json.loads(text)
    except RecursionError:
        raise Bad("nested too deeply") from None
    except ValueError as exc:
        raise Bad(f"not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise Bad(f'no "format": "{FORMAT}" field at the top; was it written by '
                  "memory_export?")
    return doc


def check_version(doc: dict[str, Any]) -> None:
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise Bad('"version" must be an integer')
    if version != VERSION_1:
        newer = " (written by a newer memnest; upgrade this one)" if version > VERSION_1 else ""
        raise Bad(f"version {version} is not supported{newer}; this memnest reads version "
                  f"{VERSION_1}")


def check_schema(doc: dict[str, Any]) -> None:
    """Every field of the file of its type and within its bounds; the first few errors,
    in the order of the file."""
    errors = sorted(_VALIDATOR.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        described = []
        for e in errors[:ERRORS_SHOWN]:
            where = ".".join(str(p) for p in e.absolute_path) or "top level"
            message = e.message if len(e.message) < 200 else e.message[:200] + "…"
            described.append(f"{where}: {message}")
        raise Bad("; ".join(described))


# -- the memories ----------------------------------------------------------------------------

def memory_items(rows: list[MemoryRow], settings: Settings
                 ) -> tuple[list[Item], dict[str, int], LeftOut]:
    """Each memory of the file as an item to ingest, its key's place among them, and what
    admission left out of their texts."""
    items: list[Item] = []
    index: dict[str, int] = {}
    left_out = LeftOut()
    for n, row in enumerate(rows):
        where = f"memories.{n}"
        key = row["key"]
        if key in index:
            raise Bad(f"{where}: key {key!r} is used twice (memories.{index[key]})")
        index[key] = n
        items.append(memory_item(row, where, settings, left_out))
    return items, index, left_out


def memory_item(row: MemoryRow, where: str, settings: Settings, left_out: LeftOut) -> Item:
    """One memory as memory_store would store it: private sections left out, secrets
    redacted, its times, counts and code context kept."""
    check_texts(row, where)
    content = row["content"].strip()
    if not content:
        raise Bad(f"{where}.content: empty or only whitespace")
    if len(content) > settings.max_store_chars:
        raise Bad(f"{where}.content: {len(content)} characters, over the limit of "
                  f"{settings.max_store_chars} (MEMORY_MAX_STORE_CHARS)")
    content = private_free(content, where, settings.max_store_chars, left_out, Bad)
    tags = clean_tags(row.get("tags", []), where, left_out)
    return Item(
        content=content, category=row.get("category", "general"), tags=tags,
        importance=row.get("importance", 3),
        created_at=parse_time(row.get("created_at"), f"{where}.created_at"),
        updated_at=parse_time(row.get("updated_at"), f"{where}.updated_at"),
        access_count=row.get("access_count", 0),
        accessed_at=parse_time(row.get("accessed_at"), f"{where}.accessed_at"),
        code=imported_code(row.get("code"), f"{where}.code"),
        scope=row.get("scope", "private"), global_id=row.get("global_id", ""))


def check_texts(row: MemoryRow, where: str) -> None:
    """Every text of a memory storable (curation/admission.py): no NUL, no lone surrogate."""
    texts = [(row.get(name), f"{where}.{name}")
             for name in ("content", "key", "embedding_model", "workspace")]
    texts += [(tag, f"{where}.tags") for tag in row.get("tags", [])]
    for value, at in texts:
        if isinstance(value, str):
            try:
                admission.check_storable(value, at)
            except admission.Refused as exc:
                raise Bad(str(exc)) from None


def parse_time(value: str | None, where: str) -> datetime | None:
    if value is None:
        return None
    try:
        return from_iso(value)
    except ValueError:
        raise Bad(f"{where}: {value!r} is not an ISO 8601 time") from None


def imported_code(value: dict[str, Any] | None, where: str) -> CodeContext:
    """The code context of an imported memory, as memnest would have written it: anchors
    with a path that could leave the workspace are left out (they are checked against this
    workspace's files when recalled)."""
    if not value:
        return NO_CODE
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if len(text) > MAX_CODE_JSON:
        raise Bad(f"{where}: {len(text)} characters, over the limit of {MAX_CODE_JSON}")
    context = CodeContext.parse(text)
    anchors = []
    for anchor in context.anchors:
        try:
            clean_path(anchor.path)
        except AnchorError:
            continue
        anchors.append(anchor)
    return CodeContext(tuple(anchors), context.branch, context.commit, context.worktree)


# -- links, verdicts, counts -----------------------------------------------------------------

def _known(index: dict[str, int], key: str, where: str) -> int:
    if key not in index:
        raise Bad(f"{where}: no memory with key {key!r} in this file")
    return index[key]


def linked_edges(rows: list[EdgeRow], index: dict[str, int]) -> list[Edge]:
    """The file's relations, between the places of their memories in the file."""
    edges: list[Edge] = []
    for n, e in enumerate(rows):
        a = _known(index, e["from"], f"edges.{n}.from")
        b = _known(index, e["to"], f"edges.{n}.to")
        if a == b:
            raise Bad(f"edges.{n}: memory {e['from']!r} is related to itself")
        edges.append((e["type"], a, b))
    return edges


def linked_verdicts(rows: list[list[str]], index: dict[str, int]) -> list[tuple[int, int]]:
    """The file's keep-separate verdicts, between the places of their memories."""
    verdicts = []
    for n, (x, y) in enumerate(rows):
        a, b = _known(index, x, f"keep_separate.{n}"), _known(index, y, f"keep_separate.{n}")
        if a == b:
            raise Bad(f"keep_separate.{n}: a pair of one memory ({x!r})")
        verdicts.append((a, b))
    return verdicts


def check_counts(counts: dict[CountName, int] | None, found: dict[CountName, int]) -> None:
    """The counts the file states, when it states them, match what it holds: a file cut
    short or edited by hand is refused."""
    for name, expected in (counts or {}).items():
        if expected != found[name]:
            raise Bad(f"counts.{name} says {expected} but the file holds {found[name]}; "
                      "it was cut short or edited")
