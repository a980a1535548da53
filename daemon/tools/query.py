"""memory_query: Cypher passthrough behind the guard; the guard, the worker process and the
reconcile after a raw write are operations/query.py's."""
from typing import Any, TypedDict

from ..core.errors import invalid
from ..cypher import run as query_run
from ..operations.query import Answer, Ask, run_query
from .registry import ToolContext, tool

MAX_CYPHER_CHARS = 20000


class QueryArgs(TypedDict, total=False):
    cypher_query: str  # required
    params: dict[str, Any]
    read_only: bool
    max_rows: int
    full_vectors: bool


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
def memory_query(ctx: ToolContext, args: QueryArgs) -> dict[str, Any]:
    settings = ctx.settings
    max_rows = args.get("max_rows", settings.query_max_rows)
    if max_rows > settings.query_max_rows:
        raise invalid(f"max_rows: {max_rows} is over the limit of {settings.query_max_rows} "
                      "(MEMORY_QUERY_MAX_ROWS); page with SKIP and LIMIT")
    ask = Ask(args["cypher_query"], args.get("params") or {}, max_rows,
              args.get("read_only", False), args.get("full_vectors", False))
    return _answer_view(run_query(ctx, ask, ctx.confinement), max_rows)


def _answer_view(answer: Answer, max_rows: int) -> dict[str, Any]:
    out = _rows_view(answer, max_rows)
    repaired = answer.repaired
    if repaired is not None:
        out["changes"] = answer.changes
        out["memories_indexed"] = repaired.indexed
        if repaired.privacy:
            out["privacy"] = {str(k): v for k, v in repaired.privacy.items()}
        if repaired.removed:
            out["memories_removed"] = repaired.removed
        if repaired.scope_kept:
            out["scope_kept"] = {
                "ids": repaired.scope_kept,
                "note": "a query does not change a memory's scope or global id; they were "
                        "kept as they were. Share or unshare with memory_share"}
    out["elapsed_ms"] = answer.elapsed_ms
    return out


def _rows_view(answer: Answer, max_rows: int) -> dict[str, Any]:
    outputs, truncated = answer.collected["outputs"], answer.collected["truncated"]
    out: dict[str, Any] = {"kind": answer.kind}
    if len(outputs) == 1:
        out.update(outputs[0])
    else:
        out["statements"] = outputs
    out["truncated"] = truncated is not None
    if truncated == "rows":
        out["truncated_reason"] = f"more than max_rows={max_rows} rows; add LIMIT/SKIP or " \
                                  "raise max_rows"
    elif truncated == "size":
        out["truncated_reason"] = f"the result passed {query_run.MAX_RESULT_CHARS} " \
                                  "characters; return fewer columns or rows"
    return out
