"""memory_schema: what a workspace's database holds, for writing memory_query's Cypher."""
from ..cypher import run as query_run
from .registry import ToolContext, tool


@tool("memory_schema",
      "Describe this workspace's database: every node and relationship table with its columns "
      "and types (relationships with FROM and TO), row counts, the database's own indexes and "
      "the daemon's search indexes (vector and keyword) with their sizes. Use it before "
      "writing Cypher for memory_query.",
      {"type": "object", "properties": {}, "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_schema(ctx: ToolContext, args: dict) -> dict:
    store = ctx.store
    with store.reading():
        db = store.db
        tables = []
        for name, kind in query_run.tables(db):
            info = query_run.table_info(db, name)
            entry = {"name": name, "type": kind.lower(),
                     "rows": query_run.count_rows(db, name, kind),
                     "columns": [{"name": c[1], "type": c[2],
                                  **({"primary_key": True} if kind == "NODE" and c[4] is True
                                     else {})} for c in info]}
            if kind == "NODE":
                entry["primary_key"] = next((c[1] for c in info if c[4] is True), None)
            elif kind == "REL":
                pairs = db.rows(f"CALL show_connection({query_run.quote_string(name)}) RETURN *")
                entry["connections"] = [{"from": p[0], "to": p[1]} for p in pairs]
                if len(pairs) == 1:
                    entry["from"], entry["to"] = pairs[0][0], pairs[0][1]
            tables.append(entry)
        db_indexes = [{"table": r[0], "name": r[1], "type": r[2], "properties": r[3]}
                      for r in db.rows("CALL show_indexes() RETURN *")]
        memories = len(store.catalog)
        in_workspace = sum(1 for m in store.catalog.values() if m.workspace == ctx.workspace)
        next_id = max(max(store.catalog, default=0) + 1, int(db.meta("next_id") or 1))
        daemon_indexes = [
            {"name": "vector", "kind": "exact cosine similarity over a float32 matrix, in "
             "memory", "table": "Memory", "property": "embedding", "entries": len(store.vectors),
             "dimensions": store.vectors.dim, "model": store.model},
            {"name": "keyword", "kind": "BM25 (tantivy, English stemming), in memory",
             "table": "Memory", "property": "content", "entries": len(store.keywords)},
        ]
        version = db.rows("CALL db_version() RETURN *")[0][0]
    return {
        "database": store.db_path,
        "engine": f"LadybugDB {version}",
        "tables": tables,
        "indexes": {"database": db_indexes, "daemon": daemon_indexes},
        "memories_in_database": memories,
        "memories_in_workspace": in_workspace,
        "workspace": ctx.workspace,
        "next_memory_id": next_id,
        "note": "memory_query sees the whole database file; Memory rows carry a `workspace` "
                "property (this workspace's value is shown above).",
    }
