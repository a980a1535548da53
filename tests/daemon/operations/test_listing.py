"""operations/listing.py in process: memory_list's orders, filters and pages, and the two
filters that check code and neighbours."""
from datetime import timedelta
from pathlib import Path

from memnest_daemon.core.records import TEAM_SESSION, Origin
from memnest_daemon.operations import listing
from memnest_daemon.operations.listing import ListAsk, list_memories
from memnest_daemon.operations.remember import Entry, remember
from memnest_daemon.operations.revise import Change, revise
from memnest_daemon.store.changes import Changes

POSTGRES = "Postgres CREATE INDEX locks writes on the table; use CREATE INDEX CONCURRENTLY."
WEBHOOKS = "The billing service retries webhooks three times with exponential backoff."
FRONTEND = "The frontend is built with Vite and deployed to the CDN from the main branch."
SOURCE = "import os\n\n\ndef send(x):\n    return os.path.join(x, 'y')\n"


def _store(ctx, *texts: str, **fields) -> list[int]:
    done = remember(ctx, [Entry(t, keep_as_is=True, **fields) for t in texts], batch=True)
    return [o.memory.id for o in done.outcomes]


def _ids(ctx, **ask) -> list[int]:
    return [m.id for m in list_memories(ctx, ListAsk(**ask)).memories]


def test_list_orders_filters_and_pages(ctx):
    low = _store(ctx, WEBHOOKS, importance=1)[0]
    high = _store(ctx, FRONTEND, importance=5, tags=["Build"])[0]
    mid = _store(ctx, POSTGRES, importance=3)[0]
    recent = list_memories(ctx, ListAsk())
    assert [m.id for m in recent.memories] == [mid, high, low] and recent.total == 3
    by_importance = list_memories(ctx, ListAsk(order_by="importance", limit=2))
    assert [m.id for m in by_importance.memories] == [high, mid] and by_importance.has_more
    assert _ids(ctx, topic=" BUILD ") == [high]
    page = list_memories(ctx, ListAsk(offset=2))
    assert [m.id for m in page.memories] == [low] and not page.has_more and page.offset == 2
    assert page.checked_only is None


def test_scope_time_and_supersession(ctx):
    old, new, other = _store(ctx, WEBHOOKS, FRONTEND, POSTGRES)
    with ctx.store.writing():
        ctx.store.commit(Changes(edges_added=[("SUPERSEDES", new, old)]))
    revise(ctx, [Change(other, importance=4, scope="shared")], batch=False)  # the last write
    assert _ids(ctx, scope="shared") == [other]
    assert _ids(ctx, scope="private") == [new, old]
    assert _ids(ctx, superseded=True) == [old]
    assert _ids(ctx, superseded=False) == [other, new]
    changed = ctx.store.catalog[other].updated_at
    assert _ids(ctx, since=changed) == [other]
    assert _ids(ctx, until=changed) == [new, old]
    assert _ids(ctx, since=changed + timedelta(seconds=1)) == []


def test_team_is_the_imports_a_teammates_file_brought(ctx):
    (mine,) = _store(ctx, WEBHOOKS)
    ctx.origin = Origin("import", "alice", TEAM_SESSION)
    (theirs,) = _store(ctx, FRONTEND)
    assert _ids(ctx, via="team") == [theirs]
    assert _ids(ctx, via="import") == [theirs]
    assert _ids(ctx, via="agent") == [mine]


def test_stale_lists_only_memories_whose_code_changed(ctx):
    source = Path(ctx.workspace) / "app.py"
    source.write_text(SOURCE)
    done = remember(ctx, [Entry("send() in app.py joins paths with os.path.join.",
                                anchors=[{"path": "app.py", "symbol": "send"}],
                                auto_anchor=False)], batch=False)
    anchored = done.outcomes[0].memory.id
    _store(ctx, WEBHOOKS)
    assert _ids(ctx, stale=True) == []
    source.write_text(SOURCE.replace("os.path.join(x, 'y')", "x + '/y'"))
    assert _ids(ctx, stale=True) == [anchored]


def test_conflicted_lists_the_unsettled_disagreements(ctx):
    thursday, friday = _store(ctx, "The team deploys Atlas on Thursday afternoons.",
                              "The team deploys Atlas on Friday afternoons.")
    _store(ctx, WEBHOOKS)
    assert set(_ids(ctx, conflicted=True)) == {thursday, friday}
    with ctx.store.writing():
        ctx.store.commit(Changes(kept_separate=[(thursday, friday)]))
    assert _ids(ctx, conflicted=True) == []


def test_the_checks_look_at_a_bounded_number_in_order(ctx, monkeypatch):
    monkeypatch.setattr(listing, "CHECKED_AT_MOST", 2)
    thursday, friday = _store(ctx, "The team deploys Atlas on Thursday afternoons.",
                              "The team deploys Atlas on Friday afternoons.")
    _store(ctx, WEBHOOKS, POSTGRES)  # the two newest: checked, and in no conflict
    bounded = list_memories(ctx, ListAsk(conflicted=True))
    assert bounded.memories == [] and bounded.checked_only == 2
    assert _ids(ctx, conflicted=True, until=ctx.store.catalog[friday].updated_at
                + timedelta(microseconds=1)) in ([friday, thursday], [thursday, friday])
