"""The JSON a tool call carries, as the shims see it: the arguments they send and the result
they get back. Their shapes are the daemon's (each tool's schema, which travels over
ListTools); the shims read a few fields of them, each where it reads it."""
from typing import Any

ToolArguments = dict[str, Any]
ToolResult = dict[str, Any]  # json.loads of the daemon's result_json
