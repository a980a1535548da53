"""operations/forget.py in process: what forget() returns and what the database keeps."""
import threading
import time

import pytest
from memnest_daemon.core.errors import ToolError
from memnest_daemon.core.records import utcnow
from memnest_daemon.operations.forget import Forgotten, forget
from memnest_daemon.operations.revise import Change, revise
from memnest_daemon.operations.remember import Entry, remember
from memnest_daemon.store.changes import Changes

TEXTS = ("The billing service retries webhooks three times with exponential backoff.",
         "The frontend is built with Vite and deployed to the CDN from the main branch.")


def _store(ctx, *texts: str) -> list[int]:
    done = remember(ctx, [Entry(t, keep_as_is=True) for t in texts], batch=True)
    return [o.memory.id for o in done.outcomes]


def test_forget_deletes_the_memories_and_their_links(ctx):
    a, b = _store(ctx, *TEXTS)
    with ctx.store.writing():
        ctx.store.commit(Changes(edges_added=[("SUPERSEDES", b, a)]))
    done = forget(ctx, [a, a])
    assert (done.status, done.deleted, done.missing) == ("deleted", [a], [])
    assert a not in ctx.store.catalog and ctx.store.vectors.vector(a) is None
    assert ctx.store.graph.supersedes(b) == [] and b in ctx.store.catalog


def test_ids_of_other_workspaces_or_none_are_missing(ctx):
    (mine,) = _store(ctx, TEXTS[0])
    (theirs,) = _store(ctx.other("/elsewhere"), TEXTS[1])
    done = forget(ctx, [mine, theirs, 999])
    assert (done.status, done.deleted, done.missing) == ("partial", [mine], [theirs, 999])
    assert theirs in ctx.store.catalog
    nothing = forget(ctx, [mine])
    assert (nothing.status, nothing.deleted, nothing.missing) == ("not_found", [], [mine])


# -- a forget naming the version it was asked against (expected) -----------------------------

def _in_database(ctx, memory_id: int) -> str | None:
    """The memory's content as the database file holds it (None: no such row)."""
    rows = ctx.store.db.rows("MATCH (m:Memory) WHERE m.id = $id RETURN m.content",
                             {"id": memory_id})
    return rows[0][0] if rows else None


def _seen(ctx, memory_id: int) -> str:
    return str(ctx.store.catalog[memory_id].view()["updated_at"])


def test_a_memory_changed_since_it_was_seen_is_kept(ctx):
    a, b = _store(ctx, *TEXTS)
    page_saw = {a: _seen(ctx, a), b: _seen(ctx, b)}
    revise(ctx, [Change(b, content="The frontend moved to Rollup.")], batch=False)  # an agent
    done = forget(ctx, [a, b], page_saw)
    assert (done.status, done.deleted, done.missing) == ("partial", [a], [])
    assert [m.content for m in done.changed] == ["The frontend moved to Rollup."]
    assert a not in ctx.store.catalog and _in_database(ctx, a) is None
    assert _in_database(ctx, b) == "The frontend moved to Rollup."
    alone = forget(ctx, [b], {b: page_saw[b]})
    assert (alone.status, alone.deleted) == ("changed", [])
    assert forget(ctx, [b], {b: _seen(ctx, b)}).status == "deleted"


def test_the_check_waits_for_a_write_under_way(ctx):
    """The version is compared under the write lock the delete takes: a write holding the
    lock when the forget comes is seen by it."""
    (memory_id,) = _store(ctx, TEXTS[0])
    page_saw = _seen(ctx, memory_id)
    answer: list[Forgotten] = []
    with ctx.store.writing():  # a write under way: the lock is not reentrant, commit directly
        late = threading.Thread(target=lambda: answer.append(
            forget(ctx, [memory_id], {memory_id: page_saw})))
        late.start()
        time.sleep(0.2)  # the forget is waiting for the lock
        now = ctx.store.catalog[memory_id].copy()
        now.importance, now.updated_at = 5, utcnow()
        ctx.store.commit(Changes(updated=[(now, None)]))
    late.join(10)
    assert not late.is_alive()
    assert answer[0].status == "changed"
    assert ctx.store.catalog[memory_id].importance == 5


def test_a_version_of_a_memory_not_asked_or_not_a_time_is_refused(ctx):
    a, b = _store(ctx, *TEXTS)
    with pytest.raises(ToolError) as info:
        forget(ctx, [a], {b: _seen(ctx, b)})
    assert f"memory {b}" in str(info.value)
    with pytest.raises(ToolError) as info:
        forget(ctx, [a], {a: "last tuesday"})
    assert "ISO 8601" in str(info.value) and a in ctx.store.catalog
