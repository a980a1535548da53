"""memory_query: Cypher passthrough behind the guard (cypher/guard.py).

A query runs in the query worker process (cypher/worker.py, cypher/run.py) with a memory
limit of its own, while the daemon holds the store's write lock with its database handle
closed: whatever the query allocates, the daemon lives on. Reads run inside a READ ONLY
transaction, so the engine itself refuses any write the guard failed to see. A query that
may write is checked there before it commits, as a tool's write would be (cypher/run.py);
then, in the daemon, store/reconcile.py gives every new or changed Memory row what the
daemon's indexes need (defaults, content hash, embedding, Topic links), and the catalog and
every index are rebuilt from the database.
"""
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..core.errors import ToolError, invalid
from ..curation import admission
from ..cypher import guard
from ..cypher import run as query_run
from ..cypher.worker import QueryWorker
from ..store.reconcile import reconcile
from .registry import ToolContext, tool

log = logging.getLogger(__name__)

MAX_CYPHER_CHARS = 20000
# range() builds its whole list before the time limit is checked: a literal range larger
# than this is refused before it runs (the worker's memory limit stops computed ones).
MAX_RANGE = 100_000
_WORKER = QueryWorker()


def permission_denied(message: str) -> ToolError:
    return ToolError("permission_denied", message)


def query_error(message: str) -> ToolError:
    return ToolError("query_error", message)


def _shape(collected: dict, verdict: guard.Verdict, max_rows: int) -> dict:
    outputs = collected["outputs"]
    out: dict = {"kind": verdict.kind}
    if len(outputs) == 1:
        out.update(outputs[0])
    else:
        out["statements"] = outputs
    out["truncated"] = collected["truncated"] is not None
    if collected["truncated"] == "rows":
        out["truncated_reason"] = f"more than max_rows={max_rows} rows; add LIMIT/SKIP or " \
                                  "raise max_rows"
    elif collected["truncated"] == "size":
        out["truncated_reason"] = f"the result passed {query_run.MAX_RESULT_CHARS} " \
                                  "characters; return fewer columns or rows"
    return out


# -- memory_query ----------------------------------------------------------------------------

@tool("memory_query",
      "Run a Cypher query (LadybugDB / Kuzu dialect) against this workspace's database "
      "file and get JSON rows. Tables: Memory(id, content, category, tags, importance, "
      "workspace, created_at, ...), Topic(name), ABOUT (Memory->Topic), RELATED_TO / "
      "SUPERSEDES / EXPLAINS (Memory->Memory); memory_schema lists them all. The query sees "
      "the whole file: when several workspaces share it, Memory rows of every one are there "
      "and carry a `workspace` property to filter on. Reads always run. CREATE and MERGE "
      "run unless `read_only` is true; a Memory created here needs `id` (memory_schema's "
      "next_memory_id) and `content`, and the daemon fills in the rest and indexes it. DELETE, "
      "DETACH, DROP, SET, REMOVE, COPY, ALTER, LOAD FROM and unknown CALLs are refused unless "
      "the daemon runs with MEMORY_ALLOW_DESTRUCTIVE=true (prefer memory_update, "
      "memory_delete and memory_unrelate); transaction control, ATTACH/USE and extensions "
      "are always refused. Rows are capped (max_rows, MEMORY_QUERY_MAX_ROWS) and the query "
      "is stopped after MEMORY_QUERY_TIMEOUT_S seconds. Embeddings show as \"[384 floats]\" "
      "unless full_vectors is true.",
      {"type": "object",
       "properties": {
           "cypher_query": {"type": "string", "minLength": 1, "maxLength": MAX_CYPHER_CHARS,
                            "description": "The Cypher text; several statements may be "
                                           "separated by `;` (then without params)."},
           "params": {"type": "object",
                      "description": "Values for $parameters in the query."},
           "read_only": {"type": "boolean",
                         "description": "Refuse anything that could change the database."},
           "max_rows": {"type": "integer", "minimum": 1, "maximum": 100000,
                        "description": "Most rows to return (default and ceiling "
                                       "MEMORY_QUERY_MAX_ROWS, 1000)."},
           "full_vectors": {"type": "boolean",
                            "description": "Return embeddings in full instead of a summary."},
       },
       "required": ["cypher_query"], "additionalProperties": False},
      destructive=True)
def memory_query(ctx: ToolContext, args: dict) -> dict:
    query = args["cypher_query"]
    params = args.get("params") or {}
    settings = ctx.settings
    max_rows = args.get("max_rows", settings.query_max_rows)
    if max_rows > settings.query_max_rows:
        raise invalid(f"max_rows: {max_rows} is over the limit of {settings.query_max_rows} "
                      "(MEMORY_QUERY_MAX_ROWS); page with SKIP and LIMIT")
    full_vectors = args.get("full_vectors", False)
    try:
        verdict = guard.classify(query)
    except guard.GuardError as exc:
        raise invalid(f"cypher_query cannot be read: {exc}") from None
    if verdict.statements == 0:
        raise invalid("cypher_query holds no statement (only comments or whitespace)")
    why = "; ".join(verdict.reasons)
    if verdict.kind == guard.FORBIDDEN:
        raise permission_denied(f"memory_query never runs this: {why}")
    if args.get("read_only") and verdict.kind != guard.READ:
        raise permission_denied(f"read_only is set and this query may change the database: "
                                f"{why}")
    if verdict.kind == guard.DESTRUCTIVE and not settings.allow_destructive:
        raise permission_denied(
            f"destructive query refused: {why}. memory_query runs destructive statements only "
            "when the daemon is started with MEMORY_ALLOW_DESTRUCTIVE=true; to change or remove "
            "memories use memory_update, memory_delete or memory_unrelate")
    for args_ in verdict.ranges:
        size = guard.range_size(args_, params)
        if size is not None and size > MAX_RANGE:
            raise invalid(f"range() of {size} elements is over the limit of {MAX_RANGE}: the "
                          "engine builds the whole list in memory before the time limit can "
                          "stop it")
    started = time.monotonic()
    if verdict.kind == guard.READ:
        out = _read(ctx, query, params, max_rows, full_vectors, verdict)
    else:
        out = _write(ctx, query, params, max_rows, full_vectors, verdict)
    out["elapsed_ms"] = round((time.monotonic() - started) * 1000, 1)
    return out


def _job(ctx: ToolContext, store, query: str, params: dict, max_rows: int,
         full_vectors: bool, verdict: guard.Verdict) -> dict:
    settings = ctx.settings
    size = 0 if store.db.ephemeral else os.path.getsize(store.db_path)
    return {"db_path": store.db_path, "query": query, "params": params,
            "read": verdict.kind == guard.READ, "audit": verdict.kind == guard.WRITE,
            "max_rows": max_rows, "full_vectors": full_vectors,
            "timeout_s": settings.query_timeout_s, "threads": settings.db_threads,
            "buffer_pool_bytes": settings.buffer_pool_mb << 20,
            # the address space the engine reserves: room for the file to grow, no more
            "max_db_bytes": max(2 << 30, 2 * size + (1 << 30)),
            "memory_bytes": settings.query_memory_mb << 20,
            "limits": {"next_id": store.next_id(), "max_batch": settings.max_batch,
                       "max_store_chars": settings.max_store_chars}}


def _run(ctx: ToolContext, store, job: dict) -> dict:
    """The job's reply, in the worker process (an ephemeral database, which no other process
    can open, runs here). Write lock held."""
    if store.db.ephemeral:
        return _run_here(store, job)
    with store.database_closed():
        return _WORKER.run(job)


def _run_here(store, job: dict) -> dict:
    store.db.flush_pending()
    try:
        return query_run._run(store.db.connection(), job)
    except query_run.JobError as exc:
        raise ToolError(exc.code, exc.message) from None


@contextmanager
def _reach_checked(ctx: ToolContext, store) -> Iterator[None]:
    """The query sees the whole file: a remote caller runs one only when every workspace
    with memories in it is one it may use. Entered with the lock held, before any write."""
    confined = ctx.confinement
    if confined is not None and confined.hides_any(
            w for w, n in store.per_workspace.items() if n > 0):
        raise permission_denied(
            f"memory_query sees the whole database file, and this one also holds memories "
            f"of workspaces tls client {confined.identity!r} may not use; use memory_search, "
            "memory_list and memory_get, which stay in this workspace")
    yield


def _read(ctx, query, params, max_rows, full_vectors, verdict) -> dict:
    store = ctx.store
    # the database is closed while the worker holds it
    with store.writing(), _reach_checked(ctx, store):
        reply = _run(ctx, store, _job(ctx, store, query, params, max_rows, full_vectors,
                                      verdict))
    return _shape(reply["collected"], verdict, max_rows)


def _write(ctx, query, params, max_rows, full_vectors, verdict) -> dict:
    store = ctx.store
    with store.writing(), _reach_checked(ctx, store), store.rebuilt_afterwards():
        reply = _run(ctx, store, _job(ctx, store, query, params, max_rows, full_vectors,
                                      verdict))
        repaired = reconcile(store, ctx.embedder.embed, ctx.workspace, admission.raw,
                             ctx.origin)
        after = {name: query_run.count_rows(store.db, name, kind)
                 for name, kind in query_run.tables(store.db)}
    before = reply["counts"]["before"]
    out = _shape(reply["collected"], verdict, max_rows)
    out["changes"] = {name: (after.get(name) or 0) - (before.get(name) or 0)
                      for name in sorted(set(before) | set(after))
                      if (after.get(name) or 0) != (before.get(name) or 0)}
    out["memories_indexed"] = repaired["indexed"]
    if repaired["privacy"]:
        out["privacy"] = {str(k): v for k, v in repaired["privacy"].items()}
    if repaired["removed"]:
        out["memories_removed"] = repaired["removed"]
    if repaired["scope_kept"]:
        out["scope_kept"] = {
            "ids": repaired["scope_kept"],
            "note": "a query does not change a memory's scope or global id; they were kept "
                    "as they were. Share or unshare with memory_share"}
    return out
