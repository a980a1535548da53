"""memory_export and memory_import: a workspace's memories, relations and keep-separate verdicts
as one portable JSON file, and back. The file and the work are in daemon/operations/
(transfer.py: the format and its checks; exporting.py, importing.py)."""
import os
from typing import Any, Literal, TypedDict, cast

from ..core.errors import invalid
from ..operations import following
from ..operations.adopting import PLANNED_SHOWN, Action, Adopted, Planned, SourceAsk, adopt
from ..operations.exporting import export_digest, export_memories, export_notes
from ..operations.following import Followed
from ..operations.importing import Imported, LinkTally, import_file
from ..operations.tiers import personal_of
from ..operations.transfer import FORMAT, VERSION_1
from ..sources.kinds import KINDS
from .registry import ToolContext, tool

PATH: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 4096}


class ExportArgs(TypedDict, total=False):
    path: str
    include_workspace_paths: bool
    format: Literal["json", "markdown", "agents-md", "claude-md"]
    scope: Literal["shared", "all"]
    personal: bool


@tool("memory_export",
      "Write this workspace's memories, their links and keep-separate verdicts to a portable "
      "JSON file (a backup, or to move them to another project with memory_import), written "
      "under the workspace's .memnest/ folder (default .memnest/exports/memories-<time>.json). "
      "Workspace paths are left out unless include_workspace_paths is true. "
      "`format: markdown` writes one Markdown note per memory instead (frontmatter, links "
      "as [[links]]; readable in Obsidian) into a new folder under .memnest/exports/.",
      {"type": "object",
       "properties": {
           "format": {"type": "string", "enum": ["json", "markdown", "agents-md",
                                                  "claude-md"],
                      "description": "json (default): one export file; markdown: a folder "
                                     "of notes, one per memory, that memory_import with "
                                     "from: markdown reads back; agents-md, claude-md: the "
                                     "most important memories as one AGENTS.md or MEMORY.md "
                                     "within the 200 lines editors read."},
           "scope": {"type": "string", "enum": ["shared", "all"],
                     "description": "With agents-md or claude-md: only memories shared with "
                                    "the team (default for agents-md, which lives in the "
                                    "repository) or all (default for claude-md)."},
           "path": {**PATH, "description": "File to write, under .memnest/ in the workspace "
                                           "(or under MEMNEST_OUTPUT_DIR when the user set "
                                           "one)."},
           "include_workspace_paths": {"type": "boolean",
                                       "description": "Record the workspace's absolute path "
                                                      "in the file (default false)."},
           "personal": {"type": "boolean",
                        "description": "Export your personal memories (scope user) instead, "
                                       "as a json file under the personal tier's folder "
                                       "(a backup, or to take them to another machine)."},
       },
       "additionalProperties": False})
def memory_export(ctx: ToolContext, args: ExportArgs) -> dict[str, Any]:
    style = args.get("format", "json")
    if args.get("personal"):
        if style != "json" or "scope" in args:
            raise invalid("personal goes with format json: the personal tier is exported "
                          "as one export file")
        ctx = cast(ToolContext, personal_of(ctx, "cannot export personal memories"))
    if "scope" in args and style not in ("agents-md", "claude-md"):
        raise invalid("scope goes with format agents-md or claude-md")
    if style == "agents-md" or style == "claude-md":
        if "path" in args or "include_workspace_paths" in args:
            raise invalid(f"format {style} writes a new file under .memnest/exports/; path "
                          "and include_workspace_paths go with json")
        scope = args.get("scope", "shared" if style == "agents-md" else "all")
        digest = export_digest(ctx, style, scope == "shared", ctx.confinement)
        return {"format": style, "path": digest.path, "memories": digest.shown,
                "left_out": digest.left_out, "withheld": digest.withheld,
                "lines": digest.lines, "bytes": digest.size, "scope": scope}
    if style == "markdown":
        if "path" in args or "include_workspace_paths" in args:
            raise invalid("format markdown writes a new folder under .memnest/exports/; "
                          "path and include_workspace_paths go with json")
        notes = export_notes(ctx, ctx.confinement)
        return {"format": "markdown", "folder": notes.folder, "notes": notes.notes,
                "links": notes.links}
    with_paths = args.get("include_workspace_paths", False)
    done = export_memories(ctx, args.get("path"), with_paths, ctx.confinement)
    counts = done.counts
    return {"path": done.path, "format": FORMAT, "version": VERSION_1,
            "memories": counts["memories"], "edges": counts["edges"],
            "keep_separate": counts["keep_separate"], "bytes": done.size,
            "includes_workspace_paths": done.includes_workspace_paths}


ImportArgs = TypedDict("ImportArgs", {"path": str, "from": str, "dry_run": bool,
                                      "prune": bool, "follow": bool, "personal": bool},
                       total=False)


@tool("memory_import",
      "Load memories into this workspace. Without `from`: a file written by memory_export "
      "(memories get new ids, links and keep-separate verdicts are rewired, the usual dedup "
      "applies). With `from`: another tool's memory files (CLAUDE.md, Cline's memory bank, "
      "Cursor rules, AGENTS.md, ...), found where that tool keeps them unless `path` names "
      "them; each section or bullet becomes a memory recording its file and lines. "
      "Importing again changes nothing; an edited section updates its memory; a removed "
      "one is reported (forgotten with `prune`). `dry_run` says what would happen.",
      {"type": "object",
       "properties": {
           "path": {**PATH, "description": "The export file, or (with `from`) a file or "
                                           "folder of that tool's files: relative to the "
                                           "workspace (may not leave it), or absolute (for "
                                           "a remote client, inside its allowed folders)."},
           "from": {"type": "string", "enum": list(KINDS),
                    "description": "Another tool's files to take in, found where it keeps "
                                   "them for this workspace unless `path` names them: "
                                   "CLAUDE.md and Claude Code's auto memory, Cline's memory "
                                   "bank, Cursor, Kiro, Copilot or Windsurf rules, AGENTS.md, "
                                   "Serena's memories, a notes folder (markdown, "
                                   "basic-memory), the MCP memory server's JSONL, a mem0 "
                                   "dump."},
           "dry_run": {"type": "boolean", "description": "With `from`: report what would "
                                                         "be stored, updated, merged or "
                                                         "flagged, and change nothing."},
           "prune": {"type": "boolean", "description": "With `from`: also forget the "
                                                       "memories whose section is gone "
                                                       "from its file."},
           "follow": {"type": "boolean",
                      "description": "With `from`: true keeps this workspace in step with "
                                     "these files (imported again whenever they change); "
                                     "false stops following them."},
           "personal": {"type": "boolean",
                        "description": "Load the export file (an absolute path) into your "
                                       "personal memories (scope user) instead of this "
                                       "workspace."}},
       "additionalProperties": False},
      idempotent=True, long_running=True)
def memory_import(ctx: ToolContext, args: ImportArgs) -> dict[str, Any]:
    if "from" in args:
        if args.get("personal"):
            raise invalid("personal goes with an export file (path), not with `from`")
        return _adopt(ctx, args)
    if "path" not in args:
        raise invalid("path: the export file to load (or give `from` to take in another "
                      "tool's files)")
    if args.get("dry_run") or args.get("prune") or "follow" in args:
        raise invalid("dry_run, prune and follow go with `from`; an export file is loaded "
                      "whole")
    if args.get("personal"):
        if not os.path.isabs(args["path"]):
            raise invalid("path: with personal, give the export file's absolute path")
        ctx = cast(ToolContext, personal_of(ctx, "cannot import into personal memories"))
    return _import_view(import_file(ctx, args["path"], ctx.confinement))


def _adopt(ctx: ToolContext, args: ImportArgs) -> dict[str, Any]:
    source = Followed(args["from"], args.get("path"))
    if args.get("follow") is False:  # stop following; nothing imported
        following.set_followed(ctx, source, False, None)
        return {"from": source.kind, "followed": [f.view() for f in following.followed(
            ctx.store, ctx.workspace)]}
    if args.get("follow") and args.get("dry_run"):
        raise invalid("follow goes with an import, not a dry run")
    done = adopt(ctx, SourceAsk(source.kind, source.path, args.get("dry_run", False),
                                args.get("prune", False)), ctx.confinement)
    out = _adopted_view(done)
    if args.get("follow"):
        following.set_followed(ctx, source, True, done)
    out["followed"] = [f.view() for f in following.followed(ctx.store, ctx.workspace)]
    return out


_COUNTED: tuple[Action, ...] = ("store", "update", "moved", "unchanged", "held", "duplicate",
                                "merge", "conflict", "refused")


def _adopted_view(done: Adopted) -> dict[str, Any]:
    found = done.found
    out: dict[str, Any] = {
        "from": done.kind, "dry_run": done.dry_run,
        "files": [f.shown for f in found.files],
        "pieces": len(found.units),
        **{key: done.count(key) for key in _COUNTED},
        "removed": [{"id": m.id, "source": m.origin_session, "content": m.content[:160]}
                    for m in done.removed],
    }
    if any(done.links.values()):
        out["links"] = done.links
    if done.pruned:
        out["pruned"] = done.pruned
    elif done.removed and not done.dry_run:
        out["removed_hint"] = ("their sections are gone from the files; memory_import with "
                               "prune: true forgets them")
    if found.skipped:
        out["skipped"] = dict(found.skipped)
    shown = [p for p in done.planned if done.dry_run or p.action not in ("unchanged", "held",
                                                                         "duplicate")]
    out["planned" if done.dry_run else "changes"] = [
        _planned_view(p) for p in shown[:PLANNED_SHOWN]]
    if len(shown) > PLANNED_SHOWN:
        out["more"] = len(shown) - PLANNED_SHOWN
    return out


def _planned_view(p: Planned) -> dict[str, Any]:
    out: dict[str, Any] = {"action": p.action, "source": p.unit.session,
                           "content": p.unit.text[:200]}
    if p.memory_id is not None:
        out["id"] = p.memory_id
    if p.similarity is not None:
        out["similarity"] = p.similarity
    if p.note:
        out["note"] = p.note
    return out


def _import_view(done: Imported) -> dict[str, Any]:
    parsed, tally = done.parsed, done.memories
    result: dict[str, Any] = {
        "path": done.path,
        "memories": {"in_file": len(parsed.items), "stored": tally.stored,
                     "duplicate": tally.duplicate, "merged": tally.merged},
        "existing_changed": done.existing_changed,
        "edges": {"in_file": len(parsed.edges), **_links_view(done.edges, "created")},
        "keep_separate": {"in_file": len(parsed.verdicts),
                          **_links_view(done.verdicts, "recorded")},
        "embedding_model": done.model}
    if parsed.model and parsed.model != done.model:
        result["note"] = (f"the file was embedded with {parsed.model}; its text was embedded "
                          f"again with {done.model}")
    result.update(parsed.left_out.report(single=False))
    return result


def _links_view(tally: LinkTally, new: str) -> dict[str, int]:
    return {new: tally.new, "exists": tally.exists, "skipped": tally.skipped}
