"""Every MCP tool the daemon serves. Importing this package registers them all."""
from . import memory  # noqa: F401  (registers the core memory tools)
from .registry import TOOLS, Tool, ToolContext  # noqa: F401
