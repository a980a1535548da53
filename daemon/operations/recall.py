"""Recall: a search's whole ranking chain (rank, graph boost, superseded demotion, code
checks, conflicts, annotations) as one `Page`, and memories read by id. Each reads under one
read lock and re-anchors code that only moved after it. Listing without ranking: listing.py."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from ..core.errors import ToolError, invalid
from ..core.records import Memory, normalise_tags
from ..curation.conflicts import conflicts, with_resolutions
from ..curation.freshness import Freshness
from ..curation.screening import flag
from ..search.beside import beside as beside_view
from ..search.graph_signal import boost
from ..search.ranking import (
    Ranked,
    RankingStore,
    SearchFilter,
    demote_superseded,
    may_answer,
    rank,
)
from ..store.neighbours import ConflictFlag
from ..store.store import MemoryStore
from . import tiers
from .code_checks import Checks, check_code, follow_moved_code, rank_by_code
from .context import CallContext, Reach

Conflict = ConflictFlag  # one conflict flag, as curation/conflicts.py reports it


@dataclass(frozen=True)
class Notes:
    """What an agent should know about a memory it is shown: what replaced it (or the
    SUPERSEDES cycle it is caught in), what it conflicts with, whether its text tries to
    instruct the agent (curation/screening.py's flag)."""
    superseded_by: list[int]
    supersession_cycle: list[int] | None
    conflicts: Sequence[Conflict]  # with the calls that settle them, where asked
    untrusted: dict[str, Any] | None


def notes_on(store: MemoryStore, m: Memory, found: Sequence[Conflict] | None) -> Notes:
    """The Notes of `m`; `found`: its conflicts, from conflicts(). Read lock held."""
    graph = store.graph
    untrusted = flag({}, m.content, store.screened).get("untrusted_content")
    return Notes(graph.superseded_by(m.id), graph.supersession_cycle(m.id), found or [],
                 untrusted)


# -- search ----------------------------------------------------------------------------------

Fusion = Literal["context", "legacy", "rrf"]  # core/config.py's FUSION_MODES


@dataclass(frozen=True)
class Query:
    """What a search asks. None: the setting's default (MEMORY_SEARCH_LIMIT, MEMORY_FUSION)."""
    text: str
    top_k: int | None = None
    offset: int = 0
    category: str | None = None
    tags: list[str] = field(default_factory=list)
    min_importance: int = 1
    via: str | None = None
    client: str | None = None
    everywhere: bool = False  # every workspace of the database
    explain: bool = False
    fusion: Fusion | None = None
    # other workspaces of the user to search too, by path; ["*"]: every one the daemon knows
    workspaces: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Hit:
    """One memory of a page: as it was when shown, its score, what the score is made of
    (explain only), the check of its cited code and its Notes."""
    memory: Memory
    score: float
    parts: dict[str, float] | None
    code: Freshness | None
    notes: Notes
    source: Source = "here"


# Where a hit comes from: the call's workspace, the personal tier, another workspace searched
# on request (its memory's `workspace` says which).
Source = Literal["here", "user", "other"]


@dataclass(frozen=True)
class Page:
    """One page of a search. `census`: what the search considered (explain only);
    `narrowed`: a global search kept to the workspace, since the caller may not see the
    others."""
    hits: list[Hit]
    offset: int
    has_more: bool
    everywhere: bool
    narrowed: bool
    census: dict[str, Any] | None
    searched: list[str] = field(default_factory=list)  # other workspaces searched
    not_searched: dict[str, str] = field(default_factory=dict)  # named ones left out, and why

    @property
    def any_conflicts(self) -> bool:
        return any(h.notes.conflicts for h in self.hits)


@dataclass
class _Ask:
    """A Query with its defaults filled in and its filter built."""
    query: Query
    top_k: int
    mode: str
    graph_weight: float
    flt: SearchFilter


def search(ctx: CallContext, query: Query, reach: Reach | None = None) -> Page:
    """The page of memories that best answer `query`, ranked and checked."""
    text = query.text.strip()
    if not text:
        raise invalid("query is empty or only whitespace")
    settings = ctx.settings
    ask = _Ask(query, query.top_k or settings.search_limit, query.fusion or settings.fusion,
               settings.dream.graph_weight, SearchFilter(
                   workspace=None if query.everywhere else ctx.workspace,
                   category=query.category, tags=normalise_tags(query.tags),
                   min_importance=query.min_importance, via=query.via, client=query.client))
    query_vector = ctx.embedder.embed_one(text)  # outside the lock
    personal = _may_answer(tiers.recalls_personal(ctx), ask.flt, query_vector)
    others, not_searched = _other_workspaces(ctx, query)
    store = ctx.store
    with _reading(ctx, personal):
        narrowed = query.everywhere and reach is not None and reach.hides_any(
            w for w, n in store.per_workspace.items() if n > 0)
        if narrowed:  # a remote caller sees only the workspaces it may use
            ask.flt.workspace = ctx.workspace
        if not others:
            page, codes = _ranked_page(ctx, personal, ask, text, query_vector)
    if not others:
        _follow_moved_code(ctx, personal, codes)
        return Page(page.hits, query.offset, page.has_more, query.everywhere and not narrowed,
                    narrowed, page.census, [], not_searched)
    hits, has_more, census = _tiered_page(ctx, personal, ask, text, query_vector, others)
    return Page(hits, query.offset, has_more, query.everywhere and not narrowed, narrowed,
                census, [o.workspace for o in others], not_searched)


# The personal tier is ranked for a query only when one of its memories comes this close
# (raw cosine): below it, none would reach a page (bench/RESULTS.md#personal-tier).
PERSONAL_FLOOR = 0.2


def _may_answer(personal: CallContext | None, flt: SearchFilter, query_vector: np.ndarray
                ) -> CallContext | None:
    """The personal tier, if it may answer the query (PERSONAL_FLOOR)."""
    if personal is None:
        return None
    with personal.store.reading():
        near = may_answer(personal.store, query_vector,
                          replace(flt, workspace=personal.workspace), PERSONAL_FLOOR)
    return personal if near else None


MAX_OTHER_WORKSPACES = 8  # other workspaces one search opens, most recently used first


def _other_workspaces(ctx: CallContext, query: Query
                      ) -> tuple[list[CallContext], dict[str, str]]:
    """The other workspaces the query names, each with a context of its own; the named ones
    that could not be searched, with why."""
    out: list[CallContext] = []
    every = query.workspaces == ["*"]
    named = ctx.known_workspaces() if every else query.workspaces
    skipped: dict[str, str] = {}
    seen = {ctx.workspace}
    for n, given in enumerate(dict.fromkeys(named)):
        if len(seen) > MAX_OTHER_WORKSPACES:
            left = len(named) - n
            skipped[f"({left} more)"] = (
                f"one search reads at most {MAX_OTHER_WORKSPACES} other workspaces, the most "
                "recently used first; name one in `workspaces` to search it")
            break
        try:
            other = ctx.elsewhere(given)
        except ToolError as exc:
            if not every:
                raise
            if len(skipped) < MAX_OTHER_WORKSPACES:
                skipped[given] = exc.message
            continue
        if other.workspace not in seen:
            seen.add(other.workspace)
            out.append(other)
    return out, skipped


@contextmanager
def _reading(ctx: CallContext, personal: CallContext | None) -> Iterator[None]:
    """The read locks of the workspace and of the personal tier beside it (in that order:
    nothing holds the personal tier's lock while it waits for a workspace's)."""
    with ctx.store.reading():
        if personal is None:
            yield
        else:
            with personal.store.reading():
                yield


def _follow_moved_code(ctx: CallContext, personal: CallContext | None,
                       codes: tuple[Checks, Checks]) -> None:
    follow_moved_code(ctx.store, codes[0])
    if personal is not None:
        follow_moved_code(personal.store, codes[1])


def _tiered_page(ctx: CallContext, personal: CallContext | None, ask: _Ask, text: str,
                 query_vector: np.ndarray, others: list[CallContext]
                 ) -> tuple[list[Hit], bool, dict[str, Any] | None]:
    """One page over the workspace (with the personal tier beside it) and other workspaces
    named: each ranks its own database (the others from a smaller pool: only their best can
    reach the page), the page takes the best of all by score, and only its memories are read
    for conflicts and notes."""
    want = ask.query.offset + ask.top_k
    found: list[tuple[Ranked, int]] = []  # each ranked memory and the pass it is from
    passes: list[tuple[CallContext, CallContext | None]] = [
        (ctx, personal), *((other, None) for other in others)]
    checks: list[tuple[Checks, Checks]] = []
    has_more, census = False, None
    for n, (tier, beside) in enumerate(passes):
        wide = _Ask(replace(ask.query, offset=0, top_k=want), want, ask.mode, ask.graph_weight,
                    replace(ask.flt, workspace=tier.workspace) if n else ask.flt)
        pool = max(OTHER_TIER_POOL, 2 * want) if n else None
        with _reading(tier, beside):
            ranked, codes, counted = _ranked(tier, beside, wide, text, query_vector, pool)
        _follow_moved_code(tier, beside, codes)
        checks.append(codes)
        census = census if n else counted
        has_more = has_more or len(ranked) > want
        found += [(r, n) for r in ranked[:want]]
    found.sort(key=lambda f: -f[0].score)  # stable: the workspace's first among equals
    page = found[ask.query.offset:want]
    hits: dict[int, Hit] = {}  # by place on the page
    for n, (tier, beside) in enumerate(passes):
        mine = [(place, r) for place, (r, t) in enumerate(page) if t == n]
        if mine:
            with _reading(tier, beside):
                built = _pass_hits(tier, beside, [r for _, r in mine], checks[n],
                                   ask.query.explain)
            hits.update((place, _from_tier(h, "other") if n else h)
                        for (place, _), h in zip(mine, built))
    return [hits[place] for place in range(len(page))], has_more or len(found) > want, census


# candidates per channel of a tier beside the workspace: the personal tier, another
# workspace searched on request (only their best can reach a page)
OTHER_TIER_POOL = 20


def _from_tier(hit: Hit, source: Source) -> Hit:
    if source != "user":
        return replace(hit, source=source)
    return replace(hit, memory=tiers.as_shown(hit.memory), notes=shown_notes(hit.notes),
                   source=source)


def shown_notes(notes: Notes) -> Notes:
    """A personal memory's notes with the ids callers see."""
    return Notes(tiers.shifted(notes.superseded_by),
                 None if notes.supersession_cycle is None
                 else tiers.shifted(notes.supersession_cycle),
                 [{**c, "memory_id": tiers.shown_id(c["memory_id"])} for c in notes.conflicts],
                 notes.untrusted)


@dataclass(frozen=True)
class _Ranking:
    hits: list[Hit]
    has_more: bool
    census: dict[str, Any] | None


def _ranked_page(ctx: CallContext, beside: CallContext | None, ask: _Ask, text: str,
                 query_vector: np.ndarray) -> tuple[_Ranking, tuple[Checks, Checks]]:
    """The page of `ask` with its conflicts and notes (_ranked, then _pass_hits). Read locks
    held."""
    offset = ask.query.offset
    ranked, codes, census = _ranked(ctx, beside, ask, text, query_vector)
    page = _pass_hits(ctx, beside, ranked[offset:offset + ask.top_k], codes, ask.query.explain)
    return _Ranking(page, offset + ask.top_k < len(ranked), census), codes


def _ranked(ctx: CallContext, beside: CallContext | None, ask: _Ask, text: str,
            query_vector: np.ndarray, pool: int | None = None
            ) -> tuple[list[Ranked], tuple[Checks, Checks], dict[str, Any] | None]:
    """Rank `ctx`'s memories, and those of the personal tier `beside` it in the same pass
    (search/beside.py); then, in each tier, boost by the graph, demote what was superseded,
    then what cites changed code (checked for the first offset+top_k); the census when
    explain asks. `pool`: candidates per channel (default MEMORY_SEARCH_CANDIDATES). Read
    locks held."""
    store, settings, shown = ctx.store, ctx.settings, ask.query.offset + ask.top_k
    census: dict[str, Any] | None = {} if ask.query.explain else None  # counted when asked
    pool = max(pool or settings.search_candidates, shown)
    flt = ask.flt
    view: RankingStore = store
    if beside is not None:
        flt = replace(ask.flt, also=beside.workspace)
        view = beside_view(store, beside.store, beside.workspace,
                           min(pool, max(OTHER_TIER_POOL, 2 * shown)))
    ranked = rank(view, text, query_vector, flt, pool=pool, mode=ask.mode,
                  rrf_k=settings.rrf_k, census=census)
    theirs: list[Ranked] = []
    if beside is not None:
        theirs = [r for r in ranked if r.memory.workspace == beside.workspace]
        ranked = [r for r in ranked if r.memory.workspace != beside.workspace]
    ranked, code = _settled(ctx, ranked, shown, ask.graph_weight)
    if census is not None:
        census = explain_meta(store, census, ranked, flt, ask.mode, ask.graph_weight)
    if beside is None or not theirs:
        return ranked, (code, {}), census
    theirs, their_code = _settled(beside, theirs, shown, ask.graph_weight)
    both = ranked + theirs
    both.sort(key=lambda r: -r.score)  # stable: the workspace's first among equals
    return both, (code, their_code), census


def _settled(ctx: CallContext, ranked: list[Ranked], shown: int, graph_weight: float
             ) -> tuple[list[Ranked], Checks]:
    """A tier's ranked memories boosted by its graph, what was superseded demoted, then what
    cites changed code (checked for the first `shown`). Read lock held."""
    store = ctx.store
    ranked = demote_superseded(store.graph, boost(ranked, store.signal, graph_weight))
    return rank_by_code(ranked, shown, ctx.workspace, ctx.checkout)


def _pass_hits(ctx: CallContext, beside: CallContext | None, page: list[Ranked],
               codes: tuple[Checks, Checks], explain: bool) -> list[Hit]:
    """The hits of a page ranked in one pass over `ctx` and the personal tier `beside` it,
    in its order; a personal memory shown as callers see it. Read locks held."""
    theirs = set() if beside is None else \
        {n for n, r in enumerate(page) if r.memory.workspace == beside.workspace}
    if beside is None or not theirs:
        return _hits(ctx, page, codes[0], explain)
    mine = _hits(ctx, [r for n, r in enumerate(page) if n not in theirs], codes[0], explain)
    personal = [_from_tier(h, "user") for h in
                _hits(beside, [r for n, r in enumerate(page) if n in theirs], codes[1],
                      explain)]
    return tiers.in_call_order(theirs, len(page), mine, personal)


def _hits(ctx: CallContext, page: list[Ranked], code: Checks, explain: bool) -> list[Hit]:
    """The page's memories as hits, with their conflicts and notes; their access counted.
    Read lock held."""
    store = ctx.store
    store.record_access(r.memory.id for r in page)
    flagged = conflicts(store, [r.memory for r in page], ctx.settings, ctx.workspace)
    return [_hit(store, r, code, flagged.get(r.memory.id), explain) for r in page]


def _hit(store: MemoryStore, r: Ranked, code: Checks, found: list[Conflict] | None,
         explain: bool) -> Hit:
    return Hit(r.memory.copy(), r.score, dict(r.parts) if explain else None,
               code.get(r.memory.id), notes_on(store, r.memory, found))


def explain_meta(store: MemoryStore, census: dict[str, Any], ranked: list[Ranked],
                 flt: SearchFilter, mode: str, graph_weight: float) -> dict[str, Any]:
    """The search's census (ranking.search_census) with what the steps after ranking did:
    the fusion mode, the filters applied, the graph channel and superseded memories."""
    graph, signal = store.graph, store.signal
    filters = {"category": flt.category, "tags": flt.tags or None,
               "min_importance": flt.min_importance if flt.min_importance > 1 else None,
               "via": flt.via, "client": flt.client}
    candidates = dict(census.pop("candidates", {}))
    candidates["graph"] = sum(1 for r in ranked if r.memory.id in signal) \
        if graph_weight > 0 and signal else 0
    return {
        "fusion": mode,
        "scope": "global" if flt.workspace is None else "workspace",
        **census,
        "candidates": candidates,
        "filters": {k: v for k, v in filters.items() if v is not None},
        "superseded_demoted": sum(1 for r in ranked if graph.superseded_by(r.memory.id)
                                  and not graph.supersession_cycle(r.memory.id)),
        "ranked": len(ranked),
    }


# -- get -------------------------------------------------------------------------------------

Edge = dict[str, Any]  # type, from_id, to_id (store/graph.py)


@dataclass(frozen=True)
class Shown:
    """A memory read by id, in full: its Notes (conflicts with the calls that settle them),
    its code check and its links."""
    memory: Memory
    notes: Notes
    code: Freshness | None
    edges: list[Edge] | None  # None: not asked for
    supersedes: list[int]
    kept_separate_from: list[int]


@dataclass(frozen=True)
class Fetched:
    shown: list[Shown]
    missing: list[int]  # ids not in this workspace


def get(ctx: CallContext, ids: list[int], edges: bool = True) -> Fetched:
    """The memories of the workspace (and, by their shown ids, of the personal tier) with
    these ids, each once, in the order asked."""
    asked = list(dict.fromkeys(ids))
    mine, personal_ids = tiers.split_ids(asked)
    got = _get(ctx, mine, edges) if mine else Fetched([], [])
    personal = ctx.personal() if personal_ids else None
    if personal_ids and (personal is None or personal is ctx):
        return Fetched(got.shown, got.missing + tiers.shifted(personal_ids))
    if personal is None:
        return got
    theirs = _get(personal, personal_ids, edges)
    shown = {s.memory.id: s for s in got.shown}
    shown.update((s.memory.id, s) for s in (_shown_personal(x) for x in theirs.shown))
    missing = set(got.missing) | set(tiers.shifted(theirs.missing))
    return Fetched([shown[i] for i in asked if i in shown], [i for i in asked if i in missing])


def _shown_personal(s: Shown) -> Shown:
    return replace(s, memory=tiers.as_shown(s.memory), notes=shown_notes(s.notes),
                   edges=None if s.edges is None else [
                       {**e, "from_id": tiers.shown_id(int(e["from_id"])),
                        "to_id": tiers.shown_id(int(e["to_id"]))} for e in s.edges],
                   supersedes=tiers.shifted(s.supersedes),
                   kept_separate_from=tiers.shifted(s.kept_separate_from))


def _get(ctx: CallContext, asked: list[int], edges: bool) -> Fetched:
    store = ctx.store
    with store.reading():
        wanted = [i for i in asked if _visible(store.catalog.get(i), ctx.workspace)]
        store.record_access(wanted)
        memories = [store.catalog[i] for i in wanted]
        flagged = conflicts(store, memories, ctx.settings, ctx.workspace)
        code = check_code(memories, ctx.workspace, ctx.checkout)
        shown = [_shown(store, m, code, flagged.get(m.id, []), edges) for m in memories]
    follow_moved_code(store, code)
    return Fetched(shown, [i for i in asked if i not in wanted])


def _shown(store: MemoryStore, m: Memory, code: Checks, found: list[Conflict],
           edges: bool) -> Shown:
    graph = store.graph
    return Shown(m.copy(), notes_on(store, m, with_resolutions(m.id, found)), code.get(m.id),
                 graph.of(m.id) if edges else None, graph.supersedes(m.id),
                 graph.separate_from(m.id))


def _visible(m: Memory | None, workspace: str) -> bool:
    return m is not None and m.workspace == workspace
