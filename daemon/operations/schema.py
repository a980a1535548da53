"""Schema: what a workspace's database file holds (tables, columns, row counts, indexes,
the daemon's own search indexes), for writing memory_query's Cypher (memory_schema)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cypher import run as query_run
from ..storage.database import Database
from .context import CallContext


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    primary_key: bool


@dataclass(frozen=True)
class Table:
    name: str
    kind: str  # NODE or REL, as the engine names it
    rows: int | None
    columns: list[Column]
    connections: list[tuple[str, str]] = field(default_factory=list)  # REL: (from, to)

    @property
    def primary_key(self) -> str | None:
        return next((c.name for c in self.columns if c.primary_key), None)


@dataclass(frozen=True)
class SearchIndex:
    name: str
    kind: str
    property: str
    entries: int


@dataclass(frozen=True)
class Schema:
    database: str  # the file's path
    engine_version: str
    tables: list[Table]
    db_indexes: list[dict[str, Any]]  # the engine's own: table, name, type, properties
    search_indexes: list[SearchIndex]
    dimensions: int  # of the vector index
    model: str  # the embedding model
    memories_in_database: int
    memories_in_workspace: int
    next_memory_id: int


def describe(ctx: CallContext) -> Schema:
    """The database file of `ctx`'s workspace, under the read lock."""
    store = ctx.store
    with store.reading():
        db = store.db
        tables = [_table(db, name, kind) for name, kind in query_run.tables(db)]
        db_indexes = [{"table": r[0], "name": r[1], "type": r[2], "properties": r[3]}
                      for r in db.rows("CALL show_indexes() RETURN *")]
        in_workspace = sum(1 for m in store.catalog.values() if m.workspace == ctx.workspace)
        next_id = max(max(store.catalog, default=0) + 1, int(store.meta("next_id") or 1))
        search = [SearchIndex("vector", "exact cosine similarity over a float32 matrix, in "
                              "memory", "embedding", len(store.vectors)),
                  SearchIndex("keyword", "BM25 (tantivy, English stemming), in memory",
                              "content", len(store.keywords))]
        version = str(db.rows("CALL db_version() RETURN *")[0][0])
        return Schema(store.db_path, version, tables, db_indexes, search, store.vectors.dim,
                      store.model, len(store.catalog), in_workspace, next_id)


def _table(db: Database, name: str, kind: str) -> Table:
    info = query_run.table_info(db, name)
    columns = [Column(c[1], c[2], kind == "NODE" and c[4] is True) for c in info]
    connections: list[tuple[str, str]] = []
    if kind == "REL":
        pairs = db.rows(f"CALL show_connection({query_run.quote_string(name)}) RETURN *")
        connections = [(p[0], p[1]) for p in pairs]
    return Table(name, kind, query_run.count_rows(db, name, kind), columns, connections)
