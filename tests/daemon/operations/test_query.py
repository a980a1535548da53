"""operations/query.py in process: the guard's refusals before anything runs, a read in the
query worker, and a raw write reconciled so the daemon's indexes know the new row (read back
after the store is reopened)."""
import pytest
from memnest_daemon.core.errors import ToolError
from memnest_daemon.operations.query import Ask, run_query
from memnest_daemon.store.store import MemoryStore
from support import stored_memories


def ask(query, **kw):
    return Ask(query, kw.pop("params", {}), kw.pop("max_rows", 100), **kw)


@pytest.mark.parametrize("query, code, words", [
    ("   // only a comment", "invalid_argument", "no statement"),
    ("MATCH (m:Memory) DETACH DELETE m", "permission_denied", "MEMORY_ALLOW_DESTRUCTIVE"),
    ("BEGIN TRANSACTION", "permission_denied", "never runs"),
    ("UNWIND range(1, 100000000) AS x RETURN count(x)", "invalid_argument", "range()"),
])
def test_refused_queries_name_why_and_change_nothing(ctx, query, code, words):
    stored_memories(ctx, "The deploy script lives in ops/deploy.sh and needs bash 5.")
    with pytest.raises(ToolError) as refused:
        run_query(ctx, ask(query))
    assert refused.value.code == code and words in refused.value.message
    assert len(ctx.store.catalog) == 1


def test_read_only_refuses_a_write(ctx):
    with pytest.raises(ToolError) as refused:
        run_query(ctx, ask("CREATE (:Memory {id: 7, content: 'x'})", read_only=True))
    assert refused.value.code == "permission_denied" and "read_only" in refused.value.message


def test_a_read_returns_rows_from_the_worker(ctx):
    ids = stored_memories(ctx, "Webhooks are retried three times with backoff.",
                          "The CDN caches the frontend for ten minutes.")
    answer = run_query(ctx, ask("MATCH (m:Memory) RETURN m.id AS id ORDER BY id"))
    assert answer.kind == "read" and answer.repaired is None
    [output] = answer.collected["outputs"]
    assert [row[0] if isinstance(row, list) else row["id"] for row in output["rows"]] == ids
    assert answer.collected["truncated"] is None


def test_max_rows_truncates(ctx):
    stored_memories(ctx, "First fact about retries.", "Second fact about the CDN cache.",
                    "Third fact about alembic migrations.")
    answer = run_query(ctx, ask("MATCH (m:Memory) RETURN m.id", max_rows=2))
    assert answer.collected["truncated"] == "rows"
    assert answer.collected["outputs"][0]["row_count"] == 2


def test_a_raw_write_is_reconciled_and_kept_after_reopening(ctx, tmp_path):
    next_id = ctx.store.next_id()
    answer = run_query(ctx, ask(
        "CREATE (:Memory {id: $id, content: $text, workspace: $ws})",
        params={"id": next_id, "text": "Release tags are signed with the ops GPG key.",
                "ws": ctx.workspace}))
    assert answer.kind == "write" and answer.repaired is not None
    assert answer.repaired.indexed == [next_id]
    assert answer.changes.get("Memory") == 1
    assert next_id in ctx.store.catalog and len(ctx.store.vectors) == 1
    ctx.store.close()
    reopened = MemoryStore(str(tmp_path / "memory.lbug"), ctx.embedder.name, ctx.embedder.dim,
                           64, 1, embed=ctx.embedder.embed)
    try:
        kept = reopened.catalog[next_id]
        assert kept.content == "Release tags are signed with the ops GPG key."
        assert kept.content_hash and kept.category == "general"
        assert len(reopened.vectors) == 1
    finally:
        reopened.close()
        ctx.store = MemoryStore(str(tmp_path / "memory.lbug"), ctx.embedder.name,
                                ctx.embedder.dim, 64, 1, embed=ctx.embedder.embed)


def test_a_raw_write_of_a_secret_is_redacted_in_the_database(ctx):
    next_id = ctx.store.next_id()
    answer = run_query(ctx, ask(
        "CREATE (:Memory {id: $id, content: $text, workspace: $ws})",
        params={"id": next_id, "ws": ctx.workspace,
                "text": "The staging key is AKIAIOSFODNN7EXAMPLE with secret "
                        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}))
    assert answer.repaired is not None and "aws-secret-key" in answer.repaired.privacy[next_id]
    assert ctx.store.catalog[next_id].origin_via == "query"
    read = run_query(ctx, ask("MATCH (m:Memory {id: $id}) RETURN m.content",
                              params={"id": next_id}))
    text = str(read.collected["outputs"][0]["rows"])
    assert "[REDACTED:aws-secret-key]" in text and "wJalrXUtnFEMI" not in text
