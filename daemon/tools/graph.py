"""Graph tools: relations between memories, keep-separate verdicts, topics. The work is
done in operations/linking.py."""
from itertools import combinations
from typing import Any, TypedDict

from ..core.errors import invalid
from ..core.types import RELATION_TYPES, Relation
from ..operations.linking import (
    Link,
    Linked,
    keep_separate,
    relate,
    topics,
    unrelate,
)
from ..store.changes import Edge
from .common import ID, IDS, MAX_SAFE_INT
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


class EdgeArgs(TypedDict, total=False):
    from_id: int
    to_id: int
    relationship: Relation


class RelateArgs(EdgeArgs, total=False):
    relations: list[EdgeArgs]


def _links_from_args(args: RelateArgs) -> tuple[list[Link], bool]:
    """The links asked for, and whether as a batch (`relations`) rather than one."""
    single = any(k in args for k in ("from_id", "to_id", "relationship"))
    if single == ("relations" in args):
        raise invalid("give from_id and to_id (and relationship), or `relations`; not both")
    if "relations" in args:
        return [_link(edge) for edge in args["relations"]], True
    if "from_id" not in args or "to_id" not in args:
        raise invalid("give both from_id and to_id")
    return [_link(args)], False


def _link(edge: EdgeArgs) -> Link:
    return Link(edge["from_id"], edge["to_id"], edge.get("relationship", "RELATED_TO"))


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
def memory_relate(ctx: ToolContext, args: RelateArgs) -> dict[str, Any]:
    links, batch = _links_from_args(args)
    done = relate(ctx, links, batch)
    results = [_linked_view(r) for r in done.results]
    if batch:
        return {"results": results, "created": done.count("created"),
                "exists": done.count("exists")}
    result = results[0]
    if done.supersession_cycle:
        result["supersession_cycle"] = done.supersession_cycle
        result["warning"] = ("this closes a SUPERSEDES cycle; none of its members is demoted "
                             "until one of the links is removed with memory_unrelate")
    return result


def _linked_view(r: Linked) -> dict[str, Any]:
    out: dict[str, Any] = {"from_id": r.link.from_id, "to_id": r.link.to_id,
                           "relationship": r.link.relationship, "status": r.status}
    if r.error:
        out["error"] = r.error
    return out


class _Ends(TypedDict):
    from_id: int
    to_id: int


class UnrelateArgs(_Ends, total=False):
    relationship: Relation
    both_directions: bool


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
def memory_unrelate(ctx: ToolContext, args: UnrelateArgs) -> dict[str, Any]:
    done = unrelate(ctx, args["from_id"], args["to_id"], args.get("relationship"),
                    args.get("both_directions", False))
    out: dict[str, Any] = {"status": done.status, "removed": _edges_view(done.removed)}
    if done.kept_other_direction:  # so a model does not think they are gone too
        out["kept_other_direction"] = _edges_view(done.kept_other_direction)
    return out


def _edges_view(edges: list[Edge]) -> list[dict[str, Any]]:
    return [{"type": rel, "from_id": x, "to_id": y} for rel, x, y in edges]


class KeepSeparateArgs(TypedDict, total=False):
    memory_ids: list[int]
    pairs: list[list[int]]


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
def memory_keep_separate(ctx: ToolContext, args: KeepSeparateArgs) -> dict[str, Any]:
    if ("memory_ids" in args) == ("pairs" in args):
        raise invalid("give either `memory_ids` (every pair among them) or `pairs`")
    if "memory_ids" in args:
        wanted = list(combinations(dict.fromkeys(args["memory_ids"]), 2))
    else:
        wanted = [(a, b) for a, b in args["pairs"]]
    verdicts = keep_separate(ctx, wanted)
    return {"results": [{"pair": list(v.pair), "status": v.status} for v in verdicts],
            "recorded": sum(v.status == "recorded" for v in verdicts)}


class TopicsArgs(TypedDict, total=False):
    limit: int
    min_count: int


@tool("memory_topics",
      "Every topic (tag) in this workspace with how many memories carry it, most used first.",
      {"type": "object",
       "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 10000},
                      "min_count": {"type": "integer", "minimum": 1, "maximum": MAX_SAFE_INT}},
       "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_topics(ctx: ToolContext, args: TopicsArgs) -> dict[str, Any]:
    found = topics(ctx, args.get("limit", 10000), args.get("min_count", 1))
    return {"topics": [{"name": t.name, "count": t.count} for t in found.shown],
            "total": found.total}
