"""memory_schema: what a workspace's database holds, for writing memory_query's Cypher
(operations/schema.py gathers it)."""
from typing import Any, TypedDict

from ..operations.schema import Schema, Table, describe
from .registry import ToolContext, tool


class SchemaArgs(TypedDict, total=False):
    """memory_schema takes no arguments."""


@tool("memory_schema",
      "Describe this workspace's database: every node and relationship table with its columns "
      "and types (relationships with FROM and TO), row counts, the database's own indexes and "
      "the daemon's search indexes (vector and keyword) with their sizes. Use it before "
      "writing Cypher for memory_query.",
      {"type": "object", "properties": {}, "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_schema(ctx: ToolContext, args: SchemaArgs) -> dict[str, Any]:
    return _schema_view(describe(ctx), ctx.workspace)


def _schema_view(found: Schema, workspace: str) -> dict[str, Any]:
    vector, keyword = found.search_indexes
    daemon_indexes = [
        {"name": vector.name, "kind": vector.kind, "table": "Memory",
         "property": vector.property, "entries": vector.entries,
         "dimensions": found.dimensions, "model": found.model},
        {"name": keyword.name, "kind": keyword.kind, "table": "Memory",
         "property": keyword.property, "entries": keyword.entries},
    ]
    return {
        "database": found.database,
        "engine": f"LadybugDB {found.engine_version}",
        "tables": [_table_view(t) for t in found.tables],
        "indexes": {"database": found.db_indexes, "daemon": daemon_indexes},
        "memories_in_database": found.memories_in_database,
        "memories_in_workspace": found.memories_in_workspace,
        "workspace": workspace,
        "next_memory_id": found.next_memory_id,
        "note": "memory_query sees the whole database file; Memory rows carry a `workspace` "
                "property (this workspace's value is shown above).",
    }


def _table_view(table: Table) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": table.name, "type": table.kind.lower(), "rows": table.rows,
        "columns": [{"name": c.name, "type": c.type,
                     **({"primary_key": True} if c.primary_key else {})}
                    for c in table.columns]}
    if table.kind == "NODE":
        entry["primary_key"] = table.primary_key
    elif table.kind == "REL":
        entry["connections"] = [{"from": a, "to": b} for a, b in table.connections]
        if len(table.connections) == 1:
            entry["from"], entry["to"] = table.connections[0]
    return entry
