"""memory_set_workspace: which project a client's later calls go to.

The daemon serves every client, so it keeps no per-client state: it checks the new
workspace and answers with a `session` directive that the client (memnest-mcp) applies to
its own later calls (operations/workspace.py checks and opens it)."""
from typing import Any, TypedDict

from ..operations.workspace import switch_workspace
from .registry import ToolContext, tool


class SetWorkspaceArgs(TypedDict, total=False):
    workspace: str  # required
    db_path: str


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
def memory_set_workspace(ctx: ToolContext, args: SetWorkspaceArgs) -> dict[str, Any]:
    done = switch_workspace(ctx, ctx.stores, args["workspace"], args.get("db_path", ""),
                            ctx.confinement)
    return {"workspace": done.workspace, "database": done.database,
            "memories": done.memories,
            "session": {"workspace": done.workspace, "db_path": done.db_path}}
