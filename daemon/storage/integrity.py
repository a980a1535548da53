"""What a database must hold together on its own, checked against itself (verify.py compares
it with the daemon's derived state as well).

A memory's tags are written twice in the same transaction: as its `tags` list and as ABOUT
edges to Topic nodes. real-ladybug 0.15.3 corrupted list columns on rewrite (rows took other
rows' tags) while the edges stayed right, so the edges are the durable source a list is
repaired from.
"""
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.records import content_hash

if TYPE_CHECKING:  # database.py imports this module
    from .database import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Finding:
    kind: str           # e.g. "tags_differ_from_topics"
    detail: str         # one line a person can act on
    memory_id: int | None = None
    repairable: bool = True

    def view(self) -> dict[str, str | int | bool]:
        out: dict[str, str | int | bool] = {"kind": self.kind, "detail": self.detail,
                                            "repairable": self.repairable}
        if self.memory_id is not None:
            out["memory_id"] = self.memory_id
        return out


def topics_of(db: "Database") -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for memory_id, name in db.rows("MATCH (m:Memory)-[:ABOUT]->(t:Topic) RETURN m.id, t.name"):
        out.setdefault(memory_id, set()).add(name)
    return out


def tags_from_topics(topics: set[str]) -> list[str]:
    """The tag list the ABOUT edges say a memory has. A list that disagrees with them was
    damaged, order included, so the topics come by name."""
    return sorted(topics)


def tag_findings(db: "Database") -> list[tuple[Finding, list[str]]]:
    """Memories whose `tags` list names other topics than their ABOUT edges, with the list
    the edges give."""
    topics = topics_of(db)
    out = []
    for memory_id, stored in db.rows("MATCH (m:Memory) RETURN m.id, m.tags"):
        stored = list(stored or ())
        about = topics.get(memory_id, set())
        if set(stored) != about or len(stored) != len(set(stored)):
            fixed = tags_from_topics(about)
            out.append((Finding("tags_differ_from_topics",
                                f"memory {memory_id} lists tags {stored} but is about "
                                f"{sorted(about)}; the tags become {fixed}", memory_id), fixed))
    return out


def repair_tags(db: "Database", found: list[tuple[Finding, list[str]]]) -> None:
    """Set each memory's tags from its ABOUT edges (inside a transaction)."""
    for finding, tags in found:
        db.rows("MATCH (m:Memory) WHERE m.id = $id SET m.tags = $tags",
                {"id": finding.memory_id, "tags": tags})


def database_findings(db: "Database", id_limit: int | None = None) -> list[Finding]:
    """Every problem the database shows on its own, besides tags (tag_findings()). Ids past
    `id_limit` (rows no tool made) do not count for the next id."""
    found = []
    for memory_id, content, digest in db.rows(
            "MATCH (m:Memory) RETURN m.id, m.content, m.content_hash"):
        if digest and content is not None and content_hash(content) != digest:
            found.append(Finding(
                "content_differs_from_its_hash",
                f"memory {memory_id}: its content no longer matches the hash stored when it "
                "was written (damaged, or rewritten by raw Cypher); read it with memory_get "
                "and rewrite it with memory_update if it is wrong", memory_id,
                repairable=False))
    orphans = db.orphan_topics()
    if orphans:
        found.append(Finding("orphan_topics", f"{orphans} topics no memory is about"))
    ids = {r[0] for r in db.rows("MATCH (m:Memory) RETURN m.id")}
    stale = [(low, high) for low, high in db.load_verdicts()
             if low not in ids or high not in ids]
    if stale:
        found.append(Finding("verdicts_of_deleted_memories",
                             f"{len(stale)} keep-separate verdicts name deleted memories"))
    signals = [i for i in db.load_signal() if i not in ids]
    if signals:
        found.append(Finding("graph_signal_of_deleted_memories",
                             f"{len(signals)} graph signal rows name deleted memories"))
    next_id = int(db.meta("next_id") or 1)
    served = [i for i in ids if id_limit is None or i <= id_limit]
    if served and next_id <= max(served):
        found.append(Finding("next_id_behind",
                             f"the next id to give ({next_id}) is not above the largest id "
                             f"in use ({max(served)})"))
    return found


def repair_database(db: "Database", found: list[Finding], id_limit: int | None = None) -> None:
    """Fix what database_findings() reported and can be fixed (inside a transaction)."""
    kinds = {f.kind for f in found if f.repairable}
    if "orphan_topics" in kinds:
        db.reap_all_topics()
    ids = {r[0] for r in db.rows("MATCH (m:Memory) RETURN m.id")}
    if "verdicts_of_deleted_memories" in kinds:
        for low, high in db.load_verdicts():
            if low not in ids or high not in ids:
                db.remove_verdict(low, high)
    if "graph_signal_of_deleted_memories" in kinds:
        db.rows("MATCH (g:GraphSignal) WHERE g.id IN $ids DELETE g",
                {"ids": [i for i in db.load_signal() if i not in ids]})
    if "next_id_behind" in kinds:
        largest = max((i for i in ids if id_limit is None or i <= id_limit), default=0)
        db.set_meta("next_id", str(largest + 1))


def repair_tags_after_engine_change(db: "Database", engine: str) -> int:
    """On the first open by another engine than the one that last wrote the database: set
    every memory's tags that disagree with its ABOUT edges from the edges (the old engine's
    damage, see the module docstring). Returns how many were repaired."""
    if db.meta("engine") == engine:
        return 0
    found = tag_findings(db)
    with db.transaction():
        repair_tags(db, found)
        db.set_meta("engine", engine)
    if found:
        log.warning("%s: repaired the tags of %d memories from their topics (ABOUT edges), "
                    "first open with %s: %s", db.path, len(found), engine,
                    "; ".join(f.detail for f, _ in found[:20]))
    return len(found)
