"""operations/graph_view.py in process: the workspace's memories, topics and links for one
drawing, other workspaces left out, and a graph over the limit refused with what to do."""
import pytest
from memnest_daemon.core.errors import ToolError
from memnest_daemon.operations.graph_view import gather_graph
from memnest_daemon.operations.linking import Link, keep_separate, relate
from support import stored_memories


def test_memories_topics_and_links_of_this_workspace_only(ctx):
    a, b, c = stored_memories(ctx, "Postgres runs with 200 max connections in production.",
                              "PgBouncer pools connections in front of Postgres.",
                              "The old MySQL replica was switched off in March.", tags=("db",))
    [elsewhere] = stored_memories(ctx.other("/elsewhere"), "Elsewhere, Redis caches sessions.")
    relate(ctx, [Link(b, a, "EXPLAINS"), Link(c, a, "SUPERSEDES")], batch=True)
    keep_separate(ctx, [(a, b)])
    graph = gather_graph(ctx, limit=100)
    assert [m.id for m in graph.memories] == [a, b, c] and elsewhere not in \
        {m.id for m in graph.memories}
    assert graph.topics == {"db": 3} and graph.nodes == 4
    assert sorted(graph.edges) == sorted([("EXPLAINS", b, a), ("SUPERSEDES", c, a)])
    assert graph.separate == [(min(a, b), max(a, b))]
    assert graph.superseded == frozenset({a})


def test_over_the_limit_is_refused_with_a_way_out(ctx):
    stored_memories(ctx, "Logs are shipped to Loki.", "Metrics go to Prometheus.",
                    tags=("observability",))
    with pytest.raises(ToolError) as refused:
        gather_graph(ctx, limit=2)
    assert "3 nodes" in refused.value.message and "include_topics=false" in refused.value.message
    assert gather_graph(ctx, limit=2, with_topics=False).nodes == 2
