"""Remember: memory_store's work. Each text is admitted (private text and secrets taken
out), judged (chatter and restatements refused or folded into the memory they restate),
anchored to the code it names, embedded, ingested and, when asked, shared."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..core.config import Settings
from ..core.errors import invalid
from ..core.records import Origin, content_hash
from ..core.types import Category, StoreScope
from ..curation.capture import RESTATE_FLOOR, Neighbour, Verdict, judge, restated
from ..curation.conflicts import workspace_ids
from ..curation.freshness import written_context
from ..curation.ingest import Item, Outcome, ingest
from ..curation.values import tag_overlap
from ..store.store import MemoryStore
from . import tiers
from .admitting import LeftOut, clean_tags, private_free
from .context import CallContext, worktree_of
from .embedding import embed_with_progress
from .sharing import check_unpublished, share_after_write

RESTATE_NEIGHBOURS = 5  # existing memories a stored text is compared with for a restatement

@dataclass(frozen=True)
class Entry:
    """One text to remember, as a caller gives it."""
    content: str
    category: Category = "general"
    tags: list[str] = field(default_factory=list)
    importance: int = 3
    anchors: list[dict[str, Any]] | None = None  # explicit code anchors (path, lines, symbol)
    auto_anchor: bool = True  # also anchor the code paths the content names
    scope: StoreScope = "private"
    keep_as_is: bool = False  # skip the judge
    origin: Origin | None = None  # when not the call's (an import names each one's source)


@dataclass(frozen=True)
class Remembered:
    """What became of each entry: an Outcome (stored, duplicate, merged) or the Verdict that
    refused it; the memory each restatement was folded into; sharing and what was left
    out."""
    outcomes: list[Outcome | Verdict]
    restated: dict[int, int]  # entry index -> the memory its text says again
    sharing: dict[str, Any]
    left_out: LeftOut


def refusal(where: str, verdict: Verdict) -> str:
    return (f"{where}: not stored: {verdict.reason}; if it is worth keeping as it is, store "
            "it again with keep_as_is: true")


@dataclass
class _Admitted:
    items: list[Item] = field(default_factory=list)
    indexes: list[int] = field(default_factory=list)  # the entry of each item
    refused: dict[int, Verdict] = field(default_factory=dict)  # entry index -> why not
    judged: list[int] = field(default_factory=list)  # items checked for a restatement
    left_out: LeftOut = field(default_factory=LeftOut)


def remember(ctx: CallContext, entries: list[Entry], batch: bool,
             known: Mapping[str, np.ndarray] | None = None) -> Remembered:
    """Store `entries` (a one-entry call, unless `batch`: a refused text is then an error).
    `known`: vectors the caller already has, by text (an import embeds before it plans).
    Entries of scope "user" go to the personal tier, in a commit of their own, and come
    back with their shown ids."""
    if batch and len(entries) > ctx.settings.max_batch:
        raise invalid(f"items has {len(entries)} entries, over the limit of "
                      f"{ctx.settings.max_batch} (MEMORY_MAX_BATCH); send several batches")
    if any(e.scope == "shared" for e in entries):
        check_unpublished(ctx.workspace)
    personal = [n for n, e in enumerate(entries) if e.scope == "user"]
    if not personal:
        return _remember(ctx, entries, batch, known, list(range(len(entries))))
    tier = tiers.personal_of(ctx, "cannot store a personal memory")
    chosen = set(personal)
    mine = [n for n in range(len(entries)) if n not in chosen]
    done = _remember(ctx, [entries[n] for n in mine], batch, known, mine) if mine else \
        Remembered([], {}, {}, LeftOut())
    theirs = _remember(tier, [replace(entries[n], scope="private", anchors=None,
                                      auto_anchor=False) for n in personal], batch, known,
                       personal)
    outcomes = tiers.in_call_order(chosen, len(entries), done.outcomes,
                                   map(_shown_outcome, theirs.outcomes))
    restated = {mine[k]: twin for k, twin in done.restated.items()}
    restated.update({personal[k]: tiers.shown_id(t) for k, t in theirs.restated.items()})
    done.left_out.notes.update(theirs.left_out.notes)
    return Remembered(outcomes, restated, done.sharing, done.left_out)


def _shown_outcome(outcome: Outcome | Verdict) -> Outcome | Verdict:
    if isinstance(outcome, Verdict):
        return outcome
    return replace(outcome, memory=tiers.as_shown(outcome.memory),
                   conflicts=[{**c, "memory_id": tiers.shown_id(c["memory_id"])}
                              for c in outcome.conflicts])


def _remember(ctx: CallContext, entries: list[Entry], batch: bool,
              known: Mapping[str, np.ndarray] | None, places: list[int]) -> Remembered:
    """remember() in one tier; `places`: each entry's index in the call (what errors name)."""
    admitted = _admit(ctx, entries, batch, places)
    items = admitted.items
    vectors = _vectors(ctx, [i.content for i in items], known or {})
    store = ctx.store
    sharing: dict[str, Any] = {}
    outcomes: list[Outcome] = []
    twins: dict[int, int] = {}
    with store.writing():
        ctx.check_still_wanted()
        if items:
            twins = restatements(store, ctx.workspace, items, vectors, admitted.judged,
                                 ctx.settings)
            outcomes = ingest_items(ctx, items, vectors, twins)
            to_share = [store.catalog[o.memory.id] for o, n in zip(outcomes, admitted.indexes)
                        if entries[n].scope == "shared"]
            sharing = share_after_write(store, ctx.workspace, to_share)
    stored = iter(outcomes)
    results: list[Outcome | Verdict] = [
        admitted.refused[n] if n in admitted.refused else next(stored)
        for n in range(len(entries))]
    restated_by_entry = {admitted.indexes[i]: twin for i, twin in twins.items()
                         if outcomes[i].status == "duplicate" and outcomes[i].memory.id == twin}
    return Remembered(results, restated_by_entry, sharing, admitted.left_out)


def _vectors(ctx: CallContext, texts: list[str], known: Mapping[str, np.ndarray]
             ) -> list[np.ndarray]:
    missing = [t for t in texts if t not in known]
    found = dict(zip(missing, embed_with_progress(ctx, missing))) if missing else {}
    return [known[t] if t in known else found[t] for t in texts]


def _admit(ctx: CallContext, entries: list[Entry], batch: bool,
           places: list[int]) -> _Admitted:
    """The items to ingest: texts admitted, judged (a refusal of a single text raises) and
    anchored to the code they name."""
    out = _Admitted()
    for n, entry in enumerate(entries):
        where = f"items.{places[n]}" if batch else "content"
        content = private_free(entry.content, where, ctx.settings.max_store_chars,
                               out.left_out)
        if ctx.settings.capture_judge and not entry.keep_as_is:
            verdict = judge(content)
            if not verdict.keep:
                if not batch:
                    raise invalid(refusal(where, verdict))
                out.refused[n] = verdict
                continue
            out.judged.append(len(out.items))
        code = written_context(ctx.checkout, content, entry.anchors, entry.auto_anchor,
                               where=f"{where}." if batch else "",
                               worktree=worktree_of(ctx))
        out.items.append(Item(content, entry.category,
                              clean_tags(entry.tags, where, out.left_out),
                              entry.importance, code=code,
                              scope="private" if entry.scope == "user" else entry.scope,
                              origin=entry.origin))
        out.indexes.append(n)
    return out


def restatements(store: MemoryStore, workspace: str, items: list[Item], vectors: list[np.ndarray],
                 judged: list[int], settings: Settings) -> dict[int, int]:
    """Items (of `judged`) that only say again what an existing memory says (capture.restated),
    by item index: the memory each restates. Only a memory a merge could join: of the
    item's scope, with tags overlapping as MEMORY_MERGE_TAG_OVERLAP asks. Write lock held."""
    if not judged:
        return {}
    matrix = np.asarray(vectors, dtype=np.float32).reshape(len(items), -1)[judged]
    near = store.vectors.search_many(matrix, workspace_ids(store, workspace),
                                     RESTATE_NEIGHBOURS, min_score=RESTATE_FLOOR)
    out: dict[int, int] = {}
    for index, found in zip(judged, near):
        item = items[index]
        if store.find_hash(workspace, content_hash(item.content), item.scope) is not None:
            continue  # the same text again: ingest's exact dedup says so
        neighbours = [Neighbour(i, store.catalog[i].content, s) for i, s in found
                      if store.catalog[i].scope == item.scope and tag_overlap(
                          store.catalog[i].tags, item.tags) >= settings.merge_tag_overlap]
        twin = restated(item.content, neighbours)
        if twin is not None:
            out[index] = twin
    return out


def ingest_items(ctx: CallContext, items: list[Item], vectors: list[np.ndarray],
                 twins: dict[int, int]) -> list[Outcome]:
    """ingest() the items, the restatements (`twins`) last, each as an exact duplicate of
    the memory it restates (its importance raised, as for the same text stored again):
    written after the others, that memory's text is the one the batch has left it with.
    Outcomes in the items' order. Write lock held."""
    fresh = [i for i in range(len(items)) if i not in twins]
    store = ctx.store
    outcomes = dict(zip(fresh, ingest(store, ctx.workspace, [items[i] for i in fresh],
                                      [vectors[i] for i in fresh], ctx.settings,
                                      origin=ctx.origin)))
    if twins:
        again = [replace(items[i], content=store.catalog[twin].content)
                 for i, twin in twins.items()]
        outcomes.update(zip(twins, ingest(store, ctx.workspace, again,
                                          [vectors[i] for i in twins], ctx.settings,
                                          origin=ctx.origin)))
    return [outcomes[i] for i in range(len(items))]
