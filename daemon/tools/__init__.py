"""Every MCP tool the daemon serves. Importing this package registers them all."""
from . import (  # noqa: F401  (each module registers its tools  # noqa: F401  (graph page; export and import
    graph,
    graph_view,
    memory,
    query,  # noqa: F401  (memory_query, memory_schema
    session,
    transfer,
    upkeep,
)
from .registry import TOOLS, Tool, ToolContext  # noqa: F401
