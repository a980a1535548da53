"""memory_dream: consolidation of one workspace.

It works in three steps so that a dream never holds up a user's call for long:
1. snapshot what it needs under the read lock (a quick copy);
2. plan, with no lock held: what to prune, which near-identical pairs to merge, which
   clusters need an agent's decision, SUPERSEDES cycles, rows to re-embed;
3. apply each change in its own short write-locked transaction, re-checking first that the
   memories involved have not changed since the snapshot.
A dry run stops after step 2. Dream state (when it last ran, where the scan window stands)
lives in the database's Meta table, per workspace.
"""
import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, TypedDict

import numpy as np

from ..core.config import DreamSettings
from ..core.records import Memory, iso, utcnow
from ..model.embedder import Embedder
from ..search.graph_signal import compute_signal
from ..store.changes import Changes
from ..store.graph import Edge, pair, supersession_cycles
from ..store.store import MemoryStore
from .freshness import merged as merged_code
from .freshness import stale_files
from .values import disagree, same_subject, tag_overlap, value_disagreement

STALE_FILES_LISTED = 50  # files named in a dream's stale_code; memory_stale lists them all

Gate = Literal["value_conflict", "similar"]  # why a pair is up for an agent's review
Review = tuple[int, int, float, Gate]  # a pair, its similarity and its gate
# (done, total, what is being done)
Progress = Callable[[int, int, str], None]


class Cluster(TypedDict):
    """Memories an agent should look at together, with the ways to settle them."""
    memories: list[dict[str, int | str]]  # id, content (shortened)
    pairs: list[dict[str, object]]  # ids, similarity, gate
    gate: Gate
    resolution: str
    max_similarity: float


class _StaleCounts(TypedDict):
    anchored: int  # memories that cite code
    stale: int
    files: list[dict[str, object]]  # path, memory_ids


class StaleCode(_StaleCounts, total=False):
    """The memories whose cited code changed or went, by file."""
    hint: str


class Merged(TypedDict):
    survivor: int
    absorbed: int
    similarity: float


class Gates(TypedDict):
    """Whether a dream is due, and why not."""
    last_dream_at: str | None
    hours_since: float | None
    ops_since: int
    memories: int
    open: bool
    reasons: list[str]


class DreamReport(TypedDict, total=False):
    """What memory_dream returns: the gates and the plan, then (unless a dry run) what was
    done, or only the gates when they were shut (status "skipped")."""
    workspace: str
    dry_run: bool
    gates: Gates
    status: Literal["skipped", "planned", "done"]
    scan_coverage: dict[str, object]
    supersession_cycles: list[list[int]]
    clusters: list[Cluster]
    stale_code: StaleCode
    orphan_topics: int  # a dry run: Topic nodes that would be removed
    would_prune: list[int]
    would_merge: list[Merged]
    would_reembed: int
    merged: list[Merged]
    pruned: list[int]
    reembedded: int
    topics_reaped: int
    graph: dict[str, int]
    duration_ms: float


@dataclass
class Snapshot:
    memories: dict[int, Memory]          # the workspace's memories (copies)
    vectors: dict[int, np.ndarray]
    edges: set[Edge]
    separate: set[tuple[int, int]]
    model: str


@dataclass
class Plan:
    window: list[int]
    window_start: int
    next_start: int
    prune: list[int] = field(default_factory=list)
    merges: list[tuple[int, int, float]] = field(default_factory=list)  # survivor, absorbed
    clusters: list[Cluster] = field(default_factory=list)
    cycles: list[list[int]] = field(default_factory=list)
    reembed: list[int] = field(default_factory=list)


def _state_key(workspace: str, name: str) -> str:
    return f"dream:{workspace}:{name}"


# What a workspace's dreams keep in Meta, by name (a moved workspace takes it along).
DREAM_STATE = ("last_report", "last_at", "window_start")


def state_keys(workspace: str) -> list[str]:
    return [_state_key(workspace, name) for name in DREAM_STATE]


class LastDream(TypedDict):
    """What the last dream that ran (by hand or by upkeep) did, as the database keeps it."""
    at: str
    merged: int
    pruned: int
    reembedded: int
    clusters: int  # left for a person to decide
    duration_ms: float


def last_dream(store: MemoryStore, workspace: str) -> LastDream | None:
    text = store.meta(_state_key(workspace, "last_report"))
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    if not isinstance(found, dict) or set(found) != set(LastDream.__annotations__):
        return None
    try:
        return LastDream(at=str(found["at"]), merged=int(found["merged"]),
                         pruned=int(found["pruned"]), reembedded=int(found["reembedded"]),
                         clusters=int(found["clusters"]),
                         duration_ms=float(found["duration_ms"]))
    except (TypeError, ValueError):
        return None


def take_snapshot(store: MemoryStore, workspace: str) -> Snapshot:
    with store.reading():
        memories = {i: m.copy() for i, m in store.catalog.items() if m.workspace == workspace}
        vectors = {i: v for i in memories if (v := store.vectors.vector(i)) is not None}
        ids = set(memories)
        edges = {e for e in store.graph.edges if e[1] in ids or e[2] in ids}
        separate = {p for p in store.graph.separate if p[0] in ids or p[1] in ids}
    return Snapshot(memories, vectors, edges, separate, store.model)


def gates(store: MemoryStore, workspace: str, snap: Snapshot, settings: DreamSettings,
          now: datetime) -> Gates:
    last = store.meta(_state_key(workspace, "last_at"))
    last_at = datetime.fromisoformat(last) if last else None
    ops = sum(1 for m in snap.memories.values() if last_at is None or m.updated_at > last_at)
    hours = None if last_at is None else (now - last_at).total_seconds() / 3600
    reasons = []
    if len(snap.memories) < settings.min_memories:
        reasons.append(f"{len(snap.memories)} memories, fewer than MEMORY_DREAM_MIN_MEMORIES="
                       f"{settings.min_memories}")
    if hours is not None and hours < settings.min_hours:
        reasons.append(f"last dream {hours:.1f} h ago, sooner than MEMORY_DREAM_MIN_HOURS="
                       f"{settings.min_hours:g}")
    if ops < settings.min_ops:
        reasons.append(f"{ops} memories changed since the last dream, fewer than "
                       f"MEMORY_DREAM_MIN_OPS={settings.min_ops}")
    return {"last_dream_at": iso(last_at), "hours_since": None if hours is None
            else round(hours, 2), "ops_since": ops, "memories": len(snap.memories),
            "open": not reasons, "reasons": reasons}


def plan(snap: Snapshot, settings: DreamSettings, window_start: int, now: datetime) -> Plan:
    ids = sorted(snap.memories)
    n = len(ids)
    start = window_start if window_start < n else 0
    size = min(settings.scan_window, n)
    window = [ids[(start + k) % n] for k in range(size)] if n else []
    next_start = (start + size) % n if n else 0
    result = Plan(window=window, window_start=start, next_start=next_start)
    pairs = _near_pairs(snap, ids, window, settings.cluster_low)
    review = _judged(snap, pairs, settings.trivial_threshold, result.merges)
    result.clusters = _clusters(review, snap, settings.max_clusters)
    merging = {i for survivor, absorbed, _ in result.merges for i in (survivor, absorbed)}
    result.prune = _prunable(snap, window, merging, now, settings)
    result.cycles = supersession_cycles(snap.edges)
    result.reembed = [i for i in ids if i not in snap.vectors
                      or snap.memories[i].embedding_model != snap.model][:settings.reembed_max]
    return result


def _near_pairs(snap: Snapshot, ids: list[int], window: list[int],
                floor: float) -> dict[tuple[int, int], float]:
    """Every window member against the whole workspace: the pairs at `floor` or above."""
    with_vectors = [i for i in ids if i in snap.vectors]
    pairs: dict[tuple[int, int], float] = {}
    if not with_vectors:
        return pairs
    matrix = np.stack([snap.vectors[i] for i in with_vectors])
    position = {i: k for k, i in enumerate(with_vectors)}
    for i in window:
        if i not in position:
            continue
        sims = matrix @ snap.vectors[i]
        for k in np.nonzero(sims >= floor)[0]:
            j = with_vectors[k]
            if j != i:
                key = pair(i, j)
                pairs[key] = max(pairs.get(key, -1.0), float(sims[k]))
    return pairs


def _judged(snap: Snapshot, pairs: dict[tuple[int, int], float], trivial: float,
            merges: list[tuple[int, int, float]]) -> list[Review]:
    """Each pair no agent has decided, most similar first: merged (added to `merges`, one
    merge per memory per run) when trivially the same, else up for review when the two
    disagree on a value or share a subject. Returns the pairs to review."""
    superseding = {pair(a, b) for rel, a, b in snap.edges if rel == "SUPERSEDES"}
    involved: set[int] = set()
    review: list[Review] = []
    for (a, b), similarity in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0])):
        if (a, b) in snap.separate or (a, b) in superseding:
            continue  # an agent already decided
        ma, mb = snap.memories[a], snap.memories[b]
        # never across scopes: a private memory's text must not reach a shared file
        mergeable = (similarity >= trivial and ma.scope == mb.scope
                     and ma.category == mb.category
                     and tag_overlap(ma.tags, mb.tags) >= 0.5
                     and not disagree(ma.content, mb.content))
        if mergeable:
            if a in involved or b in involved:
                continue  # the next run continues
            survivor, absorbed = (a, b) if (len(ma.content), -a) >= (len(mb.content), -b) \
                else (b, a)
            merges.append((survivor, absorbed, similarity))
            involved.update((a, b))
        elif value_disagreement(ma.content, mb.content):
            review.append((a, b, similarity, "value_conflict"))
        elif same_subject(ma.content, mb.content):
            review.append((a, b, similarity, "similar"))
        # different subjects: separate for good, nothing to decide
    return review


def _prunable(snap: Snapshot, window: list[int], merging: set[int], now: datetime,
              settings: DreamSettings) -> list[int]:
    """Window members nothing links, not merged this run, unimportant, neither changed nor
    read within the prune horizon."""
    linked = {i for _, a, b in snap.edges for i in (a, b)}
    horizon = now - timedelta(days=settings.prune_days)
    return [i for i in window
            if i not in merging and i not in linked
            and (m := snap.memories[i]).updated_at < horizon
            and m.importance <= settings.prune_max_importance
            and (m.accessed_at is None or m.accessed_at < horizon)]


def _clusters(review: list[Review], snap: Snapshot, limit: int) -> list[Cluster]:
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b, _, _ in review:
        parent[root(a)] = root(b)
    groups: dict[int, list[Review]] = {}
    for a, b, similarity, gate in review:
        groups.setdefault(root(a), []).append((a, b, similarity, gate))
    clusters: list[Cluster] = []
    for members in groups.values():
        ids = sorted({i for a, b, _, _ in members for i in (a, b)})
        conflict = any(g == "value_conflict" for *_, g in members)
        clusters.append({
            "memories": [{"id": i, "content": snap.memories[i].content[:200]} for i in ids],
            "pairs": [{"ids": [a, b], "similarity": round(s, 3), "gate": g}
                      for a, b, s, g in members],
            "gate": "value_conflict" if conflict else "similar",
            "resolution": (
                "values disagree: if one replaces the other, memory_relate(from_id=<newer>, "
                "to_id=<older>, relationship='SUPERSEDES') (nothing is deleted); if both hold, "
                "memory_keep_separate(memory_ids=[...])" if conflict else
                "merge by hand (memory_update the keeper, memory_delete the rest), supersede, "
                "or memory_keep_separate(memory_ids=[...]) if all hold"),
            "max_similarity": round(max(s for _, _, s, _ in members), 3),
        })
    clusters.sort(key=lambda c: -c["max_similarity"])
    return clusters[:limit]


# -- applying a plan -------------------------------------------------------------------------

def _unchanged(store: MemoryStore, snap: Snapshot, ids: Iterable[int]) -> bool:
    return all(i in store.catalog and store.catalog[i].updated_at == snap.memories[i].updated_at
               for i in ids)


def apply_merge(store: MemoryStore, snap: Snapshot, survivor_id: int, absorbed_id: int) -> bool:
    """Fold `absorbed` into `survivor`: longer content, tags united, highest importance,
    access counts summed, every edge and verdict rewired (parallel ones kept once)."""
    with store.writing():
        if not _unchanged(store, snap, (survivor_id, absorbed_id)):
            return False
        keep, gone = store.catalog[survivor_id], store.catalog[absorbed_id]
        now = utcnow()
        merged = keep.copy(updated_at=now)
        merged.tags = list(dict.fromkeys(keep.tags + gone.tags))
        merged.code = merged_code(keep.code, gone.code)
        merged.importance = max(keep.importance, gone.importance)
        merged.access_count = keep.access_count + gone.access_count
        merged.created_at = min(keep.created_at, gone.created_at)
        stamps = [t for t in (keep.accessed_at, gone.accessed_at) if t is not None]
        merged.accessed_at = max(stamps) if stamps else None
        vector = None
        if len(gone.content) > len(keep.content):
            merged.content, merged.content_hash = gone.content, gone.content_hash
            vector = store.vectors.vector(absorbed_id)
        new_edges: list[Edge] = []
        for rel, a, b in store.graph.edges:
            if absorbed_id not in (a, b):
                continue
            a2 = survivor_id if a == absorbed_id else a
            b2 = survivor_id if b == absorbed_id else b
            edge = (rel, a2, b2)
            if a2 != b2 and edge not in store.graph.edges and edge not in new_edges:
                new_edges.append(edge)
        new_verdicts: list[tuple[int, int]] = []
        for low, high in store.graph.separate:
            if absorbed_id in (low, high):
                other = high if low == absorbed_id else low
                key = pair(survivor_id, other)
                if other != survivor_id and key not in store.graph.separate \
                        and key not in new_verdicts:
                    new_verdicts.append(key)
        store.commit(Changes(deleted=[absorbed_id], updated=[(merged, vector)],
                             edges_added=new_edges, kept_separate=new_verdicts))
    return True


def apply_prune(store: MemoryStore, snap: Snapshot, memory_id: int) -> bool:
    with store.writing():
        if not _unchanged(store, snap, (memory_id,)) or store.graph.of(memory_id):
            return False
        store.commit(Changes(deleted=[memory_id]))
    return True


def apply_reembed(store: MemoryStore, snap: Snapshot, embedder: Embedder, ids: list[int]) -> int:
    texts = [snap.memories[i].content for i in ids]
    vectors = embedder.embed(texts) if texts else np.empty((0, 0))  # outside the lock
    done = 0
    with store.writing():
        fresh: list[tuple[Memory, np.ndarray | None]] = []
        for i, vector in zip(ids, vectors):
            m = store.catalog.get(i)
            if m is None or m.content != snap.memories[i].content:
                continue
            fresh.append((m.copy(embedding_model=store.model), vector))
        if fresh:
            store.commit(Changes(updated=fresh))
            done = len(fresh)
    return done


def _stale_code(snap: Snapshot) -> StaleCode:
    """The memories whose cited code changed or went, by file, for review (memory_stale has
    the same list; refreshing or correcting them is the agent's call, never dream's)."""
    anchored = [m for m in snap.memories.values() if m.code]
    files, stale, _ = stale_files(anchored)
    report = StaleCode(anchored=len(anchored), stale=stale, files=[
        {"path": f["path"], "memory_ids": sorted({m["id"] for m in f["memories"]})}
        for f in files[:STALE_FILES_LISTED]])
    if stale:
        report["hint"] = ("memory_stale shows what changed in each; refresh the memories "
                          "that still hold with memory_update(updates=[{id, "
                          "refresh_anchors: true}, …])")
    return report


def dream(store: MemoryStore, workspace: str, embedder: Embedder, settings: DreamSettings,
          dry_run: bool = False, force: bool = False,
          progress: Progress = lambda done, total, message: None) -> DreamReport:
    started = time.monotonic()
    now = utcnow()
    snap = take_snapshot(store, workspace)
    gate = gates(store, workspace, snap, settings, now)
    report: DreamReport = {"workspace": workspace, "dry_run": dry_run, "gates": gate}
    if not gate["open"] and not force:
        report["status"] = "skipped"
        return report
    window_start = int(store.meta(_state_key(workspace, "window_start")) or 0)
    progress(0, 5, "planning")
    p = plan(snap, settings, window_start, now)
    total = len(snap.memories)
    report["scan_coverage"] = {
        "examined": len(p.window), "corpus": total, "window_start": p.window_start,
        "window_ids": p.window,
        "next_window_start": p.next_start,
        "runs_for_full_coverage": math.ceil(total / settings.scan_window) if total else 0,
        "fraction": round(len(p.window) / total, 4) if total else 1.0,
    }
    report["supersession_cycles"] = p.cycles
    report["clusters"] = p.clusters
    report["stale_code"] = _stale_code(snap)
    orphans = store.orphan_topics()
    if dry_run:
        progress(5, 5, "planned (dry run: nothing changed)")
        report.update(DreamReport(
            status="planned", would_prune=p.prune,
            would_merge=[Merged(survivor=s, absorbed=a, similarity=round(x, 3))
                         for s, a, x in p.merges],
            would_reembed=len(p.reembed), orphan_topics=orphans))
        report["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
        return report

    progress(1, 5, f"merging {len(p.merges)} pairs")
    merged = [Merged(survivor=s, absorbed=a, similarity=round(x, 3))
              for s, a, x in p.merges if apply_merge(store, snap, s, a)]
    progress(2, 5, f"pruning {len(p.prune)} memories")
    pruned = [i for i in p.prune if apply_prune(store, snap, i)]
    progress(3, 5, f"re-embedding {len(p.reembed)} memories")
    reembedded = apply_reembed(store, snap, embedder, p.reembed)
    progress(4, 5, "graph signal")
    graph_report = refresh_signal(store, workspace)
    finished = utcnow()
    summary = LastDream(at=iso(finished) or "", merged=len(merged), pruned=len(pruned),
                        reembedded=reembedded, clusters=len(p.clusters),
                        duration_ms=round((time.monotonic() - started) * 1000, 1))
    with store.writing():
        store.commit(Changes(reap_topics=True, meta={
            _state_key(workspace, "last_at"): finished.isoformat(),
            _state_key(workspace, "window_start"): str(p.next_start),
            _state_key(workspace, "last_report"): json.dumps(summary)}))
    progress(5, 5, "done")
    report.update(DreamReport(status="done", merged=merged, pruned=pruned,
                              reembedded=reembedded, topics_reaped=orphans, graph=graph_report))
    report["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
    return report


def refresh_signal(store: MemoryStore, workspace: str) -> dict[str, int]:
    """Recompute PageRank and communities over RELATED_TO/EXPLAINS for one workspace."""
    with store.reading():
        ids = [i for i, m in store.catalog.items() if m.workspace == workspace]
        members = set(ids)
        # RELATED_TO is symmetric; "a EXPLAINS b" makes b, the thing explained, central.
        arcs: list[tuple[int, int]] = []
        for rel, a, b in store.graph.edges:
            if a in members and b in members:
                if rel == "RELATED_TO":
                    arcs += [(a, b), (b, a)]
                elif rel == "EXPLAINS":
                    arcs.append((a, b))
    signal = compute_signal(arcs)  # no lock: pure computation
    with store.writing():
        live = [i for i in ids if i in store.catalog]
        signal = {i: v for i, v in signal.items() if i in store.catalog}
        store.commit(Changes(signal_of=live, signal=signal))
    return {"nodes": len(signal), "arcs": len(arcs),
            "communities": len({c for _, c in signal.values()})}
