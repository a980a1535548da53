"""memory_export and memory_import: a workspace's memories, relations and keep-separate verdicts
as one portable JSON file, and back.

The file (format "memnest-export", version 1) names memories by an export key ("m<id>" of the
exporting database) rather than by id, so an import can give them whatever ids the receiving
database has free and rewire the relations and verdicts to those. Embeddings are not written:
they belong to one model, would multiply the size of the file many times over, and an import
must not trust vectors that need not match their text; the importing daemon embeds the text
with its own model.
"""
import json
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from datetime import datetime, timezone

import numpy as np
from memnest_proto.contract import CATEGORIES
from memnest_proto.version import VERSION

from ..code.files import AnchorError, clean_path
from ..core import strict_json
from ..core.anchors import MAX_CODE_JSON, CodeContext
from ..core.errors import invalid
from ..core.records import SCOPES, content_hash, from_iso, utcnow
from ..curation import admission
from ..curation.conflicts import settle_all
from ..curation.ingest import Item, ingest, merge_candidate
from ..operations.admitting import LeftOut, clean_tags, private_free
from ..storage.database import RELATION_TYPES
from ..storage.safe_files import read_file, write_file
from ..store.changes import Changes
from ..store.graph import pair
from ..team import sync as team
from .common import MAX_SAFE_INT
from .registry import StrictValidator, ToolContext, tool

FORMAT = "memnest-export"
VERSION_1 = 1
SIGNATURE = b'{\n "format": "memnest-export"'  # how a file we may overwrite starts
MAX_IMPORT_BYTES = 64 * 1024 * 1024
MAX_IMPORT_MEMORIES = 100_000
MAX_IMPORT_LINKS = 200_000  # edges, and keep-separate verdicts, per file
LINK_CHUNK = 1000  # links written per write-lock hold
IMPORT_CHUNK = 200  # memories per write-lock hold, so other callers get a turn
DEFAULT_DIR = ".memnest/exports"
PATH = {"type": "string", "minLength": 1, "maxLength": 4096}


def _time(ts: datetime | None) -> str | None:
    return None if ts is None else ts.isoformat() + "Z"


# -- memory_export ---------------------------------------------------------------------------

@tool("memory_export",
      "Write this workspace's memories, their links and keep-separate verdicts to a portable "
      "JSON file (a backup, or to move them to another project with memory_import), written "
      "under the workspace's .memnest/ folder (default .memnest/exports/memories-<time>.json). "
      "Workspace paths are left out unless include_workspace_paths is true.",
      {"type": "object",
       "properties": {
           "path": {**PATH, "description": "File to write, under .memnest/ in the workspace "
                                           "(or under MEMNEST_OUTPUT_DIR when the user set "
                                           "one)."},
           "include_workspace_paths": {"type": "boolean",
                                       "description": "Record the workspace's absolute path "
                                                      "in the file (default false)."},
       },
       "additionalProperties": False})
def memory_export(ctx: ToolContext, args: dict) -> dict:
    store = ctx.store
    with_paths = args.get("include_workspace_paths", False)
    with store.reading():
        memories = sorted(store.in_scope(ctx.workspace), key=lambda m: m.id)
        ids = {m.id for m in memories}
        edges = sorted(e for e in store.graph.edges if e[1] in ids and e[2] in ids)
        verdicts = sorted(p for p in store.graph.separate if p[0] in ids and p[1] in ids)
        model = store.model
        rows = []
        for m in memories:
            row = {"key": f"m{m.id}", "content": m.content, "category": m.category,
                   "tags": list(m.tags), "importance": m.importance,
                   "access_count": m.access_count, "created_at": _time(m.created_at),
                   "updated_at": _time(m.updated_at), "accessed_at": _time(m.accessed_at),
                   "embedding_model": m.embedding_model or model}
            if m.code and CodeContext.parse(m.code):  # anchors are workspace-relative
                row["code"] = json.loads(m.code)
            if m.global_id:  # the name of its file in .memnest/shared/ (team/)
                row["scope"] = m.scope
                row["global_id"] = m.global_id
            if with_paths:
                row["workspace"] = m.workspace
            rows.append(row)
    doc = {"format": FORMAT, "version": VERSION_1, "exported_at": _time(utcnow()),
           "generator": f"memnest {VERSION}", "embedding_model": model}
    if with_paths:
        doc["workspace"] = ctx.workspace
    counts = {"memories": len(rows), "edges": len(edges), "keep_separate": len(verdicts)}
    doc["counts"] = counts
    doc["memories"] = rows
    doc["edges"] = [{"type": rel, "from": f"m{a}", "to": f"m{b}"} for rel, a, b in edges]
    doc["keep_separate"] = [[f"m{a}", f"m{b}"] for a, b in verdicts]
    data = (json.dumps(doc, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    assert data.startswith(SIGNATURE)
    default = f"{DEFAULT_DIR}/memories-{datetime.now(timezone.utc):%Y%m%d-%H%M%S-%f}.json"
    path = write_file(ctx.workspace, args.get("path"), default, data, SIGNATURE,
                      "memory export", ctx.settings.output_dir, ctx.confinement)
    return {"path": path, "format": FORMAT, "version": VERSION_1, **counts,
            "bytes": len(data), "includes_workspace_paths": with_paths}


def _imported_code(value: dict | None, where: str, bad) -> str:
    """The code context of an imported memory, as memnest would have written it: anchors
    with a path that could leave the workspace are left out (they are checked against this
    workspace's files when recalled)."""
    if not value:
        return ""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if len(text) > MAX_CODE_JSON:
        raise bad(f"{where}: {len(text)} characters, over the limit of {MAX_CODE_JSON}")
    context = CodeContext.parse(text)
    anchors = []
    for anchor in context.anchors:
        try:
            clean_path(anchor.path)
        except AnchorError:
            continue
        anchors.append(anchor)
    return CodeContext(tuple(anchors), context.branch, context.commit).to_json()


# -- reading and checking a file -------------------------------------------------------------

_KEY = {"type": "string", "minLength": 1, "maxLength": 100}
_STAMP = {"type": ["string", "null"], "maxLength": 64}
_FILE_SCHEMA = {
    "type": "object",
    "properties": {
        "format": {"const": FORMAT},
        "version": {"type": "integer"},
        "exported_at": _STAMP,
        "generator": {"type": "string", "maxLength": 200},
        "embedding_model": {"type": "string", "maxLength": 200},
        "workspace": {"type": "string", "maxLength": 4096},
        "counts": {"type": "object",
                   "properties": {k: {"type": "integer", "minimum": 0}
                                  for k in ("memories", "edges", "keep_separate")},
                   "additionalProperties": False},
        "memories": {
            "type": "array", "maxItems": MAX_IMPORT_MEMORIES,
            "items": {
                "type": "object",
                "properties": {
                    "key": _KEY,
                    "content": {"type": "string", "minLength": 1},
                    "category": {"enum": list(CATEGORIES)},
                    "tags": {"type": "array", "maxItems": 50,
                             "items": {"type": "string", "minLength": 1, "maxLength": 100}},
                    "importance": {"type": "integer", "minimum": 1, "maximum": 5},
                    "access_count": {"type": "integer", "minimum": 0,
                                     "maximum": MAX_SAFE_INT},
                    "created_at": _STAMP, "updated_at": _STAMP, "accessed_at": _STAMP,
                    "embedding_model": {"type": "string", "maxLength": 200},
                    "workspace": {"type": "string", "maxLength": 4096},
                    "code": {"type": "object"},
                    "scope": {"enum": list(SCOPES)},
                    "global_id": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
                },
                "required": ["key", "content"],
                "additionalProperties": False,
            },
        },
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
_VALIDATOR = StrictValidator(_FILE_SCHEMA)


class _Parsed:
    def __init__(self, items: list[Item], keys: list[str], edges: list, verdicts: list,
                 model: str | None, left_out: LeftOut | None = None):
        self.items, self.keys, self.edges, self.verdicts, self.model = \
            items, keys, edges, verdicts, model
        self.left_out = left_out or LeftOut()  # private text and secrets not imported


class _Bad(ValueError):
    """What is wrong with an export file, and where."""


def _parse_time(value: str | None, where: str) -> datetime | None:
    if value is None:
        return None
    try:
        return from_iso(value)
    except ValueError:
        raise _Bad(f"{where}: {value!r} is not an ISO 8601 time") from None


def _text_ok(value: str, where: str) -> None:
    try:
        admission.check_storable(value, where)
    except admission.Refused as exc:
        raise _Bad(str(exc)) from None


def parse_export(data: bytes, shown: str, settings) -> _Parsed:
    """Check every part of the file before anything is written; errors name the file and
    the place in it."""
    try:
        return _parse(data, settings)
    except _Bad as exc:
        raise invalid(f"{shown} is not a usable memnest export: {exc}") from None


def _parse(data: bytes, settings) -> _Parsed:
    bad = _Bad
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad(f"not UTF-8 text (byte {exc.start})") from None
    try:
        doc = strict_json.loads(text)
    except RecursionError:
        raise bad("nested too deeply") from None
    except ValueError as exc:
        raise bad(f"not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise bad(f'no "format": "{FORMAT}" field at the top; was it written by '
                  "memory_export?")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise bad('"version" must be an integer')
    if version != VERSION_1:
        newer = " (written by a newer memnest; upgrade this one)" if version > VERSION_1 else ""
        raise bad(f"version {version} is not supported{newer}; this memnest reads version "
                  f"{VERSION_1}")
    errors = sorted(_VALIDATOR.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        described = []
        for e in errors[:3]:
            where = ".".join(str(p) for p in e.absolute_path) or "top level"
            message = e.message if len(e.message) < 200 else e.message[:200] + "…"
            described.append(f"{where}: {message}")
        raise bad("; ".join(described))

    items: list[Item] = []
    keys: list[str] = []
    index: dict[str, int] = {}
    left_out = LeftOut()
    for n, row in enumerate(doc["memories"]):
        where = f"memories.{n}"
        key = row["key"]
        if key in index:
            raise bad(f"{where}: key {key!r} is used twice (memories.{index[key]})")
        index[key] = n
        keys.append(key)
        for field in ("content", "key", "embedding_model", "workspace"):
            if field in row:
                _text_ok(row[field], f"{where}.{field}")
        for t in row.get("tags", ()):
            _text_ok(t, f"{where}.tags")
        content = row["content"].strip()
        if not content:
            raise bad(f"{where}.content: empty or only whitespace")
        if len(content) > settings.max_store_chars:
            raise bad(f"{where}.content: {len(content)} characters, over the limit of "
                      f"{settings.max_store_chars} (MEMORY_MAX_STORE_CHARS)")
        # As memory_store would store it: private sections left out, secrets redacted.
        content = private_free(content, where, settings.max_store_chars, left_out, bad)
        items.append(Item(
            content=content, category=row.get("category", "general"),
            tags=clean_tags(row.get("tags"), where, left_out),
            importance=row.get("importance", 3),
            created_at=_parse_time(row.get("created_at"), f"{where}.created_at"),
            updated_at=_parse_time(row.get("updated_at"), f"{where}.updated_at"),
            access_count=row.get("access_count", 0),
            accessed_at=_parse_time(row.get("accessed_at"), f"{where}.accessed_at"),
            code=_imported_code(row.get("code"), f"{where}.code", bad),
            scope=row.get("scope", "private"), global_id=row.get("global_id", "")))

    def known(key: str, where: str) -> int:
        if key not in index:
            raise bad(f"{where}: no memory with key {key!r} in this file")
        return index[key]

    edges = []
    for n, e in enumerate(doc.get("edges", ())):
        a, b = known(e["from"], f"edges.{n}.from"), known(e["to"], f"edges.{n}.to")
        if a == b:
            raise bad(f"edges.{n}: memory {e['from']!r} is related to itself")
        edges.append((e["type"], a, b))
    verdicts = []
    for n, (x, y) in enumerate(doc.get("keep_separate", ())):
        a, b = known(x, f"keep_separate.{n}"), known(y, f"keep_separate.{n}")
        if a == b:
            raise bad(f"keep_separate.{n}: a pair of one memory ({x!r})")
        verdicts.append((a, b))
    counts = doc.get("counts")
    if counts is not None:
        found = {"memories": len(items), "edges": len(edges), "keep_separate": len(verdicts)}
        for name, expected in counts.items():
            if expected != found[name]:
                raise bad(f"counts.{name} says {expected} but the file holds {found[name]}; "
                          "it was cut short or edited")
    return _Parsed(items, keys, edges, verdicts, doc.get("embedding_model"), left_out)


# -- memory_import ---------------------------------------------------------------------------

@tool("memory_import",
      "Load a file written by memory_export into this workspace: memories get new ids, links "
      "and keep-separate verdicts are rewired to them, and the usual dedup applies (text "
      "already here is not stored twice; a close match merges). Importing the same file "
      "again changes nothing. `path` is taken from the workspace unless absolute.",
      {"type": "object",
       "properties": {"path": {**PATH, "description": "The export file: relative to the "
                                                      "workspace (may not leave it), or "
                                                      "absolute (for a remote client, "
                                                      "inside its allowed folders)."}},
       "required": ["path"], "additionalProperties": False},
      idempotent=True, long_running=True)
def memory_import(ctx: ToolContext, args: dict) -> dict:
    data, shown = read_file(ctx.workspace, args["path"], MAX_IMPORT_BYTES, ctx.confinement)
    parsed = parse_export(data, shown, ctx.settings)
    del data
    memories = _ImportedMemories(len(parsed.items))
    _import_memories(ctx, parsed.items, memories)
    _settle_conflict_pairs(ctx, len(parsed.items))
    edge_counts, verdict_counts = _import_links(ctx, parsed, memories.target)
    store = ctx.store
    result = {"path": shown, "memories": {"in_file": len(parsed.items), **memories.counts},
              "existing_changed": len(memories.changed),
              "edges": {"in_file": len(parsed.edges), **edge_counts},
              "keep_separate": {"in_file": len(parsed.verdicts), **verdict_counts},
              "embedding_model": store.model}
    if parsed.model and parsed.model != store.model:
        result["note"] = (f"the file was embedded with {parsed.model}; its text was embedded "
                          f"again with {store.model}")
    result.update(parsed.left_out.report(single=False))
    return result


class _ImportedMemories:
    """Where each item of the file went, and the tally."""

    def __init__(self, count: int):
        self.target: list[int | None] = [None] * count  # the memory each item became
        self.counts = {"stored": 0, "duplicate": 0, "merged": 0}
        self.changed: set[int] = set()  # memories that were here before and a merge changed
        self.before: set[int] | None = None  # what the workspace held before this import


def _import_memories(ctx: ToolContext, items: list[Item], out: _ImportedMemories) -> None:
    """Every item stored, found verbatim, or merged, IMPORT_CHUNK under one write lock."""
    store, workspace = ctx.store, ctx.workspace
    # Text already here verbatim needs no embedding; the rest is embedded outside the lock.
    for item in items:  # shared needs the name of its file
        if not item.global_id:
            item.scope = "private"
    with store.reading():
        present = {n for n, item in enumerate(items) if store.find_hash(
            workspace, content_hash(item.content), item.scope) is not None}
    chunks = [range(start, min(start + IMPORT_CHUNK, len(items)))
              for start in range(0, len(items), IMPORT_CHUNK)]
    embedded = _embedded_ahead(ctx, [[n for n in chunk if n not in present] for chunk in chunks],
                               [item.content for item in items])
    with closing(embedded):  # an early exit waits for the chunk being embedded
        for chunk, vectors in zip(chunks, embedded):
            with store.writing():
                ctx.check_still_wanted()  # chunks already written stay: importing is idempotent
                _import_chunk(ctx, items, chunk, vectors, out)
            if len(items) > IMPORT_CHUNK:
                ctx.progress(chunk.stop, len(items),
                             f"imported {chunk.stop} of {len(items)} memories")


def _settle_conflict_pairs(ctx: ToolContext, imported: int) -> None:
    """The value verdicts of the conflict neighbour rows the import kept (ingest), so that
    searches right after it compare no texts. Progress goes on from the memories' count."""
    def progress(done: int, total: int) -> None:
        if imported > IMPORT_CHUNK:  # as the memories' progress
            ctx.progress(imported + done, imported + total,
                         f"checked the conflict pairs of {done} of {total} memories")
    settle_all(ctx.store, ctx.still_wanted, progress)


def _import_chunk(ctx: ToolContext, items: list[Item], chunk: range,
                  vectors: dict[int, np.ndarray], out: _ImportedMemories) -> None:
    """One chunk, write lock held: duplicates found, near copies absorbed, the rest ingested
    (which may still merge them into a memory that was here before)."""
    store, workspace, settings = ctx.store, ctx.workspace, ctx.settings
    if out.before is None:  # taken under the first write lock: nothing lands in between
        out.before = {i for i, m in store.catalog.items() if m.workspace == workspace}
    before = out.before
    fresh = []
    for n in chunk:
        same = store.find_hash(workspace, content_hash(items[n].content), items[n].scope)
        if same is not None:
            out.target[n] = same.id
            out.counts["duplicate"] += 1
            continue
        if n not in vectors:  # was here a moment ago, deleted since
            vectors[n] = ctx.embedder.embed([items[n].content])[0]
        fresh.append(n)
    # What each item resembles among the memories here before, in one product.
    nearest = dict(zip(fresh, store.vectors.search_many(
        np.stack([vectors[n] for n in fresh]), before, 5,
        min_score=settings.dedup_threshold))) if fresh else {}
    pending = []
    for n in fresh:
        home = _absorbed_by(store, items[n], nearest[n], settings)
        if home is None:
            pending.append(n)
            continue
        out.target[n] = home
        out.counts["merged"] += 1
    if not pending:
        return
    # a global id names one memory, and a retired one names none any more: an item with
    # either comes in private
    named = [n for n in pending if items[n].global_id]
    if named:
        in_use = {m.global_id for m in store.catalog.values() if m.global_id} | \
            set(team.retired(store, workspace))
        for n in named:
            if items[n].global_id in in_use:
                items[n].global_id, items[n].scope = "", "private"
            in_use.add(items[n].global_id)
    outcomes = ingest(store, workspace, [items[n] for n in pending],
                      [vectors[n] for n in pending], settings, merge_into=before,
                      flag_conflicts=False, origin=ctx.origin.became("import"))
    for n, outcome in zip(pending, outcomes):
        out.target[n] = outcome.memory.id
        out.counts[outcome.status] += 1
        if outcome.status != "stored" and outcome.memory.id in before:
            out.changed.add(outcome.memory.id)


def _import_links(ctx: ToolContext, parsed: _Parsed,
                  target: list[int | None]) -> tuple[dict, dict]:
    """The file's links and keep-separate verdicts between the memories its items became;
    the tallies of both."""
    store, workspace = ctx.store, ctx.workspace
    edge_counts = {"created": 0, "exists": 0, "skipped": 0}
    verdict_counts = {"recorded": 0, "exists": 0, "skipped": 0}
    edges = [(rel, target[x], target[y]) for rel, x, y in parsed.edges]
    verdicts = [(target[x], target[y]) for x, y in parsed.verdicts]
    # Sets, not lists: membership tests over a large file's links run under the write lock.
    # Written LINK_CHUNK at a time, so other calls get a turn between chunks.
    seen_edges: set[tuple[str, int, int]] = set()
    seen_verdicts: set[tuple[int, int]] = set()
    for start in range(0, max(len(edges), len(verdicts)), LINK_CHUNK):
        with store.writing():
            ctx.check_still_wanted()
            new_edges = _new_links(
                store, workspace, edges[start:start + LINK_CHUNK], seen_edges, edge_counts,
                lambda e: e in store.graph.edges, lambda e: (e[1], e[2]))
            new_verdicts = _new_links(
                store, workspace, [pair(a, b) for a, b in verdicts[start:start + LINK_CHUNK]],
                seen_verdicts, verdict_counts, lambda v: store.graph.kept_separate(*v),
                lambda v: v)
            if new_edges or new_verdicts:
                store.commit(Changes(edges_added=new_edges, kept_separate=new_verdicts))
    edge_counts["created"] = len(seen_edges)
    verdict_counts["recorded"] = len(seen_verdicts)
    return edge_counts, verdict_counts


def _new_links(store, workspace: str, links: list, seen: set, counts: dict, known,
               ends) -> list:
    """Of `links` (edges or verdicts, ends already mapped to this database's ids), those to
    create: both ends exist in this workspace and are two memories (items merged into one
    are skipped), the link is not there yet and was not made earlier in this import.
    Write lock held."""
    fresh = []
    for link in links:
        a, b = ends(link)
        ma, mb = store.catalog.get(a), store.catalog.get(b)
        if a == b or ma is None or mb is None or ma.workspace != workspace \
                or mb.workspace != workspace:
            counts["skipped"] += 1
        elif link in seen or known(link):
            counts["exists"] += 1
        else:
            seen.add(link)
            fresh.append(link)
    return fresh


def _embedded_ahead(ctx: ToolContext, chunks: list[list[int]], texts: list[str]):
    """The vectors of each chunk's texts, by index: the next chunk is embedded in a thread
    while the caller writes this one (onnxruntime leaves the GIL), and only two chunks of
    vectors are held at a time."""
    def embed(chunk: list[int]) -> dict:
        return dict(zip(chunk, ctx.embedder.embed([texts[n] for n in chunk]))) if chunk else {}

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-embed") as ahead:
        upcoming = ahead.submit(embed, chunks[0]) if chunks else None
        for following in [*chunks[1:], None]:
            assert upcoming is not None
            vectors = upcoming.result()
            upcoming = None if following is None else ahead.submit(embed, following)
            yield vectors


def _absorbed_by(store, item: Item, nearest, settings) -> int | None:
    """An existing memory this item would merge into without changing it (its text is no
    longer and its tags add nothing): the mark of an item an earlier import already merged.
    Taking it as merged keeps a second import of the same file from touching anything.
    `nearest`: the item's (id, cosine) among the memories here before the import."""
    m, _ = merge_candidate([(store.catalog[i], s) for i, s in nearest], item, settings)
    if m is not None and len(item.content) <= len(m.content) and set(item.tags) <= set(m.tags):
        return m.id
    return None  # nothing to merge into, or the merge ingest() would make changes it
