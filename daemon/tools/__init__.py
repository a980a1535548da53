"""Every MCP tool the daemon serves. Importing this package registers them all."""
# Each module registers its tools when imported.
from . import (  # noqa: F401
    code,
    graph,
    graph_view,
    memory,
    query,
    review,
    schema,
    session,
    stats,
    team,
    transfer,
    upkeep,
)
from .registry import TOOLS, Tool, ToolContext  # noqa: F401
