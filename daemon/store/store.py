"""One open database with its derived state (registry.py opens them on demand).

A MemoryStore is the unit of consistency: the LadybugDB file (durable truth), the catalog of
memories, the vector index and the keyword index. Writers hold its write lock across the
database transaction and the index updates that follow the commit, so readers never see an
index that disagrees with the database.
"""
import gc
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import numpy as np

from ..core.content_memo import ContentMemo
from ..core.records import Memory, utcnow
from ..core.rwlock import RWLock
from ..core.types import Scope
from ..search.hash_table import HashTable
from ..search.indexes import KeywordIndex, VectorIndex, keyword_text
from ..search.memory_columns import MemoryColumns
from ..search.neighbour_table import NeighbourTable
from ..search.ranking import ScopeAnswers
from ..search.timeline import Timeline
from ..storage import vector_snapshot
from ..storage.database import Database
from .changes import ChangeRefused, Changes, refusal
from .graph import Edge, Graph
from .neighbours import NeighbourCache
from .team_slot import TeamSlot

log = logging.getLogger(__name__)

# An open that had to read at least this many embeddings from the database writes the
# vector snapshot at once rather than when the workspace closes.
SNAPSHOT_AFTER_READING = 1000

# texts -> their embeddings, one row each (the model's, handed down from above)
Embed = Callable[[list[str]], np.ndarray]
# Called after each commit, write lock still held, with (the store, the changes, the deleted
# memories as they were, the ids that lost links to them): the team layer rewrites shared
# memories' files there.
AfterCommit = Callable[["MemoryStore", Changes, list[Memory], set[int]], None]


class MemoryStore:
    def __init__(self, db_path: str, model: str, dim: int, buffer_pool_mb: int,
                 max_db_gb: int, db_threads: int = 2, embed: Embed | None = None) -> None:
        started = time.monotonic()
        self.db_path = db_path
        self.model = model
        self._embed = embed  # texts -> vectors, for rows a crash left without an embedding
        self.users = 0  # calls using this store right now; guarded by the registry's lock
        self._access_lock = threading.Lock()
        self._accessed: set[int] = set()  # access counts not yet written to the database
        self._snapshot_lock = threading.Lock()
        self._db_args = (model, dim, buffer_pool_mb, max_db_gb, db_threads)
        self.db = Database(db_path, *self._db_args)
        self.lock = RWLock()
        self.catalog: dict[int, Memory] = {}
        self.vectors = VectorIndex(dim)
        self.keywords = KeywordIndex()
        self.last_used = time.monotonic()
        self.version = 0  # bumped by every change to the catalog or the indexes
        self.after_commit: list[AfterCommit] = []
        # team memory's state (team/state.py): set by the registry that opens the store
        self.team: TeamSlot | None = None
        # what operations/following.py last saw of each followed source, by its key; gone
        # with the store, so a store opened again looks at every followed source once
        self.followed: dict[str, object] = {}
        # workspaces whose moved rows were looked for since the store opened (relocation.py)
        self.settled: set[str] = set()
        self._load()
        log.info("opened %s: %d memories in %.2fs (%d embeddings read from the database)",
                 db_path, len(self.catalog),
                 time.monotonic() - started, self.embeddings_read)

    def _load(self) -> None:
        self.neighbours = NeighbourCache()  # conflict flags' nearest memories (neighbours.py)
        self.scopes: tuple[object, ScopeAnswers] = (-1, {})  # at a store version
        snapshot = None if self.db.ephemeral else \
            vector_snapshot.load(self.db_path, self.model, self.vectors.dim)
        memories, embedded_ids, matrix, read, unembedded = self.db.load_all(snapshot)
        self.embeddings_read = read
        memories, embedded_ids, matrix, unembedded = self._servable(
            memories, embedded_ids, matrix, unembedded)
        if snapshot is not None and snapshot.neighbours and not read and not unembedded \
                and snapshot.rows.keys() == set(embedded_ids):
            # every embedding is the snapshot's: so are the nearest memories found from them
            self.neighbours = NeighbourCache(NeighbourTable.from_state(snapshot.neighbours))
        # A row that names this model yet has no embedding lost a deferred one in a crash.
        # (Rows made by hand name none: memory_stats reports them, memory_dream embeds them.)
        lost = [m for m in unembedded if m.embedding_model == self.model]
        if lost and self._embed is not None:
            embedded_ids, matrix = self._embed_again(self._embed, lost, embedded_ids, matrix)
        self.catalog = {m.id: m for m in memories}
        # injection markers by text digest (curation/screening.py), kept across restarts
        self.screened = snapshot.screened if snapshot is not None and \
            snapshot.screened is not None else ContentMemo()
        self.per_workspace = Counter(m.workspace for m in memories)
        self.timeline = Timeline.of(memories)
        self.columns = MemoryColumns.of(memories)
        # exact duplicates are found within one scope: a private and a shared memory never join
        self._by_hash = HashTable((_hash_key(m), m.id) for m in memories)
        self.vectors.load(embedded_ids, matrix)
        self.keywords.upsert_many(memories, None if snapshot is None else snapshot.terms_for)
        del snapshot
        self.graph = Graph(self.db.load_edges(), self.db.load_verdicts())
        self.signal = self.db.load_signal()  # memory id -> (pagerank, community)
        # Ids are never reused, even after the newest memory is deleted: an agent may still
        # hold an old id, and it must not come to mean another memory.
        saved_next = int(self.db.meta("next_id") or 1)
        if saved_next > self.id_limit:  # a row made behind our back pushed it up
            log.warning("%s: the saved next id %d is past the ids this store serves; new "
                        "memories continue after the largest id in use", self.db_path,
                        saved_next)
            saved_next = 1
        self._next_id = max(max(self.catalog, default=0) + 1, saved_next)
        # An open store is many long-lived objects that every full pass of the cycle
        # collector would walk, in whichever search was allocating
        # (bench/RESULTS.md#search-profiles).
        # Frozen, the collector leaves them be; closing a store thaws them
        # (StoreRegistry.close_idle) so that cycles among what it held can go.
        gc.freeze()
        if read >= SNAPSHOT_AFTER_READING and not self.db.ephemeral:
            # Next time these come from the snapshot, even if the daemon never closes this
            # workspace cleanly.
            threading.Thread(target=self.save_snapshot, name="vector-snapshot",
                             daemon=True).start()

    def _servable(self, memories: list[Memory], embedded_ids: list[int], matrix: np.ndarray,
                  unembedded: list[Memory]
                  ) -> tuple[list[Memory], list[int], np.ndarray, list[Memory]]:
        """Leave out rows whose id no tool would have given: several structures are arrays
        indexed by id, and a row with id 400,000,000 (written by raw Cypher) had every open
        run the daemon out of memory. memory_verify lists such rows."""
        self.id_limit = servable_id_limit(len(memories))
        outside = [m.id for m in memories if not 1 <= m.id <= self.id_limit]
        if not outside:
            return memories, embedded_ids, matrix, unembedded
        log.warning("%s: %d memories have ids outside 1..%d and are not served (e.g. %s); "
                    "`memnest-ctl verify` lists them", self.db_path, len(outside),
                    self.id_limit, outside[:5])
        keep = [k for k, i in enumerate(embedded_ids) if 1 <= i <= self.id_limit]
        return ([m for m in memories if 1 <= m.id <= self.id_limit],
                [embedded_ids[k] for k in keep], matrix[keep],
                [m for m in unembedded if 1 <= m.id <= self.id_limit])

    def _embed_again(self, embed: Embed, memories: list[Memory], ids: list[int],
                     matrix: np.ndarray) -> tuple[list[int], np.ndarray]:
        """Rows whose deferred embeddings a crash lost (database.Database.transaction) get
        them again from the model, before the store serves a call."""
        vectors = np.asarray(embed([m.content for m in memories]), dtype=np.float32)
        with self.db.transaction() as db:
            db.write_embeddings({m.id: v for m, v in zip(memories, vectors)})
        log.warning("%s: embedded %d memories again (their embeddings were not yet written "
                    "when the daemon stopped)", self.db_path, len(memories))
        return ids + [m.id for m in memories], np.concatenate([matrix, vectors])

    def save_snapshot(self) -> None:
        """Write the vector snapshot (vector_snapshot.py) from the index as it is now."""
        with self._snapshot_lock:
            with self.lock.read():
                ids, matrix = self.vectors.rows()
                keep = [i for i, memory_id in enumerate(ids.tolist())
                        if memory_id in self.catalog
                        and self.catalog[memory_id].embedding_model == self.model]
                table = self.neighbours.table
                neighbours = table.state() if table is not None and len(keep) == len(ids) \
                    else None  # its rows may list memories the snapshot leaves out
                ids, matrix = ids[keep], matrix[keep]  # copies: the views go with the lock
                memories = [self.catalog[memory_id] for memory_id in ids.tolist()]
                contents = [m.content for m in memories]
                texts = [keyword_text(m) for m in memories]
                terms = [self.keywords.terms_of(m.id) for m in memories]
            vector_snapshot.save(self.db_path, self.model, ids, contents, matrix, texts, terms,
                                 neighbours, self.screened)

    @contextmanager
    def reading(self) -> Iterator["MemoryStore"]:
        self.last_used = time.monotonic()
        with self.lock.read():
            yield self

    @contextmanager
    def writing(self) -> Iterator["MemoryStore"]:
        self.last_used = time.monotonic()
        with self.lock.write():
            yield self

    @contextmanager
    def database_closed(self) -> Iterator[None]:
        """The database file closed for the block, for another process to use (memory_query's
        worker), then opened again. Write lock held: no call sees it closed."""
        self.db.close()
        try:
            yield
        finally:
            self.db = Database(self.db_path, *self._db_args)

    def next_id(self) -> int:
        """The id the next new memory gets (none is ever reused)."""
        return self._next_id

    def allocate_id(self) -> int:
        """Write lock held; the memory made with it goes in through commit()."""
        memory_id = self._next_id
        self._next_id += 1
        return memory_id

    def _save_next_id(self) -> None:
        self.db.set_meta("next_id", str(self._next_id))

    # -- the one write path (write lock held) -------------------------------------------

    def commit(self, changes: Changes) -> None:
        """Write `changes` to the database in one transaction, then bring everything derived
        from it (catalog, vector and keyword indexes, timeline, graph mirror, graph signal,
        conflict neighbours) up to date. A change that would break the store's invariants is
        refused before anything is written (ChangeRefused)."""
        if not self.lock.held_for_writing():
            raise ChangeRefused("commit without the store's write lock")
        why = refusal(changes, self.catalog, self._next_id, self.vectors.dim)
        if why is not None:
            raise ChangeRefused(why)
        edges_added = [e for e in dict.fromkeys(changes.edges_added)
                       if e not in self.graph.edges]
        verdicts = [p for p in dict.fromkeys(changes.kept_separate)
                    if p not in self.graph.separate]
        gone = [self.catalog[i] for i in dict.fromkeys(changes.deleted)]
        # memories whose links to the deleted ones go with them (for the hooks below)
        doomed = set(changes.deleted)
        unlinked = {a for _, a, b in self.graph.edges if b in doomed} \
            if gone and self.after_commit else set()
        self._written(changes, edges_added, verdicts)
        self._derived(changes, edges_added, verdicts)
        for hook in self.after_commit:
            hook(self, changes, gone, unlinked - doomed)

    def _written(self, changes: Changes, edges_added: list[Edge],
                 verdicts: list[tuple[int, int]]) -> None:
        """commit()'s database transaction: `edges_added` and `verdicts` are the changes'
        links and verdicts the store does not hold yet."""
        inserted = [m for m, _ in changes.inserted]
        # Small new rows leave their embeddings to the next checkpoint (Database.transaction):
        # a single store then costs no checkpoint. Changes to existing memories cannot wait.
        defer = changes.only_inserts() and self.db.can_defer(inserted)
        now = utcnow()
        with self.db.transaction(checkpoint=not defer) as db:
            if changes.deleted:
                tags = {t for i in changes.deleted for t in self.catalog[i].tags}
                db.delete(list(changes.deleted), sorted(tags))
            for m, vector in changes.inserted:
                db.insert(m, vector)
            if inserted:
                self._save_next_id()
            for m, vector in changes.updated:
                db.update(m, vector, self.catalog[m.id].tags)
            for rel, a, b in changes.edges_removed:
                db.remove_edge(rel, a, b)
            if edges_added:
                db.add_edges(edges_added, now)
            for low, high in verdicts:
                db.add_verdict(low, high, now)
            if changes.signal_of:
                db.save_signal(list(changes.signal_of), changes.signal)
            for key, value in changes.meta.items():
                db.set_meta(key, value)
            if changes.reap_topics:
                db.reap_all_topics()

    def _derived(self, changes: Changes, edges_added: list[Edge],
                 verdicts: list[tuple[int, int]]) -> None:
        """Everything derived from the database, brought up to what commit() wrote."""
        if changes.deleted:
            self._unindexed(changes.deleted)
        if changes.inserted or changes.updated:
            self._indexed(changes.memories(), changes.embeddings(), changes.keep_rows)
        for edge in changes.edges_removed:
            self.graph.remove(*edge)
        for edge in edges_added:
            self.graph.add(*edge)
        for low, high in verdicts:
            self.graph.keep_separate(low, high)
        for memory_id in changes.signal_of:
            self.signal.pop(memory_id, None)
        self.signal.update(changes.signal)

    @contextmanager
    def rebuilt_afterwards(self) -> Iterator[None]:
        """For writes that bypass `commit` (raw Cypher, repairs): the block writes the
        database, then the catalog and every index are rebuilt from it. Write lock held."""
        if not self.lock.held_for_writing():
            raise ChangeRefused("a raw write without the store's write lock")
        before = dict(self.catalog)
        try:
            yield
        finally:
            self.reload()
            self._after_raw_write(before)

    def _after_raw_write(self, before: dict[int, Memory]) -> None:
        """What follows a commit (the shared files of team memory) follows a raw write too:
        it cannot say what it changed, so every shared memory is handed on (a file is only
        rewritten when its bytes change) with the memories that are gone."""
        if not self.after_commit:
            return
        shared: list[tuple[Memory, np.ndarray | None]] = [
            (m, None) for m in self.catalog.values() if m.scope == "shared"]
        gone = [m for i, m in before.items() if i not in self.catalog]
        changes = Changes(updated=shared)
        for hook in self.after_commit:
            hook(self, changes, gone, set())

    def _indexed(self, memories: list[Memory], embeddings: dict[int, np.ndarray],
                 keep_rows: bool = False) -> None:
        self.version += 1
        for m in memories:
            old = self.catalog.get(m.id)
            if old is not None:
                self.per_workspace[old.workspace] -= 1
                self._by_hash.remove(_hash_key(old), m.id)
            self.per_workspace[m.workspace] += 1
            self.catalog[m.id] = m
            self._by_hash.add(_hash_key(m), m.id)
        for memory_id, vector in embeddings.items():
            self.vectors.upsert(memory_id, vector)
        self.timeline.put_many(memories)
        self.columns.put_many(memories)
        self.keywords.upsert_many(memories)
        self.neighbours.forget(self, [m.id for m in memories], [], list(embeddings),
                               keep_rows)

    def _unindexed(self, ids: list[int]) -> None:
        self.version += 1
        self.graph.forget(ids)
        for memory_id in ids:
            self.signal.pop(memory_id, None)
            self.vectors.remove(memory_id)
            old = self.catalog.pop(memory_id, None)
            if old is None:
                continue
            self.per_workspace[old.workspace] -= 1
            self._by_hash.remove(_hash_key(old), memory_id)
        self.timeline.remove_many(ids)
        self.columns.remove_many(ids)
        self.keywords.remove_many(ids)
        self.neighbours.forget(self, [], list(ids))

    def record_access(self, ids: Iterable[int]) -> None:
        """Count that these memories were returned to a caller. Read (or write) lock held:
        the catalog changes at once, the database at the next flush_access()."""
        now = utcnow()
        with self._access_lock:
            for memory_id in ids:
                m = self.catalog.get(memory_id)
                if m is not None:
                    m.access_count += 1
                    m.accessed_at = now
                    self._accessed.add(memory_id)

    def flush_access(self) -> int:
        """Write pending access counts. Takes the write lock itself; returns how many."""
        if not self._accessed:
            return 0
        with self.lock.write():
            return self._save_access()

    def flush_embeddings(self) -> None:
        """Write the embeddings small stores left to the next checkpoint (database.py)."""
        if self.db.has_pending():
            with self.lock.write():
                self.db.flush_pending()

    def _save_access(self) -> int:
        """Write lock held."""
        with self._access_lock:
            dirty, self._accessed = self._accessed, set()
        rows = [self.catalog[i] for i in dirty if i in self.catalog]
        if rows:
            with self.db.transaction(checkpoint=False) as db:  # small rows, no embedding
                db.save_access(rows)
        return len(rows)

    def reload(self) -> None:
        """Rebuild the catalog and both indexes from the database: after anything changed
        the database behind the daemon's back (a raw Cypher write). Write lock held."""
        self._save_access()  # the catalog is about to be rebuilt: keep what it counted
        vector_snapshot.discard(self.db_path)  # the write may have changed an embedding
        self.db.forget_prepared()  # the schema may have changed too
        self.vectors = VectorIndex(self.vectors.dim)
        self.keywords = KeywordIndex()
        self.version += 1
        self._load()

    # -- what the database keeps beside the indexes -------------------------------------

    @property
    def ephemeral(self) -> bool:
        """Whether the database lives only in memory (":memory:"), gone once closed."""
        return self.db.ephemeral

    def meta(self, key: str) -> str | None:
        """What the database keeps under `key` (a commit's Changes.meta wrote it), or None."""
        return self.db.meta(key)

    def census_rows(self) -> list[tuple[int, bool, str]]:
        """(id, has an embedding, its model) of every row of the database, not of the
        catalog; an embedding still to be written counts."""
        return self.db.census_rows()

    def orphan_topics(self) -> int:
        """How many topics of the database no memory is about."""
        return self.db.orphan_topics()

    # -- reads (read lock held) ----------------------------------------------------------

    def in_scope(self, workspace: str | None) -> list[Memory]:
        if workspace is None:
            return list(self.catalog.values())
        return [m for m in self.catalog.values() if m.workspace == workspace]

    def find_hash(self, workspace: str, digest: str, scope: Scope = "private"
                  ) -> Memory | None:
        """The memory of this scope whose text is this one, as far as exact dedup goes."""
        memory_id = self._by_hash.first((workspace, scope, digest))
        return None if memory_id is None else self.catalog.get(memory_id)

    def close(self) -> None:
        try:
            self.flush_access()
        except Exception:
            log.exception("%s: saving access counts failed", self.db_path)
        if not self.db.ephemeral:
            try:
                self.save_snapshot()
            except Exception:
                log.exception("%s: saving the vector snapshot failed", self.db_path)
        with self.lock.write():
            self.db.close()


def servable_id_limit(rows: int) -> int:
    """The largest memory id a store serves: tools give ids in order, so ids far beyond the
    number of rows come from elsewhere, and would size id-indexed arrays."""
    return max(1_000_000, 4 * rows)


def _hash_key(m: Memory) -> tuple[str, str, str]:
    return (m.workspace, m.scope, m.content_hash)
