"""memory_set_workspace: which project a client's later calls go to.

The daemon serves every client, so it keeps no per-client state: it checks the new
workspace and answers with a `session` directive that the client (memnest-mcp) applies to
its own later calls."""
import os

from ..core.errors import ToolError, invalid
from ..store.registry import check_workspace, database_path
from .registry import ToolContext, tool


@tool("memory_set_workspace",
      "Pin this session to another project directory (and so its memory database) for the "
      "rest of the session. Relative paths start at the current workspace. `db_path` picks "
      "another database file (\":memory:\" for an ephemeral one).",
      {"type": "object",
       "properties": {
           "workspace": {"type": "string", "minLength": 1, "maxLength": 4096},
           "db_path": {"type": "string", "minLength": 1, "maxLength": 4096},
       },
       "required": ["workspace"], "additionalProperties": False},
      idempotent=True)
def memory_set_workspace(ctx: ToolContext, args: dict) -> dict:
    target = os.path.expanduser(args["workspace"].strip())
    if not target:
        raise invalid("workspace is empty")
    workspace = check_workspace(os.path.join(ctx.workspace, target))
    db_path = args.get("db_path", "").strip()
    confined = ctx.confinement
    if confined is not None:
        # the server checked the path as sent; this is where it led when it was resolved
        if db_path:
            raise ToolError("permission_denied", f"tls client {confined.identity!r} may not "
                            "choose the database file: memory_set_workspace takes no db_path "
                            "over TLS")
        if not confined.allows_workspace(workspace):
            raise ToolError("permission_denied",
                            f"tls client {confined.identity!r} may not use workspace "
                            f"{args['workspace'].strip()!r}: {confined.where()}")
    store = ctx.stores.acquire(workspace, db_path)  # opens it now: errors surface here
    try:
        with store.reading():
            memories = len(store.in_scope(workspace))
    finally:
        ctx.stores.release(store)
    return {"workspace": workspace, "database": database_path(workspace, db_path),
            "memories": memories,
            "session": {"workspace": workspace, "db_path": db_path}}
