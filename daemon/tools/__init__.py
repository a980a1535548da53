"""Every MCP tool the daemon serves. Importing this package registers them all."""
# Each module registers its tools when imported.
from . import code, graph, graph_view, memory, query, schema, session, stats, transfer, upkeep  # noqa: F401
from .registry import TOOLS, Tool, ToolContext  # noqa: F401
