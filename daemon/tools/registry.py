"""Tool definitions: name, description, JSON schema, MCP annotations and handler, in one place.

The shim builds its MCP tools from these definitions (fetched over gRPC), so adding a tool
here is all it takes to offer it in every editor.
"""
import json
from dataclasses import dataclass, field
from typing import Callable

import jsonschema

from ..errors import invalid


@dataclass
class ToolContext:
    workspace: str
    db_path: str
    stores: object        # StoreRegistry
    embedder: object      # Embedder
    settings: object      # Settings
    runtime: object       # daemon runtime facts for stats
    progress: Callable[[float, float, str], None] = lambda done, total, message: None
    _store: object = None

    @property
    def store(self):
        """The workspace's database, opened on first use."""
        if self._store is None:
            self._store = self.stores.open(self.workspace, self.db_path)
        return self._store


@dataclass
class Tool:
    name: str
    description: str
    schema: dict
    handler: Callable[[ToolContext, dict], dict]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    long_running: bool = False
    validator: jsonschema.protocols.Validator = field(init=False, repr=False)

    def __post_init__(self):
        jsonschema.Draft202012Validator.check_schema(self.schema)
        self.validator = jsonschema.Draft202012Validator(self.schema)

    def validate(self, arguments: dict) -> None:
        errors = sorted(self.validator.iter_errors(arguments), key=lambda e: list(e.path))
        if errors:
            raise invalid("; ".join(_describe(e) for e in errors[:3]))


def _describe(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "arguments"
    message = error.message
    if len(message) > 200:  # jsonschema quotes the whole offending value
        message = message[:200] + "…"
    return f"{where}: {message}"


TOOLS: dict[str, Tool] = {}


def tool(name: str, description: str, schema: dict, **flags):
    def register(handler):
        TOOLS[name] = Tool(name, description, schema, handler, **flags)
        return handler
    return register


def parse_arguments(raw: str) -> dict:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise invalid(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise invalid("arguments must be a JSON object")
    return value
