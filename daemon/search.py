"""Hybrid ranking: a vector channel and a keyword channel, fused, then nudged by recency and
importance. Two fusion modes (MEMORY_FUSION):

- legacy: raw cosine plus BM25 divided by the best BM25 of the query; scores keep meaning
  (a weak match scores low whatever its rank).
- rrf: reciprocal rank fusion, (K+1)/(K+rank) per channel; only each channel's ordering
  counts, so the two channels' scales cannot interact.
"""
import math
from dataclasses import dataclass, field

from .records import Memory, utcnow

VECTOR_WEIGHT = 0.7
KEYWORD_WEIGHT = 0.3
IMPORTANCE_WEIGHT = 0.05
RECENCY_WEIGHT = 0.05
RECENCY_HALF_LIFE_DAYS = 30.0


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
    scope = [m for m in store.catalog.values() if flt.admits(m)]
    allowed = None if len(scope) == len(store.catalog) else {m.id for m in scope}
    vector_hits = store.vectors.search(query_vector, allowed, pool)
    keyword_hits = [(i, s) for i, s in store.keywords.search(
        query, pool, flt.workspace, [flt.category] if flt.category else None,
        flt.tags or None) if allowed is None or i in allowed]
    return fuse(vector_hits, keyword_hits, store.catalog, mode, rrf_k)
