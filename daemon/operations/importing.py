"""Import: memory_import's work. An export file (transfer.py) checked whole, then loaded into
the workspace: memories get new ids (the usual dedup applies: text already here is not
stored twice, a close match merges), links and keep-separate verdicts are rewired to them.
Importing the same file again changes nothing.

Memories are written IMPORT_CHUNK at a time and links LINK_CHUNK at a time, each under one
write-lock hold, so other callers get a turn; the next chunk is embedded while one is
written."""
from __future__ import annotations

from collections.abc import Callable, Generator, Hashable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from ..core.config import Settings
from ..core.errors import ToolError
from ..core.records import content_hash
from ..curation.conflicts import settle_all
from ..curation.ingest import Item, ingest, merge_candidate
from ..storage.safe_files import Confined, read_file
from ..store.changes import Changes, Edge
from ..store.graph import pair
from ..store.store import MemoryStore
from ..team import sync as team
from .context import CallContext
from .transfer import MAX_IMPORT_BYTES, Parsed, parse_export

LINK_CHUNK = 1000  # links written per write-lock hold
IMPORT_CHUNK = 200  # memories per write-lock hold, so other callers get a turn
NEAREST = 5  # memories here before an item is compared with, to find what it merges into

Vector = npt.NDArray[np.float32]
Link = TypeVar("Link", bound=Hashable)


@dataclass
class MemoryTally:
    """What became of the file's memories (ingest's outcomes)."""
    stored: int = 0
    duplicate: int = 0
    merged: int = 0

    def count(self, status: str) -> None:
        if status == "stored":
            self.stored += 1
        elif status == "duplicate":
            self.duplicate += 1
        else:
            self.merged += 1


@dataclass
class LinkTally:
    """What became of the file's links (or verdicts): made new, there already, or skipped
    (an end is gone, or both ends became one memory)."""
    new: int = 0
    exists: int = 0
    skipped: int = 0


@dataclass
class Imported:
    path: str  # the file read, as shown to the caller
    parsed: Parsed  # what the file held (its items, links, verdicts, what was left out)
    memories: MemoryTally
    existing_changed: int  # memories here before that a merge changed
    edges: LinkTally
    verdicts: LinkTally
    model: str  # this store's model, which embedded the file's text


@dataclass
class _Landing:
    """Where each item of the file went, as the import goes."""
    target: list[int | None]  # the memory each item became
    tally: MemoryTally = field(default_factory=MemoryTally)
    changed: set[int] = field(default_factory=set)  # here before, and a merge changed it
    before: set[int] | None = None  # what the workspace held before this import


def import_file(ctx: CallContext, path: str, confined: Confined | None = None) -> Imported:
    """Check the file at `path` (relative to the workspace, or absolute) whole, then load
    it. `confined`: a remote caller's reach. Nothing is written from a file that fails a
    check; a cancelled import keeps the chunks already written (importing is idempotent)."""
    data, shown = read_file(ctx.workspace, path, MAX_IMPORT_BYTES, confined)
    parsed = parse_export(data, shown, ctx.settings)
    del data
    if parsed.personal and ctx.personal() is None:
        raise ToolError("permission_denied", f"{shown} is an export of the personal tier, "
                        "which this caller is not granted; nothing was imported")
    return load(ctx, parsed, shown)


def load(ctx: CallContext, parsed: Parsed, shown: str) -> Imported:
    """Memories, links and verdicts checked whole (`parsed`; `shown`: where they came
    from), loaded into the workspace."""
    landing = _Landing([None] * len(parsed.items))
    import_memories(ctx, parsed.items, landing)
    settle_conflict_pairs(ctx, len(parsed.items))
    targets = [t for t in landing.target if t is not None]
    assert len(targets) == len(parsed.items)  # every item was stored, found or merged
    edges, verdicts = import_links(ctx, parsed, targets)
    return Imported(shown, parsed, landing.tally, len(landing.changed), edges, verdicts,
                    ctx.store.model)


# -- memories --------------------------------------------------------------------------------

def import_memories(ctx: CallContext, items: list[Item], landing: _Landing) -> None:
    """Every item stored, found verbatim, or merged, IMPORT_CHUNK under one write lock."""
    store, workspace = ctx.store, ctx.workspace
    personal = ctx.personal() is ctx  # the personal tier shares nothing with a team
    for item in items:  # shared needs the name of its file
        if personal or not item.global_id:
            item.scope, item.global_id = "private", ""
    # Text already here verbatim needs no embedding; the rest is embedded outside the lock.
    with store.reading():
        present = {n for n, item in enumerate(items) if store.find_hash(
            workspace, content_hash(item.content), item.scope) is not None}
    chunks = [range(start, min(start + IMPORT_CHUNK, len(items)))
              for start in range(0, len(items), IMPORT_CHUNK)]
    embedded = _embedded_ahead(ctx, [[n for n in chunk if n not in present] for chunk in chunks],
                               [item.content for item in items])
    with closing(embedded):  # an early exit waits for the chunk being embedded
        for chunk, vectors in zip(chunks, embedded):
            with store.writing():
                ctx.check_still_wanted()  # chunks already written stay: importing is idempotent
                _import_chunk(ctx, items, chunk, vectors, landing)
            if len(items) > IMPORT_CHUNK:
                ctx.progress(chunk.stop, len(items),
                             f"imported {chunk.stop} of {len(items)} memories")


def _embedded_ahead(ctx: CallContext, chunks: list[list[int]], texts: list[str]
                    ) -> Generator[dict[int, Vector], None, None]:
    """The vectors of each chunk's texts, by index: the next chunk is embedded in a thread
    while the caller writes this one (onnxruntime leaves the GIL), and only two chunks of
    vectors are held at a time."""
    def embed(chunk: list[int]) -> dict[int, Vector]:
        return dict(zip(chunk, ctx.embedder.embed([texts[n] for n in chunk]))) if chunk else {}

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-embed") as ahead:
        upcoming = ahead.submit(embed, chunks[0]) if chunks else None
        for following in [*chunks[1:], None]:
            assert upcoming is not None
            vectors = upcoming.result()
            upcoming = None if following is None else ahead.submit(embed, following)
            yield vectors


def _import_chunk(ctx: CallContext, items: list[Item], chunk: range,
                  vectors: dict[int, Vector], landing: _Landing) -> None:
    """One chunk, write lock held: duplicates found, near copies absorbed, the rest ingested
    (which may still merge them into a memory that was here before)."""
    store, workspace = ctx.store, ctx.workspace
    if landing.before is None:  # taken under the first write lock: nothing lands in between
        landing.before = {i for i, m in store.catalog.items() if m.workspace == workspace}
    before = landing.before
    fresh = []
    for n in chunk:
        same = store.find_hash(workspace, content_hash(items[n].content), items[n].scope)
        if same is not None:
            landing.target[n] = same.id
            landing.tally.duplicate += 1
            continue
        if n not in vectors:  # was here a moment ago, deleted since
            vectors[n] = ctx.embedder.embed([items[n].content])[0]
        fresh.append(n)
    pending = _not_absorbed(store, items, fresh, vectors, before, ctx.settings, landing)
    if pending:
        _name_shared(store, workspace, [items[n] for n in pending])
        _ingest(ctx, items, pending, vectors, landing)


def _not_absorbed(store: MemoryStore, items: list[Item], fresh: list[int],
                  vectors: dict[int, Vector], before: set[int], settings: Settings,
                  landing: _Landing) -> list[int]:
    """Of the `fresh` items, those no memory here before absorbs (absorbed_by); the others
    are counted merged. What each resembles is found in one matrix product."""
    if not fresh:
        return []
    nearest = store.vectors.search_many(np.stack([vectors[n] for n in fresh]), before,
                                        NEAREST, min_score=settings.dedup_threshold)
    pending = []
    for n, near in zip(fresh, nearest):
        home = absorbed_by(store, items[n], near, settings)
        if home is None:
            pending.append(n)
            continue
        landing.target[n] = home
        landing.tally.merged += 1
    return pending


def absorbed_by(store: MemoryStore, item: Item, nearest: list[tuple[int, float]],
                settings: Settings) -> int | None:
    """An existing memory this item would merge into without changing it (its text is no
    longer and its tags add nothing): the mark of an item an earlier import already merged.
    Taking it as merged keeps a second import of the same file from touching anything.
    `nearest`: the item's (id, cosine) among the memories here before the import."""
    m, _ = merge_candidate([(store.catalog[i], s) for i, s in nearest], item, settings)
    if m is not None and len(item.content) <= len(m.content) and set(item.tags) <= set(m.tags):
        return int(m.id)
    return None  # nothing to merge into, or the merge ingest() would make changes it


def _name_shared(store: MemoryStore, workspace: str, items: list[Item]) -> None:
    """A global id names one memory, and a retired one names none any more: an item with
    either comes in private."""
    named = [item for item in items if item.global_id]
    if not named:
        return
    in_use = {m.global_id for m in store.catalog.values() if m.global_id} | \
        set(team.retired(store, workspace))
    for item in named:
        if item.global_id in in_use:
            item.global_id, item.scope = "", "private"
        in_use.add(item.global_id)


def _ingest(ctx: CallContext, items: list[Item], pending: list[int],
            vectors: dict[int, Vector], landing: _Landing) -> None:
    """The items nothing absorbed, through ingest (which may still merge them into a memory
    that was here before; never into each other). Write lock held."""
    before = landing.before or set()
    outcomes = ingest(ctx.store, ctx.workspace, [items[n] for n in pending],
                      [vectors[n] for n in pending], ctx.settings, merge_into=before,
                      flag_conflicts=False, origin=ctx.origin.became("import"))
    for n, outcome in zip(pending, outcomes):
        landing.target[n] = outcome.memory.id
        landing.tally.count(outcome.status)
        if outcome.status != "stored" and outcome.memory.id in before:
            landing.changed.add(outcome.memory.id)


def settle_conflict_pairs(ctx: CallContext, imported: int) -> None:
    """The value verdicts of the conflict neighbour rows the import kept (ingest), so that
    searches right after it compare no texts. Progress goes on from the memories' count."""
    def progress(done: int, total: int) -> None:
        if imported > IMPORT_CHUNK:  # as the memories' progress
            ctx.progress(imported + done, imported + total,
                         f"checked the conflict pairs of {done} of {total} memories")

    def still_wanted() -> bool:
        try:
            ctx.check_still_wanted()
        except ToolError:
            return False
        return True
    settle_all(ctx.store, still_wanted, progress)


# -- links and verdicts ----------------------------------------------------------------------

def import_links(ctx: CallContext, parsed: Parsed,
                 target: list[int]) -> tuple[LinkTally, LinkTally]:
    """The file's links and keep-separate verdicts between the memories its items became
    (`target`: the memory each item became); the tallies of both."""
    store = ctx.store
    edge_tally, verdict_tally = LinkTally(), LinkTally()
    edges = [(rel, target[x], target[y]) for rel, x, y in parsed.edges]
    verdicts = [pair(target[x], target[y]) for x, y in parsed.verdicts]
    # Sets, not lists: membership tests over a large file's links run under the write lock.
    seen_edges: set[Edge] = set()
    seen_verdicts: set[tuple[int, int]] = set()
    for start in range(0, max(len(edges), len(verdicts)), LINK_CHUNK):
        with store.writing():
            ctx.check_still_wanted()
            new_edges = _new_links(
                ctx, edges[start:start + LINK_CHUNK], seen_edges, edge_tally,
                lambda e: e in store.graph.edges, lambda e: (e[1], e[2]))
            new_verdicts = _new_links(
                ctx, verdicts[start:start + LINK_CHUNK], seen_verdicts, verdict_tally,
                lambda v: store.graph.kept_separate(*v), lambda v: v)
            if new_edges or new_verdicts:
                store.commit(Changes(edges_added=new_edges, kept_separate=new_verdicts))
    edge_tally.new, verdict_tally.new = len(seen_edges), len(seen_verdicts)
    return edge_tally, verdict_tally


def _new_links(ctx: CallContext, links: list[Link], seen: set[Link], tally: LinkTally,
               known: Callable[[Link], bool], ends: Callable[[Link], tuple[int, int]]
               ) -> list[Link]:
    """Of `links` (edges or verdicts, ends already mapped to this database's ids), those to
    create: both ends exist in this workspace and are two memories (items merged into one
    are skipped), the link is not there yet and was not made earlier in this import.
    Write lock held."""
    catalog, workspace = ctx.store.catalog, ctx.workspace
    fresh = []
    for link in links:
        a, b = ends(link)
        ma, mb = catalog.get(a), catalog.get(b)
        if a == b or ma is None or mb is None or ma.workspace != workspace \
                or mb.workspace != workspace:
            tally.skipped += 1
        elif link in seen or known(link):
            tally.exists += 1
        else:
            seen.add(link)
            fresh.append(link)
    return fresh
