"""Hybrid ranking: a vector channel and a keyword channel, fused, then nudged by recency and
importance. Three fusion modes (MEMORY_FUSION):

- context (default): every candidate is scored on both channels (cosine taken after
  removing the corpus mean, on the plain cosine's level; BM25 over the query's content words,
  function words dropped, divided by the query's best BM25) and the two are weighed together
  (tuning.py). Added to that: the share of the query's terms (IDF-weighted) that the
  memory and its neighbours contain between them, and a small lift when the query names one
  of the memory's tags (a person, a project). Finally each memory takes a share of its best
  neighbour's score. Neighbours are the memories stored just before and after it in the same
  workspace (two each way), each within an hour of the next: memories written together (the
  turns of a conversation, the notes of one session) explain each other, and the answer to a
  question is often next to the memory that shares its words. Last, a memory's own form
  nudges its own score (not what its neighbours take from it): up with its length, up to a
  cap (a longer memory holds more facts), down when it asks ('?': a question is not an
  answer).
- legacy: raw cosine plus BM25 divided by the best BM25 of the query; scores keep meaning
  (a weak match scores low whatever its rank).
- rrf: reciprocal rank fusion, (K+1)/(K+rank) per channel; only each channel's ordering
  counts, so the two channels' scales cannot interact.

bench/locomo.py measures them; bench/RESULTS.md#retrieval-quality.
"""
import math
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from itertools import repeat
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..core.growable import grown
from ..core.records import Memory, utcnow
from .query_analysis import QueryAnalysis, analyse
from .timeline import all_microseconds
from .tuning import DEFAULT_TUNING, ContextTuning

DEFAULT_FUSION = "context"

VECTOR_WEIGHT = 0.7
KEYWORD_WEIGHT = 0.3
IMPORTANCE_WEIGHT = 0.05
RECENCY_WEIGHT = 0.05
RECENCY_HALF_LIFE_DAYS = 30.0

# context mode (bench/RESULTS.md#retrieval-quality; tuning.py holds them as one value)
CONTEXT_VECTOR_WEIGHT = DEFAULT_TUNING.vector
CONTEXT_KEYWORD_WEIGHT = DEFAULT_TUNING.keyword
COVERAGE_WEIGHT = DEFAULT_TUNING.coverage
TAG_BOOST = DEFAULT_TUNING.tag
NEIGHBOUR_WEIGHTS = DEFAULT_TUNING.neighbours
NEIGHBOUR_WINDOW_S = 3600.0     # neighbours were stored at most this far apart
EXPAND_FROM = 20          # the neighbours of this many best candidates become candidates
SUPERSEDED_FACTOR = 0.5   # a memory another one supersedes ranks at this share of its score


@dataclass
class SearchFilter:
    workspace: str | None  # None: every workspace in the database
    # a second workspace admitted: the personal tier ranked beside the workspace (beside.py)
    also: str | None = None
    category: str | None = None
    tags: list[str] = field(default_factory=list)  # any of these
    min_importance: int = 1
    via: str | None = None  # provenance: how it was written
    client: str | None = None  # provenance: by which client

    def admits(self, m: Memory) -> bool:
        return ((self.workspace is None or m.workspace == self.workspace
                 or m.workspace == self.also)
                and (self.category is None or m.category == self.category)
                and (not self.tags or any(t in m.tags for t in self.tags))
                and m.importance >= self.min_importance
                and (self.via is None or m.origin_via == self.via
                     or (self.via == "team" and m.from_team))
                and (self.client is None or m.origin_client == self.client))


# A filter's scope by its key, kept per store version (scope_ids).
ScopeAnswers = dict[tuple[object, ...], frozenset[int] | None]
Hits = list[tuple[int, float]]  # (memory id, a channel's score), best first
# What a candidate's score is made of, by part ("vector", "keyword", "recency", ...).
ScoreParts = dict[str, float]
# The census of one search, for explain (search_census): counts, nested by channel.
Census = dict[str, Any]


class CosineScores(Protocol):
    """One query's cosines (indexes.Scores)."""
    def best(self, allowed: AbstractSet[int] | None, k: int) -> Hits: ...
    def centred(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]: ...
    def cosines(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]: ...


class VectorChannel(Protocol):
    """What ranking reads of the vector index (indexes.VectorIndex)."""
    def scores(self, query: npt.NDArray[np.float32]) -> CosineScores: ...
    def search(self, query: npt.NDArray[np.float32], allowed: AbstractSet[int] | None,
               k: int) -> Hits: ...
    def ids(self) -> set[int]: ...
    def bounded(self, min_score: float = -1.0) -> bool: ...


class KeywordChannel(Protocol):
    """What ranking reads of the keyword index (indexes.KeywordIndex)."""
    def search(self, text: str, k: int, workspace: str | None = None,
               categories: list[str] | None = None, tags: list[str] | None = None) -> Hits: ...
    def analyse(self, text: str) -> list[str]: ...
    def idf(self, term: str) -> float: ...
    def term_bits(self, terms: list[str], ids: npt.NDArray[np.int64]
                  ) -> npt.NDArray[np.uint64]: ...


class Neighbours(Protocol):
    """timeline.Timeline's neighbours."""
    def neighbours(self, reach: int, window_us: int) -> npt.NDArray[np.int64]: ...


class Columns(Protocol):
    """memory_columns.MemoryColumns' arrays, indexed by memory id."""
    importance: npt.NDArray[np.int8]
    updated_us: npt.NDArray[np.int64]
    words: npt.NDArray[np.int32]
    asks: npt.NDArray[np.bool_]
    tagged: npt.NDArray[np.bool_]


class RankingStore(Protocol):
    """What ranking reads from the store (store.MemoryStore, or beside.Beside: a workspace
    with the personal tier beside it): the catalog, both indexes, the timeline and columns,
    and the scopes it keeps per store version."""
    scopes: tuple[object, ScopeAnswers]

    @property
    def catalog(self) -> Mapping[int, Memory]: ...
    @property
    def version(self) -> object: ...  # changes with every write
    @property
    def per_workspace(self) -> Mapping[str, int]: ...
    @property
    def vectors(self) -> VectorChannel: ...
    @property
    def keywords(self) -> KeywordChannel: ...
    @property
    def timeline(self) -> Neighbours: ...
    @property
    def columns(self) -> Columns: ...


class Supersession(Protocol):
    """What demote_superseded reads from the graph mirror (store.graph.Graph)."""
    def any_superseded(self, ids: Iterable[int]) -> bool: ...
    def superseded_by(self, memory_id: int) -> list[int]: ...
    def supersession_cycle(self, memory_id: int) -> list[int] | None: ...


class Ranked:
    """A candidate and its score; `parts`, what the score is made of, is worked out when
    first read (explain, and the few candidates a later step adjusts): a ranking builds
    hundreds of candidates to show ten."""
    __slots__ = ("memory", "score", "_parts", "_explain")

    def __init__(self, memory: Memory, score: float, parts: ScoreParts | None = None,
                 explain: Callable[[], ScoreParts] | None = None):
        self.memory, self.score, self._parts, self._explain = memory, score, parts, explain

    @property
    def parts(self) -> ScoreParts:
        if self._parts is None:
            assert self._explain is not None  # built with one or the other
            self._parts, self._explain = self._explain(), None
        return self._parts


def _recency(m: Memory, now: datetime) -> float:
    age_days = max(0.0, (now - m.updated_at).total_seconds() / 86400.0)
    return math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)


def fuse(vector_hits: list[tuple[int, float]], keyword_hits: list[tuple[int, float]],
         catalog: Mapping[int, Memory], mode: str, rrf_k: int) -> list[Ranked]:
    if mode == "rrf":
        vec = {i: (rrf_k + 1) / (rrf_k + rank) for rank, (i, _) in enumerate(vector_hits, 1)}
        kw = {i: (rrf_k + 1) / (rrf_k + rank) for rank, (i, _) in enumerate(keyword_hits, 1)}
    else:
        vec = {i: max(0.0, s) for i, s in vector_hits}
        best = max((s for _, s in keyword_hits), default=0.0)
        kw = {i: s / best for i, s in keyword_hits} if best > 0 else {}
    now = utcnow()
    ranked: list[Ranked] = []
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


def rank(store: RankingStore, query: str, query_vector: npt.NDArray[np.float32],
         flt: SearchFilter, pool: int, mode: str, rrf_k: int, census: Census | None = None,
         tuning: ContextTuning = DEFAULT_TUNING) -> list[Ranked]:
    """Every candidate the two channels find for `query` within the filter, best first.
    Call with the store's read lock held. Given a `census` dict (explain), fills it with
    what the search considered (search_census()); without one nothing extra is counted.
    `tuning`: context mode's constants (benches choose them; the daemon keeps the default)."""
    if mode == "context":
        return rank_context(store, analyse(query), query_vector, flt, pool, census, tuning)
    allowed = scope_ids(store, flt)
    vector_hits = store.vectors.search(query_vector, allowed, pool)
    found = store.keywords.search(
        query, pool, flt.workspace, [flt.category] if flt.category else None,
        flt.tags or None)
    keyword_hits = [(i, s) for i, s in found if allowed is None or i in allowed]
    ranked = fuse(vector_hits, keyword_hits, store.catalog, mode, rrf_k)
    if census is not None:
        census.update(search_census(store, flt, allowed, pool, vector_hits, found,
                                    keyword_hits, len(ranked), 0))
    return ranked


def search_census(store: RankingStore, flt: SearchFilter, allowed: frozenset[int] | None, pool: int,
                  vector_hits: list[tuple[int, float]], keyword_found: list[tuple[int, float]],
                  keyword_hits: list[tuple[int, float]], kept: int,
                  neighbours: int) -> Census:
    """What one search considered, for explain: the corpus and the scope it searched, each
    channel's candidates, how many the filters dropped, and whether the vector channel could
    reach every memory in scope. Costs a pass over the scope: only explain asks for it."""
    catalog = store.catalog
    in_workspace = len(catalog) if flt.workspace is None else \
        store.per_workspace.get(flt.workspace, 0)
    scope = len(catalog) if allowed is None else len(allowed)
    vector_ids = {i for i, _ in vector_hits}
    keyword_ids = {i for i, _ in keyword_hits}
    union = vector_ids | keyword_ids
    if len(vector_hits) < pool:
        # The channel returned fewer than it was asked for: it held every indexed memory in
        # scope, so its own hits are the census.
        mode = "ranked_hits"
        reachable = sum(1 for i in vector_ids if i in catalog)
    else:
        # The pool is smaller than the scope: count the scope's ids against the index.
        mode = "id_probe"
        indexed = store.vectors.ids()
        reachable = sum(1 for i in (catalog if allowed is None else allowed) if i in indexed)
    return {
        "corpus": len(catalog),
        "in_workspace": in_workspace,
        "in_scope": scope,
        "pool": pool,
        "candidates": {"vector": len(vector_hits), "keyword": len(keyword_hits),
                       "both": len(vector_ids & keyword_ids), "neighbours": neighbours,
                       "considered": kept},
        "dropped_by_filters": (len(keyword_found) - len(keyword_hits))
        + max(0, len(union) + neighbours - kept),
        "vector_coverage": {"census_mode": mode, "reachable": reachable, "in_scope": scope,
                            "share": round(reachable / scope, 4) if scope else 1.0,
                            "complete": reachable >= scope,
                            "scan": "bounded" if store.vectors.bounded() else "full"},
    }


def demote(ranked: list[Ranked], factors: dict[int, float], part: str) -> list[Ranked]:
    """Scale the scores of the memories in `factors` (id -> share kept), recording what it
    took in `part`, and sort again."""
    changed = False
    for r in ranked:
        factor = factors.get(r.memory.id, 1.0)
        if factor != 1.0:
            r.parts[part] = -r.score * (1 - factor)
            r.score *= factor
            changed = True
    if changed:
        ranked.sort(key=lambda r: (-r.score, -r.memory.id))
    return ranked


def demote_superseded(graph: Supersession, ranked: list[Ranked]) -> list[Ranked]:
    """A memory another one supersedes ranks at half its score, unless the two are caught
    in a SUPERSEDES cycle: then nobody knows which is current, and none is demoted."""
    if not graph.any_superseded(r.memory.id for r in ranked):
        return ranked
    factors = {r.memory.id: SUPERSEDED_FACTOR for r in ranked
               if graph.superseded_by(r.memory.id) and not graph.supersession_cycle(r.memory.id)}
    return demote(ranked, factors, "superseded") if factors else ranked


# -- context mode ----------------------------------------------------------------------------

SCOPES_KEPT = 64  # filters whose scope is kept per store version


def scope_ids(store: RankingStore, flt: SearchFilter) -> frozenset[int] | None:
    """The ids the filter admits, or None when it admits every memory. (Only narrows what
    the channels look at: every candidate is checked against the filter again.)"""
    catalog = store.catalog
    if not (flt.category or flt.tags or flt.min_importance > 1 or flt.via or flt.client):
        if flt.workspace is None:
            return None
        held = store.per_workspace.get(flt.workspace, 0) + \
            (store.per_workspace.get(flt.also, 0) if flt.also else 0)
        if held == len(catalog):
            return None  # the common case: one workspace per database (and the personal tier)
    # Otherwise every memory is tested: keep the answer until a write
    # (bench/RESULTS.md#search-profiles).
    key = (flt.workspace, flt.also, flt.category, tuple(flt.tags), flt.min_importance,
           flt.via, flt.client)
    version, known = store.scopes
    if version != store.version:
        known = {}
        store.scopes = (store.version, known)  # replaced whole: readers share it safely
    if key not in known:
        if len(known) >= SCOPES_KEPT:
            known.clear()
        scope = [i for i, m in catalog.items() if flt.admits(m)]  # the store's ids
        known[key] = None if len(scope) == len(catalog) else frozenset(scope)
    return known[key]


def may_answer(store: RankingStore, query_vector: npt.NDArray[np.float32],
               flt: SearchFilter, floor: float) -> bool:
    """Whether any memory the filter admits comes within `floor` (a raw cosine) of the
    query: one pass over the vectors, a fraction of a full ranking. A tier beside the
    workspace is ranked only when it may answer (bench/RESULTS.md#personal-tier)."""
    best = store.vectors.search(query_vector, scope_ids(store, flt), 1)
    return bool(best) and best[0][1] >= floor


REACH = len(NEIGHBOUR_WEIGHTS)
_WINDOW_US = int(NEIGHBOUR_WINDOW_S * 1_000_000)
_DAY_US = 86_400_000_000.0
_TERMS_PER_PASS = 64  # TermTable.bits gives one bit per term in a uint64


class _Evidence:
    """Each memory's own evidence for one query, for many memories at once: both channels,
    the share of the query's terms (IDF-weighted) found in it and its neighbours, and whether
    the query names one of its tags. Arrays in, arrays out: a thousand memories per query."""

    def __init__(self, store: RankingStore, q: QueryAnalysis, scores: CosineScores,
                 keyword: dict[int, float],
                 tuning: ContextTuning = DEFAULT_TUNING):
        """`scores`: the query's indexes.Scores; `keyword`: normalised BM25 by id."""
        self.store, self.q, self.scores, self.keyword = store, q, scores, keyword
        self.tuning = tuning
        self.column_weights = np.array(tuning.neighbours * 2, dtype=np.float64)
        self.neighbours = store.timeline.neighbours(REACH, _WINDOW_US)
        keywords = store.keywords
        idf = {t: keywords.idf(t) for t in dict.fromkeys(keywords.analyse(" ".join(q.keywords)))}
        self.terms = [t for t, w in idf.items() if w > 0]
        self.weights = [idf[t] for t in self.terms]
        self.idf_total = sum(self.weights)
        self.tag_named: dict[str, bool] = {}
        # per pass of 64 terms: which memories were looked up, and their bits (by id)
        self._known: dict[int, tuple[npt.NDArray[np.bool_], npt.NDArray[np.uint64]]] = {}
        # base() by id: ranking asks about the first candidates twice (own score, then as
        # part of every candidate's window)
        self._done = np.zeros(0, dtype=bool)
        self._total = np.zeros(0, dtype=np.float64)
        self._parts: dict[str, np.ndarray] = {}

    def window(self, ids: np.ndarray) -> np.ndarray:
        """The neighbours of each of `ids` (0: none), one column per place."""
        ok = (ids > 0) & (ids < len(self.neighbours))
        return np.where(ok[:, None], self.neighbours[np.where(ok, ids, 0)], 0)

    def base(self, ids: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The evidence total of each of `ids` (0: no memory), and its parts; each id is
        worked out once per query."""
        size = int(ids.max(initial=0)) + 1
        if size > len(self._done):
            size = max(size, len(self.neighbours))
            self._done = grown(self._done, size)
            self._total = grown(self._total, size)
            self._parts = {name: grown(values, size) for name, values in self._parts.items()}
        new = ids[~self._done[ids]]
        if len(new):
            new = np.unique(new)
            total, parts = self._base(new)
            self._done[new] = True
            self._total[new] = total
            for name, values in parts.items():
                if name not in self._parts:
                    self._parts[name] = np.zeros(len(self._done), dtype=np.float64)
                self._parts[name][new] = values
        return self._total[ids], {name: values[ids] for name, values in self._parts.items()}

    def _base(self, ids: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        tuning = self.tuning
        cosines = self.scores.centred(ids) if tuning.centre else self.scores.cosines(ids)
        parts = {"vector": tuning.vector * np.maximum(0.0, cosines),
                 "keyword": tuning.keyword * np.fromiter(
                     map(self.keyword.get, ids.tolist(), repeat(0.0)), dtype=np.float64,
                     count=len(ids))}
        if self.idf_total > 0:
            parts["coverage"] = tuning.coverage * self._covered(ids) / self.idf_total
        named = self._names_a_tag(ids)
        if named.any():
            parts["tag"] = np.where(named, tuning.tag, 0.0)
        total = parts["vector"] + parts["keyword"]
        for name in ("coverage", "tag"):
            if name in parts:
                total = total + parts[name]
        return total, parts

    def _covered(self, ids: np.ndarray) -> np.ndarray:
        """The IDF weight of the query's terms found in each memory or its neighbours."""
        around = np.concatenate([ids[:, None], self.window(ids)], axis=1)
        covered = np.zeros(len(ids), dtype=np.float64)
        for first in range(0, len(self.terms), _TERMS_PER_PASS):
            seen = np.bitwise_or.reduce(self._bits(first, around), axis=1)
            for j, weight in enumerate(self.weights[first:first + _TERMS_PER_PASS]):
                # in term order, adding 0.0 where absent: the same sum as term by term
                covered = covered + weight * ((seen >> np.uint64(j)) & np.uint64(1))
        return covered

    def _bits(self, first: int, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
        """Which of the query's terms first..first+63 each of `ids` contains (one bit each),
        asking the term table only about memories this query has not asked about yet."""
        known = self._known.get(first)
        if known is None:
            size = max(len(self.neighbours), int(ids.max(initial=0)) + 1)
            known = self._known[first] = (np.zeros(size, dtype=bool),
                                          np.zeros(size, dtype=np.uint64))
        asked, bits = known
        ids = np.where((ids > 0) & (ids < len(asked)), ids, 0)
        new = np.sort(ids[~asked[ids]])
        if len(new):
            new = new[np.concatenate(([True], new[1:] != new[:-1]))]  # each once
            asked[new] = True
            bits[new] = self.store.keywords.term_bits(
                self.terms[first:first + _TERMS_PER_PASS], new)
        return bits[ids]

    def _names_a_tag(self, ids: np.ndarray) -> np.ndarray:
        catalog, named = self.store.catalog, self.tag_named
        out = np.zeros(len(ids), dtype=bool)
        tagged = self.store.columns.tagged
        have = tagged[np.where(ids < len(tagged), ids, 0)]
        for i, memory_id in zip(np.flatnonzero(have).tolist(), ids[have].tolist()):
            m = catalog.get(memory_id)
            for tag in (m.tags if m is not None else ()):
                hit = named.get(tag)
                if hit is None:
                    hit = named[tag] = self.q.names_tag(tag)
                if hit:
                    out[i] = True
                    break
        return out


def rank_context(store: RankingStore, q: QueryAnalysis, query_vector: npt.NDArray[np.float32],
                 flt: SearchFilter, pool: int, census: Census | None = None,
                 tuning: ContextTuning = DEFAULT_TUNING) -> list[Ranked]:
    catalog, keywords = store.catalog, store.keywords
    allowed = scope_ids(store, flt)
    scores = store.vectors.scores(query_vector)
    # Candidates: each channel's best `pool` within the filter.
    vector_hits = scores.best(allowed, pool)
    found = keywords.search(
        " ".join(q.keywords), pool, flt.workspace, [flt.category] if flt.category else None,
        flt.tags or None)
    keyword_hits = [(i, s) for i, s in found if allowed is None or i in allowed]
    best = max((s for _, s in keyword_hits), default=0.0)
    keyword = {i: s / best for i, s in keyword_hits} if best > 0 else {}
    # Candidates by the store's ids (a memory's own id differs in a Beside view).
    found_ids = [i for i in dict.fromkeys([i for i, _ in vector_hits] +
                                          [i for i, _ in keyword_hits]) if i in catalog]
    if allowed is not None:  # no scope: the filter admits every memory
        found_ids = [i for i in found_ids if flt.admits(catalog[i])]
    candidates = [catalog[i] for i in found_ids]
    evidence = _Evidence(store, q, scores, keyword, tuning)

    # A memory next to a strong match may match nothing itself: it is a candidate too.
    ids = np.array(found_ids, dtype=np.int64)
    own, _ = evidence.base(ids)
    strongest = ids[np.lexsort((-ids, -own))[:EXPAND_FROM]]
    seen_ids = set(found_ids)
    matched = len(candidates)
    for other_id in evidence.window(strongest).ravel().tolist():
        other = catalog.get(other_id) if other_id else None
        if other is not None and other_id not in seen_ids and \
                (allowed is None or flt.admits(other)):
            seen_ids.add(other_id)
            found_ids.append(other_id)
            candidates.append(other)
    if census is not None:
        census.update(search_census(store, flt, allowed, pool, vector_hits, found,
                                    keyword_hits, len(candidates),
                                    len(candidates) - matched))

    # Each candidate's evidence, plus a share of its best neighbour's.
    ids = np.array(found_ids, dtype=np.int64)
    window = evidence.window(ids)
    n = len(ids)
    both, parts = evidence.base(np.concatenate([ids, window.ravel()]))
    totals, around = both[:n], both[n:].reshape(window.shape)
    shares = np.where(window > 0, evidence.column_weights * around, 0.0)
    lifts = np.maximum(0.0, shares.max(axis=1, initial=0.0))
    kept = store.columns
    importance = IMPORTANCE_WEIGHT * (kept.importance[ids].astype(np.float64) - 1) / 4
    now_us = all_microseconds([utcnow()])[0]
    age_days = np.maximum(0.0, (now_us - kept.updated_us[ids]) / _DAY_US)
    recency = RECENCY_WEIGHT * np.power(0.5, age_days / RECENCY_HALF_LIFE_DAYS)
    form = _form(kept.words[ids], kept.asks[ids], tuning)
    scores = totals + lifts + importance + recency + form
    columns = {name: values[:n] for name, values in parts.items()}
    columns.update(context=lifts, importance=importance, recency=recency, form=form)
    # best first, ties by the newer id: one sort of the arrays, not of Ranked objects
    order = np.lexsort((-ids, -scores)).tolist()
    listed = scores.tolist()
    return [Ranked(candidates[j], listed[j], explain=partial(_parts_of, columns, j))
            for j in order]


def _form(words: np.ndarray, asks: np.ndarray, tuning: ContextTuning) -> np.ndarray:
    """Each candidate's own form, from its length in words (memory_columns.words) and
    whether it contains '?': tuning.length times the log of its words, capped at
    tuning.length_cap words and taken relative to the candidates' median, less
    tuning.question when it asks. The cap bounds what length alone can do; the median keeps
    the page's scores at their level, so the recall hook's floor keeps its meaning (a shift
    shared by every candidate orders nothing)."""
    n = len(words)
    if n == 0 or (tuning.length == 0 and tuning.question == 0):
        return np.zeros(n, dtype=np.float64)
    capped = np.minimum(words.astype(np.float64), tuning.length_cap)
    size = np.log1p(capped) - math.log1p(float(np.median(capped)))
    return tuning.length * size - tuning.question * asks.astype(np.float64)


def _parts_of(columns: dict[str, np.ndarray], j: int) -> ScoreParts:
    """Candidate j's score in parts (a tag part only where the query named a tag)."""
    found = {name: float(values[j]) for name, values in columns.items()}
    if found.get("tag") == 0.0:
        del found["tag"]
    return found
