"""Export: memory_export's work. A workspace's memories, relations and keep-separate verdicts
written as one export file (transfer.py), under the workspace's .memnest/ (or the user's
MEMNEST_OUTPUT_DIR)."""
from __future__ import annotations

import dataclasses
import json
import os
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, cast

from memnest_proto.version import VERSION

from ..core.records import Memory, utcnow
from ..curation.screening import markers
from ..sources.digest import SIGNATURE as DIGEST_MARK
from ..sources.digest import DigestStyle, render_digest
from ..sources.notes import NOTE_MARK, note_name, render_note
from ..storage.safe_files import Confined, write_file
from ..store.changes import Edge
from ..store.store import MemoryStore
from .context import CallContext
from .transfer import FORMAT, SIGNATURE, VERSION_1, CountName, EdgeRow, ExportFile, MemoryRow

DEFAULT_DIR = ".memnest/exports"
NOTE_SIGNATURE = f"---\n{NOTE_MARK}: 1\n".encode()  # how a note an export wrote starts
DIGEST_SIGNATURE = DIGEST_MARK.encode()


@dataclass(frozen=True)
class Exported:
    path: str  # the file written, absolute
    counts: dict[CountName, int]
    size: int  # bytes written
    includes_workspace_paths: bool


@dataclass(frozen=True)
class Content:
    """What the workspace holds, read under one read lock."""
    memories: list[Memory]
    edges: list[Edge]
    verdicts: list[tuple[int, int]]
    model: str


def export_memories(ctx: CallContext, path: str | None, with_paths: bool,
                    confined: Confined | None = None) -> Exported:
    """Write the workspace's memories to `path` (None: a new file under .memnest/exports/).
    `with_paths`: record the workspace's absolute path; `confined`: a remote caller's
    reach."""
    content = read_content(ctx.store, ctx.workspace)
    doc = export_document(content.memories, content.edges, content.verdicts, content.model,
                          ctx.workspace if with_paths else None, ctx.personal() is ctx)
    data = (json.dumps(doc, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    assert data.startswith(SIGNATURE)
    default = f"{DEFAULT_DIR}/memories-{datetime.now(timezone.utc):%Y%m%d-%H%M%S-%f}.json"
    written = write_file(ctx.workspace, path, default, data, SIGNATURE, "memory export",
                         ctx.settings.output_dir, confined)
    return Exported(written, doc["counts"], len(data), with_paths)


@dataclass(frozen=True)
class ExportedNotes:
    folder: str  # absolute; not made when there was nothing to write
    notes: int
    links: int


def export_notes(ctx: CallContext, confined: Confined | None = None) -> ExportedNotes:
    """Write one Markdown note per memory (sources/notes.py) into a new folder under
    .memnest/exports/: its fields as frontmatter, its links as [[links]] to the other
    notes, readable in Obsidian; importing the folder (from markdown) gives them back."""
    content = read_content(ctx.store, ctx.workspace)
    names = {m.id: note_name(m.id, m.content) for m in content.memories}
    out_of: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for rel, a, b in content.edges:
        out_of[a].append((rel, names[b]))
    folder = f"{DEFAULT_DIR}/notes-{datetime.now(timezone.utc):%Y%m%d-%H%M%S-%f}"
    written = os.path.join(ctx.workspace, folder)
    for m in content.memories:
        data = render_note(_note_fields(m), m.content, out_of[m.id]).encode("utf-8")
        path = write_file(ctx.workspace, None, f"{folder}/{names[m.id]}.md", data,
                          NOTE_SIGNATURE, "memory note", ctx.settings.output_dir, confined)
        written = os.path.dirname(path)
    return ExportedNotes(written, len(content.memories), len(content.edges))


@dataclass(frozen=True)
class ExportedDigest:
    path: str
    shown: int
    left_out: int  # did not fit the size the editors read
    withheld: int  # flagged as speaking to an agent, or private when only shared was asked
    lines: int
    size: int


def export_digest(ctx: CallContext, style: DigestStyle, only_shared: bool,
                  confined: Confined | None = None) -> ExportedDigest:
    """The most important memories as one Markdown file (sources/digest.py) under
    .memnest/exports/, for an editor that reads AGENTS.md or MEMORY.md. Text flagged as
    speaking to an agent is never put where agents read instructions; `only_shared` keeps
    private memories out of a file meant for the repository."""
    content = read_content(ctx.store, ctx.workspace)
    kept = [m for m in content.memories if (m.scope == "shared" or not only_shared)
            and not markers(m.content)]
    digest = render_digest(kept, style, f"memnest {VERSION}")
    data = digest.text.encode("utf-8")
    name = "AGENTS" if style == "agents-md" else "MEMORY"
    default = f"{DEFAULT_DIR}/{name}-{datetime.now(timezone.utc):%Y%m%d-%H%M%S-%f}.md"
    written = write_file(ctx.workspace, None, default, data, DIGEST_SIGNATURE,
                         "memory digest", ctx.settings.output_dir, confined)
    return ExportedDigest(written, digest.shown, digest.left_out,
                          len(content.memories) - len(kept), digest.text.count("\n"),
                          len(data))


def _note_fields(m: Memory) -> dict[str, object]:
    return {"id": m.id, "category": m.category, "tags": list(m.tags),
            "importance": m.importance, "created": _time(m.created_at),
            "updated": _time(m.updated_at), "scope": m.scope,
            "origin": "/".join(p for p in (m.origin_via, m.origin_client) if p),
            "source": m.origin_session if m.origin_via == "import" else ""}


def read_content(store: MemoryStore, workspace: str) -> Content:
    """The workspace's memories (by id), the links and verdicts among them."""
    with store.reading():
        memories = sorted(store.in_scope(workspace), key=lambda m: m.id)
        ids = {m.id for m in memories}
        edges = sorted(e for e in store.graph.edges if e[1] in ids and e[2] in ids)
        verdicts = sorted(p for p in store.graph.separate if p[0] in ids and p[1] in ids)
        return Content(memories, edges, verdicts, store.model)


def export_document(memories: list[Memory], edges: list[Edge], verdicts: list[tuple[int, int]],
                    model: str, workspace: str | None, personal: bool = False) -> ExportFile:
    """The file's JSON: memories keyed "m<id>", links and verdicts naming those keys.
    `workspace`: the workspace's path to record in it, or None to leave paths out;
    `personal`: the personal tier's, marked so that only a caller granted it imports it."""
    # built in the order of the file's fields, header first
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION_1}
    if personal:
        doc["tier"] = "user"
    doc.update({"exported_at": _time(utcnow()), "generator": f"memnest {VERSION}",
                "embedding_model": model})
    if workspace is not None:
        doc["workspace"] = workspace
    doc["counts"] = {"memories": len(memories), "edges": len(edges),
                     "keep_separate": len(verdicts)}
    doc["memories"] = [memory_row(m, model, workspace is not None) for m in memories]
    doc["edges"] = [EdgeRow({"type": rel, "from": f"m{a}", "to": f"m{b}"})
                    for rel, a, b in edges]
    doc["keep_separate"] = [[f"m{a}", f"m{b}"] for a, b in verdicts]
    return cast(ExportFile, doc)


def memory_row(m: Memory, model: str, with_paths: bool) -> MemoryRow:
    row: MemoryRow = {
        "key": f"m{m.id}", "content": m.content, "category": m.category,
        "tags": list(m.tags), "importance": m.importance, "access_count": m.access_count,
        "created_at": _time(m.created_at), "updated_at": _time(m.updated_at),
        "accessed_at": _time(m.accessed_at), "embedding_model": m.embedding_model or model}
    if m.code:  # anchors are workspace-relative; the worktree is a path of this machine
        row["code"] = m.code.to_dict() if with_paths else \
            dataclasses.replace(m.code, worktree="").to_dict()
    if m.global_id:  # the name of its file in .memnest/shared/ (team/)
        row["scope"] = m.scope
        row["global_id"] = m.global_id
    if with_paths:
        row["workspace"] = m.workspace
    return row


def _time(ts: datetime | None) -> str | None:
    return None if ts is None else ts.isoformat() + "Z"
