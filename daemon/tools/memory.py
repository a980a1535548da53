"""The core memory tools: store, search, get, list, update, delete. Each reads its arguments
(a TypedDict beside its JSON schema), calls one operation (daemon/operations/) and shapes
the JSON it returns."""
from datetime import datetime
from typing import Any, Literal, TypedDict

from ..core.config import FUSION_MODES
from ..core.errors import invalid, not_found
from ..core.records import Memory
from ..core.types import STORE_SCOPES, Category, StoreScope
from ..curation.capture import Verdict
from ..curation.conflicts import SEARCH_CONFLICTS_HINT
from ..curation.ingest import BRIEF_CONFLICTS_HINT
from ..operations import recall
from ..operations.forget import forget
from ..operations.listing import CHECKED_AT_MOST, ORDERS, ListAsk, Order, list_memories
from ..operations.recall import Fusion, Hit, Page, Query, Shown
from ..operations.remember import Entry, Remembered, remember
from ..operations.revise import Change, Result, Revised, revise
from ..operations.tiers import is_personal
from ..operations.versions import moment
from .code import code_view
from .common import (
    ANCHORS,
    CATEGORY,
    ID,
    IDS,
    IMPORTANCE,
    ITEM,
    MAX_IDS,
    MAX_QUERY_CHARS,
    MAX_SAFE_INT,
    ORIGIN_FILTERS,
    PREVIEW,
    TAGS,
    TIME_TEXT,
    noted,
    one_or_many,
    preview_chars,
)
from .registry import ToolContext, tool

JSON = dict[str, Any]

# -- memory_store ----------------------------------------------------------------------------


class StoreItemArgs(TypedDict, total=False):
    content: str  # required
    category: Category
    tags: list[str]
    importance: int
    anchors: list[dict[str, Any]]
    auto_anchor: bool
    scope: StoreScope
    keep_as_is: bool


class StoreArgs(StoreItemArgs, total=False):
    items: list[StoreItemArgs]


KEEP_AS_IS: dict[str, Any] = {
    "type": "boolean",
    "description": "Store this text as it is, without the check that refuses transient "
                   "chatter, progress notes, file listings, stack traces, command output, "
                   "diffs, to-do lists, vague notes and restatements (default false)."}
STORE_ITEM: dict[str, Any] = {**ITEM, "properties": {**ITEM["properties"],
                                                     "keep_as_is": KEEP_AS_IS}}


@tool("memory_store",
      "Remember something for later sessions. Give `content` (with optional category, tags, "
      "importance) for one memory, or `items` (a list of such objects) for a batch. Storing "
      "text identical to an existing memory does not duplicate it: the existing memory's "
      "importance is raised and its id returned (status `duplicate`); so does text that only "
      "says again what a memory says. Store decisions, preferences and lessons: chatter, "
      "progress notes, file listings, stack traces without their lesson, command output, "
      "diffs and to-do lists are refused with the reason (in a batch: status `refused`), "
      "unless `keep_as_is` is true. Text inside <private>…</private> is never stored and "
      "secrets are redacted.",
      {"type": "object",
       "properties": {**STORE_ITEM["properties"],
                      "items": {"type": "array", "items": STORE_ITEM, "minItems": 1,
                                "description": "Batch form: several memories in one call."}},
       "additionalProperties": False},
      long_running=True)
def memory_store(ctx: ToolContext, args: StoreArgs) -> JSON:
    if "items" in args and any(k in args for k in ("category", "tags", "importance",
                                                   "keep_as_is")):
        raise invalid("with `items`, give category/tags/importance/keep_as_is inside each "
                      "item")
    one_or_many(args, "content", "items")  # exactly one of the two
    batch = "items" in args
    given: list[StoreItemArgs] = args["items"] if batch else [args]
    return _stored_view(remember(ctx, [_entry(e) for e in given], batch), batch)


def _entry(item: StoreItemArgs) -> Entry:
    return Entry(item["content"], item.get("category", "general"), item.get("tags", []),
                 item.get("importance", 3), item.get("anchors"), item.get("auto_anchor", True),
                 item.get("scope", "private"), item.get("keep_as_is", False))


def _stored_view(done: Remembered, batch: bool) -> JSON:
    results = [_outcome_view(done, n, batch) for n in range(len(done.outcomes))]
    if not batch:
        return {**results[0], **done.sharing, **done.left_out.report(single=True)}
    count = {status: sum(r["status"] == status for r in results)
             for status in ("stored", "duplicate", "merged", "refused")}
    out = {"results": results, "stored": count["stored"], "duplicates": count["duplicate"],
           "merged": count["merged"], "refused": count["refused"]}
    if any("conflicts" in r for r in results):
        out["conflicts_hint"] = BRIEF_CONFLICTS_HINT
    return {**out, **done.sharing, **done.left_out.report(single=False)}


def _outcome_view(done: Remembered, n: int, batch: bool) -> JSON:
    outcome = done.outcomes[n]
    if isinstance(outcome, Verdict):
        return {"status": "refused", "kind": outcome.kind,
                "reason": f"{outcome.reason}; to store it as it is, give it keep_as_is: true"}
    view = outcome.view(brief_conflicts=batch)
    if n in done.restated:
        view["capture"] = (f"this says again what memory {done.restated[n]} says, so that "
                           "memory's importance was raised instead; use memory_update to "
                           "change its text")
    return view


# -- memory_search ---------------------------------------------------------------------------


class SearchArgs(TypedDict, total=False):
    query: str  # required
    top_k: int
    offset: int
    category: str
    tags: list[str]
    min_importance: int
    global_search: bool
    via: str
    client: str
    preview_chars: int
    explain: bool
    fusion: Fusion
    workspaces: list[str]


@tool("memory_search",
      "Find memories relevant to a question: hybrid semantic + keyword search ranked with "
      "recency and importance. Searches this workspace and your personal memories (scope "
      "\"user\"); name other projects in `workspaces` to search them too. Page with "
      "`offset` while `has_more` is true.",
      {"type": "object",
       "properties": {
           "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS,
                     "description": "What you want to recall, in plain words."},
           "top_k": {"type": "integer", "minimum": 1, "maximum": 100,
                     "description": "Results per page (default MEMORY_SEARCH_LIMIT, 10)."},
           "offset": {"type": "integer", "minimum": 0, "maximum": 10000},
           "category": {**CATEGORY, "description": "Only memories of this category."},
           "tags": {**TAGS, "description": "Only memories carrying at least one of these tags."},
           "min_importance": IMPORTANCE,
           "global_search": {"type": "boolean",
                             "description": "Search every workspace in this database."},
           **ORIGIN_FILTERS,
           "preview_chars": PREVIEW,
           "explain": {"type": "boolean",
                       "description": "Show each ranking channel's contribution, and in "
                                      "`explain_meta` what the search considered (scope, "
                                      "candidates per channel, filters, vector coverage)."},
           "fusion": {"type": "string", "enum": list(FUSION_MODES),
                      "description": "Override MEMORY_FUSION for this call."},
           "workspaces": {"type": "array", "minItems": 1, "maxItems": 20,
                          "items": {"type": "string", "minLength": 1, "maxLength": 4096},
                          "description": "Also search these other projects (absolute "
                                         "paths), or [\"*\"] for every project of yours "
                                         "memnest has served; each hit names its "
                                         "workspace. Never searched unless named."},
       },
       "required": ["query"], "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_search(ctx: ToolContext, args: SearchArgs) -> JSON:
    workspaces = args.get("workspaces", [])
    if "*" in workspaces and workspaces != ["*"]:
        raise invalid('workspaces: give ["*"] alone for every workspace, or paths')
    query = Query(args["query"], args.get("top_k"), args.get("offset", 0),
                  args.get("category"), args.get("tags", []), args.get("min_importance", 1),
                  args.get("via"), args.get("client"), args.get("global_search", False),
                  bool(args.get("explain")), args.get("fusion"), workspaces)
    page = recall.search(ctx, query, ctx.confinement)
    return {**_page_view(page, preview_chars(ctx, args)), **resolved_elsewhere(ctx)}


def _page_view(page: Page, preview: int) -> JSON:
    results = [_hit_view(h, preview) for h in page.hits]
    out: JSON = {"results": results, "count": len(results), "offset": page.offset,
                 "has_more": page.has_more,
                 "scope": "global" if page.everywhere else "workspace"}
    if page.narrowed:
        out["scope_note"] = ("global_search was kept to this workspace: this database also "
                             "holds workspaces this remote client may not use")
    if page.any_conflicts:  # conflicts without the calls that settle them: the hint says
        out["conflicts_hint"] = SEARCH_CONFLICTS_HINT
    if page.census is not None:
        out["explain_meta"] = page.census
    if page.searched or page.not_searched:
        out["workspaces_searched"] = page.searched
    if page.not_searched:
        out["workspaces_not_searched"] = page.not_searched
    return out


def _hit_view(hit: Hit, preview: int) -> JSON:
    item = noted(hit.memory.view(preview), hit.notes)
    item["score"] = round(hit.score, 4)
    if hit.source == "user":
        item["scope"] = "user"  # the personal tier: recalled in every workspace
    elif hit.source == "other":
        item["from_workspace"] = hit.memory.workspace
    written_on(item, hit.memory)
    if hit.code is not None:
        item["code"] = code_view(hit.code)
    if hit.parts is not None:
        item["explain"] = {k: round(v, 4) for k, v in hit.parts.items()}
    return item


# -- memory_get ------------------------------------------------------------------------------


class GetArgs(TypedDict, total=False):
    id: int
    ids: list[int]
    include_edges: bool


@tool("memory_get",
      "Read memories in full by id: untruncated content, tags, timestamps and graph edges. "
      "Give `id` for one or `ids` for several; ids that do not exist are listed in `missing`.",
      {"type": "object",
       "properties": {"id": ID, "ids": IDS,
                      "include_edges": {"type": "boolean", "description": "Default true."}},
       "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_get(ctx: ToolContext, args: GetArgs) -> JSON:
    ids, many = one_or_many(args, "id", "ids")
    fetched = recall.get(ctx, ids, args.get("include_edges", True))
    found = [_shown_view(s) for s in fetched.shown]
    if not many:
        if fetched.missing:
            raise not_found(f"no memory with id {ids[0]} in this workspace; "
                            "use memory_search or memory_list to find ids")
        return found[0]
    return {"memories": found, "missing": fetched.missing}


def _listed_view(m: Memory, preview: int) -> JSON:
    item = m.view(preview)
    if is_personal(m.id):
        item["scope"] = "user"
    return item


def written_on(item: JSON, m: Memory) -> None:
    """Where a memory was written: its git branch, and the worktree when not the main
    checkout."""
    if m.code.branch:
        item["branch"] = m.code.branch
    if m.code.worktree:
        item["worktree"] = m.code.worktree


def _shown_view(shown: Shown) -> JSON:
    item = noted(shown.memory.view(), shown.notes)
    if is_personal(shown.memory.id):
        item["scope"] = "user"
    written_on(item, shown.memory)
    if shown.code is not None:
        item["code"] = code_view(shown.code)
    if shown.edges is not None:
        item["edges"] = shown.edges
    item["superseded"] = bool(shown.notes.superseded_by)
    item["superseded_by"] = shown.notes.superseded_by
    item["supersedes"] = shown.supersedes
    if shown.kept_separate_from:
        item["kept_separate_from"] = shown.kept_separate_from
    return item


# -- memory_list -----------------------------------------------------------------------------


class ListArgs(TypedDict, total=False):
    order_by: Order
    category: str
    topic: str
    min_importance: int
    via: str
    client: str
    scope: StoreScope
    since: str
    until: str
    superseded: bool
    stale: bool
    conflicted: bool
    limit: int
    offset: int
    preview_chars: int


@tool("memory_list",
      "Enumerate memories without ranking: newest first by default, or by importance, "
      "creation or access count; filter by category, topic (tag), importance, provenance, "
      "scope, when they last changed, whether something replaced them, stale code or an "
      "unsettled conflict. Pages to any depth with `offset`.",
      {"type": "object",
       "properties": {
           "order_by": {"type": "string", "enum": list(ORDERS)},
           "category": CATEGORY,
           "topic": {"type": "string", "minLength": 1, "maxLength": 100},
           "min_importance": IMPORTANCE,
           **ORIGIN_FILTERS,
           "scope": {"type": "string", "enum": list(STORE_SCOPES),
                     "description": "Only private memories, only those shared with the "
                                    "team through .memnest/shared/, or user: your personal "
                                    "memories, recalled in every workspace."},
           "since": {**TIME_TEXT, "description": "Only memories changed at or after "
                     "this time (ISO 8601, e.g. 2026-12-01 or 2026-12-01T09:00:00Z)."},
           "until": {**TIME_TEXT, "description": "Only memories changed before this "
                     "time (ISO 8601)."},
           "superseded": {"type": "boolean",
                          "description": "true: only memories a newer one replaced "
                                         "(SUPERSEDES); false: only those nothing replaced."},
           "stale": {"type": "boolean",
                     "description": "Only memories whose cited code changed or went "
                                    "(memory_stale groups them by file)."},
           "conflicted": {"type": "boolean",
                          "description": "Only memories that look like contradicting "
                                         "another and are not settled yet."},
           "limit": {"type": "integer", "minimum": 1, "maximum": 500},
           "offset": {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INT},
           "preview_chars": PREVIEW,
       },
       "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_list(ctx: ToolContext, args: ListArgs) -> JSON:
    listing = list_memories(ctx, ListAsk(
        args.get("order_by", "recent"), args.get("category"), args.get("topic"),
        args.get("min_importance", 1), args.get("via"), args.get("client"),
        args.get("limit"), args.get("offset", 0), args.get("scope"),
        _moment(args, "since"), _moment(args, "until"), args.get("superseded"),
        args.get("stale", False), args.get("conflicted", False)))
    preview = preview_chars(ctx, args)
    out: JSON = {"memories": [_listed_view(m, preview) for m in listing.memories],
                 "total": listing.total, "offset": listing.offset,
                 "has_more": listing.has_more}
    if listing.checked_only is not None:
        out["checked_only"] = listing.checked_only
        out["checked_hint"] = (f"stale and conflicted were checked over the first "
                               f"{CHECKED_AT_MOST} memories in this order only; narrow with "
                               "since/until, topic or category to see further")
    return {**out, **resolved_elsewhere(ctx)}


def resolved_elsewhere(ctx: ToolContext) -> JSON:
    """When the call's folder led to another workspace's memory (a git worktree shares its
    repository's), which one and why: a wrong workspace is the hardest failure to notice."""
    where = ctx.resolution
    return {"resolved_workspace": where.view()} if where is not None and where.moved else {}


def _moment(args: ListArgs, key: Literal["since", "until"]) -> datetime | None:
    text = args.get(key)
    return None if text is None else moment(text, key)


# -- memory_update ---------------------------------------------------------------------------


class UpdateItemArgs(TypedDict, total=False):
    id: int  # required
    content: str
    category: Category
    tags: list[str]
    importance: int
    scope: StoreScope
    anchors: list[dict[str, Any]]
    refresh_anchors: bool
    expected_updated_at: str


class UpdateArgs(UpdateItemArgs, total=False):
    updates: list[UpdateItemArgs]


_UPDATE: dict[str, Any] = {
    "type": "object",
    "properties": {"id": ID, "content": ITEM["properties"]["content"],
                   "category": CATEGORY, "tags": TAGS, "importance": IMPORTANCE,
                   "scope": ITEM["properties"]["scope"],
                   "anchors": {**ANCHORS, "description": "Replace the code this memory cites "
                               "(see memory_store); [] leaves only what the content names."},
                   "refresh_anchors": {"type": "boolean",
                                       "description": "Re-anchor the cited code as it is now, "
                                                      "once you checked the memory still "
                                                      "holds (memory_stale lists them)."},
                   "expected_updated_at": {
                       **TIME_TEXT,
                       "description": "The memory's `updated_at` as you read it (memory_get, "
                                      "memory_list, memory_search): the change is made only "
                                      "if the memory is still that version. If it changed "
                                      "since, nothing is changed: status `changed`, with "
                                      "`memory` as it is now."}},
    "required": ["id"], "additionalProperties": False,
}


@tool("memory_update",
      "Change a memory's content, category, tags, importance or code anchors (fields not "
      "given stay as they are; new content is re-embedded and its code citations anchored "
      "again), or refresh its anchors after its code changed (`refresh_anchors`). Give the "
      "fields with `id`, or `updates` (a list of such objects) for a batch.",
      {"type": "object",
       "properties": {**_UPDATE["properties"],
                      "updates": {"type": "array", "items": _UPDATE, "minItems": 1,
                                  "maxItems": MAX_IDS}},
       "additionalProperties": False},
      idempotent=True)
def memory_update(ctx: ToolContext, args: UpdateArgs) -> JSON:
    if "updates" in args:
        if len(args) > 1:
            raise invalid("with `updates`, put id and fields inside each update")
        given, batch = list(args["updates"]), True
    elif "id" in args:
        given, batch = [args], False
    else:
        raise invalid("give `id` with the fields to change, or `updates`")
    changes = [Change(c["id"], c.get("content"), c.get("category"), c.get("tags"),
                      c.get("importance"), c.get("scope"), c.get("anchors"),
                      c.get("refresh_anchors"), c.get("expected_updated_at")) for c in given]
    return _revised_view(ctx, revise(ctx, changes, batch), batch)


CHANGED_SINCE = ("this memory changed after the version you named (expected_updated_at), so "
                 "it was left as it is: `memory` shows it now; apply your change to this "
                 "version if it still holds, naming its updated_at")


def _revised_view(ctx: ToolContext, done: Revised, batch: bool) -> JSON:
    results = [_result_view(r) for r in done.results]
    if not batch:
        if done.results[0].status == "changed":
            return {**results[0], "reason": CHANGED_SINCE}
        return {**results[0], "memory": done.updated[0].view(preview_chars(ctx, {})),
                **done.sharing, **done.left_out.report(single=True)}
    out: JSON = {"results": results,
                 "updated": sum(r["status"] == "updated" for r in results),
                 "not_found": sum(r["status"] == "not_found" for r in results)}
    changed = sum(r["status"] == "changed" for r in results)
    if changed:
        out["changed"], out["changed_hint"] = changed, CHANGED_SINCE
    return {**out, **done.sharing, **done.left_out.report(single=False)}


def _result_view(result: Result) -> JSON:
    out: JSON = {"id": result.id, "status": result.status}
    if result.current is not None:
        out["memory"] = result.current.view()
    if result.anchors is not None:
        out["anchors"] = result.anchors
    if result.anchor_notes:
        out["anchor_notes"] = result.anchor_notes
    if result.moved_to is not None:
        out["moved_to"] = result.moved_to
        out["note"] = ("moved to your personal memories (scope user): recalled in every "
                       "workspace under this new id; the old id is gone")
    return out


# -- memory_delete ---------------------------------------------------------------------------


class DeleteArgs(TypedDict, total=False):
    id: int
    ids: list[int]
    expected_updated_at: str | dict[str, str]


@tool("memory_delete",
      "Delete memories and their relationships: `id` for one, `ids` for several. Reports which "
      "ids were deleted and which did not exist. With `expected_updated_at`, a memory that "
      "changed since you read it is kept and listed in `changed`, as it is now.",
      {"type": "object",
       "properties": {
           "id": ID, "ids": IDS,
           "expected_updated_at": {
               **TIME_TEXT, "type": ["string", "object"],
               "propertyNames": {"pattern": "^[1-9][0-9]{0,15}$"},
               "additionalProperties": TIME_TEXT, "maxProperties": MAX_IDS,
               "description": "The version you read, as memory_get/memory_list show "
                              "`updated_at`: with `id`, that text; with `ids`, an object "
                              "from id to its updated_at (ids left out are deleted "
                              "unchecked). A memory no longer that version is not deleted: "
                              "its id is in `changed` and it is in `current`, as it is now."}},
       "additionalProperties": False},
      destructive=True, idempotent=True)
def memory_delete(ctx: ToolContext, args: DeleteArgs) -> JSON:
    ids, many = one_or_many(args, "id", "ids")
    done = forget(ctx, ids, _expected(args.get("expected_updated_at"), ids, many))
    out: JSON = {"status": done.status, "deleted": done.deleted, "missing": done.missing}
    if done.changed:
        out["changed"] = [m.id for m in done.changed]
        out["current"] = [m.view() for m in done.changed]
        out["reason"] = ("memories in `changed` changed after the version you named "
                         "(expected_updated_at), so they were kept: `current` shows them now")
    return out


def _expected(given: str | dict[str, str] | None, ids: list[int], many: bool
              ) -> dict[int, str]:
    """By id, the version the caller read: a text goes with `id`, an object with either."""
    if given is None:
        return {}
    if isinstance(given, str):
        if many:
            raise invalid("with `ids`, give expected_updated_at as an object from id to "
                          "updated_at")
        return {ids[0]: given}
    return {int(key): text for key, text in given.items()}
