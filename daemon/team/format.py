"""One shared memory as one file: `<workspace>/.memnest/shared/<global id>.json`.

The format is JSON with sorted keys, two-space indentation and one field per line (a list
item per line), UTF-8, ending in a newline. Chosen over a front-matter text format because
it needs no parser of our own (a hand-written one is where hostile input finds bugs), a
merge that git could not finish leaves conflict markers that make it invalid JSON (so it
cannot be half-imported), and the export is canonical: the same memory gives the same bytes
on every machine (sorted keys, sorted relations, times to the second, no local ids or
paths), so a sync never produces a diff of its own.

    {
      "_memnest": 1,
      "author": "alice",
      "category": "decision",
      "content": "We deploy with blue-green on Fridays.",
      "created_at": "2026-12-02T03:00:00Z",
      "importance": 4,
      "relations": [
        {"to": "5f0c…", "type": "SUPERSEDES"}
      ],
      "tags": [
        "deploy"
      ],
      "updated_at": "2026-12-02T03:10:00Z"
    }

A deleted shared memory leaves a tombstone, `{"_memnest": 1, "deleted": true}`, so the
deletion reaches every clone (identical bytes wherever it is deleted). A memory that cites
code also carries `anchors` (core/anchors.py), relative to the workspace and without what is
local to one checkout (file size, mtime), so a teammate's memnest checks them against their
own checkout of the same repository.
"""
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from memnest_proto.contract import CATEGORIES

from ..code.files import AnchorError, clean_path
from ..core import strict_json
from ..core.anchors import MAX_ANCHORS, MAX_CODE_JSON, Anchor, CodeContext
from ..core.records import GLOBAL_ID, Memory, from_iso, iso, normalise_tags
from ..core.types import RELATION_TYPES, Category
from ..curation import admission

VERSION = 1
SUFFIX = ".json"
SIGNATURE = b"{"  # an existing file is replaced only if it starts so (safe_files.write_file)
MAX_FILE_BYTES = 256 * 1024
MAX_TAGS = 50
MAX_TAG_CHARS = 100
MAX_RELATIONS = 200
MAX_AUTHOR_CHARS = 200
CONFLICT_MARKERS = ("<<<<<<<", "=======", ">>>>>>>")
RESOLVE_HINT = ("edit the file to keep one version (remove the <<<<<<< ======= >>>>>>> "
                "lines, or run `git checkout --ours/--theirs -- FILE`), then git add and "
                "commit it; the memory keeps its last good version until then")


def file_name(global_id: str) -> str:
    return global_id + SUFFIX


def global_id_of(name: str) -> str | None:
    """The global id a file name carries, None when it is not a shared memory's name."""
    if not name.endswith(SUFFIX):
        return None
    stem = name[:-len(SUFFIX)]
    return stem if GLOBAL_ID.fullmatch(stem) else None


@dataclass
class Shared:
    """A shared memory as its file holds it."""
    global_id: str
    content: str = ""
    category: Category = "general"
    tags: list[str] = field(default_factory=list)
    importance: int = 3
    author: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    relations: list[tuple[str, str]] = field(default_factory=list)  # (type, to global id)
    anchors: tuple[Anchor, ...] = ()
    deleted: bool = False


class Unreadable(ValueError):
    """Why a file cannot be imported (its memory keeps its last good version)."""


def dump(s: Shared) -> bytes:
    """The file's bytes: canonical, so identical memories give identical files."""
    if s.deleted:
        doc: dict[str, Any] = {"_memnest": VERSION, "deleted": True}
    else:
        doc = {"_memnest": VERSION, "author": s.author, "category": s.category,
               "content": s.content, "created_at": iso(s.created_at),
               "importance": s.importance,
               "relations": [{"to": to, "type": rel} for rel, to in sorted(set(s.relations))],
               "tags": list(s.tags), "updated_at": iso(s.updated_at)}
        if s.anchors:
            doc["anchors"] = [portable(a) for a in s.anchors]
    return (json.dumps(doc, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()


def author_of(m: Memory, user: str) -> str:
    """Who wrote it: a teammate's name as their file gave it, else this machine's user and
    the client it used (never a path)."""
    if m.from_team:
        return m.origin_client
    if m.origin_client and user:
        return f"{user} ({m.origin_client})"
    return user or m.origin_client


def of_memory(m: Memory, relations: list[tuple[str, str]], user: str) -> Shared:
    return Shared(m.global_id, m.content, m.category, list(m.tags), m.importance,
                  author_of(m, user), m.created_at, m.updated_at, relations,
                  shared_anchors(m.code))


# What an anchor says about one checkout only: left out of shared files.
_LOCAL = {"size", "mtime_ns", "auto"}


def portable(a: Anchor) -> dict[str, Any]:
    """An anchor as a shared file holds it: the fields that are not at their default and
    not local to this checkout."""
    default = Anchor(path="")
    return {k: v for k, v in sorted(asdict(a).items())
            if k not in _LOCAL and (k == "path" or v != getattr(default, k))}


def shared_anchors(code: CodeContext) -> tuple[Anchor, ...]:
    """A memory's anchors as they travel (and come back) through a shared file."""
    return tuple(Anchor(**portable(a)) for a in code.anchors)


def _anchors(value: object) -> tuple[Anchor, ...]:
    """The anchors of a pulled file: as memnest writes them, paths inside the workspace."""
    if not isinstance(value, list) or len(value) > MAX_ANCHORS:
        raise Unreadable(f"anchors: not a list of at most {MAX_ANCHORS}")
    text = json.dumps({"anchors": value})
    if len(text) > MAX_CODE_JSON:
        raise Unreadable(f"anchors: over {MAX_CODE_JSON} characters")
    parsed = CodeContext.parse(text).anchors
    if len(parsed) != len(value) or any(set(a) & _LOCAL for a in value):
        raise Unreadable("anchors: each needs a path and fields as memnest writes them")
    for n, a in enumerate(parsed):
        try:
            clean_path(a.path)
        except AnchorError as exc:
            raise Unreadable(f"anchors.{n}: {exc}") from None
    return parsed


def _time(value: object, where: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 64:
        raise Unreadable(f"{where}: not a time")
    try:
        return from_iso(value).replace(microsecond=0)
    except ValueError:
        raise Unreadable(f"{where}: {value!r} is not an ISO 8601 time") from None


def _text(value: object, where: str, limit: int) -> str:
    if not isinstance(value, str):
        raise Unreadable(f"{where}: not a string")
    if len(value) > limit:
        raise Unreadable(f"{where}: {len(value)} characters, over the limit of {limit}")
    try:
        admission.check_storable(value, where)
    except admission.Refused as exc:
        raise Unreadable(str(exc)) from None
    return value


_FIELDS = {"_memnest", "author", "category", "content", "created_at", "importance",
           "relations", "tags", "updated_at", "deleted", "anchors"}


def parse(global_id: str, data: bytes, max_chars: int) -> Shared:
    """The memory a file holds, checked as memory_import checks an export's rows. Raises
    Unreadable with what is wrong (and how to fix a merge conflict)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text (byte {exc.start})") from None
    if any(line.startswith(CONFLICT_MARKERS) for line in text.splitlines()):
        raise Unreadable(f"it holds git conflict markers: {RESOLVE_HINT}")
    try:
        doc = strict_json.loads(text)
    except RecursionError:
        raise Unreadable("nested too deeply") from None
    except ValueError as exc:
        raise Unreadable(f"not valid JSON ({exc}); fix or remove the file, then commit it") \
            from None
    if not isinstance(doc, dict):
        raise Unreadable("not a JSON object")
    version = doc.get("_memnest")
    if version != VERSION or isinstance(version, bool):
        raise Unreadable(f'"_memnest" is {version!r}, not {VERSION} (written by another '
                         "memnest version?)")
    unknown = sorted(set(doc) - _FIELDS)
    if unknown:
        raise Unreadable(f"unknown fields {unknown}")
    if doc.get("deleted") is True:
        return Shared(global_id, deleted=True)
    if "deleted" in doc:
        raise Unreadable('"deleted" must be true when given')
    content = _text(doc.get("content"), "content", max_chars).strip()
    if not content:
        raise Unreadable("content: empty")
    category = doc.get("category", "general")
    if category not in CATEGORIES:
        raise Unreadable(f"category: {category!r} is not one of {list(CATEGORIES)}")
    importance = doc.get("importance", 3)
    if not isinstance(importance, int) or isinstance(importance, bool) or \
            not 1 <= importance <= 5:
        raise Unreadable("importance: not an integer from 1 to 5")
    tags = doc.get("tags", [])
    if not isinstance(tags, list) or len(tags) > MAX_TAGS:
        raise Unreadable(f"tags: not a list of at most {MAX_TAGS}")
    tags = normalise_tags(_text(t, "tags", MAX_TAG_CHARS) for t in tags)
    relations = doc.get("relations", [])
    if not isinstance(relations, list) or len(relations) > MAX_RELATIONS:
        raise Unreadable(f"relations: not a list of at most {MAX_RELATIONS}")
    rels = []
    for n, r in enumerate(relations):
        if not isinstance(r, dict) or set(r) != {"to", "type"} or \
                r["type"] not in RELATION_TYPES or not isinstance(r["to"], str) or \
                not GLOBAL_ID.fullmatch(r["to"]) or r["to"] == global_id:
            raise Unreadable(f"relations.{n}: not {{\"to\": <another global id>, \"type\": "
                             f"one of {list(RELATION_TYPES)}}}")
        rels.append((r["type"], r["to"]))
    author = " ".join(_text(doc.get("author", ""), "author", MAX_AUTHOR_CHARS).split())
    author = "".join(c for c in author if c.isprintable())
    return Shared(global_id, content, category, tags, importance, author,
                  _time(doc.get("created_at"), "created_at"),
                  _time(doc.get("updated_at"), "updated_at"), rels,
                  _anchors(doc.get("anchors", [])))
