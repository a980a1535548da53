"""operations/remember.py in process: what remember() returns and what the database keeps."""
import pytest
from memnest_daemon.core.errors import ToolError
from memnest_daemon.curation.capture import Verdict
from memnest_daemon.curation.ingest import Outcome
from memnest_daemon.operations.remember import Entry, remember
from support import OperationContext

LESSON = ("Postgres CREATE INDEX locks writes on the table; on production always use CREATE "
          "INDEX CONCURRENTLY, outside a transaction.")
OTHER = "The billing service retries webhooks three times with exponential backoff."
PROGRESS = "Updated src/components/Header.tsx to add the new logo and adjusted the padding."


def test_a_stored_entry_is_kept_with_its_fields_and_provenance(ctx):
    done = remember(ctx, [Entry(LESSON, "learning", ["Postgres", "ops"], 4)], batch=False)
    (outcome,) = done.outcomes
    assert isinstance(outcome, Outcome) and outcome.status == "stored"
    kept = ctx.store.catalog[outcome.memory.id]
    assert (kept.content, kept.category, kept.tags, kept.importance) == (
        LESSON, "learning", ["postgres", "ops"], 4)
    assert (kept.workspace, kept.origin_via, kept.origin_client) == (
        ctx.workspace, "agent", "unit-test")
    assert ctx.store.vectors.vector(kept.id) is not None
    assert done.sharing == {} and done.left_out.report(single=True) == {}


def test_the_same_text_again_raises_the_importance_of_the_memory_kept(ctx):
    first = remember(ctx, [Entry(LESSON)], batch=False).outcomes[0]
    again = remember(ctx, [Entry(LESSON)], batch=False).outcomes[0]
    assert again.status == "duplicate" and again.memory.id == first.memory.id
    assert ctx.store.catalog[first.memory.id].importance == 4
    assert len(ctx.store.in_scope(ctx.workspace)) == 1


def test_a_batch_refuses_chatter_in_place_and_stores_the_rest(ctx):
    done = remember(ctx, [Entry(LESSON), Entry(PROGRESS), Entry(OTHER),
                          Entry(PROGRESS + " Kept.", keep_as_is=True)], batch=True)
    kinds = [type(o) for o in done.outcomes]
    assert kinds == [Outcome, Verdict, Outcome, Outcome]
    assert done.outcomes[1].kind and not done.outcomes[1].keep
    assert sorted(m.content for m in ctx.store.in_scope(ctx.workspace)) == sorted(
        [LESSON, OTHER, PROGRESS + " Kept."])


def test_a_restatement_is_folded_into_the_memory_it_says_again(ctx):
    memory = "Deploys go out on Tuesdays after the standup, from the release branch."
    (first,) = remember(ctx, [Entry(memory, "decision")], batch=False).outcomes
    done = remember(ctx, [Entry(OTHER), Entry("Deploys happen Tuesdays after standup from "
                                              "the release branch.", "decision")], batch=True)
    again = done.outcomes[1]
    assert again.status == "duplicate" and again.memory.id == first.memory.id
    assert done.restated == {1: first.memory.id}
    kept = ctx.store.catalog[first.memory.id]
    assert (kept.content, kept.importance) == (memory, 4)
    assert len(ctx.store.in_scope(ctx.workspace)) == 2


def test_a_single_refused_text_is_an_error_and_nothing_is_written(ctx):
    with pytest.raises(ToolError) as info:
        remember(ctx, [Entry(PROGRESS)], batch=False)
    assert info.value.code == "invalid_argument" and "keep_as_is" in info.value.message
    assert ctx.store.in_scope(ctx.workspace) == []


def test_private_text_is_left_out_and_reported(ctx):
    done = remember(ctx, [Entry(LESSON + " <private>the staging password is hunter2"
                                          "</private>")], batch=False)
    kept = ctx.store.catalog[done.outcomes[0].memory.id]
    assert "hunter2" not in kept.content and "<private>" not in kept.content
    assert "privacy" in done.left_out.report(single=True)


def test_a_batch_over_the_limit_is_refused_before_anything_is_embedded(tmp_path):
    ctx = OperationContext(tmp_path, max_batch=2)
    try:
        with pytest.raises(ToolError, match="MEMORY_MAX_BATCH"):
            remember(ctx, [Entry(LESSON), Entry(OTHER), Entry(LESSON + " Again.")],
                     batch=True)
        assert ctx.store.in_scope(ctx.workspace) == []
    finally:
        ctx.close()


def test_a_caller_gone_before_the_write_leaves_nothing_written(ctx):
    ctx.gone = True
    with pytest.raises(ToolError) as info:
        remember(ctx, [Entry(LESSON)], batch=False)
    assert info.value.code == "cancelled"
    assert ctx.store.in_scope(ctx.workspace) == []


def test_a_shared_entry_is_written_as_a_file_of_the_workspace(ctx):
    done = remember(ctx, [Entry(LESSON, scope="shared"), Entry(OTHER)], batch=True)
    shared = ctx.store.catalog[done.outcomes[0].memory.id]
    assert shared.scope == "shared" and shared.global_id
    assert ctx.store.catalog[done.outcomes[1].memory.id].scope == "private"
    assert done.sharing["shared_files"] == [f".memnest/shared/{shared.global_id}.json"]
    from pathlib import Path
    assert (Path(ctx.workspace) / done.sharing["shared_files"][0]).is_file()
