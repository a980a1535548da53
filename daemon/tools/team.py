"""Team memory tools: memory_share (share or unshare existing memories) and memory_sync
(bring teammates' shared files in now). The work is done in daemon/team/."""
from ..core.errors import invalid
from ..team import folder
from ..team import sync as team
from .common import ID, IDS, one_or_many, visible
from .registry import ToolContext, tool


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
def memory_share(ctx: ToolContext, args: dict) -> dict:
    ids, _ = one_or_many(args, "id", "ids")
    shared = not args.get("unshare", False)
    store = ctx.store
    with store.writing():
        ctx.check_still_wanted()
        found = [store.catalog[i] for i in dict.fromkeys(ids)
                 if visible(ctx, store.catalog.get(i))]
        missing = [i for i in dict.fromkeys(ids) if i not in {m.id for m in found}]
        try:
            done = team.set_scope(store, ctx.workspace, found, shared)
        except team.SecretFound as exc:
            raise invalid(str(exc)) from None
        files = {m.id: f".memnest/shared/{store.catalog[m.id].global_id}.json"
                 for m in found}
    out = {"status": "shared" if shared else "unshared",
           "memories": [{"id": m.id, "global_id": store.catalog[m.id].global_id,
                         **({"file": files[m.id]} if shared else {})} for m in found],
           "changed": done["changed"], "missing": missing}
    if shared:
        out["next"] = ("commit and push .memnest/shared/ (git add .memnest; git commit) so "
                       "teammates get them")
    else:
        out["removed_files"] = done["removed_files"]
        out["retired_global_ids"] = done["retired"]
        out["next"] = "commit the removal so teammates stop sharing them too"
    return out


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
def memory_sync(ctx: ToolContext, args: dict) -> dict:
    store = ctx.store  # may already have brought in what changed (ToolContext.store)
    now = team.sync(store, ctx.workspace, ctx.embedder.embed, ctx.settings,
                    everything=args.get("all", False))
    # this sync and those the calls since the last memory_sync did on their own
    reports = team.unreported(store, ctx.workspace)
    if not any(r is now for r in reports):
        reports.append(now)
    out = team.Report(problems=team.warnings(store, ctx.workspace)).view()
    for report in reports:
        view = report.view()
        for key in ("came_in", "updated", "merged", "deleted", "unshared", "conflicts"):
            out[key] += view[key]
        for key in ("privacy", "untrusted_content"):
            if view.get(key):
                out[key] = out.get(key, []) + view[key]
        out["relations_added"] += view["relations_added"]
        out["files_read"] += view["files_read"]
    out["ignored"] = team.ignored(store, ctx.workspace)
    with store.reading():
        shared = sum(m.scope == "shared" for m in store.in_scope(ctx.workspace))
    out["shared_memories"] = shared
    out["folder"] = folder.shared_path(ctx.workspace)
    return out
