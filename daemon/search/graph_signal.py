"""A query-independent signal from the relations between memories: how central a memory is
(PageRank) and which group it belongs to (Louvain communities). Computed by memory_dream,
stored per memory, used by search as one weighted channel (MEMORY_GRAPH_WEIGHT)."""
from .ranking import Ranked


def compute_signal(edges: list[tuple[int, int]]) -> dict[int, tuple[float, int]]:
    """edges: directed arcs between memories. Returns, for every linked memory, (PageRank
    scaled so the most central is 1.0, community number)."""
    import networkx as nx  # only dreams need it

    nodes = sorted({i for edge in edges for i in edge})
    if not nodes:
        return {}
    directed = nx.DiGraph()
    directed.add_nodes_from(nodes)
    directed.add_edges_from(edges)
    ranks = nx.pagerank(directed, alpha=0.85)
    top = max(ranks.values())
    communities = nx.community.louvain_communities(directed.to_undirected(), seed=7)
    community_of = {}
    for number, members in enumerate(sorted(communities, key=lambda c: (-len(c), min(c)))):
        for member in members:
            community_of[member] = number
    return {i: (ranks[i] / top, community_of[i]) for i in nodes}


def boost(ranked: list[Ranked], signal: dict[int, tuple[float, int]],
          weight: float) -> list[Ranked]:
    """Search's graph channel: a candidate gains up to `weight` for being central (PageRank)
    and for sharing a community with the best-ranked linked candidate. Re-sorts `ranked`."""
    if weight <= 0 or not signal or not ranked:
        return ranked
    anchor = next((signal[r.memory.id][1] for r in ranked[:3] if r.memory.id in signal), None)
    for r in ranked:
        found = signal.get(r.memory.id)
        if found is None:
            continue
        centrality, community = found
        gain = weight * (0.5 * centrality + (0.5 if community == anchor else 0.0))
        r.parts["graph"] = gain
        r.score += gain
    ranked.sort(key=lambda r: (-r.score, -r.memory.id))
    return ranked
