"""Query: a Cypher text run against the workspace's database file behind the guard
(cypher/guard.py), for memory_query.

A query runs in the query worker process (cypher/worker.py, cypher/run.py) with a memory
limit of its own, while the daemon holds the store's write lock with its database handle
closed: whatever the query allocates, the daemon lives on. Reads run inside a READ ONLY
transaction, so the engine itself refuses any write the guard failed to see. A query that
may write is checked there before it commits, as a tool's write would be (cypher/run.py);
then store/reconcile.py gives every new or changed Memory row what the daemon's indexes
need (defaults, content hash, embedding, Topic links), and the catalog and every index are
rebuilt from the database.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.errors import ToolError, invalid
from ..curation import admission
from ..cypher import guard
from ..cypher import run as query_run
from ..cypher.worker import QueryWorker
from ..store.reconcile import reconcile
from ..store.store import MemoryStore
from .context import CallContext, Reach

# range() builds its whole list before the time limit is checked: a literal range larger
# than this is refused before it runs (the worker's memory limit stops computed ones).
MAX_RANGE = 100_000
# `unused-ignore`: the line stays right once cypher/worker.py is typed
_WORKER = QueryWorker()  # type: ignore[no-untyped-call, unused-ignore]

Job = dict[str, Any]  # what cypher/run.py's run() reads
Reply = dict[str, Any]  # what it answers: `collected` rows and, for a write, `counts`


class QueryReach(Reach, Protocol):
    """A remote caller (tools' Confinement), named in the refusal."""

    @property
    def identity(self) -> str: ...


@dataclass(frozen=True)
class Ask:
    """One memory_query call: the Cypher text and how to run it."""
    query: str
    params: dict[str, Any]
    max_rows: int
    read_only: bool = False
    full_vectors: bool = False


@dataclass(frozen=True)
class Repaired:
    """What reconciling a raw write did to the Memory rows (store/reconcile.py)."""
    indexed: list[int]  # rows brought up to what the indexes need
    privacy: dict[int, str]  # memory id -> what the cleaner took out
    removed: list[int]
    scope_kept: list[int]


@dataclass(frozen=True)
class Answer:
    kind: str  # the guard's verdict: read, write or destructive
    collected: dict[str, Any]  # the worker's rows: `outputs` and `truncated` (None, rows, size)
    elapsed_ms: float
    changes: dict[str, int] = field(default_factory=dict)  # rows added (or gone) per table
    repaired: Repaired | None = None  # set for a query that may write


def permission_denied(message: str) -> ToolError:
    return ToolError("permission_denied", message)


def run_query(ctx: CallContext, ask: Ask, reach: QueryReach | None = None) -> Answer:
    """Classify `ask`, refuse what the guard or the settings forbid, and run it."""
    verdict = checked(ask, ctx.settings.allow_destructive)
    started = time.monotonic()
    if verdict.kind == guard.READ:
        collected = _read(ctx, ask, verdict, reach)
        return Answer(verdict.kind, collected, _ms_since(started))
    collected, changes, repaired = _write(ctx, ask, verdict, reach)
    return Answer(verdict.kind, collected, _ms_since(started), changes, repaired)


def _ms_since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)


def checked(ask: Ask, allow_destructive: bool) -> guard.Verdict:
    """The guard's verdict on `ask`, or the error saying why it may not run."""
    try:
        verdict = guard.classify(ask.query)
    except guard.GuardError as exc:
        raise invalid(f"cypher_query cannot be read: {exc}") from None
    if verdict.statements == 0:
        raise invalid("cypher_query holds no statement (only comments or whitespace)")
    why = "; ".join(verdict.reasons)
    if verdict.kind == guard.FORBIDDEN:
        raise permission_denied(f"memory_query never runs this: {why}")
    if ask.read_only and verdict.kind != guard.READ:
        raise permission_denied(f"read_only is set and this query may change the database: "
                                f"{why}")
    if verdict.kind == guard.DESTRUCTIVE and not allow_destructive:
        raise permission_denied(
            f"destructive query refused: {why}. memory_query runs destructive statements only "
            "when the daemon is started with MEMORY_ALLOW_DESTRUCTIVE=true; to change or remove "
            "memories use memory_update, memory_delete or memory_unrelate")
    for range_args in verdict.ranges:
        size = guard.range_size(range_args, ask.params)
        if size is not None and size > MAX_RANGE:
            raise invalid(f"range() of {size} elements is over the limit of {MAX_RANGE}: the "
                          "engine builds the whole list in memory before the time limit can "
                          "stop it")
    return verdict


def _job(ctx: CallContext, ask: Ask, verdict: guard.Verdict) -> Job:
    settings, store = ctx.settings, ctx.store
    size = 0 if store.ephemeral else os.path.getsize(store.db_path)
    return {"db_path": store.db_path, "query": ask.query, "params": ask.params,
            "read": verdict.kind == guard.READ, "audit": verdict.kind == guard.WRITE,
            "max_rows": ask.max_rows, "full_vectors": ask.full_vectors,
            "timeout_s": settings.query_timeout_s, "threads": settings.db_threads,
            "buffer_pool_bytes": settings.buffer_pool_mb << 20,
            # the address space the engine reserves: room for the file to grow, no more
            "max_db_bytes": max(2 << 30, 2 * size + (1 << 30)),
            "memory_bytes": settings.query_memory_mb << 20,
            "limits": {"next_id": store.next_id(), "max_batch": settings.max_batch,
                       "max_store_chars": settings.max_store_chars}}


def _run(store: MemoryStore, job: Job) -> Reply:
    """The job's reply, in the worker process (an ephemeral database, which no other process
    can open, runs here). Write lock held."""
    if store.ephemeral:
        return _run_here(store, job)
    with store.database_closed():
        reply: Reply = _WORKER.run(job)
    return reply


def _run_here(store: MemoryStore, job: Job) -> Reply:
    store.db.flush_pending()
    try:
        reply: Reply = query_run._run(store.db.connection(), job)
    except query_run.JobError as exc:
        raise ToolError(exc.code, exc.message) from None
    return reply


@contextmanager
def _reach_checked(store: MemoryStore, reach: QueryReach | None) -> Iterator[None]:
    """The query sees the whole file: a remote caller runs one only when every workspace
    with memories in it is one it may use. Entered with the lock held, before any write."""
    if reach is not None and reach.hides_any(
            w for w, n in store.per_workspace.items() if n > 0):
        raise permission_denied(
            f"memory_query sees the whole database file, and this one also holds memories "
            f"of workspaces tls client {reach.identity!r} may not use; use memory_search, "
            "memory_list and memory_get, which stay in this workspace")
    yield


def _read(ctx: CallContext, ask: Ask, verdict: guard.Verdict,
          reach: QueryReach | None) -> dict[str, Any]:
    store = ctx.store
    # the database is closed while the worker holds it
    with store.writing(), _reach_checked(store, reach):
        reply = _run(store, _job(ctx, ask, verdict))
    collected: dict[str, Any] = reply["collected"]
    return collected


def _write(ctx: CallContext, ask: Ask, verdict: guard.Verdict, reach: QueryReach | None
           ) -> tuple[dict[str, Any], dict[str, int], Repaired]:
    store = ctx.store
    with store.writing(), _reach_checked(store, reach), store.rebuilt_afterwards():
        reply = _run(store, _job(ctx, ask, verdict))
        repaired = reconciled(ctx)
        after = {name: query_run.count_rows(store.db, name, kind)
                 for name, kind in query_run.tables(store.db)}
    return reply["collected"], table_changes(reply["counts"]["before"], after), repaired


def reconciled(ctx: CallContext) -> Repaired:
    """Reconcile the Memory rows a raw write left (store/reconcile.py). Write lock held."""
    done = reconcile(ctx.store, ctx.embedder.embed, ctx.workspace, admission.raw, ctx.origin)
    return Repaired(list(done["indexed"]), dict(done["privacy"]), list(done["removed"]),
                    list(done["scope_kept"]))


def table_changes(before: Mapping[str, int | None], after: Mapping[str, int | None]
                  ) -> dict[str, int]:
    """Rows each table gained (or lost, negative), for the tables whose count changed."""
    return {name: (after.get(name) or 0) - (before.get(name) or 0)
            for name in sorted(set(before) | set(after))
            if (after.get(name) or 0) != (before.get(name) or 0)}
