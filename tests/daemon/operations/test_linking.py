"""operations/linking.py in process: relate, unrelate, keep_separate and topics against a
real store, and what each leaves in its graph."""
from typing import get_args

import pytest
from memnest_daemon.core.errors import ToolError
from memnest_daemon.core.types import RELATION_TYPES
from memnest_daemon.operations.linking import (
    Link,
    Relation,
    keep_separate,
    relate,
    topics,
    unrelate,
)
from support import stored_memories

TEXTS = ("The billing service retries webhooks three times with exponential backoff.",
         "The frontend is built with Vite and deployed to the CDN from the main branch.",
         "Database migrations run from the deploy pipeline before the new pods start.")


def test_the_relation_type_names_what_the_database_holds():
    assert get_args(Relation) == RELATION_TYPES


def test_relate_creates_once_and_reports_what_exists(ctx):
    a, b, c = stored_memories(ctx, *TEXTS)
    done = relate(ctx, [Link(a, b), Link(a, c, "EXPLAINS"), Link(a, b)], batch=True)
    assert [r.status for r in done.results] == ["created", "created", "exists"]
    assert (done.count("created"), done.count("exists")) == (2, 1)
    assert ctx.store.graph.edges == {("RELATED_TO", a, b), ("EXPLAINS", a, c)}
    again = relate(ctx, [Link(a, b)], batch=False)
    assert again.results[0].status == "exists" and again.supersession_cycle is None


def test_a_batch_reports_bad_links_and_makes_the_rest(ctx):
    a, b = stored_memories(ctx, *TEXTS[:2])
    done = relate(ctx, [Link(a, a), Link(a, 999), Link(a, b)], batch=True)
    assert [r.status for r in done.results] == ["invalid", "not_found", "created"]
    assert "cannot be related to itself" in done.results[0].error
    assert "no memory with id 999 in this workspace" == done.results[1].error
    assert ctx.store.graph.edges == {("RELATED_TO", a, b)}


def test_a_single_bad_link_raises_and_writes_nothing(ctx):
    a, = stored_memories(ctx, TEXTS[0])
    with pytest.raises(ToolError) as self_link:
        relate(ctx, [Link(a, a)], batch=False)
    assert self_link.value.code == "invalid_argument"
    with pytest.raises(ToolError) as missing:
        relate(ctx, [Link(a, 12345)], batch=False)
    assert missing.value.code == "not_found"
    assert not ctx.store.graph.edges


def test_memories_of_another_workspace_are_not_found(ctx, tmp_path):
    other = ctx.other(str(tmp_path / "elsewhere"))
    theirs, = stored_memories(other, TEXTS[0])
    mine, = stored_memories(ctx, TEXTS[1])
    with pytest.raises(ToolError) as refused:
        relate(ctx, [Link(mine, theirs)], batch=False)
    assert refused.value.code == "not_found" and str(theirs) in str(refused.value)
    with pytest.raises(ToolError):
        keep_separate(ctx, [(mine, theirs)])
    with pytest.raises(ToolError):
        unrelate(ctx, mine, theirs)


def test_a_supersedes_cycle_is_reported_for_a_single_link(ctx):
    a, b = stored_memories(ctx, *TEXTS[:2])
    assert relate(ctx, [Link(a, b, "SUPERSEDES")], batch=False).supersession_cycle is None
    closing = relate(ctx, [Link(b, a, "SUPERSEDES")], batch=False)
    assert sorted(closing.supersession_cycle) == sorted([a, b])


def test_unrelate_removes_one_direction_unless_asked_for_both(ctx):
    a, b = stored_memories(ctx, *TEXTS[:2])
    relate(ctx, [Link(a, b, "SUPERSEDES"), Link(b, a, "SUPERSEDES"), Link(a, b)], batch=True)
    one = unrelate(ctx, a, b, "SUPERSEDES")
    assert one.status == "removed" and one.removed == [("SUPERSEDES", a, b)]
    assert one.kept_other_direction == [("SUPERSEDES", b, a)]
    assert ctx.store.graph.edges == {("SUPERSEDES", b, a), ("RELATED_TO", a, b)}
    both = unrelate(ctx, a, b, both_directions=True)
    assert sorted(both.removed) == [("RELATED_TO", a, b), ("SUPERSEDES", b, a)]
    assert not ctx.store.graph.edges and both.kept_other_direction == []
    assert unrelate(ctx, a, b).status == "not_found"


def test_keep_separate_records_each_pair_once(ctx):
    a, b, c = stored_memories(ctx, *TEXTS)
    verdicts = keep_separate(ctx, [(b, a), (a, c), (a, b)])
    assert [(v.pair, v.status) for v in verdicts] == [
        ((a, b), "recorded"), ((a, c), "recorded"), ((a, b), "exists")]
    assert ctx.store.graph.kept_separate(a, b) and ctx.store.graph.kept_separate(c, a)
    assert not ctx.store.graph.edges  # a verdict is no link


def test_keep_separate_refuses_the_whole_call_for_one_bad_pair(ctx):
    a, b = stored_memories(ctx, *TEXTS[:2])
    with pytest.raises(ToolError) as refused:
        keep_separate(ctx, [(a, b), (b, b)])
    assert refused.value.code == "invalid_argument"
    assert not ctx.store.graph.kept_separate(a, b)


def test_topics_are_ranked_by_use_then_name(ctx):
    stored_memories(ctx, TEXTS[0], tags=("billing", "retries"))
    stored_memories(ctx, TEXTS[1], tags=("frontend", "deploy"))
    stored_memories(ctx, TEXTS[2], tags=("deploy",))
    found = topics(ctx, limit=10)
    assert [(t.name, t.count) for t in found.shown] == [
        ("deploy", 2), ("billing", 1), ("frontend", 1), ("retries", 1)]
    assert found.total == 4
    top = topics(ctx, limit=1, min_count=2)
    assert [t.name for t in top.shown] == ["deploy"] and top.total == 1
    assert topics(ctx, limit=2).total == 4  # the total counts the topics not shown too
