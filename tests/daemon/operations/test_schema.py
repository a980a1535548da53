"""operations/schema.py in process: the tables, columns, keys and row counts of the real
database file, and the daemon's own indexes beside them."""
from memnest_daemon.operations.linking import Link, relate
from memnest_daemon.operations.schema import describe
from support import stored_memories


def test_tables_columns_and_counts_are_the_files(ctx):
    a, b = stored_memories(ctx, "The API gateway terminates TLS for every service.",
                           "Service certificates are renewed by cert-manager weekly.",
                           tags=("tls",))
    relate(ctx, [Link(a, b)], batch=False)
    schema = describe(ctx)
    tables = {t.name: t for t in schema.tables}
    memory = tables["Memory"]
    assert memory.kind == "NODE" and memory.primary_key == "id" and memory.rows == 2
    assert {"id", "content", "workspace", "embedding"} <= {c.name for c in memory.columns}
    assert tables["Topic"].rows == 1
    related = tables["RELATED_TO"]
    assert related.kind == "REL" and related.rows == 1
    assert related.connections == [("Memory", "Memory")] and related.primary_key is None
    assert (schema.memories_in_database, schema.memories_in_workspace) == (2, 2)
    assert schema.next_memory_id == max(a, b) + 1
    assert schema.dimensions == ctx.embedder.dim and schema.model == ctx.embedder.name
    assert {i.name: i.entries for i in schema.search_indexes} == {"vector": 2, "keyword": 2}
    assert schema.engine_version


def test_another_workspaces_memories_count_in_the_file_only(ctx):
    stored_memories(ctx.other("/elsewhere"), "Elsewhere, releases happen on Thursdays.")
    schema = describe(ctx)
    assert (schema.memories_in_database, schema.memories_in_workspace) == (1, 0)
