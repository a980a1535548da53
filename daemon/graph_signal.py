"""A query-independent signal from the relations between memories: how central a memory is
(PageRank) and which group it belongs to (Louvain communities). Computed by memory_dream,
stored per memory, used by search as one weighted channel (MEMORY_GRAPH_WEIGHT)."""
import numpy as np

DAMPING = 0.85


def pagerank(nodes: list[int], arcs: list[tuple[int, int]], iterations: int = 100,
             tolerance: float = 1e-9) -> dict[int, float]:
    """Power iteration; a node without out-links spreads its rank evenly over all nodes."""
    n = len(nodes)
    if n == 0:
        return {}
    index = {node: k for k, node in enumerate(nodes)}
    out_degree = np.zeros(n)
    sources, targets = [], []
    for a, b in arcs:
        sources.append(index[a])
        targets.append(index[b])
        out_degree[index[a]] += 1
    sources_arr, targets_arr = np.array(sources, dtype=int), np.array(targets, dtype=int)
    rank = np.full(n, 1.0 / n)
    for _ in range(iterations):
        spread = np.zeros(n)
        if len(sources_arr):
            np.add.at(spread, targets_arr, rank[sources_arr] / out_degree[sources_arr])
        dangling = rank[out_degree == 0].sum()
        new = (1 - DAMPING) / n + DAMPING * (spread + dangling / n)
        if np.abs(new - rank).sum() < tolerance:
            rank = new
            break
        rank = new
    return {node: float(rank[k]) for node, k in index.items()}


def compute_signal(edges: list[tuple[int, int]]) -> dict[int, tuple[float, int]]:
    """edges: directed arcs between memories. Returns, for every linked memory, (PageRank
    scaled so the most central is 1.0, community number)."""
    import networkx as nx  # only dreams need it

    nodes = sorted({i for edge in edges for i in edge})
    if not nodes:
        return {}
    ranks = pagerank(nodes, edges)
    top = max(ranks.values())
    graph = nx.Graph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from(edges)
    communities = nx.community.louvain_communities(graph, seed=7)
    community_of = {}
    for number, members in enumerate(sorted(communities, key=lambda c: (-len(c), min(c)))):
        for member in members:
            community_of[member] = number
    return {i: (ranks[i] / top, community_of[i]) for i in nodes}


def boost(ranked: list, signal: dict[int, tuple[float, int]], weight: float) -> list:
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
