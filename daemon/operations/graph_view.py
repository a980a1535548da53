"""Graph view: a workspace's memories, the topics they are tagged with and the links
between them, gathered for one drawing (memory_graph_html; tools/graph_page.py draws it)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..core.errors import invalid
from ..core.records import Memory, utcnow
from .context import CallContext

Edge = tuple[str, int, int]  # (relation, from id, to id)


@dataclass(frozen=True)
class Graph:
    memories: list[Memory]  # by id
    topics: dict[str, int]  # name -> memories tagged with it, by name; empty without topics
    edges: list[Edge]  # sorted, between memories drawn
    separate: list[tuple[int, int]]  # keep-separate verdicts between memories drawn, sorted
    superseded: frozenset[int]  # memories another one replaced
    generated_at: datetime

    @property
    def nodes(self) -> int:
        return len(self.memories) + len(self.topics)


def gather_graph(ctx: CallContext, limit: int, with_topics: bool = True) -> Graph:
    """The workspace's graph, under one read lock; refused when it has more than `limit`
    nodes (memories, and topics when `with_topics`)."""
    store = ctx.store
    with store.reading():
        memories = sorted(store.in_scope(ctx.workspace), key=lambda m: m.id)
        topics: dict[str, int] = {}
        if with_topics:
            for m in memories:
                for t in m.tags:
                    topics[t] = topics.get(t, 0) + 1
        _check_size(len(memories), len(topics), limit)
        ids = {m.id for m in memories}
        graph = store.graph
        edges = sorted(e for e in graph.edges if e[1] in ids and e[2] in ids)
        separate = sorted(p for p in graph.separate if p[0] in ids and p[1] in ids)
        superseded = frozenset(m.id for m in memories if graph.superseded_by(m.id))
    return Graph(memories, dict(sorted(topics.items())), edges, separate, superseded,
                 utcnow())


def _check_size(memories: int, topics: int, limit: int) -> None:
    nodes = memories + topics
    if nodes > limit:
        hint = " (leave topics out with include_topics=false)" if topics and \
            memories <= limit else ""
        raise invalid(f"this workspace's graph has {nodes} nodes ({memories} "
                      f"memories, {topics} topics), over the limit of {limit}"
                      f"{hint}; MEMORY_GRAPH_MAX_NODES sets the limit")
