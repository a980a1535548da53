"""Running one memory_query against a database file, in the query worker process.

Cypher can make the engine allocate without bound in ways no reading of the text can rule
out (a list doubled in twenty WITH clauses, repeat() of a computed string): a query run in
the daemon could have it killed for memory. So a query runs here, in a process of its own
whose address space is limited per job (RLIMIT_AS): an allocation past the limit fails, and
the engine reports it as an error (`std::bad_alloc`), or at worst this process dies; the
daemon lives on, and nothing is committed. query_worker.py runs this process and feeds it
jobs; the daemon closes the database while a job holds it.

A job that may write is checked before it commits, as a tool's write would be: it writes only
memnest's own tables, never Meta or GraphSignal (the daemon's bookkeeping and what ranking
reads), new Memory ids follow the ids in use (dense structures are sized by the largest id),
at most `max_batch` memories change, each content within `max_store_chars`, and a plain write
removes or changes nothing that existed. Otherwise it is rolled back.

Protocol: one JSON job per line on stdin, one JSON reply per line on stdout.
"""
import json
import math
import os
import resource
import sys
from datetime import date, datetime, timedelta
from datetime import time as clock_time
from decimal import Decimal
from uuid import UUID

VECTOR_SUMMARY_MIN = 64  # float lists at least this long are shown as "[384 floats]"
MAX_RESULT_CHARS = 4_000_000  # results are meant for a model to read; past this, cut
WRITABLE = frozenset(("Memory", "Topic", "ABOUT", "RELATED_TO", "SUPERSEDES", "EXPLAINS",
                      "SeparateVerdict"))
MAX_NEW_ROWS = 10_000  # rows a query may add across every table
MAX_ACCESS_COUNT = 1_000_000  # the daemon clamps what a query writes (ranking reads it)


class JobError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# -- engine values as JSON -------------------------------------------------------------------

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
    """A JSON-safe rendering of anything the engine returns."""
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
    if isinstance(value, (datetime, date, clock_time)):
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


# -- running ---------------------------------------------------------------------------------

def engine_error(exc: Exception, timeout_s: float) -> JobError:
    message = str(exc).strip()
    if len(message) > 2000:
        message = message[:2000] + "…"
    if message.startswith("Interrupted"):
        return JobError("query_error",
                        f"the query ran past the time limit of {timeout_s:g} s "
                        "(MEMORY_QUERY_TIMEOUT_S) and was stopped; narrow the MATCH or add a "
                        "LIMIT")
    if "bad_alloc" in message or "buffer pool is full" in message or \
            "Unable to allocate memory" in message:
        return JobError("query_error",
                        "the query needed more memory than memory_query allows "
                        "(MEMNEST_QUERY_MEMORY_MB) and was stopped; nothing was changed. "
                        "Return fewer or smaller values")
    if "write query inside a read-only transaction" in message:
        return JobError("permission_denied",
                        "the engine found a write in a query that should only read, and "
                        f"refused it: {message}")
    if "do not support prepare multiple statements" in message:
        return JobError("invalid_argument",
                        "params cannot be used with several statements (`;`); send the "
                        "statements one call at a time")
    if message.startswith(("Parser exception", "Binder exception", "Catalog exception")):
        return JobError("invalid_argument", message)
    return JobError("query_error", message)


def execute(conn, query: str, params: dict, timeout_s: float) -> list:
    conn.set_query_timeout(max(1, int(timeout_s * 1000)))
    try:
        result = conn.execute(query, params) if params else conn.execute(query)
    except (RuntimeError, MemoryError) as exc:
        raise engine_error(exc, timeout_s) from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise JobError("invalid_argument",
                       f"params could not be passed to the engine: {exc}") from None
    return result if isinstance(result, list) else [result]


def collect(results: list, max_rows: int, full_vectors: bool, timeout_s: float) -> dict:
    """Rows of every statement, up to max_rows in all and MAX_RESULT_CHARS of JSON."""
    budget_rows, budget_chars = max_rows, MAX_RESULT_CHARS
    truncated = None
    outputs = []
    try:
        for result in results:
            names: list[str] = []
            seen: dict[str, int] = {}
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
    except (RuntimeError, MemoryError) as exc:
        error = engine_error(exc, timeout_s)
        raise JobError(error.code, f"reading the results failed: {error.message}") from None
    finally:
        # Later results of a multi-statement query live inside the first one: close them
        # last-first.
        for result in reversed(results):
            result.close()
    return {"outputs": outputs, "truncated": truncated}


# -- what a write changed --------------------------------------------------------------------

def tables(db) -> list[tuple[str, str]]:
    return [(name, kind) for name, kind in db.rows("CALL show_tables() RETURN name, type")]


def table_info(db, name: str) -> list[list]:
    return db.rows(f"CALL table_info({quote_string(name)}) RETURN *")


def count_rows(db, name: str, kind: str) -> int | None:
    if kind == "NODE":
        return db.rows(f"MATCH (n:{quote_name(name)}) RETURN count(n)")[0][0]
    if kind == "REL":
        return db.rows(f"MATCH ()-[r:{quote_name(name)}]->() RETURN count(r)")[0][0]
    return None


def census(db, fingerprint: bool) -> dict:
    """Tables, their columns and row counts; with `fingerprint`, every node row's values
    (list columns by hash) keyed by primary key, to prove a write changed nothing existing."""
    found: dict[str, dict] = {"kinds": {}, "columns": {}, "counts": {}, "rows": {}}
    for name, kind in tables(db):
        info = table_info(db, name)
        found["kinds"][name] = kind
        found["columns"][name] = [(c[1], c[2]) for c in info]
        found["counts"][name] = count_rows(db, name, kind)
        if fingerprint and kind == "NODE" and info:
            pk = next((i for i, c in enumerate(info) if c[4] is True), 0)
            exprs = [f"hash(n.{quote_name(c[1])})" if c[2].endswith("]")
                     else f"n.{quote_name(c[1])}" for c in info]
            found["rows"][name] = {
                row[pk]: row for row in
                db.rows(f"MATCH (n:{quote_name(name)}) RETURN {', '.join(exprs)}")}
    return found


def losses(before: dict, after: dict) -> list[str]:
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


def _differs(before: dict, after: dict, name: str) -> bool:
    return before["counts"].get(name) != after["counts"].get(name) or \
        before["rows"].get(name) != after["rows"].get(name)


def check_write(db, before: dict, after: dict, limits: dict) -> None:
    """What a tool's write would not be allowed, found in the database as the query left
    it (inside its transaction). Raises JobError."""
    if set(after["kinds"]) != set(before["kinds"]) or after["columns"] != before["columns"]:
        raise JobError("permission_denied", "memory_query never changes the schema")
    touched = [name for name in after["kinds"] if name not in WRITABLE
               and _differs(before, after, name)]
    if touched:
        raise JobError("permission_denied",
                       f"memory_query may not write {', '.join(sorted(touched))}: the daemon "
                       "keeps them (GraphSignal is what search ranking reads; memory_dream "
                       "computes it)")
    added = sum(max(0, (after["counts"].get(n) or 0) - (before["counts"].get(n) or 0))
                for n in after["kinds"])
    if added > MAX_NEW_ROWS:
        raise JobError("invalid_argument", f"the query adds {added} rows, over the limit of "
                                           f"{MAX_NEW_ROWS} for one memory_query")
    _check_memories(db, before["rows"]["Memory"], after["rows"]["Memory"], limits)


def _check_memories(db, before: dict, after: dict, limits: dict) -> None:
    """`before`, `after`: census fingerprints of the Memory table, by id."""
    next_id = max(int(limits["next_id"]), max(before, default=0) + 1)
    new = [i for i in after if i not in before]
    written = new + [i for i in after if i in before and after[i] != before[i]]
    if len(written) > limits["max_batch"]:
        raise JobError("invalid_argument",
                       f"the query writes {len(written)} memories, over the limit of "
                       f"{limits['max_batch']} (MEMORY_MAX_BATCH); write them in several "
                       "queries")
    ceiling = next_id + limits["max_batch"]
    for memory_id in new:
        if memory_id is None or not next_id <= memory_id < ceiling:
            hint = "ids are never reused" if memory_id is not None and memory_id < next_id \
                else "ids follow the ids in use"
            raise JobError("invalid_argument",
                           f"Memory id {memory_id} is outside {next_id}..{ceiling - 1}: "
                           f"{hint}; use memory_schema's next_memory_id ({next_id}) and the "
                           "ids after it")
    rows = {r[0]: r for r in db.rows(
        "MATCH (m:Memory) WHERE m.id IN $ids RETURN m.id, m.content, m.tags",
        {"ids": written})} if written else {}
    for memory_id in written:  # importance and access counts are clamped by the daemon
        _, content, tags = rows[memory_id]
        if not isinstance(content, str) or not content.strip():
            raise JobError("invalid_argument",
                           f"Memory {memory_id} would have no content; every Memory node "
                           "needs a non-empty `content` (delete memories with memory_delete)")
        if len(content) > limits["max_store_chars"]:
            raise JobError("invalid_argument",
                           f"Memory {memory_id}: content of {len(content)} characters, over "
                           f"the limit of {limits['max_store_chars']} "
                           "(MEMORY_MAX_STORE_CHARS)")
        if tags is not None and (len(tags) > 50 or any(
                not isinstance(t, str) or len(t) > 100 for t in tags)):
            raise JobError("invalid_argument",
                           f"Memory {memory_id}: at most 50 tags of at most 100 characters")


# -- the job ---------------------------------------------------------------------------------

class _Rows:
    """The few calls census() and friends need, on a plain connection."""

    def __init__(self, conn):
        self.conn = conn

    def rows(self, query: str, params: dict | None = None) -> list[list]:
        result = self.conn.execute(query, params or {})
        out = []
        while result.has_next():
            out.append(result.get_next())
        result.close()
        return out


def run(job: dict) -> dict:
    import ladybug

    _limit_memory(job)
    db = ladybug.Database(job["db_path"], buffer_pool_size=job["buffer_pool_bytes"],
                          max_db_size=job["max_db_bytes"], max_num_threads=job["threads"])
    conn = ladybug.Connection(db)
    try:
        return _run(conn, job)
    finally:
        conn.close()
        db.close()


def _run(conn, job: dict) -> dict:
    rows = _Rows(conn)
    timeout_s = job["timeout_s"]
    if job["read"]:
        conn.execute("BEGIN TRANSACTION READ ONLY")
        try:
            collected = collect(execute(conn, job["query"], job["params"], timeout_s),
                                job["max_rows"], job["full_vectors"], timeout_s)
        finally:
            _end(conn, "COMMIT")
        return {"collected": collected}
    before = census(rows, fingerprint=True)
    conn.execute("BEGIN TRANSACTION")
    try:
        collected = collect(execute(conn, job["query"], job["params"], timeout_s),
                            job["max_rows"], job["full_vectors"], timeout_s)
        after = census(rows, fingerprint=True)
        if job["audit"]:
            lost = losses(before, after)
            if lost:
                raise JobError("permission_denied",
                               "the query was classified as a plain write but it "
                               + "; ".join(lost) + ". It was rolled back; destructive changes "
                               "need MEMORY_ALLOW_DESTRUCTIVE=true")
        check_write(rows, before, after, job["limits"])
    except BaseException:
        _end(conn, "ROLLBACK")
        raise
    conn.execute("COMMIT")
    conn.execute("CHECKPOINT")
    return {"collected": collected, "counts": {"before": before["counts"]}}


def _end(conn, statement: str) -> None:
    try:
        conn.execute(statement)
    except RuntimeError:  # a failed statement has already ended the transaction
        pass


def _limit_memory(job: dict) -> None:
    """Address space for this job: what the process uses now, the database's reserved
    address space, and the query's budget."""
    try:
        with open("/proc/self/statm") as f:
            in_use = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # no /proc (macOS, where RLIMIT_AS is not enforced anyway)
        return
    limit = in_use + job["max_db_bytes"] + job["buffer_pool_bytes"] + job["memory_bytes"]
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def main() -> None:
    """The worker's loop: a job per line in, a reply per line out."""
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but replies on the pipe
    for line in sys.stdin:
        try:
            reply = {"ok": run(json.loads(line))}
        except JobError as exc:
            reply = {"error": {"code": exc.code, "message": exc.message}}
        except MemoryError:
            reply = {"error": {"code": "query_error", "message": (
                "the query needed more memory than memory_query allows "
                "(MEMNEST_QUERY_MEMORY_MB) and was stopped; nothing was changed")}}
        except Exception as exc:  # the engine failed opening or closing: say so
            reply = {"error": {"code": "storage_error", "message": str(exc)[:2000]}}
        try:
            data = json.dumps(reply, ensure_ascii=False)
        except MemoryError:
            data = json.dumps({"error": {"code": "query_error", "message": (
                "the result needed more memory than memory_query allows")}})
        out.write(data + "\n")
        out.flush()


if __name__ == "__main__":
    main()
