"""The core memory tools: store, search, get, list, update, delete, stats."""
from ..errors import invalid, not_found
from ..records import CATEGORIES, Memory, content_hash, iso, normalise_tags, utcnow
from ..search import SearchFilter, rank
from .registry import ToolContext, tool

MAX_IDS = 500
MAX_QUERY_CHARS = 4000

_ID = {"type": "integer", "minimum": 1, "maximum": 2**62}
_IDS = {"type": "array", "items": _ID, "minItems": 1, "maxItems": MAX_IDS}
_TAGS = {"type": "array", "maxItems": 50,
         "items": {"type": "string", "minLength": 1, "maxLength": 100}}
_CATEGORY = {"type": "string", "enum": list(CATEGORIES)}
_IMPORTANCE = {"type": "integer", "minimum": 1, "maximum": 5}
_PREVIEW = {"type": "integer", "minimum": 0, "maximum": 100000,
            "description": "Truncate each content to this many characters (default "
                           "MEMORY_MAX_CONTENT); 0 shows none."}
_ITEM = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "minLength": 1,
                    "description": "The fact, decision or preference to remember."},
        "category": {**_CATEGORY, "description": "learning, preference, decision, pattern "
                                                 "or general (default)."},
        "tags": {**_TAGS, "description": "Topics; each becomes a Topic node."},
        "importance": {**_IMPORTANCE, "description": "1 (trivia) to 5 (critical); default 3."},
    },
    "required": ["content"],
    "additionalProperties": False,
}


def _one_or_many(args: dict, single: str, many: str) -> tuple[list, bool]:
    """Tools take either one thing or a list of them; exactly one of the two."""
    if (single in args) == (many in args):
        raise invalid(f"give either `{single}` or `{many}`, not both and not neither")
    if single in args:
        return [args[single]], False
    return list(args[many]), True


def _clean_content(ctx: ToolContext, content: str, where: str) -> str:
    text = content.strip()
    if not text:
        raise invalid(f"{where}: content is empty or only whitespace")
    limit = ctx.settings.max_store_chars
    if len(text) > limit:
        raise invalid(f"{where}: content is {len(text)} characters, over the limit of {limit} "
                      "(MEMORY_MAX_STORE_CHARS); split it into several memories")
    return text


def _preview(ctx: ToolContext, args: dict) -> int:
    return args.get("preview_chars", ctx.settings.max_content_preview)


def _visible(ctx: ToolContext, m: Memory | None, everywhere: bool = False) -> bool:
    return m is not None and (everywhere or m.workspace == ctx.workspace)


EMBED_CHUNK = 64


def _embed_with_progress(ctx: ToolContext, texts: list[str]) -> list:
    """Embed in chunks so a long batch reports progress to a streaming caller. Chunks are
    cut from the texts in length order, since a batch pads to its longest text."""
    if len(texts) <= EMBED_CHUNK:
        return list(ctx.embedder.embed(texts))
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    vectors: list = [None] * len(texts)
    for start in range(0, len(order), EMBED_CHUNK):
        chunk = order[start:start + EMBED_CHUNK]
        for i, vector in zip(chunk, ctx.embedder.embed([texts[i] for i in chunk])):
            vectors[i] = vector
        done = start + len(chunk)
        ctx.progress(done, len(texts), f"embedded {done} of {len(texts)}")
    return vectors


# -- memory_store ----------------------------------------------------------------------------

@tool("memory_store",
      "Remember something for later sessions. Give `content` (with optional category, tags, "
      "importance) for one memory, or `items` (a list of such objects) for a batch. Storing "
      "text identical to an existing memory does not duplicate it: the existing memory's "
      "importance is raised and its id returned (status `duplicate`).",
      {"type": "object",
       "properties": {**_ITEM["properties"],
                      "items": {"type": "array", "items": _ITEM, "minItems": 1,
                                "description": "Batch form: several memories in one call."}},
       "additionalProperties": False},
      long_running=True)
def memory_store(ctx: ToolContext, args: dict) -> dict:
    if "items" in args and any(k in args for k in ("category", "tags", "importance")):
        raise invalid("with `items`, give category/tags/importance inside each item")
    _one_or_many(args, "content", "items")  # exactly one of the two
    items, batch = (args["items"], True) if "items" in args else ([args], False)
    if batch and len(items) > ctx.settings.max_batch:
        raise invalid(f"items has {len(items)} entries, over the limit of "
                      f"{ctx.settings.max_batch} (MEMORY_MAX_BATCH); send several batches")
    prepared = []
    for n, item in enumerate(items):
        where = f"items.{n}" if batch else "content"
        text = _clean_content(ctx, item["content"], where)
        prepared.append((text, item.get("category", "general"),
                         normalise_tags(item.get("tags")), item.get("importance", 3)))

    vectors = _embed_with_progress(ctx, [p[0] for p in prepared])  # slow: outside the lock
    store = ctx.store
    outcomes: list[tuple[str, Memory]] = []
    added: list[tuple[Memory, object]] = []
    bumped: dict[int, Memory] = {}
    with store.writing():
        now = utcnow()
        new_by_hash: dict[str, Memory] = {}
        for (text, category, tags, importance), vector in zip(prepared, vectors):
            digest = content_hash(text)
            target = new_by_hash.get(digest)
            if target is None:
                existing = store.find_hash(ctx.workspace, digest)
                if existing is not None:
                    target = bumped.setdefault(existing.id, existing.copy(updated_at=now))
            if target is not None:  # same text again: raise importance instead of storing
                target.importance = min(5, target.importance + 1)
                outcomes.append(("duplicate", target))
                continue
            m = Memory(id=store.allocate_id(), content=text, content_hash=digest,
                       category=category, tags=tags, importance=importance, access_count=0,
                       workspace=ctx.workspace, created_at=now, updated_at=now,
                       embedding_model=store.model)
            added.append((m, vector))
            new_by_hash[digest] = m
            outcomes.append(("stored", m))
        with store.db.transaction() as db:
            for m, vector in added:
                db.insert(m, vector)
            if added:
                store.save_next_id()
            for m in bumped.values():
                db.update(m, None, m.tags)
        store.indexed([m for m, _ in added] + list(bumped.values()),
                      {m.id: v for m, v in added})
    results = [{"status": status, "id": m.id, "importance": m.importance}
               for status, m in outcomes]
    if not batch:
        return results[0]
    return {"results": results,
            "stored": sum(r["status"] == "stored" for r in results),
            "duplicates": sum(r["status"] == "duplicate" for r in results)}


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
           "category": {**_CATEGORY, "description": "Only memories of this category."},
           "tags": {**_TAGS, "description": "Only memories carrying at least one of these tags."},
           "min_importance": _IMPORTANCE,
           "global_search": {"type": "boolean",
                             "description": "Search every workspace in this database."},
           "preview_chars": _PREVIEW,
           "explain": {"type": "boolean",
                       "description": "Show each ranking channel's contribution."},
           "fusion": {"type": "string", "enum": ["legacy", "rrf"],
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
    with store.reading():
        ranked = rank(store, query, query_vector, SearchFilter(
            workspace=None if everywhere else ctx.workspace, category=args.get("category"),
            tags=normalise_tags(args.get("tags")),
            min_importance=args.get("min_importance", 1)),
            pool=max(ctx.settings.search_candidates, offset + top_k),
            mode=args.get("fusion", ctx.settings.fusion), rrf_k=ctx.settings.rrf_k)
    page = ranked[offset:offset + top_k]
    preview = _preview(ctx, args)
    results = []
    for r in page:
        item = r.memory.view(preview)
        item["score"] = round(r.score, 4)
        if args.get("explain"):
            item["explain"] = {k: round(v, 4) for k, v in r.parts.items()}
        results.append(item)
    return {"results": results, "count": len(results), "offset": offset,
            "has_more": offset + top_k < len(ranked), "scope": "global" if everywhere
            else "workspace"}


# -- memory_get ------------------------------------------------------------------------------

@tool("memory_get",
      "Read memories in full by id: untruncated content, tags, timestamps and graph edges. "
      "Give `id` for one or `ids` for several; ids that do not exist are listed in `missing`.",
      {"type": "object",
       "properties": {"id": _ID, "ids": _IDS,
                      "include_edges": {"type": "boolean", "description": "Default true."}},
       "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_get(ctx: ToolContext, args: dict) -> dict:
    ids, many = _one_or_many(args, "id", "ids")
    store = ctx.store
    found, missing = [], []
    with store.reading():
        for memory_id in dict.fromkeys(ids):
            m = store.catalog.get(memory_id)
            if not _visible(ctx, m):
                missing.append(memory_id)
                continue
            item = m.view()
            if args.get("include_edges", True):
                item["edges"] = store.db.edges_of(memory_id)
            found.append(item)
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
           "category": _CATEGORY,
           "topic": {"type": "string", "minLength": 1, "maxLength": 100},
           "min_importance": _IMPORTANCE,
           "limit": {"type": "integer", "minimum": 1, "maximum": 500},
           "offset": {"type": "integer", "minimum": 0, "maximum": 2**62},
           "preview_chars": _PREVIEW,
       },
       "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_list(ctx: ToolContext, args: dict) -> dict:
    limit = args.get("limit", ctx.settings.list_limit)
    offset = args.get("offset", 0)
    topic = normalise_tags([args["topic"]])[0] if args.get("topic", "").strip() else None
    store = ctx.store
    with store.reading():
        rows = [m for m in store.in_scope(ctx.workspace)
                if ("category" not in args or m.category == args["category"])
                and (topic is None or topic in m.tags)
                and m.importance >= args.get("min_importance", 1)]
    rows.sort(key=_ORDERS[args.get("order_by", "recent")], reverse=True)
    page = rows[offset:offset + limit]
    preview = _preview(ctx, args)
    return {"memories": [m.view(preview) for m in page], "total": len(rows), "offset": offset,
            "has_more": offset + limit < len(rows)}


# -- memory_update ---------------------------------------------------------------------------

_UPDATE = {
    "type": "object",
    "properties": {"id": _ID, "content": _ITEM["properties"]["content"],
                   "category": _CATEGORY, "tags": _TAGS, "importance": _IMPORTANCE},
    "required": ["id"], "additionalProperties": False,
}


@tool("memory_update",
      "Change a memory's content, category, tags or importance (fields not given stay as they "
      "are; new content is re-embedded). Give the fields with `id`, or `updates` (a list of "
      "such objects) for a batch.",
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
    for n, change in enumerate(changes):
        where = f"updates.{n}" if batch else "arguments"
        if len(change) == 1:
            raise invalid(f"{where}: nothing to change; give content, category, tags or "
                          "importance")
        if "content" in change:
            change["content"] = _clean_content(ctx, change["content"], where)
    texts = [c["content"] for c in changes if "content" in c]
    vectors = iter(ctx.embedder.embed(texts)) if texts else iter(())
    new_vectors = [next(vectors) if "content" in c else None for c in changes]

    store = ctx.store
    results, updated = [], []
    with store.writing():
        now = utcnow()
        staged: dict[int, tuple[Memory, object, list[str]]] = {}
        for change, vector in zip(changes, new_vectors):
            memory_id = change["id"]
            current = staged[memory_id][0] if memory_id in staged else store.catalog.get(memory_id)
            if not _visible(ctx, current):
                if not batch:
                    raise not_found(f"no memory with id {memory_id} in this workspace")
                results.append({"id": memory_id, "status": "not_found"})
                continue
            old_tags = staged[memory_id][2] if memory_id in staged else list(current.tags)
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
            previous_vector = staged[memory_id][1] if memory_id in staged else None
            staged[memory_id] = (m, vector if vector is not None else previous_vector, old_tags)
            results.append({"id": memory_id, "status": "updated"})
        if staged:
            with store.db.transaction() as db:
                for m, vector, old_tags in staged.values():
                    db.update(m, vector, old_tags)
            updated = [m for m, _, _ in staged.values()]
            store.indexed(updated, {m.id: v for m, v, _ in staged.values() if v is not None})
    if not batch:
        return {**results[0], "memory": updated[0].view(_preview(ctx, {}))}
    return {"results": results, "updated": sum(r["status"] == "updated" for r in results),
            "not_found": sum(r["status"] == "not_found" for r in results)}


# -- memory_delete ---------------------------------------------------------------------------

@tool("memory_delete",
      "Delete memories and their relationships: `id` for one, `ids` for several. Reports which "
      "ids were deleted and which did not exist.",
      {"type": "object", "properties": {"id": _ID, "ids": _IDS}, "additionalProperties": False},
      destructive=True, idempotent=True)
def memory_delete(ctx: ToolContext, args: dict) -> dict:
    ids, _ = _one_or_many(args, "id", "ids")
    store = ctx.store
    with store.writing():
        victims = [store.catalog[i] for i in dict.fromkeys(ids)
                   if _visible(ctx, store.catalog.get(i))]
        deleted = [m.id for m in victims]
        missing = [i for i in dict.fromkeys(ids) if i not in deleted]
        if victims:
            tags = sorted({t for m in victims for t in m.tags})
            with store.db.transaction() as db:
                db.delete(deleted, tags)
            store.unindexed(deleted)
    status = "deleted" if not missing else ("not_found" if not deleted else "partial")
    return {"status": status, "deleted": deleted, "missing": missing}


# -- memory_stats ----------------------------------------------------------------------------

@tool("memory_stats",
      "Counts for this workspace (memories, categories, topics, most important), the database "
      "location, search index health and the daemon's runtime.",
      {"type": "object", "properties": {}, "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_stats(ctx: ToolContext, args: dict) -> dict:
    store = ctx.store
    with store.reading():
        mine = store.in_scope(ctx.workspace)
        categories: dict[str, int] = {}
        topics: dict[str, int] = {}
        for m in mine:
            categories[m.category] = categories.get(m.category, 0) + 1
            for t in m.tags:
                topics[t] = topics.get(t, 0) + 1
        top = sorted(mine, key=lambda m: (m.importance, m.access_count, m.id), reverse=True)[:5]
        all_ids = set(store.catalog)
        vector_ids, keyword_ids = store.vectors.ids(), store.keywords.ids()
        stale = sum(1 for m in store.catalog.values() if m.embedding_model != store.model)
        census = {
            "memories_in_database": len(all_ids),
            "vector_indexed": len(vector_ids),
            "keyword_indexed": len(keyword_ids),
            "missing_from_vector_index": len(all_ids - vector_ids),
            "missing_from_keyword_index": len(all_ids - keyword_ids),
            "stale_embedding_signature": stale,
        }
        newest = max((m.updated_at for m in mine), default=None)
    return {
        "workspace": ctx.workspace,
        "database": store.db_path,
        "memories": len(mine),
        "categories": dict(sorted(categories.items())),
        "topics": len(topics),
        "top_topics": dict(sorted(topics.items(), key=lambda kv: (-kv[1], kv[0]))[:10]),
        "top_memories": [m.view(120) for m in top],
        "last_updated": iso(newest),
        "embedding_model": store.model,
        "index_health": {**census, "healthy": all(
            v == 0 for k, v in census.items() if k.startswith(("missing", "stale")))},
        "runtime": ctx.runtime(),
    }
