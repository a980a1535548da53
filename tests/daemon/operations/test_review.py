"""operations/review.py in process: the queue of what came unasked, keeping, and the state
the database keeps for a reopened store."""
from memnest_daemon.core.records import Origin
from memnest_daemon.operations.forget import forget
from memnest_daemon.operations.remember import Entry, remember
from memnest_daemon.operations.review import ReviewState, keep, queue
from support import OperationContext

TEXTS = ("The billing service retries webhooks three times with exponential backoff.",
         "The frontend is built with Vite and deployed to the CDN from the main branch.",
         "Database migrations run with alembic before every deploy to production.",
         "The mobile app reads feature flags from the config service at start-up.")


def _store(ctx, via: str, *texts: str) -> list[int]:
    ctx.origin = Origin(via=via, client="claude-code" if via == "hook" else "unit-test")
    done = remember(ctx, [Entry(t, keep_as_is=True) for t in texts], batch=True)
    return [o.memory.id for o in done.outcomes]


def test_only_what_came_unasked_waits_and_keeping_takes_it_out(ctx):
    (asked,) = _store(ctx, "agent", TEXTS[0])
    hooked = _store(ctx, "hook", *TEXTS[1:])
    q = queue(ctx, 10, 0)
    assert [m.id for m in q.added] == sorted(hooked, reverse=True) and q.total == 3
    assert asked not in [m.id for m in q.added] and q.since is None
    done = keep(ctx, [hooked[1], asked, 999])
    assert (done.kept, done.missing, done.remaining) == ([hooked[1]], [asked, 999], 2)
    assert [m.id for m in queue(ctx, 10, 0).added] == [hooked[2], hooked[0]]
    assert keep(ctx, [hooked[1]]).kept == []  # twice is once
    page = queue(ctx, 1, 1)
    assert [m.id for m in page.added] == [hooked[0]] and not page.has_more


def test_keep_all_ends_the_review_and_new_captures_wait_again(ctx):
    hooked = _store(ctx, "hook", *TEXTS[:2])
    done = keep(ctx, None)
    assert sorted(done.kept) == sorted(hooked) and done.remaining == 0
    q = queue(ctx, 10, 0)
    assert q.added == [] and q.since is not None
    (later,) = _store(ctx, "hook", TEXTS[2])
    assert [m.id for m in queue(ctx, 10, 0).added] == [later]


def test_the_state_stays_bounded_and_survives_a_reopen(tmp_path):
    ctx = OperationContext(tmp_path)
    hooked = _store(ctx, "hook", *TEXTS)
    keep(ctx, [hooked[0], hooked[1], hooked[3]])
    state = ReviewState.parse(ctx.store.db.meta(f"review:{ctx.workspace}"))
    assert state.watermark == hooked[1] and state.kept == {hooked[3]}  # absorbed
    forget(ctx, [hooked[3]])
    keep(ctx, [])  # nothing kept; the deleted id is dropped from the state
    assert ReviewState.parse(ctx.store.db.meta(f"review:{ctx.workspace}")).kept == set()
    ctx.close()
    again = OperationContext(tmp_path)
    try:
        assert [m.id for m in queue(again, 10, 0).added] == [hooked[2]]
    finally:
        again.close()


def test_another_workspace_has_its_own_queue(ctx):
    mine = _store(ctx, "hook", TEXTS[0])
    other = ctx.other("/elsewhere")
    theirs = _store(other, "hook", TEXTS[1])
    assert keep(ctx, theirs).missing == theirs
    assert [m.id for m in queue(other, 10, 0).added] == theirs
    assert [m.id for m in queue(ctx, 10, 0).added] == mine


def test_a_state_that_cannot_be_read_starts_over():
    for text in ("not json", '{"watermark": "x"}', '["a"]', '{"since": "yesterday"}', ""):
        assert ReviewState.parse(text) == ReviewState()


def test_disagreements_among_recent_memories_are_listed_once(ctx):
    a, b = _store(ctx, "hook", "The API rate limit is 100 requests per minute",
                  "The API rate limit is 500 requests per minute")
    q = queue(ctx, 10, 0)
    assert [(d.a.id, d.b.id) for d in q.disagreements] == [(a, b)]
