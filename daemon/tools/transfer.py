"""memory_export and memory_import: a workspace's memories, relations and keep-separate verdicts
as one portable JSON file, and back. The file and the work are in daemon/operations/
(transfer.py: the format and its checks; exporting.py, importing.py)."""
from typing import Any, TypedDict

from ..operations.exporting import export_memories
from ..operations.importing import Imported, LinkTally, import_file
from ..operations.transfer import FORMAT, VERSION_1
from .registry import ToolContext, tool

PATH: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 4096}


class ExportArgs(TypedDict, total=False):
    path: str
    include_workspace_paths: bool


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
def memory_export(ctx: ToolContext, args: ExportArgs) -> dict[str, Any]:
    with_paths = args.get("include_workspace_paths", False)
    done = export_memories(ctx, args.get("path"), with_paths, ctx.confinement)
    counts = done.counts
    return {"path": done.path, "format": FORMAT, "version": VERSION_1,
            "memories": counts["memories"], "edges": counts["edges"],
            "keep_separate": counts["keep_separate"], "bytes": done.size,
            "includes_workspace_paths": done.includes_workspace_paths}


class ImportArgs(TypedDict):
    path: str


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
def memory_import(ctx: ToolContext, args: ImportArgs) -> dict[str, Any]:
    return _import_view(import_file(ctx, args["path"], ctx.confinement))


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
