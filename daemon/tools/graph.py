"""Graph tools: relations between memories, keep-separate verdicts, topics."""
from itertools import combinations
from typing import Any

from ..core.errors import invalid, not_found
from ..storage.database import RELATION_TYPES
from ..store.changes import Changes
from ..store.graph import pair
from .common import ID, IDS, MAX_SAFE_INT, visible
from .registry import ToolContext, tool

MAX_RELATIONS = 500

_RELATION: dict[str, Any] = {"type": "string", "enum": list(RELATION_TYPES)}
_EDGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "from_id": ID, "to_id": ID,
        "relationship": {**_RELATION,
                         "description": "RELATED_TO (default), SUPERSEDES (from replaces to) "
                                        "or EXPLAINS (from explains to)."},
    },
    "required": ["from_id", "to_id"], "additionalProperties": False,
}


def _edges_from_args(args: dict, many: str) -> tuple[list[dict], bool]:
    single = any(k in args for k in ("from_id", "to_id", "relationship"))
    if single == (many in args):
        raise invalid(f"give from_id and to_id (and relationship), or `{many}`; not both")
    if many in args:
        return list(args[many]), True
    if "from_id" not in args or "to_id" not in args:
        raise invalid("give both from_id and to_id")
    return [args], False


def _check_endpoints(ctx: ToolContext, store, edge: dict) -> str | None:
    """Why this edge cannot be made, or None."""
    a, b = edge["from_id"], edge["to_id"]
    if a == b:
        return f"memory {a} cannot be related to itself"
    missing = [i for i in (a, b) if not visible(ctx, store.catalog.get(i))]
    if missing:
        return "no memory with id " + " or ".join(map(str, missing)) + " in this workspace"
    return None


@tool("memory_relate",
      "Link two memories: RELATED_TO, SUPERSEDES (from_id replaces to_id: the old one is "
      "demoted in search) or EXPLAINS. One link with from_id/to_id/relationship, or several "
      "with `relations`. Linking what is already linked changes nothing (status `exists`).",
      {"type": "object",
       "properties": {**_EDGE["properties"],
                      "relations": {"type": "array", "items": _EDGE, "minItems": 1,
                                    "maxItems": MAX_RELATIONS}},
       "additionalProperties": False},
      idempotent=True)
def memory_relate(ctx: ToolContext, args: dict) -> dict:
    edges, batch = _edges_from_args(args, "relations")
    store = ctx.store
    results, created = [], []
    with store.writing():
        for edge in edges:
            rel = edge.get("relationship", "RELATED_TO")
            a, b = edge["from_id"], edge["to_id"]
            problem = _check_endpoints(ctx, store, edge)
            if problem:
                if not batch:
                    raise (invalid if a == b else not_found)(problem)
                results.append({"from_id": a, "to_id": b, "relationship": rel,
                                "status": "invalid" if a == b else "not_found",
                                "error": problem})
                continue
            known = (rel, a, b) in store.graph.edges or (rel, a, b) in created
            results.append({"from_id": a, "to_id": b, "relationship": rel,
                            "status": "exists" if known else "created"})
            if not known:
                created.append((rel, a, b))
        if created:
            store.commit(Changes(edges_added=created))
    if not batch:
        result = results[0]
        if result["relationship"] == "SUPERSEDES":
            cycle = store.graph.supersession_cycle(result["from_id"])
            if cycle:
                result["supersession_cycle"] = cycle
                result["warning"] = ("this closes a SUPERSEDES cycle; none of its members is "
                                     "demoted until one of the links is removed with "
                                     "memory_unrelate")
        return result
    return {"results": results, "created": sum(r["status"] == "created" for r in results),
            "exists": sum(r["status"] == "exists" for r in results)}


@tool("memory_unrelate",
      "Remove the links from from_id to to_id: one relationship type, or every type when "
      "`relationship` is left out. Links the other way (to_id to from_id) stay unless "
      "`both_directions` is true, so one side of a SUPERSEDES cycle can be removed while the "
      "true link is kept. Reports exactly what was removed.",
      {"type": "object",
       "properties": {"from_id": ID, "to_id": ID, "relationship": _RELATION,
                      "both_directions": {"type": "boolean",
                                          "description": "Also remove links from to_id to "
                                                         "from_id (default false)."}},
       "required": ["from_id", "to_id"], "additionalProperties": False},
      destructive=True, idempotent=True)
def memory_unrelate(ctx: ToolContext, args: dict) -> dict:
    a, b = args["from_id"], args["to_id"]
    directions = {(a, b), (b, a)} if args.get("both_directions") else {(a, b)}
    store = ctx.store
    with store.writing():
        problem = _check_endpoints(ctx, store, args)
        if problem:
            raise (invalid if a == b else not_found)(problem)
        doomed = [e for e in store.graph.between(a, b) if (e[1], e[2]) in directions
                  and args.get("relationship") in (None, e[0])]
        if doomed:
            store.commit(Changes(edges_removed=doomed))
        kept = [{"type": rel, "from_id": x, "to_id": y} for rel, x, y in store.graph.between(a, b)
                if (x, y) == (b, a) and args.get("relationship") in (None, rel)]
    out = {"status": "removed" if doomed else "not_found",
           "removed": [{"type": rel, "from_id": x, "to_id": y} for rel, x, y in doomed]}
    if kept:
        out["kept_other_direction"] = kept  # so a model does not think they are gone too
    return out


@tool("memory_keep_separate",
      "Record that memories which look alike (flagged near_duplicate or value_disagreement) "
      "both hold and must not be merged or flagged again. `memory_ids`: every pair among "
      "them; `pairs`: exactly the pairs given. Creates no link between them.",
      {"type": "object",
       "properties": {
           "memory_ids": {**IDS, "minItems": 2, "maxItems": 50},
           "pairs": {"type": "array", "minItems": 1, "maxItems": MAX_RELATIONS,
                     "items": {"type": "array", "items": ID, "minItems": 2, "maxItems": 2}},
       },
       "additionalProperties": False},
      idempotent=True)
def memory_keep_separate(ctx: ToolContext, args: dict) -> dict:
    if ("memory_ids" in args) == ("pairs" in args):
        raise invalid("give either `memory_ids` (every pair among them) or `pairs`")
    if "memory_ids" in args:
        wanted = list(combinations(dict.fromkeys(args["memory_ids"]), 2))
    else:
        wanted = [tuple(p) for p in args["pairs"]]
    store = ctx.store
    results, new = [], []
    with store.writing():
        for a, b in wanted:
            problem = _check_endpoints(ctx, store, {"from_id": a, "to_id": b})
            if problem:
                raise (invalid if a == b else not_found)(problem)
            key = pair(a, b)
            known = store.graph.kept_separate(a, b) or key in new
            results.append({"pair": list(key), "status": "exists" if known else "recorded"})
            if not known:
                new.append(key)
        if new:
            store.commit(Changes(kept_separate=new))
    return {"results": results, "recorded": len(new)}


@tool("memory_topics",
      "Every topic (tag) in this workspace with how many memories carry it, most used first.",
      {"type": "object",
       "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 10000},
                      "min_count": {"type": "integer", "minimum": 1, "maximum": MAX_SAFE_INT}},
       "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_topics(ctx: ToolContext, args: dict) -> dict:
    store = ctx.store
    counts: dict[str, int] = {}
    with store.reading():
        for m in store.in_scope(ctx.workspace):
            for t in m.tags:
                counts[t] = counts.get(t, 0) + 1
    ranked = sorted(((t, n) for t, n in counts.items() if n >= args.get("min_count", 1)),
                    key=lambda tn: (-tn[1], tn[0]))
    shown = ranked[:args.get("limit", 10000)]
    return {"topics": [{"name": t, "count": n} for t, n in shown], "total": len(ranked)}
