"""operations/tiers.py, personal.py and the tier routing of remember, get, revise, forget and
list, in process: a workspace's context beside a personal tier of its own store."""
from dataclasses import replace

import pytest
from memnest_daemon.core.errors import ToolError
from memnest_daemon.operations import recall, tiers
from memnest_daemon.operations.forget import forget
from memnest_daemon.operations.listing import ListAsk, list_memories
from memnest_daemon.operations.personal import make_personal
from memnest_daemon.operations.remember import Entry, remember
from memnest_daemon.operations.revise import Change, revise
from support import OperationContext

MINE = "Answer in British English and use metric units in every example."
WORK = "The billing service retries webhooks three times with exponential backoff."


@pytest.fixture
def tiered(ctx, tmp_path):
    # the tier's database where MEMNEST_USER_DIR would keep it: <user dir>/.memnest/
    personal = OperationContext(tmp_path / "user-dir" / ".memnest")
    personal.personal_tier = personal  # the tier's own context is its own tier
    ctx.personal_tier = personal
    ctx.settings = replace(ctx.settings, user_dir=str(tmp_path / "user-dir"))
    yield ctx, personal
    personal.close()


def test_scope_user_goes_to_the_personal_tier_under_a_shown_id(tiered):
    ctx, personal = tiered
    done = remember(ctx, [Entry(WORK, keep_as_is=True), Entry(MINE, scope="user",
                                                              keep_as_is=True)], batch=True)
    work, mine = (o.memory for o in done.outcomes)
    assert not tiers.is_personal(work.id) and work.id in ctx.store.catalog
    assert tiers.is_personal(mine.id) and tiers.own_id(mine.id) in personal.store.catalog
    assert tiers.own_id(mine.id) not in ctx.store.catalog or \
        ctx.store.catalog[tiers.own_id(mine.id)].content != MINE
    got = recall.get(ctx, [mine.id, work.id])
    assert [s.memory.id for s in got.shown] == [mine.id, work.id] and got.missing == []
    listed = list_memories(ctx, ListAsk(scope="user"))
    assert [m.id for m in listed.memories] == [mine.id]


def test_edits_and_forgetting_reach_the_tier_by_the_shown_id(tiered):
    ctx, personal = tiered
    (mine,) = (o.memory for o in remember(ctx, [Entry(MINE, scope="user",
                                                      keep_as_is=True)], batch=True).outcomes)
    done = revise(ctx, [Change(mine.id, importance=5)], batch=False)
    assert done.results[0].id == mine.id and done.updated[0].importance == 5
    assert personal.store.catalog[tiers.own_id(mine.id)].importance == 5
    with pytest.raises(ToolError) as refused:
        revise(ctx, [Change(mine.id, scope="shared")], batch=False)
    assert "never shared" in refused.value.message
    with pytest.raises(ToolError) as missing:
        revise(ctx, [Change(mine.id + 1, importance=2)], batch=False)
    assert str(mine.id + 1) in missing.value.message  # the id the caller gave
    gone = forget(ctx, [mine.id, mine.id + 1])
    assert gone.deleted == [mine.id] and gone.missing == [mine.id + 1]
    assert not personal.store.catalog


def test_a_workspace_memory_moves_once_and_a_shared_one_does_not(tiered):
    ctx, personal = tiered
    (work,) = (o.memory for o in remember(ctx, [Entry(WORK, keep_as_is=True)],
                                          batch=True).outcomes)
    moved = make_personal(ctx, [work.id, 999])
    new = moved.became[work.id]
    assert new is not None and tiers.is_personal(new) and moved.became[999] is None
    assert work.id not in ctx.store.catalog
    assert personal.store.catalog[tiers.own_id(new)].content == WORK
    (shared,) = (o.memory for o in remember(ctx, [Entry(MINE, scope="shared",
                                                        keep_as_is=True)], batch=True).outcomes)
    with pytest.raises(ToolError) as refused:
        make_personal(ctx, [shared.id])
    assert "unshare it first" in refused.value.message
    assert shared.id in ctx.store.catalog


def test_without_a_reachable_tier_personal_calls_are_refused(ctx):
    with pytest.raises(ToolError) as refused:
        remember(ctx, [Entry(MINE, scope="user")], batch=False)
    assert refused.value.code == "permission_denied"
    assert recall.get(ctx, [tiers.shown_id(1)]).missing == [tiers.shown_id(1)]


def test_a_search_recalls_the_tier_beside_the_workspace_only_when_near(tiered):
    ctx, personal = tiered
    remember(ctx, [Entry(WORK, keep_as_is=True), Entry(MINE, scope="user", keep_as_is=True)],
             batch=True)
    near = recall.search(ctx, recall.Query("which spelling and units should answers use"))
    assert [h.source for h in near.hits][:1] == ["user"]
    assert tiers.is_personal(near.hits[0].memory.id)
    far = recall.search(ctx, recall.Query("webhook retries with exponential backoff"))
    assert far.hits[0].source == "here" and far.hits[0].memory.content == WORK
