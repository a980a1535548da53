"""Hybrid ranking: a vector channel and a keyword channel, fused, then nudged by recency and
importance. Three fusion modes (MEMORY_FUSION):

- context (default): every candidate is scored on both channels (cosine; BM25 over the
  query's content words, function words dropped, divided by the query's best BM25) and the
  two are averaged. Added to that: the share of the query's terms (IDF-weighted) that the
  memory and its neighbours contain between them, and a small lift when the query names one
  of the memory's tags (a person, a project). Finally each memory takes a share of its best
  neighbour's score. Neighbours are the memories stored just before and after it in the same
  workspace (two each way), each within an hour of the next: memories written together (the
  turns of a conversation, the notes of one session) explain each other, and the answer to a
  question is often next to the memory that shares its words.
- legacy: raw cosine plus BM25 divided by the best BM25 of the query; scores keep meaning
  (a weak match scores low whatever its rank).
- rrf: reciprocal rank fusion, (K+1)/(K+rank) per channel; only each channel's ordering
  counts, so the two channels' scales cannot interact.

bench/locomo.py measures them; bench/RESULTS.md records why the constants are what they are.
"""
import math
import weakref
from dataclasses import dataclass, field

import numpy as np

from .query_analysis import QueryAnalysis, analyse
from .records import Memory, utcnow

FUSION_MODES = ("context", "legacy", "rrf")
DEFAULT_FUSION = "context"

VECTOR_WEIGHT = 0.7
KEYWORD_WEIGHT = 0.3
IMPORTANCE_WEIGHT = 0.05
RECENCY_WEIGHT = 0.05
RECENCY_HALF_LIFE_DAYS = 30.0

# context mode (chosen on LOCOMO conv-26, confirmed on conv-30: see bench/RESULTS.md)
CONTEXT_VECTOR_WEIGHT = 0.5
CONTEXT_KEYWORD_WEIGHT = 0.5
COVERAGE_WEIGHT = 0.2     # share of the query's terms (IDF-weighted) in the memory's window
TAG_BOOST = 0.04          # the query names one of the memory's tags
NEIGHBOUR_WEIGHTS = (0.6, 0.4)  # share of the best neighbour's score at distance 1, 2
NEIGHBOUR_WINDOW_S = 3600.0     # neighbours were stored at most this far apart
EXPAND_FROM = 20          # the neighbours of this many best candidates become candidates
SUPERSEDED_FACTOR = 0.5   # a memory another one supersedes ranks at this share of its score


@dataclass
class SearchFilter:
    workspace: str | None  # None: every workspace in the database
    category: str | None = None
    tags: list[str] = field(default_factory=list)  # any of these
    min_importance: int = 1

    def admits(self, m: Memory) -> bool:
        return ((self.workspace is None or m.workspace == self.workspace)
                and (self.category is None or m.category == self.category)
                and (not self.tags or any(t in m.tags for t in self.tags))
                and m.importance >= self.min_importance)


@dataclass
class Ranked:
    memory: Memory
    score: float
    parts: dict


def _recency(m: Memory, now) -> float:
    age_days = max(0.0, (now - m.updated_at).total_seconds() / 86400.0)
    return math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)


def fuse(vector_hits: list[tuple[int, float]], keyword_hits: list[tuple[int, float]],
         catalog: dict[int, Memory], mode: str, rrf_k: int) -> list[Ranked]:
    if mode == "rrf":
        vec = {i: (rrf_k + 1) / (rrf_k + rank) for rank, (i, _) in enumerate(vector_hits, 1)}
        kw = {i: (rrf_k + 1) / (rrf_k + rank) for rank, (i, _) in enumerate(keyword_hits, 1)}
    else:
        vec = {i: max(0.0, s) for i, s in vector_hits}
        best = max((s for _, s in keyword_hits), default=0.0)
        kw = {i: s / best for i, s in keyword_hits} if best > 0 else {}
    now = utcnow()
    ranked = []
    for memory_id in vec.keys() | kw.keys():
        m = catalog.get(memory_id)
        if m is None:
            continue
        parts = {
            "vector": VECTOR_WEIGHT * vec.get(memory_id, 0.0),
            "keyword": KEYWORD_WEIGHT * kw.get(memory_id, 0.0),
            "importance": IMPORTANCE_WEIGHT * (m.importance - 1) / 4,
            "recency": RECENCY_WEIGHT * _recency(m, now),
        }
        ranked.append(Ranked(m, sum(parts.values()), parts))
    ranked.sort(key=lambda r: (-r.score, -r.memory.id))
    return ranked


def rank(store, query: str, query_vector, flt: SearchFilter, pool: int, mode: str,
         rrf_k: int, exact_top: int | None = None, graph_boost: float = 0.0) -> list[Ranked]:
    """Every candidate the two channels find for `query` within the filter, best first.
    Call with the store's read lock held. (`exact_top`, `graph_boost`: see rank_context.)"""
    if mode == "context":
        return rank_context(store, analyse(query), query_vector, flt, pool, exact_top,
                            graph_boost)
    allowed = scope_ids(store, flt)
    vector_hits = store.vectors.search(query_vector, allowed, pool)
    keyword_hits = [(i, s) for i, s in store.keywords.search(
        query, pool, flt.workspace, [flt.category] if flt.category else None,
        flt.tags or None) if allowed is None or i in allowed]
    return fuse(vector_hits, keyword_hits, store.catalog, mode, rrf_k)


def demote_superseded(graph, ranked: list) -> list:
    """A memory another one supersedes ranks at half its score, unless the two are caught
    in a SUPERSEDES cycle: then nobody knows which is current, and none is demoted."""
    demoted = False
    for r in ranked:
        if graph.superseded_by(r.memory.id) and not graph.supersession_cycle(r.memory.id):
            r.parts["superseded"] = -r.score * (1 - SUPERSEDED_FACTOR)
            r.score *= SUPERSEDED_FACTOR
            demoted = True
    if demoted:
        ranked.sort(key=lambda r: (-r.score, -r.memory.id))
    return ranked


# -- context mode ----------------------------------------------------------------------------

def _neighbours(store, order: np.ndarray, m: Memory, reach: int) -> tuple[tuple[int, int], ...]:
    """(distance, id) of the memories stored just before and after `m` in its workspace (up
    to `reach` on each side), each stored within NEIGHBOUR_WINDOW_S of the next one."""
    out = []
    pos = int(np.searchsorted(order, m.id))
    for step in (-1, 1):
        last, i, dist = m, pos + step, 0
        while 0 <= i < len(order) and dist < reach:
            other = store.catalog.get(int(order[i]))
            i += step
            if other is None or other.workspace != m.workspace:
                continue  # another workspace sharing the database file: skip over it
            if abs((other.created_at - last.created_at).total_seconds()) > NEIGHBOUR_WINDOW_S:
                break
            dist += 1
            out.append((dist, other.id))
            last = other
    return tuple(out)


class _Layout:
    """What depends only on which memories exist (ids, workspaces and creation times never
    change): who neighbours whom. Kept per index until a memory is added or removed."""

    def __init__(self, key):
        self.key = key
        self.windows: dict[int, tuple[tuple[int, int], ...]] = {}


_LAYOUTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _layout(store, reach: int) -> _Layout:
    key = (store.vectors.generation, reach)
    layout = _LAYOUTS.get(store.vectors)
    if layout is None or layout.key != key:
        layout = _LAYOUTS[store.vectors] = _Layout(key)
    return layout


def scope_ids(store, flt: SearchFilter) -> set[int] | None:
    """The ids the filter admits, or None when it admits every memory. (Only narrows what
    the channels look at: every candidate is checked against the filter again.)"""
    catalog = store.catalog
    if not (flt.category or flt.tags or flt.min_importance > 1):
        if flt.workspace is None:
            return None
        if store.per_workspace.get(flt.workspace, 0) == len(catalog):
            return None  # the common case: one workspace per database
    scope = [m.id for m in catalog.values() if flt.admits(m)]
    return None if len(scope) == len(catalog) else set(scope)


def rank_context(store, q: QueryAnalysis, query_vector, flt: SearchFilter, pool: int,
                 exact_top: int | None = None, graph_boost: float = 0.0) -> list[Ranked]:
    """`exact_top`: only the first this many places must be exact (None: all). A candidate
    that cannot reach them, even with its neighbours' best possible share and `graph_boost`
    (the most the graph channel can add afterwards), keeps a score without its neighbours'
    share: it stays in the list, below every place that is shown."""
    catalog, keywords = store.catalog, store.keywords
    reach = len(NEIGHBOUR_WEIGHTS)
    layout = _layout(store, reach)
    windows = layout.windows
    order = store.vectors.sorted_ids()
    allowed = scope_ids(store, flt)
    scores = store.vectors.scores(query_vector)
    cosine = store.vectors.similarity(scores)
    # Candidates: each channel's best `pool` within the filter.
    vector_hits = store.vectors.best(scores, allowed, pool)
    keyword_hits = [(i, s) for i, s in keywords.search(
        " ".join(q.keywords), pool, flt.workspace, [flt.category] if flt.category else None,
        flt.tags or None) if allowed is None or i in allowed]
    best = max((s for _, s in keyword_hits), default=0.0)
    keyword = {i: s / best for i, s in keyword_hits} if best > 0 else {}
    candidates = [catalog[i] for i in dict.fromkeys([i for i, _ in vector_hits] +
                                                    [i for i, _ in keyword_hits])
                  if i in catalog and flt.admits(catalog[i])]

    # The query's index terms with their IDF weights: a memory's coverage is the weight of
    # those found in it or its neighbours.
    idf = {t: keywords.idf(t) for t in dict.fromkeys(keywords.analyse(" ".join(q.keywords)))}
    weights = {t: w for t, w in idf.items() if w > 0}
    query_terms = frozenset(weights)
    idf_total = sum(weights.values())
    covered_by: dict[frozenset, float] = {}

    def window(memory_id: int) -> tuple[tuple[int, int], ...]:
        """(distance, id) of the memory's neighbours."""
        got = windows.get(memory_id)
        if got is None:
            got = windows[memory_id] = _neighbours(store, order, catalog[memory_id], reach)
        return got

    # The query's terms each memory contains, for this query only: caching every memory's
    # window terms instead cost ~3 KB per memory and a cold query ~10 ms of set unions.
    query_hits: dict[int, frozenset[str]] = {}

    def hits(memory_id: int) -> frozenset[str]:
        got = query_hits.get(memory_id)
        if got is None:
            got = query_hits[memory_id] = query_terms.intersection(keywords.terms_of(memory_id))
        return got

    bases: dict[int, tuple[float, dict]] = {}
    tag_named: dict[str, bool] = {}

    def base(memory_id: int) -> tuple[float, dict]:
        """A memory's own evidence: both channels, the share of the query's terms found in it
        and its neighbours, and whether the query names one of its tags."""
        got = bases.get(memory_id)
        if got is None:
            parts = {"vector": CONTEXT_VECTOR_WEIGHT * max(0.0, cosine(memory_id)),
                     "keyword": CONTEXT_KEYWORD_WEIGHT * keyword.get(memory_id, 0.0)}
            if idf_total > 0:
                # the query's terms found in the memory or its neighbours
                seen = hits(memory_id).union(*(hits(other) for _, other in window(memory_id)
                                               if other in catalog))
                covered = covered_by.get(seen)
                if covered is None:
                    covered = covered_by[seen] = sum(
                        w for t, w in weights.items() if t in seen)
                parts["coverage"] = COVERAGE_WEIGHT * covered / idf_total
            for tag in catalog[memory_id].tags:
                named = tag_named.get(tag)
                if named is None:
                    named = tag_named[tag] = q.names_tag(tag)
                if named:
                    parts["tag"] = TAG_BOOST
                    break
            got = bases[memory_id] = (sum(parts.values()), parts)
        return got

    def base_bound(memory_id: int) -> float:
        """At least base(memory_id)[0], without looking at any memory's terms."""
        if memory_id in bases:
            return bases[memory_id][0]
        return (CONTEXT_VECTOR_WEIGHT * max(0.0, cosine(memory_id))
                + CONTEXT_KEYWORD_WEIGHT * keyword.get(memory_id, 0.0)
                + (COVERAGE_WEIGHT if idf_total > 0 else 0.0)
                + (TAG_BOOST if catalog[memory_id].tags else 0.0))

    # A memory next to a strong match may match nothing itself: it is a candidate too.
    seen_ids = {m.id for m in candidates}
    strongest = sorted(candidates, key=lambda m: (-base(m.id)[0], -m.id))[:EXPAND_FROM]
    for m in strongest:
        for _, other_id in window(m.id):
            other = catalog.get(other_id)
            if other is not None and other_id not in seen_ids and flt.admits(other):
                seen_ids.add(other_id)
                candidates.append(other)
    now = utcnow()
    own = {}
    for m in candidates:
        extra = {"importance": IMPORTANCE_WEIGHT * (m.importance - 1) / 4,
                 "recency": RECENCY_WEIGHT * _recency(m, now)}
        own[m.id] = (base(m.id)[0] + extra["importance"] + extra["recency"], extra)
    # Every candidate scores at least its own evidence; the k-th best of those (halved when
    # search will demote it as superseded) is a floor the shown places cannot fall below.
    floor = -math.inf
    if exact_top is not None and len(candidates) > exact_top:
        graph = store.graph
        floors = sorted((own[m.id][0] * (SUPERSEDED_FACTOR if graph.superseded_by(m.id)
                                         else 1.0) for m in candidates), reverse=True)
        floor = floors[exact_top - 1]
    ranked = []
    for m in candidates:
        score, parts = base(m.id)
        at_least, extra = own[m.id]
        neighbours = [(dist, i) for dist, i in window(m.id) if i in catalog]
        lift = 0.0
        if at_least + graph_boost + max((NEIGHBOUR_WEIGHTS[d - 1] * base_bound(i)
                                         for d, i in neighbours), default=0.0) >= floor:
            for dist, other_id in neighbours:
                lift = max(lift, NEIGHBOUR_WEIGHTS[dist - 1] * base(other_id)[0])
        ranked.append(Ranked(m, score + lift + extra["importance"] + extra["recency"],
                             {**parts, "context": lift, **extra}))
    ranked.sort(key=lambda r: (-r.score, -r.memory.id))
    return ranked
