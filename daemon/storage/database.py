"""LadybugDB access for one database file: schema, and the durable half of every write.

Only this module talks Cypher to the store, and the engine's errors that layers above act on
leave it as those of core/storage_errors.py. Each thread gets its own connection; callers
serialise writes (see workspace.MemoryStore), so every write here is one transaction that
either commits whole or leaves nothing behind.
"""
import logging
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, cast

import ladybug as lb
import numpy as np
from ladybug.prepared_statement import PreparedStatement

from ..core.anchors import CodeContext
from ..core.records import Memory, content_hash
from ..core.storage_errors import DiskFailure, ModelMismatch, disk_trouble
from ..core.types import RELATION_TYPES, Category, Via
from . import db_files, integrity, wal_recovery
from .row_journal import RowJournal
from .vector_snapshot import Snapshot

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
# A result row holds the engine's values, as the query orders them; parameters likewise.
Row = list[Any]
Params = dict[str, Any]

ENGINE = f"ladybug {lb.__version__}"  # recorded in Meta; see integrity.py
MEMORY_COLUMNS = ("id", "content", "content_hash", "category", "tags", "importance",
                  "access_count", "workspace", "created_at", "updated_at", "accessed_at",
                  "embedding_model", "origin_via", "origin_client", "origin_session", "code",
                  "scope", "global_id")
# Columns added after the first schema: added to an older database when it opens.
ADDED_COLUMNS = ("origin_via", "origin_client", "origin_session", "code", "scope",
                 "global_id")
LOAD_CHUNK = 5000  # rows fetched from the driver at a time when a workspace opens
FETCH_BY_ID_MAX = 2000  # more missing embeddings than this are read in one scan
ACCESS_ROWS_PER_STATEMENT = 1000
PREPARED_PER_CONNECTION = 128  # the daemon's own statements number a few dozen
# Deferred embeddings (see transaction()): only small rows, so that their journal lines
# stay short and a crash costs little to embed again.
SMALL_ROW_BYTES = 2048
DEFER_MAX_ROWS = 64  # embeddings waiting for the next checkpoint, at most


def _schema(dim: int) -> list[str]:
    return [
        "CREATE NODE TABLE IF NOT EXISTS Meta(key STRING PRIMARY KEY, value STRING)",
        "CREATE NODE TABLE IF NOT EXISTS Memory(id INT64 PRIMARY KEY, content STRING, "
        "content_hash STRING, category STRING, tags STRING[], importance INT64, "
        "access_count INT64, workspace STRING, created_at TIMESTAMP, updated_at TIMESTAMP, "
        f"accessed_at TIMESTAMP, embedding FLOAT[{dim}], embedding_model STRING, "
        "origin_via STRING, origin_client STRING, origin_session STRING, code STRING, "
        "scope STRING, global_id STRING)",
        "CREATE NODE TABLE IF NOT EXISTS Topic(name STRING PRIMARY KEY)",
        "CREATE REL TABLE IF NOT EXISTS ABOUT(FROM Memory TO Topic)",
        *(f"CREATE REL TABLE IF NOT EXISTS {rel}(FROM Memory TO Memory, created_at TIMESTAMP)"
          for rel in RELATION_TYPES),
        # An agent's verdict that two memories both hold: not a relation between them, so
        # not an edge; `pair` is "low:high" so [a, b] and [b, a] are one verdict.
        "CREATE NODE TABLE IF NOT EXISTS SeparateVerdict(pair STRING PRIMARY KEY, low INT64, "
        "high INT64, created_at TIMESTAMP)",
        # Graph signal computed by memory_dream: PageRank and community per memory.
        "CREATE NODE TABLE IF NOT EXISTS GraphSignal(id INT64 PRIMARY KEY, pagerank DOUBLE, "
        "community INT64)",
    ]


class Database:
    def __init__(self, path: str, model: str, dim: int, buffer_pool_mb: int, max_db_gb: int,
                 threads: int = 2):
        self.path = path
        self.dim = dim
        self.ephemeral = path == ":memory:"
        if not self.ephemeral:
            db_files.prepare(path)  # a private folder of ours, no links (db_files.py)
        self._db = self._open(buffer_pool_mb, max_db_gb, threads)
        # which file it is, wherever its folder moves (store/registry.py's _close_same_file)
        self.inode: tuple[int, int] | None = None
        if not self.ephemeral:
            info = os.stat(path)
            self.inode = (info.st_dev, info.st_ino)
        self._local = threading.local()
        self._prepared_generation = 0
        self._connections: list[lb.Connection] = []
        self._statement_caches: list[dict[str, PreparedStatement]] = []  # every thread's
        self._connections_lock = threading.Lock()
        # Embeddings of committed rows that the next checkpointed transaction writes, by id;
        # and those of the transaction in progress when it defers (write lock held for both).
        self._pending: dict[int, np.ndarray] = {}
        self._staged: dict[int, tuple[Memory, np.ndarray]] | None = None
        # The journal of deferred rows is attached once its rows are recovered: the schema's
        # transaction checkpoints first, and a checkpoint empties the attached journal.
        self._journal: RowJournal | None = None
        self._ensure_schema(model, dim)
        self._recover_deferred_rows(None if self.ephemeral else RowJournal(path + ".deferred"))
        integrity.repair_tags_after_engine_change(self, ENGINE)

    def _open(self, buffer_pool_mb: int, max_db_gb: int, threads: int) -> lb.Database:
        # max_db_size is reserved as address space per open database: LadybugDB's default
        # (8 TiB) lets a process hold only 15 databases open at once.
        max_db_size = max_db_gb * 1024 ** 3
        if not self.ephemeral and wal_recovery.needs_replay(self.path):
            wal_recovery.replay(self.path, max_db_size)  # in a child: see wal_recovery.py
        return lb.Database(None if self.ephemeral else self.path,
                           buffer_pool_size=buffer_pool_mb * 1024 * 1024,
                           max_db_size=max_db_size, max_num_threads=threads)

    # -- connections ---------------------------------------------------------------------

    def connection(self) -> lb.Connection:
        """This thread's own connection (the one rows() and transaction() use)."""
        return self._conn()

    def _conn(self) -> lb.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = lb.Connection(self._db)
            self._local.conn = conn
            with self._connections_lock:
                self._connections.append(conn)
        return conn

    def rows(self, query: str, params: Params | None = None) -> list[Row]:
        with _disk_failures():
            return self._rows(query, params)

    def _rows(self, query: str, params: Params | None) -> list[Row]:
        conn = self._conn()
        if params:
            statement = self._prepared(conn, query)
            try:
                result = _single(conn.execute(statement, params))
            except Exception:
                self._local.prepared.pop(query, None)  # never keep one that failed
                raise
        else:
            result = _single(conn.execute(query))
        out: list[Row] = []
        while result.has_next():
            out.append(list(result.get_next()))
        return out

    def _prepared(self, conn: lb.Connection, query: str) -> PreparedStatement:
        """This thread's prepared statement for `query`. The engine keeps the memory of every
        statement it prepared for a call with parameters until the connection closes, so a
        long ingest grew the daemon without bound (bench/RESULTS.md#cold-open-memory).
        Preparing each of the daemon's own statements once per connection keeps it flat,
        and is faster too."""
        cache = getattr(self._local, "prepared", None)
        if cache is None or self._local.prepared_generation != self._prepared_generation:
            with self._connections_lock:
                if cache is not None:  # this thread's, prepared before a schema change
                    self._statement_caches.remove(cache)
                    for old in cache.values():
                        old.close()
                cache = self._local.prepared = {}
                self._local.prepared_generation = self._prepared_generation
                self._statement_caches.append(cache)
        statement = cache.get(query)
        if statement is None:
            if len(cache) >= PREPARED_PER_CONNECTION:
                cache.clear()
            statement = PreparedStatement(conn, query)
            if statement.is_success():
                cache[query] = statement
        return statement

    def forget_prepared(self) -> None:
        """After a schema change behind the daemon's back: prepare statements afresh."""
        self._prepared_generation += 1

    @contextmanager
    def transaction(self, checkpoint: bool = True) -> Iterator["Database"]:
        """One transaction; the caller holds the store's write lock.

        A kill -9 can leave a WAL with a torn tail, and some torn tails crash the engine
        when it replays them; then the whole WAL is set aside (wal_recovery.py). So a
        transaction is checkpointed before it is acknowledged, and a crash can only lose a
        write that was never acknowledged. A checkpoint costs more as the table grows
        (bench/RESULTS.md#write-throughput), so small new rows may defer it
        instead (`checkpoint=False` after can_defer()): they are written without their embeddings
        and journaled (row_journal.py), which brings them back if the WAL is set aside; the
        embeddings follow in the next checkpointed transaction, which first checkpoints the
        deferred rows alone. A crash in between leaves those rows without an embedding, and
        opening the store embeds them again. Writes with no embedding at all (access counts)
        also pass `checkpoint=False`."""
        with _disk_failures(), self._transaction(checkpoint):
            yield self

    @contextmanager
    def _transaction(self, checkpoint: bool) -> Iterator["Database"]:
        conn = self._conn()
        pending = self._pending if checkpoint and not self.ephemeral else {}
        if pending:
            self._checkpoint(conn)  # the deferred rows, before any big record follows
        conn.execute("BEGIN TRANSACTION")
        journal = self._journal
        self._staged = None if checkpoint or journal is None else {}
        journal_size = None
        try:
            if pending:
                self.write_embeddings(pending)
            yield self
            if self._staged and journal is not None:  # a full disk fails here, uncommitted
                journal_size = journal.append([m for m, _ in self._staged.values()])
            conn.execute("COMMIT")
        except BaseException:
            try:
                conn.execute("ROLLBACK")
            except Exception:  # the failed statement may already have aborted it
                log.debug("rollback after failure also failed", exc_info=True)
            if journal is not None and journal_size is not None:  # tidiness: an
                try:                                      # unconfirmed line is never restored
                    journal.cut(journal_size)
                except OSError:
                    log.debug("could not cut the journal of deferred rows", exc_info=True)
            raise
        finally:
            staged, self._staged = self._staged, None
        if staged and journal is not None:
            try:
                journal.committed()
            except OSError:  # unconfirmed in the journal: make the rows durable the slow way
                log.exception("%s: journal of deferred rows unwritable", self.path)
                checkpoint = True
            self._pending.update({i: v for i, (_, v) in staged.items()})
        if pending:
            self._pending = {}
        if checkpoint and not self.ephemeral:
            try:
                self._checkpoint(conn)
            except Exception:
                # The write is committed and visible; failing the call now would leave the
                # caller's indexes behind the database. The next checkpoint covers it.
                log.exception("checkpoint after commit failed on %s", self.path)

    def _checkpoint(self, conn: lb.Connection) -> None:
        conn.execute("CHECKPOINT")
        if self._journal is not None:
            self._journal.clear()  # every row is in the database file now

    def _recover_deferred_rows(self, journal: RowJournal | None) -> None:
        """Rows a deferred write committed that a torn WAL lost (row_journal.py) are written
        again, without embeddings: the store embeds such rows when it loads them. Then the
        journal is emptied (after a checkpoint holds every row) and attached."""
        if journal is None:
            return
        journaled = journal.memories()
        if journaled:
            present = {r[0] for r in self.rows("MATCH (m:Memory) WHERE m.id IN $ids RETURN m.id",
                                               {"ids": [m.id for m in journaled]})}
            lost = [m for m in journaled if m.id not in present]
            try:
                with self.transaction():  # checkpointed: rows the WAL replayed are in the file
                    for m in lost:
                        self.insert(m, None)
            except Exception:
                # A database file a crash left half checkpointed may refuse some of them (an
                # id its key index already holds): write the rest one by one, so that the
                # database still opens.
                log.exception("%s: writing the journaled rows again failed; trying one by one",
                              self.path)
                lost = [m for m in lost if self._write_again(m)]
            if lost:
                log.warning("%s: wrote again %d acknowledged memories the WAL lost", self.path,
                            len(lost))
        journal.clear()
        self._journal = journal

    def _write_again(self, m: Memory) -> bool:
        try:
            with self.transaction():
                self.insert(m, None)
            return True
        except Exception:
            log.exception("%s: could not write memory %d again", self.path, m.id)
            return False

    def can_defer(self, memories: list[Memory]) -> bool:
        """Whether writing these rows may leave their embeddings to the next checkpoint."""
        return self._journal is not None and len(self._pending) + len(memories) <= DEFER_MAX_ROWS \
            and all(len(m.content.encode()) + sum(len(t.encode()) for t in m.tags)
                    <= SMALL_ROW_BYTES for m in memories)

    def flush_pending(self) -> None:
        """Write the deferred embeddings now (write lock held)."""
        if self._pending:
            with self.transaction():
                pass

    def has_pending(self) -> bool:
        return bool(self._pending)

    def pending_embeddings(self) -> dict[int, np.ndarray]:
        """Embeddings of committed rows that the next checkpointed write stores."""
        return dict(self._pending)

    def write_embeddings(self, embeddings: dict[int, np.ndarray]) -> None:
        self.rows("UNWIND $rows AS r MATCH (m:Memory) WHERE m.id = r.id SET m.embedding = r.e",
                  {"rows": [{"id": i, "e": v.tolist()} for i, v in embeddings.items()]})

    def close(self) -> None:
        try:
            self.flush_pending()
        except Exception:  # the rows stay, and the next open embeds them again
            log.exception("writing deferred embeddings on close failed on %s", self.path)
        with self._connections_lock:
            # A statement still open keeps the database, and its file lock, alive after
            # close() (ladybug 0.22.0): another process could not open it.
            for cache in self._statement_caches:
                for statement in cache.values():
                    statement.close()
                cache.clear()
            self._statement_caches.clear()
            for conn in self._connections:
                try:
                    conn.close()
                except Exception:
                    log.debug("closing a connection failed", exc_info=True)
            self._connections.clear()
        self._db.close()

    # -- schema and model signature ------------------------------------------------------

    def _ensure_schema(self, model: str, dim: int) -> None:
        has_meta = any(r[1] == "Meta" for r in self.rows("CALL show_tables() RETURN *"))
        if has_meta:
            meta = dict(self.rows("MATCH (k:Meta) RETURN k.key, k.value"))
            stored_model = meta.get("embedding_model")
            if stored_model and stored_model != model:
                raise ModelMismatch(
                    f"database {self.path} was embedded with {stored_model!r} "
                    f"({meta.get('embedding_dim')} dims) but the daemon runs {model!r} "
                    f"({dim} dims); restart memnestd with MEMORY_EMBEDDING_MODEL={stored_model} "
                    "or point MEMORY_DB_PATH at another database")
        with self.transaction():
            for statement in _schema(dim):
                self.rows(statement)
            have = {r[1] for r in self.rows("CALL table_info('Memory') RETURN *")}
            for column in ADDED_COLUMNS:
                if column not in have:
                    self.rows(f"ALTER TABLE Memory ADD {column} STRING DEFAULT ''")
            for key, value in (("schema_version", SCHEMA_VERSION),
                               ("embedding_model", model), ("embedding_dim", str(dim))):
                self.set_meta(key, value)

    def meta(self, key: str) -> str | None:
        rows = self.rows("MATCH (k:Meta) WHERE k.key = $k RETURN k.value", {"k": key})
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self.rows("MERGE (k:Meta {key: $k}) SET k.value = $v", {"k": key, "v": value})

    # -- reads ---------------------------------------------------------------------------

    def load_all(self, snapshot: Snapshot | None = None
                 ) -> tuple[list[Memory], list[int], np.ndarray, int, list[Memory]]:
        """Every memory, and the ids and matrix of the stored embeddings, to rebuild the
        derived indexes; also how many embeddings were read from the database, and the
        memories with no embedding (a crash came before their deferred embeddings were
        written). Embeddings that `snapshot` still holds for the same content and model come
        from it; the others are read here, each straight into the matrix (a list of every
        row holds 384 Python floats per memory, and the process kept that memory after the
        list was gone)."""
        with _disk_failures():
            return self._load_all(snapshot)

    def _load_all(self, snapshot: Snapshot | None
                  ) -> tuple[list[Memory], list[int], np.ndarray, int, list[Memory]]:
        cols = ", ".join(f"m.{c}" for c in MEMORY_COLUMNS)
        result = _single(self._conn().execute(
            f"MATCH (m:Memory) RETURN {cols}, m.embedding IS NOT NULL"))
        memories: list[Memory] = []
        ids: list[int] = []
        cached_rows: list[int] = []
        unembedded: list[Memory] = []
        missing: dict[int, int] = {}  # memory id -> its row in the matrix
        deferred: dict[int, int] = {}
        while chunk := result.get_n(LOAD_CHUNK):  # fewer driver calls than one by one
            for row in cast(list[Row], chunk):
                m = _memory(row[:-1])
                memories.append(m)
                if not row[-1] and m.id in self._pending:
                    deferred[m.id] = len(ids)
                    cached_rows.append(-1)
                    ids.append(m.id)
                elif not row[-1]:
                    unembedded.append(m)
                else:
                    cached = None if snapshot is None else \
                        snapshot.row_for(m.id, m.content, m.embedding_model)
                    if cached is None:
                        missing[m.id] = len(ids)
                    cached_rows.append(-1 if cached is None else cached)
                    ids.append(m.id)
        matrix = np.zeros((len(ids), self.dim), dtype=np.float32)
        if snapshot is not None and len(missing) + len(deferred) < len(ids):
            take = np.asarray(cached_rows, dtype=np.int64)
            have = take >= 0
            matrix[have] = snapshot.matrix[take[have]]
        if missing:
            self._read_embeddings(missing, matrix)
        for memory_id, at in deferred.items():
            matrix[at] = self._pending[memory_id]
        return memories, ids, matrix, len(missing), unembedded

    def _read_embeddings(self, rows: dict[int, int], matrix: np.ndarray) -> None:
        """Fill `matrix` at rows[id] with each id's stored embedding: a few by id, many in
        one scan."""
        if len(rows) <= FETCH_BY_ID_MAX:
            result = _single(self._conn().execute(
                "MATCH (m:Memory) WHERE m.id IN $ids RETURN m.id, m.embedding",
                {"ids": list(rows)}))
        else:
            result = _single(self._conn().execute(
                "MATCH (m:Memory) WHERE m.embedding IS NOT NULL RETURN m.id, m.embedding"))
        while result.has_next():
            memory_id, embedding = cast(Row, result.get_next())
            row = rows.get(memory_id)
            if row is not None and embedding is not None:
                matrix[row] = embedding

    def load_edges(self) -> list[tuple[str, int, int]]:
        out: list[tuple[str, int, int]] = []
        for rel in RELATION_TYPES:
            out.extend((rel, a, b) for a, b in self.rows(
                f"MATCH (a:Memory)-[:{rel}]->(b:Memory) RETURN a.id, b.id"))
        return out

    def load_signal(self) -> dict[int, tuple[float, int]]:
        return {i: (pr, c) for i, pr, c in self.rows(
            "MATCH (g:GraphSignal) RETURN g.id, g.pagerank, g.community")}

    def census_rows(self) -> list[tuple[int, bool, str]]:
        """(id, has an embedding, its model) of every row; a deferred embedding counts."""
        return [(i, has or i in self._pending, model or "") for i, has, model in self.rows(
            "MATCH (m:Memory) RETURN m.id, m.embedding IS NOT NULL, m.embedding_model")]

    def orphan_topics(self) -> int:
        return int(self.rows("MATCH (t:Topic) WHERE NOT EXISTS { MATCH (:Memory)-[:ABOUT]->(t) } "
                             "RETURN count(t)")[0][0])

    def load_verdicts(self) -> list[tuple[int, int]]:
        return [(low, high) for low, high in self.rows(
            "MATCH (v:SeparateVerdict) RETURN v.low, v.high")]

    # -- writes (call inside transaction()) ----------------------------------------------

    def insert(self, m: Memory, embedding: np.ndarray | None) -> None:
        if embedding is not None and self._staged is not None:
            self._staged[m.id], embedding = (m, embedding), None  # see transaction()
        self.rows(
            "CREATE (m:Memory {id: $id, content: $content, content_hash: $content_hash, "
            "category: $category, tags: $tags, importance: $importance, "
            "access_count: $access_count, workspace: $workspace, created_at: $created_at, "
            "updated_at: $updated_at, accessed_at: $accessed_at, embedding: $embedding, "
            "embedding_model: $embedding_model, origin_via: $origin_via, "
            "origin_client: $origin_client, origin_session: $origin_session, code: $code, "
            "scope: $scope, global_id: $global_id})",
            {**_params(m), "embedding": None if embedding is None else embedding.tolist()})
        self.link_topics(m.id, m.tags)

    def update(self, m: Memory, embedding: np.ndarray | None, old_tags: list[str]) -> None:
        params = _params(m)
        sets = ", ".join(f"m.{c} = ${c}" for c in MEMORY_COLUMNS if c != "id")
        if embedding is not None:
            assert self._staged is None, "a new embedding for a row needs a checkpoint"
            sets += ", m.embedding = $embedding"
            params["embedding"] = embedding.tolist()
        self.rows(f"MATCH (m:Memory) WHERE m.id = $id SET {sets}", params)
        removed = [t for t in old_tags if t not in m.tags]
        if removed:
            self.rows("MATCH (m:Memory)-[a:ABOUT]->(t:Topic) WHERE m.id = $id AND t.name IN $names "
                      "DELETE a", {"id": m.id, "names": removed})
            self.reap_topics(removed)
        self.link_topics(m.id, [t for t in m.tags if t not in old_tags])

    def delete(self, ids: list[int], tags: list[str]) -> None:
        self.rows("MATCH (m:Memory) WHERE m.id IN $ids DETACH DELETE m", {"ids": ids})
        self.rows("MATCH (v:SeparateVerdict) WHERE v.low IN $ids OR v.high IN $ids DELETE v",
                  {"ids": ids})
        self.rows("MATCH (g:GraphSignal) WHERE g.id IN $ids DELETE g", {"ids": ids})
        self.reap_topics(tags)

    def save_access(self, memories: list[Memory]) -> None:
        # Many rows per statement: searches wait for the write lock meanwhile.
        for first in range(0, len(memories), ACCESS_ROWS_PER_STATEMENT):
            self.rows("UNWIND $rows AS r MATCH (m:Memory) WHERE m.id = r.id "
                      "SET m.access_count = r.count, m.accessed_at = r.at",
                      {"rows": [{"id": m.id, "count": m.access_count, "at": m.accessed_at}
                                for m in memories[first:first + ACCESS_ROWS_PER_STATEMENT]]})

    def add_edge(self, rel: str, from_id: int, to_id: int, when: datetime) -> None:
        assert rel in RELATION_TYPES
        self.rows(f"MATCH (a:Memory), (b:Memory) WHERE a.id = $a AND b.id = $b "
                  f"CREATE (a)-[:{rel} {{created_at: $at}}]->(b)",
                  {"a": from_id, "b": to_id, "at": when})

    def add_edges(self, edges: list[tuple[str, int, int]], when: datetime) -> None:
        """Many edges in one statement per relation type (an import's links)."""
        for rel in RELATION_TYPES:
            rows = [{"a": a, "b": b} for kind, a, b in edges if kind == rel]
            if rows:
                self.rows(f"UNWIND $rows AS r MATCH (a:Memory {{id: r.a}}), "
                          f"(b:Memory {{id: r.b}}) CREATE (a)-[:{rel} {{created_at: $at}}]->(b)",
                          {"rows": rows, "at": when})

    def remove_edge(self, rel: str, from_id: int, to_id: int) -> None:
        assert rel in RELATION_TYPES
        self.rows(f"MATCH (a:Memory)-[r:{rel}]->(b:Memory) WHERE a.id = $a AND b.id = $b "
                  "DELETE r", {"a": from_id, "b": to_id})

    def reap_all_topics(self) -> None:
        self.rows("MATCH (t:Topic) WHERE NOT EXISTS { MATCH (:Memory)-[:ABOUT]->(t) } DELETE t")

    def save_signal(self, ids: list[int], signal: dict[int, tuple[float, int]]) -> None:
        """Replace the graph signal of these memories (one workspace's)."""
        self.rows("MATCH (g:GraphSignal) WHERE g.id IN $ids DELETE g", {"ids": ids})
        for memory_id, (pagerank, community) in signal.items():
            self.rows("CREATE (:GraphSignal {id: $id, pagerank: $pr, community: $c})",
                      {"id": memory_id, "pr": pagerank, "c": community})

    def remove_verdict(self, low: int, high: int) -> None:
        self.rows("MATCH (v:SeparateVerdict) WHERE v.pair = $pair DELETE v",
                  {"pair": f"{low}:{high}"})

    def add_verdict(self, low: int, high: int, when: datetime) -> None:
        self.rows("CREATE (:SeparateVerdict {pair: $pair, low: $low, high: $high, "
                  "created_at: $at})",
                  {"pair": f"{low}:{high}", "low": low, "high": high, "at": when})

    def link_topics(self, memory_id: int, tags: list[str]) -> None:
        for tag in tags:
            self.rows("MERGE (t:Topic {name: $name})", {"name": tag})
            self.rows("MATCH (m:Memory), (t:Topic) WHERE m.id = $id AND t.name = $name "
                      "MERGE (m)-[:ABOUT]->(t)", {"id": memory_id, "name": tag})

    def reap_topics(self, names: list[str]) -> None:
        """Remove Topic nodes among `names` that no memory is about any more."""
        if names:
            self.rows("MATCH (t:Topic) WHERE t.name IN $names AND NOT EXISTS "
                      "{ MATCH (:Memory)-[:ABOUT]->(t) } DELETE t", {"names": list(names)})


@contextmanager
def _disk_failures() -> Iterator[None]:
    """The engine reports a write the disk refused as RuntimeError("IO exception: ...
    Error: <strerror>"): the layers above get it as a DiskFailure, its message kept."""
    try:
        yield
    except RuntimeError as exc:
        text = str(exc)
        if isinstance(exc, DiskFailure) or "IO exception" not in text:
            raise
        strerror = disk_trouble(text)
        if strerror is None:
            raise
        raise DiskFailure(strerror, text) from exc


def _single(result: lb.QueryResult | list[lb.QueryResult]) -> lb.QueryResult:
    """The result of the one statement the daemon's own queries hold."""
    assert not isinstance(result, list)
    return result


def _params(m: Memory) -> Params:
    params = {c: getattr(m, c) for c in MEMORY_COLUMNS}
    params["code"] = m.code.to_json()
    return params


UNKNOWN_TIME = datetime(1970, 1, 1)


def _memory(row: Sequence[Any]) -> Memory:
    """A Memory from a database row (MEMORY_COLUMNS, in that order). Rows written behind the
    daemon's back (raw Cypher) may lack any property: they get neutral defaults rather than
    break the catalog. Positional and without a dict: this runs once per memory on open."""
    (memory_id, content, digest, category, tags, importance, access_count, workspace,
     created_at, updated_at, accessed_at, model, via, client, session, code, scope,
     global_id) = row
    content = content or ""
    created_at = created_at or updated_at or UNKNOWN_TIME
    intern = sys.intern  # the same few workspaces, categories, models and tags recur
    # category and via as memnest writes them (a raw Cypher write may have left another)
    category = cast(Category, intern(category or "general"))
    via = cast(Via, intern(via or ""))
    return Memory(memory_id, content, digest or content_hash(content),
                  category, [intern(t) for t in tags or ()],
                  int(importance or 3), int(access_count or 0), intern(workspace or ""),
                  created_at, updated_at or created_at, accessed_at, intern(model or ""),
                  via, intern(client or ""), session or "", CodeContext.parse(code or ""),
                  "shared" if scope == "shared" else "private", global_id or "")
