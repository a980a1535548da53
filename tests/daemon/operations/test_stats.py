"""operations/stats.py in process: what a workspace holds and the census of the indexes,
against what the database file holds."""
from memnest_daemon.operations.remember import Entry, remember
from memnest_daemon.operations.stats import stats

TEXTS = ("The billing service retries webhooks three times with exponential backoff.",
         "The frontend is built with Vite and deployed to the CDN from the main branch.",
         "Database migrations run with alembic from the ops container, never by hand.")


def test_an_empty_workspace_counts_nothing_and_is_healthy(ctx):
    found = stats(ctx)
    assert (found.memories, found.shared_memories, found.top, found.last_updated) == (
        0, 0, [], None)
    assert found.owners == {} and found.census["rows_in_database"] == 0
    assert found.census["healthy"]


def test_counts_follow_what_the_workspace_and_the_file_hold(ctx):
    done = remember(ctx, [Entry(TEXTS[0], "decision", ["billing", "webhooks"], 5),
                          Entry(TEXTS[1], tags=["frontend"], scope="shared")], batch=True)
    remember(ctx.other("/elsewhere"), [Entry(TEXTS[2])], batch=False)
    found = stats(ctx)
    assert (found.memories, found.shared_memories) == (2, 1)
    assert found.categories == {"decision": 1, "general": 1}
    assert found.topics == {"billing": 1, "webhooks": 1, "frontend": 1}
    assert found.top[0].id == done.outcomes[0].memory.id
    assert found.owners == {ctx.workspace: 2, "/elsewhere": 1}
    census = found.census
    assert (census["rows_in_database"], census["vector_indexed"], census["keyword_indexed"]) \
        == (3, 3, 3)
    assert census["healthy"] and found.team_warnings == []
