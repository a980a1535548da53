"""Every MCP tool the daemon serves. Importing this package registers them all."""
from . import graph, memory, session, upkeep  # noqa: F401  (each module registers its tools)
from . import query  # noqa: F401  (memory_query, memory_schema)
from . import transfer  # noqa: F401  (memory_export, memory_import)
from .registry import TOOLS, Tool, ToolContext  # noqa: F401
