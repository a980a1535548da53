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
EXPAND_FROM = 50          # the neighbours of this many best candidates become candidates


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
         rrf_k: int) -> list[Ranked]:
    """Every candidate the two channels find for `query` within the filter, best first.
    Call with the store's read lock held."""
    if mode == "context":
        return rank_context(store, analyse(query), query_vector, flt, pool)
    allowed = scope_ids(store, flt)
    vector_hits = store.vectors.search(query_vector, allowed, pool)
    keyword_hits = [(i, s) for i, s in store.keywords.search(
        query, pool, flt.workspace, [flt.category] if flt.category else None,
        flt.tags or None) if allowed is None or i in allowed]
    return fuse(vector_hits, keyword_hits, store.catalog, mode, rrf_k)


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


def rank_context(store, q: QueryAnalysis, query_vector, flt: SearchFilter,
                 pool: int) -> list[Ranked]:
    catalog, keywords = store.catalog, store.keywords
    reach = len(NEIGHBOUR_WEIGHTS)
    layout = _layout(store, reach)
    allowed = scope_ids(store, flt)
    cosine = store.vectors.similarity(query_vector)
    # Candidates: each channel's best `pool` within the filter.
    vector_hits = store.vectors.search(query_vector, allowed, pool)
    keyword_hits = [(i, s) for i, s in keywords.search(
        " ".join(q.keywords), pool, flt.workspace, [flt.category] if flt.category else None,
        flt.tags or None) if allowed is None or i in allowed]
    best = max((s for _, s in keyword_hits), default=0.0)
    keyword = {i: s / best for i, s in keyword_hits} if best > 0 else {}
    candidates = [catalog[i] for i in dict.fromkeys([i for i, _ in vector_hits] +
                                                    [i for i, _ in keyword_hits])
                  if i in catalog and flt.admits(catalog[i])]

    # The query's index terms, one bit each, with their IDF weights: a memory's coverage is
    # the weight of the bits found in it or its neighbours.
    idf = {t: keywords.idf(t) for t in dict.fromkeys(keywords.analyse(" ".join(q.keywords)))}
    bits = [(t, 1 << n, w) for n, (t, w) in enumerate((t, w) for t, w in idf.items() if w > 0)]
    idf_total = sum(w for _, _, w in bits)
    masks: dict[int, int] = {}
    weight_of: dict[int, float] = {}

    def mask(memory_id: int) -> int:
        got = masks.get(memory_id)
        if got is None:
            terms = keywords.terms_of(memory_id)
            got = masks[memory_id] = sum(bit for t, bit, _ in bits if t in terms)
        return got

    order = store.vectors.sorted_ids()
    windows = layout.windows

    def window(m: Memory) -> list[tuple[int, Memory]]:
        got = windows.get(m.id)
        if got is None:
            got = windows[m.id] = _neighbours(store, order, m, reach)
        return [(dist, catalog[i]) for dist, i in got if i in catalog]

    bases: dict[int, tuple[float, dict]] = {}
    tag_named: dict[str, bool] = {}

    def base(m: Memory) -> tuple[float, dict]:
        """A memory's own evidence: both channels, the share of the query's terms found in it
        and its neighbours, and whether the query names one of its tags."""
        got = bases.get(m.id)
        if got is None:
            parts = {"vector": CONTEXT_VECTOR_WEIGHT * max(0.0, cosine(m.id)),
                     "keyword": CONTEXT_KEYWORD_WEIGHT * keyword.get(m.id, 0.0)}
            if idf_total > 0:
                seen = mask(m.id)
                for _, other in window(m):
                    seen |= mask(other.id)
                covered = weight_of.get(seen)
                if covered is None:
                    covered = weight_of[seen] = sum(w for _, bit, w in bits if seen & bit)
                parts["coverage"] = COVERAGE_WEIGHT * covered / idf_total
            for tag in m.tags:
                named = tag_named.get(tag)
                if named is None:
                    named = tag_named[tag] = q.names_tag(tag)
                if named:
                    parts["tag"] = TAG_BOOST
                    break
            got = bases[m.id] = (sum(parts.values()), parts)
        return got

    # A memory next to a strong match may match nothing itself: it is a candidate too.
    seen_ids = {m.id for m in candidates}
    strongest = sorted(candidates, key=lambda m: (-base(m)[0], -m.id))[:EXPAND_FROM]
    for m in strongest:
        for _, other in window(m):
            if other.id not in seen_ids and flt.admits(other):
                seen_ids.add(other.id)
                candidates.append(other)
    now = utcnow()
    ranked = []
    for m in candidates:
        score, parts = base(m)
        lift = 0.0
        for dist, other in window(m):
            lift = max(lift, NEIGHBOUR_WEIGHTS[dist - 1] * base(other)[0])
        parts = {**parts, "context": lift,
                 "importance": IMPORTANCE_WEIGHT * (m.importance - 1) / 4,
                 "recency": RECENCY_WEIGHT * _recency(m, now)}
        ranked.append(Ranked(m, score + lift + parts["importance"] + parts["recency"], parts))
    ranked.sort(key=lambda r: (-r.score, -r.memory.id))
    return ranked
