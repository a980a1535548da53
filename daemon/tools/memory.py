"""The core memory tools: store, search, get, list, update, delete, stats."""
from dataclasses import replace
from typing import Any

import numpy as np

from ..core.anchors import CodeContext
from ..core.config import FUSION_MODES
from ..core.errors import invalid, not_found
from ..core.records import Memory, content_hash, normalise_tags, utcnow
from ..curation.capture import RESTATE_FLOOR, Neighbour, Verdict, judge, restated
from ..curation.conflicts import (
    SEARCH_CONFLICTS_HINT,
    conflicts,
    with_resolutions,
    workspace_ids,
)
from ..curation.freshness import freshness, refreshed, written_context
from ..curation.ingest import BRIEF_CONFLICTS_HINT, Item, ingest
from ..curation.screening import flag
from ..curation.values import tag_overlap
from ..operations.admitting import LeftOut, clean_tags, private_free
from ..operations.embedding import embed_with_progress
from ..operations.sharing import check_shareable, merge_sharing, share_after_write
from ..search.graph_signal import boost
from ..search.ranking import SearchFilter, demote_superseded, rank
from ..store.changes import Changes
from .code import code_view, follow_moved_code, rank_by_code
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
    one_or_many,
    preview_chars,
    visible,
)
from .registry import ToolContext, tool

RESTATE_NEIGHBOURS = 5  # existing memories a stored text is compared with for a restatement

# -- memory_store ----------------------------------------------------------------------------

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
def memory_store(ctx: ToolContext, args: dict) -> dict:
    if "items" in args and any(k in args for k in ("category", "tags", "importance",
                                                   "keep_as_is")):
        raise invalid("with `items`, give category/tags/importance/keep_as_is inside each "
                      "item")
    one_or_many(args, "content", "items")  # exactly one of the two
    entries, batch = (args["items"], True) if "items" in args else ([args], False)
    if batch and len(entries) > ctx.settings.max_batch:
        raise invalid(f"items has {len(entries)} entries, over the limit of "
                      f"{ctx.settings.max_batch} (MEMORY_MAX_BATCH); send several batches")
    items: list[Item] = []
    refused: dict[int, Verdict] = {}  # entry index -> why it is not stored
    judged: list[int] = []  # entries whose text is checked for a restatement
    left_out = LeftOut()  # private text and secrets, never stored (curation/privacy.py)
    for n, item in enumerate(entries):
        where = f"items.{n}" if batch else "content"
        content = private_free(item["content"], where, ctx.settings.max_store_chars, left_out)
        if ctx.settings.capture_judge and not item.get("keep_as_is"):
            verdict = judge(content)
            if not verdict.keep:
                if not batch:
                    raise invalid(_refusal(where, verdict))
                refused[n] = verdict
                continue
            judged.append(len(items))
        code = written_context(ctx.workspace, content, item.get("anchors"),
                               item.get("auto_anchor", True),
                               where=f"items.{n}." if batch else "")
        items.append(Item(content, item.get("category", "general"),
                          clean_tags(item.get("tags"), where, left_out),
                          item.get("importance", 3), code=code.to_json(),
                          scope=item.get("scope", "private")))
    stored_entries = [e for n, e in enumerate(entries) if n not in refused]
    vectors = embed_with_progress(ctx, [i.content for i in items]) if items else []
    store = ctx.store
    sharing: dict = {}
    outcomes: list = []
    twins: dict[int, int] = {}
    with store.writing():
        ctx.check_still_wanted()
        if items:
            twins = _restatements(store, ctx.workspace, items, vectors, judged, ctx.settings)
            outcomes = _ingest(ctx, items, vectors, twins)
            to_share = [store.catalog[o.memory.id] for o, e in zip(outcomes, stored_entries)
                        if e.get("scope") == "shared"]
            sharing = share_after_write(store, ctx.workspace, to_share)
    views = [o.view(brief_conflicts=batch) for o in outcomes]
    for index, twin in twins.items():
        if outcomes[index].status == "duplicate" and outcomes[index].memory.id == twin:
            views[index]["capture"] = (f"this says again what memory {twin} says, so that "
                                       "memory's importance was raised instead; use "
                                       "memory_update to change its text")
    if not batch:
        return {**views[0], **sharing, **left_out.report(single=True)}
    stored = iter(views)
    results = [_refused_view(refused[n]) if n in refused else next(stored)
               for n in range(len(entries))]
    count = {status: sum(r["status"] == status for r in results)
             for status in ("stored", "duplicate", "merged", "refused")}
    out = {"results": results, "stored": count["stored"], "duplicates": count["duplicate"],
           "merged": count["merged"], "refused": count["refused"]}
    if any("conflicts" in r for r in results):
        out["conflicts_hint"] = BRIEF_CONFLICTS_HINT
    return {**out, **sharing, **left_out.report(single=False)}


def _refusal(where: str, verdict: Verdict) -> str:
    return (f"{where}: not stored: {verdict.reason}; if it is worth keeping as it is, store "
            "it again with keep_as_is: true")


def _refused_view(verdict: Verdict) -> dict:
    return {"status": "refused", "kind": verdict.kind,
            "reason": f"{verdict.reason}; to store it as it is, give it keep_as_is: true"}


def _restatements(store, workspace: str, items: list[Item], vectors, judged: list[int],
                  settings) -> dict[int, int]:
    """Items (of `judged`) that only say again what an existing memory says (capture.restated),
    by item index: the memory each restates. Only a memory a merge could join: of the
    item's scope, with tags overlapping as MEMORY_MERGE_TAG_OVERLAP asks. Write lock held."""
    if not judged:
        return {}
    matrix = np.asarray(vectors, dtype=np.float32).reshape(len(items), -1)[judged]
    near = store.vectors.search_many(matrix, workspace_ids(store, workspace),
                                     RESTATE_NEIGHBOURS, min_score=RESTATE_FLOOR)
    out = {}
    for index, found in zip(judged, near):
        item = items[index]
        if store.find_hash(workspace, content_hash(item.content), item.scope) is not None:
            continue  # the same text again: ingest's exact dedup says so
        neighbours = [Neighbour(i, store.catalog[i].content, s) for i, s in found
                      if store.catalog[i].scope == item.scope and tag_overlap(
                          store.catalog[i].tags, item.tags) >= settings.merge_tag_overlap]
        twin = restated(item.content, neighbours)
        if twin is not None:
            out[index] = twin
    return out


def _ingest(ctx: ToolContext, items: list[Item], vectors, twins: dict[int, int]) -> list:
    """ingest() the items, the restatements (`twins`) last, each as an exact duplicate of
    the memory it restates (its importance raised, as for the same text stored again):
    written after the others, that memory's text is the one the batch has left it with.
    Outcomes in the items' order. Write lock held."""
    fresh = [i for i in range(len(items)) if i not in twins]
    store = ctx.store
    outcomes = dict(zip(fresh, ingest(store, ctx.workspace, [items[i] for i in fresh],
                                      [vectors[i] for i in fresh], ctx.settings,
                                      origin=ctx.origin)))
    if twins:
        again = [replace(items[i], content=store.catalog[twin].content)
                 for i, twin in twins.items()]
        outcomes.update(zip(twins, ingest(store, ctx.workspace, again,
                                          [vectors[i] for i in twins], ctx.settings,
                                          origin=ctx.origin)))
    return [outcomes[i] for i in range(len(items))]


# -- memory_search ---------------------------------------------------------------------------

@tool("memory_search",
      "Find memories relevant to a question: hybrid semantic + keyword search ranked with "
      "recency and importance. Scoped to this workspace unless `global_search` is true. Page "
      "with `offset` while `has_more` is true.",
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
       },
       "required": ["query"], "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_search(ctx: ToolContext, args: dict) -> dict:
    query = args["query"].strip()
    if not query:
        raise invalid("query is empty or only whitespace")
    top_k = args.get("top_k", ctx.settings.search_limit)
    offset = args.get("offset", 0)
    everywhere = args.get("global_search", False)
    query_vector = ctx.embedder.embed_one(query)  # outside the lock
    store = ctx.store
    graph_weight = ctx.settings.dream.graph_weight
    explain = bool(args.get("explain"))
    census: dict | None = {} if explain else None  # counted only when explain is asked
    flt = SearchFilter(
        workspace=None if everywhere else ctx.workspace, category=args.get("category"),
        tags=normalise_tags(args.get("tags")),
        min_importance=args.get("min_importance", 1), via=args.get("via"),
        client=args.get("client"))
    pool = max(ctx.settings.search_candidates, offset + top_k)
    mode = args.get("fusion", ctx.settings.fusion)
    with store.reading():
        narrowed = everywhere and ctx.confinement is not None and ctx.confinement.hides_any(
            w for w, n in store.per_workspace.items() if n > 0)
        if narrowed:  # a remote caller sees only the workspaces it may use
            flt.workspace, everywhere = ctx.workspace, False
        ranked = rank(store, query, query_vector, flt, pool=pool, mode=mode,
                      rrf_k=ctx.settings.rrf_k, census=census)
        ranked = demote_superseded(store.graph, boost(ranked, store.signal, graph_weight))
        if census is not None:
            census = _explain_meta(store, census, ranked, flt, mode, graph_weight)
        ranked, code = rank_by_code(ranked, offset + top_k)
        page = ranked[offset:offset + top_k]
        store.record_access(r.memory.id for r in page)
        preview = preview_chars(ctx, args)
        flagged = conflicts(store, [r.memory for r in page], ctx.settings, ctx.workspace)
        results = []
        for r in page:  # conflicts without the calls that settle them: the page's hint says
            item = annotate(store, r.memory, r.memory.view(preview), flagged.get(r.memory.id))
            item["score"] = round(r.score, 4)
            if r.memory.id in code:
                item["code"] = code_view(code, r.memory.id)
            if explain:
                item["explain"] = {k: round(v, 4) for k, v in r.parts.items()}
            results.append(item)
    follow_moved_code(store, code)
    out = {"results": results, "count": len(results), "offset": offset,
           "has_more": offset + top_k < len(ranked), "scope": "global" if everywhere
           else "workspace"}
    if narrowed:
        out["scope_note"] = ("global_search was kept to this workspace: this database also "
                             "holds workspaces this remote client may not use")
    if flagged:
        out["conflicts_hint"] = SEARCH_CONFLICTS_HINT
    if census is not None:
        out["explain_meta"] = census
    return out


def _explain_meta(store, census: dict, ranked: list, flt: SearchFilter, mode: str,
                  graph_weight: float) -> dict:
    """The search's census (ranking.search_census) with what the steps after ranking did:
    the fusion mode, the filters applied, the graph channel and superseded memories."""
    graph, signal = store.graph, store.signal
    filters = {"category": flt.category, "tags": flt.tags or None,
               "min_importance": flt.min_importance if flt.min_importance > 1 else None,
               "via": flt.via, "client": flt.client}
    candidates = dict(census.pop("candidates", {}))
    candidates["graph"] = sum(1 for r in ranked if r.memory.id in signal) \
        if graph_weight > 0 and signal else 0
    return {
        "fusion": mode,
        "scope": "global" if flt.workspace is None else "workspace",
        **census,
        "candidates": candidates,
        "filters": {k: v for k, v in filters.items() if v is not None},
        "superseded_demoted": sum(1 for r in ranked if graph.superseded_by(r.memory.id)
                                  and not graph.supersession_cycle(r.memory.id)),
        "ranked": len(ranked),
    }


def annotate(store, m: Memory, item: dict, found: list | None) -> dict:
    """What an agent should know about a memory it is shown: what replaced it, what it
    conflicts with (`found`, from conflicts()), whether its text tries to instruct the
    agent."""
    graph = store.graph
    superseded_by = graph.superseded_by(m.id)
    cycle = graph.supersession_cycle(m.id)
    if cycle:
        item["supersession_cycle"] = cycle
    elif superseded_by:
        item["superseded"] = True
        item["superseded_by"] = superseded_by
    if found:
        item["conflicts"] = found
    return flag(item, m.content, store.screened)


# -- memory_get ------------------------------------------------------------------------------

@tool("memory_get",
      "Read memories in full by id: untruncated content, tags, timestamps and graph edges. "
      "Give `id` for one or `ids` for several; ids that do not exist are listed in `missing`.",
      {"type": "object",
       "properties": {"id": ID, "ids": IDS,
                      "include_edges": {"type": "boolean", "description": "Default true."}},
       "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_get(ctx: ToolContext, args: dict) -> dict:
    ids, many = one_or_many(args, "id", "ids")
    store = ctx.store
    found, missing = [], []
    with store.reading():
        wanted = [i for i in dict.fromkeys(ids) if visible(ctx, store.catalog.get(i))]
        missing = [i for i in dict.fromkeys(ids) if i not in wanted]
        store.record_access(wanted)
        flagged = conflicts(store, [store.catalog[i] for i in wanted], ctx.settings,
                            ctx.workspace)
        graph = store.graph
        code = freshness([store.catalog[i] for i in wanted])
        for memory_id in wanted:
            m = store.catalog[memory_id]
            item = annotate(store, m, m.view(), with_resolutions(memory_id,
                                                                 flagged.get(memory_id, [])))
            if memory_id in code:
                item["code"] = code_view(code, memory_id)
            if args.get("include_edges", True):
                item["edges"] = graph.of(memory_id)
            item["superseded"] = bool(graph.superseded_by(memory_id))
            item["superseded_by"] = graph.superseded_by(memory_id)
            item["supersedes"] = graph.supersedes(memory_id)
            kept = graph.separate_from(memory_id)
            if kept:
                item["kept_separate_from"] = kept
            found.append(item)
    follow_moved_code(store, code)
    if not many:
        if missing:
            raise not_found(f"no memory with id {ids[0]} in this workspace; "
                            "use memory_search or memory_list to find ids")
        return found[0]
    return {"memories": found, "missing": missing}


# -- memory_list -----------------------------------------------------------------------------

_ORDERS = {
    "recent": lambda m: (m.updated_at, m.id),
    "created": lambda m: (m.created_at, m.id),
    "importance": lambda m: (m.importance, m.updated_at, m.id),
    "accessed": lambda m: (m.access_count, m.updated_at, m.id),
}


@tool("memory_list",
      "Enumerate memories without ranking: newest first by default, or by importance, "
      "creation or access count; filter by category, topic (tag) or minimum importance. Pages "
      "to any depth with `offset`.",
      {"type": "object",
       "properties": {
           "order_by": {"type": "string", "enum": list(_ORDERS)},
           "category": CATEGORY,
           "topic": {"type": "string", "minLength": 1, "maxLength": 100},
           "min_importance": IMPORTANCE,
           **ORIGIN_FILTERS,
           "limit": {"type": "integer", "minimum": 1, "maximum": 500},
           "offset": {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INT},
           "preview_chars": PREVIEW,
       },
       "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_list(ctx: ToolContext, args: dict) -> dict:
    limit = args.get("limit", ctx.settings.list_limit)
    offset = args.get("offset", 0)
    topic = normalise_tags([args["topic"]])[0] if args.get("topic", "").strip() else None
    store = ctx.store
    flt = SearchFilter(workspace=ctx.workspace, category=args.get("category"),
                       tags=[topic] if topic else [],
                       min_importance=args.get("min_importance", 1), via=args.get("via"),
                       client=args.get("client"))
    with store.reading():
        rows = [m for m in store.in_scope(ctx.workspace) if flt.admits(m)]
    rows.sort(key=_ORDERS[args.get("order_by", "recent")], reverse=True)
    page = rows[offset:offset + limit]
    preview = preview_chars(ctx, args)
    return {"memories": [m.view(preview) for m in page], "total": len(rows), "offset": offset,
            "has_more": offset + limit < len(rows)}


# -- memory_update ---------------------------------------------------------------------------

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
                                                      "holds (memory_stale lists them)."}},
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
def memory_update(ctx: ToolContext, args: dict) -> dict:
    if "updates" in args:
        if len(args) > 1:
            raise invalid("with `updates`, put id and fields inside each update")
        changes, batch = list(args["updates"]), True
    elif "id" in args:
        changes, batch = [args], False
    else:
        raise invalid("give `id` with the fields to change, or `updates`")
    left_out = LeftOut()  # private text and secrets, never stored (curation/privacy.py)
    for n, change in enumerate(changes):
        where = f"updates.{n}" if batch else "arguments"
        if len(change) == 1:
            raise invalid(f"{where}: nothing to change; give content, category, tags, scope, "
                          "importance, anchors or refresh_anchors")
        if "content" in change:
            change["content"] = private_free(change["content"], where,
                                             ctx.settings.max_store_chars, left_out)
        if "tags" in change:
            change["tags"] = clean_tags(change["tags"], where, left_out)
    texts = [c["content"] for c in changes if "content" in c]
    vectors = iter(ctx.embedder.embed(texts)) if texts else iter(())
    new_vectors = [next(vectors) if "content" in c else None for c in changes]

    store = ctx.store
    results, updated = [], []
    with store.writing():
        now = utcnow()
        staged: dict[int, tuple[Memory, np.ndarray | None]] = {}
        scoped: dict[int, str] = {}  # memory id -> the scope asked for
        for change, vector in zip(changes, new_vectors):
            memory_id = change["id"]
            current = staged[memory_id][0] if memory_id in staged else store.catalog.get(memory_id)
            if current is None or not visible(ctx, current):
                if not batch:
                    raise not_found(f"no memory with id {memory_id} in this workspace")
                results.append({"id": memory_id, "status": "not_found"})
                continue
            m = current.copy(updated_at=now)
            if "content" in change:
                m.content, m.content_hash = change["content"], content_hash(change["content"])
                m.embedding_model = store.model
            if "category" in change:
                m.category = change["category"]
            if "tags" in change:
                m.tags = normalise_tags(change["tags"])
            if "importance" in change:
                m.importance = change["importance"]
            if set(change) <= {"id", "scope"}:  # only its scope: set_scope below
                results.append({"id": memory_id, "status": "updated"})
                scoped[memory_id] = change["scope"]
                continue
            if "scope" in change:
                scoped[memory_id] = change["scope"]
            notes = _update_code(ctx, m, change, where=f"updates.{len(results)}." if batch
                                 else "")
            previous_vector = staged[memory_id][1] if memory_id in staged else None
            staged[memory_id] = (m, vector if vector is not None else previous_vector)
            results.append({"id": memory_id, "status": "updated", **notes})
        if scoped:  # refused before anything is written when a secret would be shared
            check_shareable(store, [i for i, sc in scoped.items() if sc == "shared"],
                            staged)
        if staged:
            store.commit(Changes(updated=list(staged.values())))
        sharing: dict = {}
        for scope in ("shared", "private"):
            ids = [i for i, sc in scoped.items() if sc == scope]
            if ids:
                sharing = merge_sharing(sharing, share_after_write(
                    store, ctx.workspace, [store.catalog[i] for i in ids], scope == "shared"))
        updated = [store.catalog[r["id"]] for r in results if r["status"] == "updated"]
    if not batch:
        return {**results[0], "memory": updated[0].view(preview_chars(ctx, {})),
                **sharing, **left_out.report(single=True)}
    return {"results": results, "updated": sum(r["status"] == "updated" for r in results),
            "not_found": sum(r["status"] == "not_found" for r in results),
            **sharing, **left_out.report(single=False)}


def _update_code(ctx: ToolContext, m: Memory, change: dict, where: str) -> dict:
    """The memory's code context after this change: anchors given replace the explicit ones,
    new content is searched for citations again, and `refresh_anchors` re-captures every
    anchor as the code reads now. Returns what the caller should hear."""
    if not ({"anchors", "content", "refresh_anchors"} & set(change)):
        return {}
    context = CodeContext.parse(m.code)
    if "anchors" in change or "content" in change:
        context = written_context(ctx.workspace, m.content, change.get("anchors"),
                                  keep=context, where=where)
    notes: list[str] = []
    if change.get("refresh_anchors"):
        context, notes = refreshed(ctx.workspace, context)
    m.code = context.to_json()
    out: dict = {"anchors": [a.where for a in context.anchors]}
    if notes:
        out["anchor_notes"] = notes
    return out


# -- memory_delete ---------------------------------------------------------------------------

@tool("memory_delete",
      "Delete memories and their relationships: `id` for one, `ids` for several. Reports which "
      "ids were deleted and which did not exist.",
      {"type": "object", "properties": {"id": ID, "ids": IDS}, "additionalProperties": False},
      destructive=True, idempotent=True)
def memory_delete(ctx: ToolContext, args: dict) -> dict:
    ids, _ = one_or_many(args, "id", "ids")
    store = ctx.store
    with store.writing():
        victims = [store.catalog[i] for i in dict.fromkeys(ids)
                   if visible(ctx, store.catalog.get(i))]
        deleted = [m.id for m in victims]
        missing = [i for i in dict.fromkeys(ids) if i not in deleted]
        if victims:
            store.commit(Changes(deleted=deleted))
    status = "deleted" if not missing else ("not_found" if not deleted else "partial")
    return {"status": status, "deleted": deleted, "missing": missing}
