"""operations/revise.py in process: what revise() returns and what the database keeps
(text re-hashed and re-embedded, fields, anchors, scope)."""
from pathlib import Path

import numpy as np
import pytest
from memnest_daemon.core.errors import ToolError
from memnest_daemon.core.records import content_hash
from memnest_daemon.operations.remember import Entry, remember
from memnest_daemon.operations.revise import Change, revise
from memnest_daemon.store.changes import Changes

WEBHOOKS = "The billing service retries webhooks three times with exponential backoff."
FRONTEND = "The frontend is built with Vite and deployed to the CDN from the main branch."


def _store(ctx, *texts: str) -> list[int]:
    done = remember(ctx, [Entry(t, keep_as_is=True) for t in texts], batch=True)
    return [o.memory.id for o in done.outcomes]


def test_new_content_is_rehashed_and_reembedded(ctx):
    (memory_id,) = _store(ctx, WEBHOOKS)
    before = np.array(ctx.store.vectors.vector(memory_id))
    done = revise(ctx, [Change(memory_id, content=FRONTEND, importance=5, tags=["Build"])],
                  batch=False)
    assert [(r.id, r.status) for r in done.results] == [(memory_id, "updated")]
    assert done.results[0].anchors == []  # new content: its citations are looked for again
    kept = ctx.store.catalog[memory_id]
    assert (kept.content, kept.content_hash, kept.importance, kept.tags) == (
        FRONTEND, content_hash(FRONTEND), 5, ["build"])
    assert done.updated[0].content == FRONTEND
    after = ctx.store.vectors.vector(memory_id)
    assert not np.allclose(before, after)
    assert np.allclose(after, ctx.embedder.embed([FRONTEND])[0], atol=1e-5)


def test_a_field_change_keeps_the_embedding(ctx):
    (memory_id,) = _store(ctx, WEBHOOKS)
    before = np.array(ctx.store.vectors.vector(memory_id))
    done = revise(ctx, [Change(memory_id, category="decision")], batch=False)
    assert done.results[0].anchors is None
    assert ctx.store.catalog[memory_id].category == "decision"
    assert np.allclose(before, ctx.store.vectors.vector(memory_id))


def test_changes_of_one_memory_in_a_batch_build_on_each_other(ctx):
    a, b = _store(ctx, WEBHOOKS, FRONTEND)
    done = revise(ctx, [Change(a, importance=1), Change(a, category="decision"),
                        Change(999, importance=2)], batch=True)
    assert [r.status for r in done.results] == ["updated", "updated", "not_found"]
    kept = ctx.store.catalog[a]
    assert (kept.importance, kept.category) == (1, "decision")
    assert ctx.store.catalog[b].importance == 3


def test_a_missing_memory_or_an_empty_change_is_an_error(ctx):
    (memory_id,) = _store(ctx, WEBHOOKS)
    foreign = _store(ctx.other("/elsewhere"), FRONTEND)[0]
    with pytest.raises(ToolError) as info:
        revise(ctx, [Change(foreign, importance=5)], batch=False)
    assert info.value.code == "not_found"
    assert ctx.store.catalog[foreign].importance == 3
    with pytest.raises(ToolError, match="nothing to change"):
        revise(ctx, [Change(memory_id)], batch=False)


def test_private_text_in_new_content_is_left_out(ctx):
    (memory_id,) = _store(ctx, WEBHOOKS)
    done = revise(ctx, [Change(memory_id, content=FRONTEND + " <private>token abc</private>")],
                  batch=False)
    assert "abc" not in ctx.store.catalog[memory_id].content
    assert "privacy" in done.left_out.report(single=True)


def test_scope_shares_and_unshares_the_memory_file(ctx):
    (memory_id,) = _store(ctx, WEBHOOKS)
    shared = revise(ctx, [Change(memory_id, scope="shared")], batch=False)
    memory = ctx.store.catalog[memory_id]
    assert memory.scope == "shared" and shared.sharing["scope"] == "shared"
    path = Path(ctx.workspace) / shared.sharing["shared_files"][0]
    assert path.is_file()
    unshared = revise(ctx, [Change(memory_id, scope="private")], batch=False)
    assert ctx.store.catalog[memory_id].scope == "private"
    assert unshared.sharing["scope"] == "private" and not path.exists()


def test_a_secret_is_never_shared_and_nothing_changes(ctx):
    (memory_id,) = _store(ctx, WEBHOOKS)
    with ctx.store.writing():  # written before today's redaction rules: the secret is kept
        old = ctx.store.catalog[memory_id]
        ctx.store.commit(Changes(updated=[(old.copy(
            content=WEBHOOKS + " The key is AKIAIOSFODNN7EXAMPLE."), None)]))
    with pytest.raises(ToolError, match="not shared: a secret was found"):
        revise(ctx, [Change(memory_id, scope="shared", importance=5)], batch=False)
    kept = ctx.store.catalog[memory_id]
    assert (kept.scope, kept.importance) == ("private", 3)
    assert not (Path(ctx.workspace) / ".memnest" / "shared").exists()


def test_refresh_anchors_recaptures_the_code_as_it_reads_now(ctx):
    source = Path(ctx.workspace) / "app.py"
    source.write_text("def send(x):\n    return x + 1\n")
    done = remember(ctx, [Entry(WEBHOOKS, anchors=[{"path": "app.py", "symbol": "send"}])],
                    batch=False)
    memory_id = done.outcomes[0].memory.id
    before = ctx.store.catalog[memory_id].code
    source.write_text("def send(x):\n    return x + 2\n")
    revised = revise(ctx, [Change(memory_id, refresh_anchors=True)], batch=False)
    assert revised.results[0].anchors == ["send() in app.py"]
    assert ctx.store.catalog[memory_id].code != before
    source.unlink()
    gone = revise(ctx, [Change(memory_id, refresh_anchors=True)], batch=False)
    assert gone.results[0].anchors == [] and "gone" in gone.results[0].anchor_notes[0]


# -- a change naming the version it was made against (expected_updated_at) -------------------

def _in_database(ctx, memory_id: int) -> str | None:
    """The memory's content as the database file holds it (None: no such row)."""
    rows = ctx.store.db.rows("MATCH (m:Memory) WHERE m.id = $id RETURN m.content",
                             {"id": memory_id})
    return rows[0][0] if rows else None


def _seen(ctx, memory_id: int) -> str:
    """The updated_at a caller reads, as memory_get and memory_list show it."""
    return str(ctx.store.catalog[memory_id].view()["updated_at"])


def test_a_change_naming_the_current_version_is_made(ctx):
    (memory_id,) = _store(ctx, WEBHOOKS)
    done = revise(ctx, [Change(memory_id, importance=5,
                               expected_updated_at=_seen(ctx, memory_id))], batch=False)
    assert done.results[0].status == "updated"
    assert ctx.store.catalog[memory_id].importance == 5


def test_a_change_made_between_reading_and_writing_is_kept_and_the_late_one_refused(ctx):
    (memory_id,) = _store(ctx, WEBHOOKS)
    page_saw = _seen(ctx, memory_id)  # the person's page loads
    revise(ctx, [Change(memory_id, content=FRONTEND)], batch=False)  # an agent writes, same second
    done = revise(ctx, [Change(memory_id, importance=1, tags=["mine"],
                               expected_updated_at=page_saw)], batch=False)
    (result,) = done.results
    assert result.status == "changed" and done.updated == []
    assert result.current is not None and result.current.content == FRONTEND
    kept = ctx.store.catalog[memory_id]
    assert (kept.content, kept.importance, kept.tags) == (FRONTEND, 3, [])
    assert _in_database(ctx, memory_id) == FRONTEND
    again = revise(ctx, [Change(memory_id, importance=1, expected_updated_at=_seen(
        ctx, memory_id))], batch=False)
    assert again.results[0].status == "updated"  # against the new version it goes through


def test_a_write_that_lands_while_the_change_is_embedded_is_not_lost(ctx, monkeypatch):
    """The check is made under the write lock, after the embedding (outside the lock): an
    agent's write during that time makes the change refused, not lost."""
    (memory_id,) = _store(ctx, WEBHOOKS)
    page_saw = _seen(ctx, memory_id)
    embed = ctx.embedder.embed

    def embed_while_an_agent_writes(texts):
        monkeypatch.setattr(ctx.embedder, "embed", embed)
        revise(ctx, [Change(memory_id, importance=4)], batch=False)
        return embed(texts)

    monkeypatch.setattr(ctx.embedder, "embed", embed_while_an_agent_writes)
    done = revise(ctx, [Change(memory_id, content=FRONTEND, expected_updated_at=page_saw)],
                  batch=False)
    assert done.results[0].status == "changed"
    kept = ctx.store.catalog[memory_id]
    assert (kept.content, kept.importance) == (WEBHOOKS, 4)


def test_reads_leave_the_version_as_it_was(ctx):
    from memnest_daemon.operations import recall
    (memory_id,) = _store(ctx, WEBHOOKS)
    page_saw = _seen(ctx, memory_id)
    recall.get(ctx, [memory_id])
    recall.search(ctx, recall.Query("webhooks retries"))
    ctx.store.flush_access()
    assert ctx.store.catalog[memory_id].access_count == 2
    done = revise(ctx, [Change(memory_id, importance=2, expected_updated_at=page_saw)],
                  batch=False)
    assert done.results[0].status == "updated"


def test_in_a_batch_only_the_changed_memory_is_refused(ctx):
    a, b = _store(ctx, WEBHOOKS, FRONTEND)
    seen_a, seen_b = _seen(ctx, a), _seen(ctx, b)
    revise(ctx, [Change(b, category="decision")], batch=False)
    done = revise(ctx, [Change(a, importance=5, expected_updated_at=seen_a),
                        Change(b, importance=5, scope="shared", expected_updated_at=seen_b)],
                  batch=True)
    assert [r.status for r in done.results] == ["updated", "changed"]
    assert ctx.store.catalog[a].importance == 5
    kept = ctx.store.catalog[b]
    assert (kept.importance, kept.category, kept.scope) == (3, "decision", "private")


@pytest.mark.parametrize("text", ["yesterday", "", "2026-13-01T00:00:00Z", "9" * 80,
                                  "99999-01-01T00:00:00Z", "9999-12-31T23:59:59-23:59"])
def test_a_version_that_is_not_a_time_is_a_clear_error(ctx, text):
    (memory_id,) = _store(ctx, WEBHOOKS)
    with pytest.raises(ToolError) as info:
        revise(ctx, [Change(memory_id, importance=5, expected_updated_at=text)], batch=True)
    assert "updates.0.expected_updated_at" in str(info.value)
    assert "ISO 8601" in str(info.value)
    assert ctx.store.catalog[memory_id].importance == 3
