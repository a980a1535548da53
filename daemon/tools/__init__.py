"""Every MCP tool the daemon serves. Importing this package registers them all."""
from . import graph, memory, session, upkeep  # noqa: F401  (each module registers its tools
from . import query  # noqa: F401  (memory_query, memory_schema
from . import graph_view, transfer  # noqa: F401  (graph page; export and import
from .registry import TOOLS, Tool, ToolContext  # noqa: F401
