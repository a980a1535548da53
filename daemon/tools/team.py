"""Team memory tools: memory_share (share or unshare existing memories) and memory_sync
(bring teammates' shared files in now). The work is done in operations/sharing.py over
daemon/team/."""
from typing import Any, TypedDict

from ..operations.sharing import Sharing, Synced, share, sync_now
from ..team import sync as team
from .common import ID, IDS, one_or_many
from .registry import ToolContext, tool

# What each sync report adds up to in memory_sync's answer.
_LISTS = ("came_in", "updated", "merged", "deleted", "unshared", "conflicts")
_NOTES = ("privacy", "untrusted_content")
_COUNTS = ("relations_added", "files_read")


class ShareArgs(TypedDict, total=False):
    id: int
    ids: list[int]
    unshare: bool


@tool("memory_share",
      "Share memories with the team, or stop sharing them (`unshare`). A shared memory is "
      "also kept as a file under .memnest/shared/ (named by a global id, the same on every "
      "machine) to commit and push with the code; teammates' memnest brings it in after a "
      "pull. Sharing is refused when a secret is found in the memory. Unsharing removes the "
      "file (the memory stays here, private) and retires its global id for good: no file "
      "naming it can change the memory again, and sharing it again gives a new one.",
      {"type": "object",
       "properties": {"id": ID, "ids": IDS,
                      "unshare": {"type": "boolean",
                                  "description": "Stop sharing: remove their files."}},
       "additionalProperties": False},
      idempotent=True)
def memory_share(ctx: ToolContext, args: ShareArgs) -> dict[str, Any]:
    ids, _ = one_or_many(dict(args), "id", "ids")
    return _share_view(share(ctx, ids, shared=not args.get("unshare", False)))


def _share_view(done: Sharing) -> dict[str, Any]:
    out: dict[str, Any] = {
        "status": "shared" if done.shared else "unshared",
        "memories": [{"id": m.id, "global_id": m.global_id,
                      **({"file": m.file} if done.shared else {})} for m in done.memories],
        "changed": done.changed, "missing": done.missing}
    if done.shared:
        out["next"] = ("commit and push .memnest/shared/ (git add .memnest; git commit) so "
                       "teammates get them")
    else:
        out["removed_files"] = done.removed_files
        out["retired_global_ids"] = done.retired_global_ids
        out["next"] = "commit the removal so teammates stop sharing them too"
    return out


class SyncArgs(TypedDict, total=False):
    all: bool


@tool("memory_sync",
      "Bring teammates' shared memories in now (memnest also does this by itself on the next "
      "call after a pull or checkout): new ones go through the usual dedup, merge and "
      "conflict checks, edited ones are updated, tombstones delete. Reports what came in, "
      "was updated, merged, deleted or conflicts, files that could not be imported "
      "(e.g. git conflict markers) with how to fix them, and files `ignored` because they "
      "name a memory that is not shared here (a file never changes a private memory).",
      {"type": "object",
       "properties": {"all": {"type": "boolean",
                              "description": "Read every file, not only the changed ones."}},
       "additionalProperties": False},
      long_running=True)
def memory_sync(ctx: ToolContext, args: SyncArgs) -> dict[str, Any]:
    return _sync_view(sync_now(ctx, everything=args.get("all", False)))


def _sync_view(done: Synced) -> dict[str, Any]:
    """The reports of this sync and of those since the last memory_sync, as one."""
    out = team.Report(problems=done.problems).view()
    for report in done.reports:
        view = report.view()
        for key in _LISTS:
            out[key] += view[key]
        for key in _NOTES:
            if view.get(key):
                out[key] = out.get(key, []) + view[key]
        for key in _COUNTS:
            out[key] += view[key]
    out["ignored"] = list(done.ignored)
    out["shared_memories"] = done.shared_memories
    out["folder"] = done.folder
    return out
