"""Hybrid ranking: a vector channel and a keyword channel, fused, then nudged by recency and
importance. Two fusion modes (MEMORY_FUSION):

- legacy: raw cosine plus BM25 divided by the best BM25 of the query; scores keep meaning
  (a weak match scores low whatever its rank).
- rrf: reciprocal rank fusion, (K+1)/(K+rank) per channel; only each channel's ordering
  counts, so the two channels' scales cannot interact.
"""
import math
from dataclasses import dataclass

from .records import Memory, utcnow

VECTOR_WEIGHT = 0.7
KEYWORD_WEIGHT = 0.3
IMPORTANCE_WEIGHT = 0.05
RECENCY_WEIGHT = 0.05
RECENCY_HALF_LIFE_DAYS = 30.0


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
