"""memory_verify / `memnest-ctl verify`: a database compared with everything derived from it.

The database is the durable truth (DESIGN.md); the catalog, the vector and keyword indexes,
the graph mirror, the timeline, ranking's columns, the conflict neighbour table, the vector
snapshot beside the file and the journal of deferred rows are all derived from it, and must
agree with it. Each disagreement is one Finding. A repair fixes the database from what it
holds itself (integrity.py: tags from topics, orphans, the next id), then rebuilds every
derived structure from it, and checks again: what is still wrong is reported as not
repairable.
"""
import logging
import time
from collections import Counter
from typing import TypedDict

import numpy as np

from ..core.records import Memory
from ..search.indexes import keyword_text
from ..search.neighbour_table import KEPT
from ..storage import integrity, vector_snapshot
from ..storage.database import MEMORY_COLUMNS, Database, _memory
from ..storage.integrity import Finding
from ..storage.row_journal import RowJournal
from .store import MemoryStore

log = logging.getLogger(__name__)

SHOWN = 50  # findings listed in full; the rest are counted
COMPARED = ("content", "content_hash", "category", "tags", "importance", "workspace",
            "created_at", "updated_at", "embedding_model")
VECTOR_TOLERANCE = 1e-5

Rows = dict[int, Memory]  # the database's memories by id


class Checked(TypedDict):
    """What a check compared."""
    memories: int
    with_embedding: int
    edges: int
    keep_separate: int
    quick: bool


class Listed(TypedDict):
    count: int
    by_kind: dict[str, int]
    items: list[dict[str, str | int | bool]]  # the first SHOWN findings


def check(store: MemoryStore, quick: bool = False) -> tuple[list[Finding], Checked]:
    """Every finding about `store`, and what was compared. Read lock held by the caller.
    `quick` leaves out what reads every embedding (the vector contents, the neighbour
    rows and the snapshot's vectors)."""
    db = store.db
    found: list[Finding] = [f for f, _ in integrity.tag_findings(db)]
    found += integrity.database_findings(db, store.id_limit)
    rows = _database_rows(db)
    found += _unservable(store, rows)  # and leaves them out of every check below
    found += _catalog_findings(store, rows)
    embedded = {i for i, has, _ in db.census_rows() if has and i in rows}
    found += _vector_findings(store, embedded, None if quick else _embeddings(db, embedded))
    found += _keyword_findings(store, rows)
    found += _graph_findings(store)
    found += _bookkeeping_findings(store, rows)
    if not quick:
        found += _neighbour_findings(store)
        found += _snapshot_findings(store, rows)
    found += _journal_findings(store, rows)
    counts: Checked = {"memories": len(rows), "with_embedding": len(embedded),
              "edges": len(store.graph.edges), "keep_separate": len(store.graph.separate),
              "quick": quick}
    return found, counts


def verify(store: MemoryStore, repair: bool = False, quick: bool = False
           ) -> dict[str, object]:
    """The report memory_verify returns; with `repair`, after repairing (takes the locks)."""
    started = time.monotonic()
    with store.reading():
        found, counts = check(store, quick and not repair)
    report: dict[str, object] = {"database": store.db_path, "checked": counts}
    if repair and found:
        with store.writing(), store.rebuilt_afterwards():
            tags = integrity.tag_findings(store.db)
            database = integrity.database_findings(store.db, store.id_limit)
            with store.db.transaction() as db:
                integrity.repair_tags(db, tags)
                integrity.repair_database(db, database, store.id_limit)
        store.flush_embeddings()
        with store.reading():
            remaining, counts = check(store)
        still = {(f.kind, f.memory_id) for f in remaining}
        fixed = [f for f in found if (f.kind, f.memory_id) not in still]
        log.warning("%s: verify --repair fixed %d of %d findings: %s", store.db_path,
                    len(fixed), len(found), "; ".join(f.detail for f in fixed[:20]))
        report["repaired"] = _listed(fixed)
        found = remaining
        report["checked"] = counts
    report["findings"] = _listed(found)
    report["healthy"] = not found
    report["duration_ms"] = round((time.monotonic() - started) * 1000, 1)
    return report


def _listed(found: list[Finding]) -> Listed:
    kinds = Counter(f.kind for f in found)
    return {"count": len(found), "by_kind": dict(sorted(kinds.items())),
            "items": [f.view() for f in found[:SHOWN]]}


# -- the parts -------------------------------------------------------------------------------

def _database_rows(db: Database) -> Rows:
    cols = ", ".join(f"m.{c}" for c in MEMORY_COLUMNS)
    return {m.id: m for m in map(_memory, db.rows(f"MATCH (m:Memory) RETURN {cols}"))}


def _embeddings(db: Database, ids: set[int]) -> dict[int, np.ndarray]:
    out = {i: v for i, v in db.pending_embeddings().items() if i in ids}
    for memory_id, embedding in db.rows(
            "MATCH (m:Memory) WHERE m.embedding IS NOT NULL RETURN m.id, m.embedding"):
        out[memory_id] = np.asarray(embedding, dtype=np.float32)
    return out


def _unservable(store: MemoryStore, rows: Rows) -> list[Finding]:
    """Rows with an id no tool gives, which the store does not serve (workspace.py)."""
    found = []
    for memory_id in sorted(i for i in rows if not 1 <= i <= store.id_limit):
        del rows[memory_id]
        found.append(Finding("id_out_of_range",
                             f"memory {memory_id} has an id no tool gives (1.."
                             f"{store.id_limit}), so it is not served; it was written by raw "
                             "Cypher. Delete it with memory_query (with "
                             "MEMORY_ALLOW_DESTRUCTIVE=true) or store its text again",
                             memory_id, repairable=False))
    return found


def _catalog_findings(store: MemoryStore, rows: Rows) -> list[Finding]:
    found = []
    catalog = store.catalog
    for memory_id in rows.keys() - catalog.keys():
        found.append(Finding("missing_from_catalog",
                             f"memory {memory_id} is in the database but the daemon does not "
                             "serve it", memory_id))
    for memory_id in catalog.keys() - rows.keys():
        found.append(Finding("stray_in_catalog",
                             f"memory {memory_id} is served but not in the database",
                             memory_id))
    for memory_id in rows.keys() & catalog.keys():
        stored, served = rows[memory_id], catalog[memory_id]
        differ = [c for c in COMPARED if getattr(stored, c) != getattr(served, c)]
        if served.access_count < stored.access_count:
            differ.append("access_count")  # the catalog may only be ahead (not yet flushed)
        if differ:
            found.append(Finding("catalog_differs",
                                 f"memory {memory_id}: the daemon serves other "
                                 f"{', '.join(differ)} than the database holds", memory_id))
    return found


def _vector_findings(store: MemoryStore, embedded: set[int],
                     embeddings: dict[int, np.ndarray] | None) -> list[Finding]:
    found = []
    indexed = store.vectors.ids()
    for memory_id in sorted(embedded - indexed):
        found.append(Finding("missing_from_vector_index",
                             f"memory {memory_id} has an embedding the vector index lacks",
                             memory_id))
    for memory_id in sorted(indexed - embedded):
        found.append(Finding("stray_in_vector_index",
                             f"the vector index holds memory {memory_id}, which has no "
                             "embedding in the database", memory_id))
    for memory_id in sorted(set(store.catalog) - embedded):
        model = store.catalog[memory_id].embedding_model
        found.append(Finding("row_without_embedding",
                             f"memory {memory_id} has no embedding (search finds it only by "
                             "keyword)", memory_id, repairable=model == store.model))
    if embeddings is not None:
        for memory_id in sorted(embedded & indexed):
            stored, served = embeddings.get(memory_id), store.vectors.vector(memory_id)
            if stored is None or served is None or \
                    not np.allclose(stored, served, atol=VECTOR_TOLERANCE):
                found.append(Finding("vector_differs",
                                     f"memory {memory_id}: the vector index holds another "
                                     "vector than the database", memory_id))
    stale = sorted(i for i, m in store.catalog.items() if m.embedding_model != store.model)
    for memory_id in stale:
        found.append(Finding("embedded_by_another_model",
                             f"memory {memory_id} was embedded by another model; "
                             "memory_dream embeds it again", memory_id, repairable=False))
    return found


def _keyword_findings(store: MemoryStore, rows: Rows) -> list[Finding]:
    found = []
    keywords = store.keywords
    indexed = keywords.ids()
    for memory_id in sorted(rows.keys() - indexed):
        found.append(Finding("missing_from_keyword_index",
                             f"memory {memory_id} cannot be found by keyword", memory_id))
    for memory_id in sorted(indexed - rows.keys()):
        found.append(Finding("stray_in_keyword_index",
                             f"the keyword index holds memory {memory_id}, which is not in "
                             "the database", memory_id))
    for memory_id in sorted(rows.keys() & indexed):
        terms = set(keywords.analyse(keyword_text(rows[memory_id])))
        if set(keywords.terms_of(memory_id)) != terms:
            found.append(Finding("keyword_terms_differ",
                                 f"memory {memory_id}: the keyword index holds other terms "
                                 "than its text gives", memory_id))
    return found


def _graph_findings(store: MemoryStore) -> list[Finding]:
    found = []
    db, graph = store.db, store.graph
    for name, stored, served in (("edges", set(db.load_edges()), graph.edges),
                                 ("keep-separate verdicts",
                                  {(min(a, b), max(a, b)) for a, b in db.load_verdicts()},
                                  graph.separate)):
        if stored != served:
            found.append(Finding(f"{name.split()[-1]}_differ",
                                 f"{name}: {len(stored - served)} in the database only, "
                                 f"{len(served - stored)} served only"))
    stored_signal = db.load_signal()
    if stored_signal.keys() != store.signal.keys() or any(
            abs(stored_signal[i][0] - store.signal[i][0]) > 1e-9
            or stored_signal[i][1] != store.signal[i][1] for i in stored_signal):
        found.append(Finding("graph_signal_differs",
                             "the graph signal served differs from the database's"))
    return found


def _bookkeeping_findings(store: MemoryStore, rows: Rows) -> list[Finding]:
    """The small structures the write path keeps beside the catalog."""
    found = []
    per_workspace = Counter(m.workspace for m in rows.values())
    if +store.per_workspace != per_workspace:
        found.append(Finding("workspace_counts_differ",
                             "the count of memories per workspace differs from the database"))
    by_hash = {((m.workspace, m.scope, m.content_hash), m.id) for m in rows.values()}
    if set(store._by_hash.entries()) != by_hash:
        found.append(Finding("dedup_table_differs",
                             "the table exact duplicates are found by differs from the "
                             "database"))
    differing = store.columns.differences(rows)
    if differing:
        found.append(Finding("ranking_columns_differ",
                             "what ranking reads of each memory differs from the database "
                             f"({', '.join(differing)})"))
    return found


def _neighbour_findings(store: MemoryStore) -> list[Finding]:
    """Each known neighbour row against the nearest memories found afresh."""
    table = store.neighbours.table
    if table is None or len(store.per_workspace) > 1:
        return []
    ids, matrix = store.vectors.rows()
    if not len(ids):
        return []
    at = table.known_at(ids)
    known = ids[at].tolist()
    if not known:
        return []
    fresh = store.vectors.search_many(matrix[at], None, KEPT, min_score=table.floor)
    wrong = [i for i, hits in zip(known, fresh) if _similarities(table.get(i) or []) !=
             _similarities(hits)]  # ties may list either of two memories: compare scores
    if wrong:
        return [Finding("neighbour_rows_differ",
                        f"{len(wrong)} conflict neighbour rows list other memories than are "
                        f"nearest now (e.g. memory {wrong[0]})")]
    return []


def _similarities(hits: list[tuple[int, float]]) -> list[float]:
    return sorted(round(s, 4) for _, s in hits)


def _snapshot_findings(store: MemoryStore, rows: Rows) -> list[Finding]:
    """A vector snapshot row the next open would trust must hold the database's vector."""
    if store.db.ephemeral:
        return []
    snapshot = vector_snapshot.load(store.db_path, store.model, store.vectors.dim)
    if snapshot is None:
        return []
    trusted = {i: snapshot.row_for(i, m.content, m.embedding_model) for i, m in rows.items()}
    trusted = {i: r for i, r in trusted.items() if r is not None}
    embeddings = _embeddings(store.db, set(trusted))
    wrong = [i for i, r in trusted.items() if i not in embeddings
             or not np.allclose(snapshot.matrix[r], embeddings[i], atol=VECTOR_TOLERANCE)]
    if wrong:
        return [Finding("snapshot_differs",
                        f"the vector snapshot beside the database holds other vectors for "
                        f"{len(wrong)} memories than the database (e.g. memory {wrong[0]})")]
    return []


def _journal_findings(store: MemoryStore, rows: Rows) -> list[Finding]:
    if store.db.ephemeral:
        return []
    journaled = RowJournal(store.db_path + ".deferred").memories()
    lost = [m.id for m in journaled if m.id not in rows]
    if lost:
        return [Finding("journaled_rows_missing",
                        f"{len(lost)} rows of the journal of deferred writes are not in the "
                        f"database (e.g. memory {lost[0]})", repairable=False)]
    return []
