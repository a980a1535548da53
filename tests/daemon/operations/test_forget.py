"""operations/forget.py in process: what forget() returns and what the database keeps."""
from memnest_daemon.operations.forget import forget
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
