"""memory_query (Cypher passthrough behind cypher_guard) and memory_schema.

Reads run under the store's read lock inside a READ ONLY transaction, so the engine itself
refuses any write the guard failed to see. Anything that may write runs under the write lock
in one transaction: the query, then (for plain writes) an audit that nothing existing was
removed or changed, then a repair pass that gives every new or changed Memory row what the
daemon's indexes need (defaults, content hash, embedding, Topic links); after the commit the
catalog and both search indexes are rebuilt from the database.
"""
import json
import logging
import math
import time
from contextlib import contextmanager
from datetime import date, datetime, time as clock_time, timedelta
from decimal import Decimal
from uuid import UUID

from .. import cypher_guard as guard
from ..database import MEMORY_COLUMNS
from ..errors import ToolError, invalid
from ..records import Memory, content_hash, normalise_tags, utcnow
from .registry import ToolContext, tool

log = logging.getLogger(__name__)

MAX_CYPHER_CHARS = 20000
# range() builds its whole list before the time limit is checked, at about 300 bytes per
# element (850 MB for UNWIND range(1, 1000000) in real_ladybug 0.15.3): larger literal
# ranges are refused before they run.
MAX_RANGE = 100_000
# Results are meant for a model to read; past this many characters the rest is cut.
MAX_RESULT_CHARS = 4_000_000
VECTOR_SUMMARY_MIN = 64   # float lists at least this long are shown as "[384 floats]"


def permission_denied(message: str) -> ToolError:
    return ToolError("permission_denied", message)


def query_error(message: str) -> ToolError:
    return ToolError("query_error", message)


def _quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _quote_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# -- turning engine values into JSON -----------------------------------------------------------

def _internal_id(value) -> str | None:
    if isinstance(value, dict) and "table" in value and "offset" in value:
        return f"{value['table']}:{value['offset']}"
    return None


def _duration(td: timedelta) -> str:
    """ISO 8601 duration, e.g. P2DT1H2M3.5S."""
    sign = "-" if td < timedelta(0) else ""
    td = abs(td)
    hours, rest = divmod(td.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    secs = f"{seconds}.{td.microseconds:06d}".rstrip("0").rstrip(".") if td.microseconds \
        else str(seconds)
    time_part = "".join(f"{v}{u}" for v, u in ((hours, "H"), (minutes, "M")) if v)
    if seconds or td.microseconds:
        time_part += f"{secs}S"
    out = sign + "P" + (f"{td.days}D" if td.days else "")
    if time_part:
        out += "T" + time_part
    return out if out.strip("-") != "P" else "PT0S"


def to_json(value, full_vectors: bool = False):
    """A JSON-safe rendering of anything real_ladybug returns."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dict):
        if "_NODES" in value and "_RELS" in value:  # a path or a recursive relationship
            return {"_nodes": [to_json(n, full_vectors) for n in value["_NODES"]],
                    "_rels": [to_json(r, full_vectors) for r in value["_RELS"]]}
        if "_LABEL" in value and _internal_id(value.get("_ID")):
            out = {"_id": _internal_id(value["_ID"]), "_label": value["_LABEL"]}
            if "_SRC" in value and "_DST" in value:
                out["_src"] = _internal_id(value["_SRC"])
                out["_dst"] = _internal_id(value["_DST"])
            for key, item in value.items():
                if key not in ("_ID", "_LABEL", "_SRC", "_DST") and item is not None:
                    out[str(key)] = to_json(item, full_vectors)
            return out
        return {str(k): to_json(v, full_vectors) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if not full_vectors and len(value) >= VECTOR_SUMMARY_MIN and \
                all(isinstance(v, float) for v in value):
            return f"[{len(value)} floats]"
        return [to_json(v, full_vectors) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (date, clock_time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return _duration(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return str(value)
        if value == value.to_integral_value():
            return int(value)
        as_float = float(value)
        return as_float if Decimal(repr(as_float)) == value else str(value)
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return to_json(value.tolist(), full_vectors)
    return str(value)


# -- running a query -------------------------------------------------------------------------

@contextmanager
def _time_limit(conn, seconds: float):
    """Connections are per thread and reused by every tool: restore the previous limit."""
    try:
        previous = int(conn.execute("CALL current_setting('timeout') RETURN *").get_next()[0])
    except Exception:
        previous = 0
    conn.set_query_timeout(max(1, int(seconds * 1000)))
    try:
        yield
    finally:
        conn.set_query_timeout(previous)


def _engine_error(exc: Exception, settings) -> ToolError:
    message = str(exc).strip()
    if len(message) > 2000:
        message = message[:2000] + "…"
    if message.startswith("Interrupted"):
        return query_error(
            f"the query ran past the time limit of {settings.query_timeout_s:g} s "
            "(MEMORY_QUERY_TIMEOUT_S) and was stopped; narrow the MATCH or add a LIMIT")
    if "write query inside a read-only transaction" in message:
        return permission_denied(
            "the engine found a write in a query that should only read, and refused it: "
            f"{message}")
    if "do not support prepare multiple statements" in message:
        return invalid("params cannot be used with several statements (`;`); send the "
                       "statements one call at a time")
    if message.startswith(("Parser exception", "Binder exception", "Catalog exception")):
        return invalid(message)
    return query_error(message)


def _execute(conn, query: str, params: dict, settings) -> list:
    with _time_limit(conn, settings.query_timeout_s):
        try:
            result = conn.execute(query, params) if params else conn.execute(query)
        except RuntimeError as exc:
            raise _engine_error(exc, settings) from None
        except (ValueError, TypeError, OverflowError) as exc:
            raise invalid(f"params could not be passed to the engine: {exc}") from None
    return result if isinstance(result, list) else [result]


def _collect(results: list, max_rows: int, full_vectors: bool) -> dict:
    """Rows of every statement, up to max_rows in all and MAX_RESULT_CHARS of JSON."""
    budget_rows, budget_chars = max_rows, MAX_RESULT_CHARS
    truncated = None
    outputs = []
    try:
        for result in results:
            names, seen = [], {}
            for c in result.get_column_names():
                seen[c] = seen.get(c, 0) + 1
                names.append(c if seen[c] == 1 else f"{c}#{seen[c]}")
            rows = []
            while result.has_next():
                if budget_rows <= 0:
                    truncated = truncated or "rows"
                    break
                row = {n: to_json(v, full_vectors) for n, v in zip(names, result.get_next())}
                size = len(json.dumps(row, ensure_ascii=False))
                if size > budget_chars:
                    truncated = "size"
                    budget_rows = 0
                    break
                budget_chars -= size
                budget_rows -= 1
                rows.append(row)
            outputs.append({"columns": names, "rows": rows, "row_count": len(rows),
                            "total_rows": result.get_num_tuples()})
    except RuntimeError as exc:
        raise query_error(f"reading the results failed: {exc}") from None
    finally:
        # Later results of a multi-statement query live inside the first one: closing the
        # first before reading the others crashes real_ladybug 0.15.3. Close last-first.
        for result in reversed(results):
            result.close()
    return {"outputs": outputs, "truncated": truncated}


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
        out["truncated_reason"] = f"the result passed {MAX_RESULT_CHARS} characters; return " \
                                  "fewer columns or rows"
    return out


# -- what a write changed --------------------------------------------------------------------

def _tables(db) -> list[tuple[str, str]]:
    return [(name, kind) for name, kind in db.rows("CALL show_tables() RETURN name, type")]


def _table_info(db, name: str) -> list[list]:
    return db.rows(f"CALL table_info({_quote_string(name)}) RETURN *")


def _count(db, name: str, kind: str) -> int | None:
    if kind == "NODE":
        return db.rows(f"MATCH (n:{_quote_name(name)}) RETURN count(n)")[0][0]
    if kind == "REL":
        return db.rows(f"MATCH ()-[r:{_quote_name(name)}]->() RETURN count(r)")[0][0]
    return None


def _census(db, fingerprint: bool) -> dict:
    """Tables, their columns and row counts; with `fingerprint`, every node row's values
    (list columns by hash) keyed by primary key, to prove a write changed nothing existing."""
    census = {"kinds": {}, "columns": {}, "counts": {}, "rows": {}}
    for name, kind in _tables(db):
        info = _table_info(db, name)
        census["kinds"][name] = kind
        census["columns"][name] = [(c[1], c[2]) for c in info]
        census["counts"][name] = _count(db, name, kind)
        if fingerprint and kind == "NODE" and info:
            pk = next((i for i, c in enumerate(info) if c[4] is True), 0)
            exprs = [f"hash(n.{_quote_name(c[1])})" if c[2].endswith("]")
                     else f"n.{_quote_name(c[1])}" for c in info]
            census["rows"][name] = {
                row[pk]: row for row in
                db.rows(f"MATCH (n:{_quote_name(name)}) RETURN {', '.join(exprs)}")}
    return census


def _losses(before: dict, after: dict) -> list[str]:
    """What a plain write destroyed or overwrote, in words; empty when nothing."""
    found = []
    for name, kind in before["kinds"].items():
        if name not in after["kinds"]:
            found.append(f"drops table {name}")
            continue
        gone = [c for c in before["columns"][name] if c not in after["columns"][name]]
        if gone:
            found.append(f"changes columns of {name} ({', '.join(c[0] for c in gone)})")
            continue
        old_rows, new_rows = before["rows"].get(name), after["rows"].get(name)
        if old_rows is not None and new_rows is not None:
            missing = [k for k in old_rows if k not in new_rows]
            changed = [k for k, row in old_rows.items() if k in new_rows and new_rows[k] != row]
            for keys, verb in ((missing, "removes"), (changed, "changes")):
                if keys:
                    shown = ", ".join(str(k) for k in keys[:5]) + (", …" if len(keys) > 5 else "")
                    found.append(f"{verb} {len(keys)} existing {name} row(s) ({shown})")
            continue
        b, a = before["counts"].get(name), after["counts"].get(name)
        if b is not None and a is not None and a < b:
            found.append(f"removes {b - a} row(s) from {name}")
    return found


def _repair(ctx: ToolContext, store) -> dict:
    """Give every Memory row what the daemon's indexes need. Inside the write transaction.

    New rows (and rows whose content changed) get a content hash and an embedding from the
    daemon's model; missing category, importance, access count, workspace (the caller's) and
    timestamps get the defaults memory_store would give; tags are normalised and linked to
    Topic nodes. Memories that disappeared lose their verdicts and orphaned topics."""
    db = store.db
    cols = ", ".join(f"m.{c}" for c in MEMORY_COLUMNS)
    rows = db.rows(f"MATCH (m:Memory) RETURN {cols}, m.embedding IS NULL")
    now = utcnow()
    pending: list[tuple[Memory, bool, list[str]]] = []
    present: set[int] = set()
    next_id = int(db.meta("next_id") or 1)
    for row in rows:
        values = dict(zip(MEMORY_COLUMNS, row[:-1]))
        no_vector = row[-1]
        memory_id = values["id"]
        present.add(memory_id)
        old = store.catalog.get(memory_id)
        content = values.get("content")
        if not isinstance(content, str) or not content.strip():
            raise invalid(f"Memory {memory_id} would have no content; every Memory node needs "
                          "a non-empty `content` (delete memories with memory_delete)")
        if old is None and memory_id < next_id:
            raise invalid(f"Memory id {memory_id} belonged to a deleted memory and ids are "
                          f"never reused; use id {max(next_id, max(store.catalog, default=0) + 1)}"
                          " or above (memory_schema shows next_memory_id)")
        fixed = dict(values)
        fixed["category"] = values["category"] or "general"
        importance = values["importance"]
        fixed["importance"] = 3 if importance is None else min(5, max(1, int(importance)))
        fixed["access_count"] = values["access_count"] or 0
        fixed["workspace"] = values["workspace"] or ctx.workspace
        fixed["tags"] = normalise_tags(values["tags"])
        fixed["created_at"] = values["created_at"] or now
        digest = content_hash(content)
        content_changed = values["content_hash"] != digest
        fixed["content_hash"] = digest
        if values["updated_at"] is None or (old is not None and content_changed
                                            and values["updated_at"] == old.updated_at):
            fixed["updated_at"] = now if old is not None else fixed["created_at"]
        embed = no_vector or content_changed or (
            old is None and values["embedding_model"] != store.model)
        if embed:
            fixed["embedding_model"] = store.model
        fixed["embedding_model"] = fixed["embedding_model"] or ""
        if embed or fixed != values or old is None:
            pending.append((Memory(**fixed), embed, list(old.tags) if old else []))
    if pending:
        texts = [m.content for m, embed, _ in pending if embed]
        vectors = iter(ctx.embedder.embed(texts)) if texts else iter(())
        for m, embed, old_tags in pending:
            db.update(m, next(vectors) if embed else None, old_tags)
    gone = [i for i in store.catalog if i not in present]
    if gone:
        db.delete(gone, sorted({t for i in gone for t in store.catalog[i].tags}))
    if present and max(present) + 1 > next_id:
        db.set_meta("next_id", str(max(present) + 1))
    return {"indexed": sorted(m.id for m, _, _ in pending), "removed": sorted(gone),
            "embedded": sum(1 for _, embed, _ in pending if embed)}


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


def _read(ctx, query, params, max_rows, full_vectors, verdict) -> dict:
    store = ctx.store
    store.flush_embeddings()  # a query may read m.embedding
    with store.reading():
        conn = store.db.connection()
        conn.execute("BEGIN TRANSACTION READ ONLY")
        try:
            collected = _collect(_execute(conn, query, params, ctx.settings), max_rows,
                                 full_vectors)
        finally:
            try:
                conn.execute("COMMIT")
            except RuntimeError:  # a failed statement has already ended the transaction
                pass
    return _shape(collected, verdict, max_rows)


def _write(ctx, query, params, max_rows, full_vectors, verdict) -> dict:
    store = ctx.store
    audit = verdict.kind == guard.WRITE
    with store.writing():
        db = store.db
        conn = db.connection()
        db.flush_pending()  # the query and the census before it see every embedding
        before = _census(db, fingerprint=audit)
        try:
            with db.transaction():
                collected = _collect(_execute(conn, query, params, ctx.settings), max_rows,
                                     full_vectors)
                if audit:
                    losses = _losses(before, _census(db, fingerprint=True))
                    if losses:
                        raise permission_denied(
                            "the query was classified as a plain write but it "
                            + "; ".join(losses) + ". It was rolled back; destructive changes "
                            "need MEMORY_ALLOW_DESTRUCTIVE=true")
                repaired = _repair(ctx, store)
                after = _census(db, fingerprint=False)
        finally:
            store.reload()
    out = _shape(collected, verdict, max_rows)
    out["changes"] = {name: (after["counts"].get(name) or 0) - (before["counts"].get(name) or 0)
                      for name in sorted(set(before["counts"]) | set(after["counts"]))
                      if (after["counts"].get(name) or 0) != (before["counts"].get(name) or 0)}
    out["memories_indexed"] = repaired["indexed"]
    if repaired["removed"]:
        out["memories_removed"] = repaired["removed"]
    return out


# -- memory_schema ---------------------------------------------------------------------------

@tool("memory_schema",
      "Describe this workspace's database: every node and relationship table with its columns "
      "and types (relationships with FROM and TO), row counts, the database's own indexes and "
      "the daemon's search indexes (vector and keyword) with their sizes. Use it before "
      "writing Cypher for memory_query.",
      {"type": "object", "properties": {}, "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_schema(ctx: ToolContext, args: dict) -> dict:
    store = ctx.store
    with store.reading():
        db = store.db
        tables = []
        for name, kind in _tables(db):
            info = _table_info(db, name)
            entry = {"name": name, "type": kind.lower(), "rows": _count(db, name, kind),
                     "columns": [{"name": c[1], "type": c[2],
                                  **({"primary_key": True} if kind == "NODE" and c[4] is True
                                     else {})} for c in info]}
            if kind == "NODE":
                entry["primary_key"] = next((c[1] for c in info if c[4] is True), None)
            elif kind == "REL":
                pairs = db.rows(f"CALL show_connection({_quote_string(name)}) RETURN *")
                entry["connections"] = [{"from": p[0], "to": p[1]} for p in pairs]
                if len(pairs) == 1:
                    entry["from"], entry["to"] = pairs[0][0], pairs[0][1]
            tables.append(entry)
        db_indexes = [{"table": r[0], "name": r[1], "type": r[2], "properties": r[3]}
                      for r in db.rows("CALL show_indexes() RETURN *")]
        memories = len(store.catalog)
        in_workspace = sum(1 for m in store.catalog.values() if m.workspace == ctx.workspace)
        next_id = max(max(store.catalog, default=0) + 1, int(db.meta("next_id") or 1))
        daemon_indexes = [
            {"name": "vector", "kind": "exact cosine similarity over a float32 matrix, in "
             "memory", "table": "Memory", "property": "embedding", "entries": len(store.vectors),
             "dimensions": store.vectors.dim, "model": store.model},
            {"name": "keyword", "kind": "BM25 (tantivy, English stemming), in memory",
             "table": "Memory", "property": "content", "entries": len(store.keywords)},
        ]
        version = db.rows("CALL db_version() RETURN *")[0][0]
    return {
        "database": store.db_path,
        "engine": f"LadybugDB {version}",
        "tables": tables,
        "indexes": {"database": db_indexes, "daemon": daemon_indexes},
        "memories_in_database": memories,
        "memories_in_workspace": in_workspace,
        "workspace": ctx.workspace,
        "next_memory_id": next_id,
        "note": "memory_query sees the whole database file; Memory rows carry a `workspace` "
                "property (this workspace's value is shown above).",
    }
