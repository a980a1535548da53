"""Adopting: memory_import's work for another tool's files (`from`: a kind of
sources/kinds.py). Each piece of each file becomes a memory that records where it came from
(the kind as origin client, "file:lines" as origin session) and, inside the workspace, is
anchored to those lines, so editing the source marks it changed.

Importing again is idempotent. The memories an earlier import of this kind took from a file
are matched with the file's pieces now: the same text is left alone (its lines followed if
they moved), a piece that changed updates the memory it came from (matched by similarity
and by the lines it held), a new piece is stored through the one write path (admission,
dedup, merge, conflicts), and a memory whose piece is gone is reported, and forgotten only
with `prune`. A dry run says all this and writes nothing."""
from __future__ import annotations

import dataclasses
import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..code.files import AnchorError, clean_path
from ..code.files import read_source as read_code
from ..core.errors import invalid
from ..core.records import ORIGIN_CHARS, Memory, Origin, content_hash
from ..core.types import Relation
from ..curation import admission
from ..curation.capture import Verdict
from ..curation.conflicts import workspace_ids
from ..curation.ingest import Item, Outcome, merge_candidate
from ..curation.values import value_disagreement
from ..sources.files import Reader
from ..sources.kinds import KINDS, read_source
from ..sources.units import Found, Unit, file_of_session
from ..storage.safe_files import Confined
from .context import CallContext
from .embedding import embed_with_progress
from .forget import forget
from .linking import Link, relate
from .remember import Entry, remember
from .revise import Change, revise

MATCH_FLOOR = 0.5  # cosine at which a changed piece is still the memory it was
LINES_BONUS = 0.3  # added to a pair's score when the memory held lines the piece holds now
PLANNED_SHOWN = 200  # pieces a dry run lists one by one
LINK_BATCH = 1000  # links made per commit

# unchanged, moved: an earlier import's memory holds it; held: another memory already says
# it (an earlier import merged it there); duplicate: another memory has its very text.
Action = Literal["unchanged", "moved", "held", "update", "store", "duplicate", "merge",
                 "conflict", "refused"]


@dataclass(frozen=True)
class SourceAsk:
    kind: str
    path: str | None = None
    dry_run: bool = False
    prune: bool = False


@dataclass(frozen=True)
class Planned:
    """What becomes (or would become) of one piece."""
    unit: Unit
    action: Action
    memory_id: int | None = None  # the memory it is, updates, duplicates or merges into
    similarity: float | None = None
    note: str = ""


@dataclass
class Adopted:
    kind: str
    dry_run: bool
    found: Found
    planned: list[Planned] = field(default_factory=list)
    removed: list[Memory] = field(default_factory=list)  # their piece is gone
    pruned: list[int] = field(default_factory=list)  # of those, forgotten (prune)
    stored: list[int] = field(default_factory=list)  # memories the import created
    links: dict[str, int] = field(default_factory=dict)  # created, exists, unresolved

    def count(self, action: Action) -> int:
        return sum(p.action == action for p in self.planned)


def adopt(ctx: CallContext, ask: SourceAsk, confined: Confined | None = None) -> Adopted:
    kind = KINDS.get(ask.kind)
    if kind is None:
        raise invalid(f"from: {ask.kind!r} is not a kind memnest imports; one of "
                      f"{', '.join(KINDS)}")
    if kind.needs_path and ask.path is None:
        raise invalid(f"from {kind.name} needs a path: {kind.reads.split(':')[0]}")
    if ask.path is not None:
        _check_path(ask.path)
        ask = SourceAsk(ask.kind, os.path.expanduser(ask.path), ask.dry_run, ask.prune)
    found = read_source(kind, ctx.workspace, ask.path, ctx.settings.max_store_chars,
                        confined)
    refused = _admitted(found, ctx.settings.max_store_chars)
    done = Adopted(kind.name, ask.dry_run, found)
    if not found.units and not found.files and ask.path is None and not found.skipped:
        raise invalid(f"no {kind.name} files found for this workspace (memnest looks for "
                      f"{kind.reads}); give the path of the files to import")
    with ctx.store.reading():
        ours = _earlier(ctx, kind.name)
        planned, left = _settled(ctx, found, ours)
    # only the pieces that did not settle by their text are embedded, outside any lock
    need = [n for n in range(len(found.units)) if n not in planned]
    vectors = dict(zip(need, embed_with_progress(ctx, [found.units[n].text for n in need])))
    with ctx.store.reading():
        gone = _plan(ctx, found, vectors, left, planned)
    read = {f.shown for f in found.files}
    reach = None if ask.path is None else Reader(ctx.workspace, Found()).shown(ask.path)
    gone += [m for shown, memories in ours.items() if shown not in read and
             shown not in found.skipped and _in_reach(shown, reach) for m in memories]
    done.planned = refused + [planned[n] for n in range(len(found.units))]
    done.removed = gone
    if not ask.dry_run:
        _apply(ctx, done, ask.prune, {found.units[n].text: v for n, v in vectors.items()},
               _anchorable(ctx, found))
    done.links = _link(ctx, done)
    return done


def _check_path(path: str) -> None:
    if not path.strip() or "\x00" in path:
        raise invalid("path is empty or holds a NUL character")
    if not os.path.isabs(os.path.expanduser(path)) and ".." in path.replace("\\", "/").split("/"):
        raise invalid(f"path {path!r} leaves the workspace through '..'; give a path inside "
                      "the workspace, or an absolute path")


def _admitted(found: Found, limit: int) -> list[Planned]:
    """Each piece's text as admission lets it in (secrets redacted, private sections out),
    so what an import compares is what was stored; the pieces it refuses, taken out of
    `found.units` (one refused bullet does not stop the file)."""
    kept: list[Unit] = []
    refused: list[Planned] = []
    for unit in found.units:
        try:
            text = admission.admit(unit.text, unit.session, limit).text
        except admission.Refused as why:
            refused.append(Planned(unit, "refused", note=str(why)))
            continue
        kept.append(unit if text == unit.text else dataclasses.replace(unit, text=text))
    found.units = kept
    return refused


# -- deciding --------------------------------------------------------------------------------

def _earlier(ctx: CallContext, kind: str) -> dict[str, list[Memory]]:
    """The memories earlier imports of this kind took, by the file they came from."""
    out: dict[str, list[Memory]] = defaultdict(list)
    for m in ctx.store.in_scope(ctx.workspace):
        if m.origin_via == "import" and m.origin_client == kind:
            named = file_of_session(m.origin_session)
            if named:
                out[named].append(m)
    return out


Left = list[tuple[list[int], list[Memory]]]  # per file: pieces and memories left to pair


def _settled(ctx: CallContext, found: Found, ours: dict[str, list[Memory]]
             ) -> tuple[dict[int, Planned], Left]:
    """The pieces settled by their text alone (an earlier memory of the file holds it, or
    another memory has the very text), and per file what is left to pair. Read lock held."""
    by_file: dict[str, list[int]] = defaultdict(list)
    for n, unit in enumerate(found.units):
        by_file[unit.file.shown].append(n)
    planned: dict[int, Planned] = {}
    left: Left = []
    for file in found.files:
        pieces, memories = _same_text(found.units, by_file.get(file.shown, []),
                                      ours.get(file.shown, []), planned)
        for n in pieces:
            same = ctx.store.find_hash(ctx.workspace, content_hash(found.units[n].text),
                                       "private")
            if same is not None:
                planned[n] = Planned(found.units[n], "duplicate", same.id, 1.0)
        left.append(([n for n in pieces if n not in planned], memories))
    return planned, left


def _plan(ctx: CallContext, found: Found, vectors: dict[int, np.ndarray], left: Left,
          planned: dict[int, Planned]) -> list[Memory]:
    """The fate of the pieces left (in `planned`), and the earlier memories whose piece is
    gone. Read lock held."""
    gone: list[Memory] = []
    for pieces, memories in left:
        gone += _changed(ctx, found.units, vectors, (pieces, memories), planned)
    fresh = [n for n in range(len(found.units)) if n not in planned]
    planned.update(_fresh(ctx, [found.units[n] for n in fresh], [vectors[n] for n in fresh],
                          fresh))
    return gone


def _same_text(units: list[Unit], indexes: list[int], earlier: list[Memory],
               planned: dict[int, Planned]) -> tuple[list[int], list[Memory]]:
    """Pieces whose text an earlier memory of the file holds: unchanged, or moved when
    their lines did. Returns the pieces and memories left to pair."""
    by_hash: dict[str, list[Memory]] = defaultdict(list)
    for m in earlier:
        by_hash[m.content_hash].append(m)
    left = []
    for n in indexes:
        same = by_hash.get(content_hash(units[n].text))
        if same:
            m = same.pop(0)
            planned[n] = Planned(units[n], "unchanged" if m.origin_session ==
                                 units[n].session[:ORIGIN_CHARS] else "moved", m.id)
        else:
            left.append(n)
    return left, [m for ms in by_hash.values() for m in ms]


def _changed(ctx: CallContext, units: list[Unit], vectors: dict[int, np.ndarray],
             left: tuple[list[int], list[Memory]], planned: dict[int, Planned]
             ) -> list[Memory]:
    """Pair the pieces left with the file's memories left, best first: a pair is the same
    piece edited when alike enough (its lines count for it). Returns the memories no piece
    became."""
    pieces, memories = left
    if not pieces or not memories:
        return memories
    scored = []
    for m in memories:
        v = ctx.store.vectors.vector(m.id)
        if v is None:
            continue
        start, end = _lines_of(m)
        for n in pieces:
            score = float(np.dot(vectors[n], v))
            if start and units[n].start <= end and start <= units[n].end:
                score += LINES_BONUS
            if score >= MATCH_FLOOR:
                scored.append((score, n, m))
    taken: set[int] = set()
    for score, n, m in sorted(scored, key=lambda s: -s[0]):
        if n in planned or m.id in taken:
            continue
        taken.add(m.id)
        planned[n] = Planned(units[n], "update", m.id, round(min(score, 1.0), 3))
    return [m for m in memories if m.id not in taken]


def _lines_of(m: Memory) -> tuple[int, int]:
    lines = m.origin_session.rpartition(":")[2]
    first, _, last = lines.partition("-")
    try:
        return int(first), int(last or first)
    except ValueError:
        return 0, 0


def _fresh(ctx: CallContext, units: list[Unit], vectors: list[np.ndarray],
           indexes: list[int]) -> dict[int, Planned]:
    """Pieces no earlier memory of their file holds: what storing each would do (the
    nearest memories found in one pass over the vectors)."""
    if not units:
        return {}
    store, settings = ctx.store, ctx.settings
    nearest = store.vectors.search_many(np.stack(vectors), workspace_ids(store, ctx.workspace),
                                        5, min_score=settings.conflict_value_floor)
    return {n: _fate(ctx, unit, near) for n, unit, near in zip(indexes, units, nearest)}


def _fate(ctx: CallContext, unit: Unit, near: list[tuple[int, float]]) -> Planned:
    store, settings = ctx.store, ctx.settings
    candidates = [(store.catalog[i], s) for i, s in near if i in store.catalog]
    item = Item(unit.text, unit.category, list(unit.tags))
    m, similarity = merge_candidate(candidates, item, settings)
    if m is not None:
        held = len(unit.text) <= len(m.content) and set(item.tags) <= set(m.tags)
        return Planned(unit, "held" if held else "merge", m.id, round(float(similarity or 0), 3))
    for other, s in candidates:
        if s >= settings.conflict_threshold or value_disagreement(other.content, unit.text):
            return Planned(unit, "conflict", other.id, round(s, 3),
                           "alike enough to be flagged for a decision")
    return Planned(unit, "store")


def _in_reach(shown: str, reach: str | None) -> bool:
    """Whether a file an earlier import read is one this import would have read: any, for
    the kind's own places (`reach` None); the path given or those under it."""
    return reach is None or reach == "." or shown == reach or shown.startswith(reach + "/")


# -- writing ---------------------------------------------------------------------------------

def _apply(ctx: CallContext, done: Adopted, prune: bool, known: dict[str, np.ndarray],
           lines: dict[str, int]) -> None:
    changes = [_change(p, lines) for p in done.planned if p.action in ("update", "moved")]
    batch = ctx.settings.max_batch
    for start in range(0, len(changes), batch):
        revise(ctx, changes[start:start + batch], batch=True)
    fresh = [n for n, p in enumerate(done.planned) if p.action in ("store", "merge",
                                                                    "conflict")]
    entries = [_entry(done.kind, done.planned[n].unit, lines) for n in fresh]
    for start in range(0, len(entries), batch):
        remembered = remember(ctx, entries[start:start + batch], batch=True, known=known)
        for n, outcome in zip(fresh[start:start + batch], remembered.outcomes):
            _record(done, n, outcome)
    if prune and done.removed:
        done.pruned = forget(ctx, [m.id for m in done.removed]).deleted


def _link(ctx: CallContext, done: Adopted) -> dict[str, int]:
    """The links the pieces name ([[note]] in a notes folder), made between the memories
    the pieces are now; a dry run counts those it could make."""
    by_key: dict[str, int | None] = {}
    for p in done.planned:
        for key in p.unit.keys:
            by_key.setdefault(key, p.memory_id)
    asked: dict[tuple[int, int, Relation], None] = {}
    counts = {"created": 0, "exists": 0, "unresolved": 0}
    for p in done.planned:
        for relation, target in p.unit.links:
            if target not in by_key:
                counts["unresolved"] += 1
            elif done.dry_run:
                counts["created"] += 1
            else:
                other = by_key[target]
                if p.memory_id is not None and other is not None and other != p.memory_id:
                    asked[(p.memory_id, other, _relation(relation))] = None
    if asked and not done.dry_run:
        links = [Link(a, b, r) for a, b, r in asked]
        for start in range(0, len(links), LINK_BATCH):
            made = relate(ctx, links[start:start + LINK_BATCH], batch=True)
            counts["created"] += made.count("created")
            counts["exists"] += made.count("exists")
    return counts


def _relation(name: str) -> Relation:
    return "SUPERSEDES" if name == "SUPERSEDES" else \
        "EXPLAINS" if name == "EXPLAINS" else "RELATED_TO"


def _record(done: Adopted, n: int, outcome: Outcome | Verdict) -> None:
    """What storing piece `n` did, in place of what was planned."""
    unit = done.planned[n].unit
    if isinstance(outcome, Verdict):
        done.planned[n] = Planned(unit, "refused", note=outcome.reason)
        return
    actions: dict[str, Action] = {"stored": "store", "duplicate": "duplicate",
                                  "merged": "merge"}
    action = actions[outcome.status]
    if outcome.status == "stored" and outcome.conflicts:
        action = "conflict"
    done.planned[n] = Planned(unit, action, outcome.memory.id, outcome.similarity)
    if outcome.status == "stored":
        done.stored.append(outcome.memory.id)


def _anchorable(ctx: CallContext, found: Found) -> dict[str, int]:
    """The lines a code anchor can cite in each file read in the workspace, as the code's
    reader counts them; 0 when none (a file sources read but code does not anchor: over
    code/files.py's 2 MiB, a name no cited path has). A piece past them comes in without
    its anchor, rather than failing the import."""
    out: dict[str, int] = {}
    for file in found.files:
        if file.inside and file.inside not in out:
            try:
                out[file.inside] = len(read_code(ctx.checkout, clean_path(file.inside)).lines)
            except AnchorError:
                out[file.inside] = 0
    return out


def _anchors(unit: Unit, lines: dict[str, int]) -> list[dict[str, str]] | None:
    if not unit.file.inside or unit.end > lines.get(unit.file.inside, 0):
        return None
    return [{"path": unit.file.inside, "lines": unit.lines}]


def _entry(kind: str, unit: Unit, lines: dict[str, int]) -> Entry:
    return Entry(unit.text, unit.category, list(unit.tags), unit.importance,
                 anchors=_anchors(unit, lines),
                 keep_as_is=True, origin=Origin("import", kind, unit.session[:ORIGIN_CHARS]))


def _change(p: Planned, lines: dict[str, int]) -> Change:
    assert p.memory_id is not None
    unit = p.unit
    return Change(p.memory_id, content=unit.text if p.action == "update" else None,
                  anchors=_anchors(unit, lines) or [], source=unit.session[:ORIGIN_CHARS])
