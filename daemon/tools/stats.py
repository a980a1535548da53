"""memory_stats: what a workspace holds, the health of its search indexes, whether its
database file is shared with other workspaces, and the daemon's runtime."""
from ..core.records import iso
from ..team import sync as team
from .registry import ToolContext, tool

# -- memory_stats ----------------------------------------------------------------------------

@tool("memory_stats",
      "Counts for this workspace (memories, categories, topics, most important), the database "
      "location, search index health (`index_health`, and `vector_index` with status ok, "
      "degraded or empty), `db_scope` (whether other workspaces keep memories in the same "
      "database file), `warnings` and the daemon's runtime.",
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
        census = index_census(store)
        vector_index = vector_index_status(store, census)
        scope = db_scope(store, ctx.workspace, ctx.confinement)
        newest = max((m.updated_at for m in mine), default=None)
        shared = sum(m.scope == "shared" for m in mine)
    warnings = [f"shared memory file not imported: {w}" for w in team.warnings(store,
                                                                                ctx.workspace)]
    if scope["shared"]:
        warnings.append(shared_database_warning(store.db_path, scope))
    if vector_index["status"] == "degraded":
        warnings.append("vector index degraded: " + "; ".join(vector_index["degraded_because"])
                        + f". {vector_index['repair']}")
    return {
        "workspace": ctx.workspace,
        "database": store.db_path,
        "db_scope": scope,
        "memories": len(mine),
        "shared_memories": shared,
        "categories": dict(sorted(categories.items())),
        "topics": len(topics),
        "top_topics": dict(sorted(topics.items(), key=lambda kv: (-kv[1], kv[0]))[:10]),
        "top_memories": [m.view(120) for m in top],
        "last_updated": iso(newest),
        "embedding_model": store.model,
        "index_health": census,
        "vector_index": vector_index,
        "warnings": warnings,
        "runtime": ctx.runtime(),
    }


OTHER_WORKSPACES_SHOWN = 10  # db_scope names at most this many other workspaces


def db_scope(store, workspace: str, confined=None) -> dict:
    """Which workspaces own memories in this database file (the catalog is the file's rows,
    kept in step by every write), not which ones configuration says should: one database
    per workspace holds only when no other workspace owns a memory in it. `confined`: a
    remote caller (tools/registry.py Confinement), shown only the workspaces it may use."""
    owners = {w: n for w, n in store.per_workspace.items() if n > 0}
    others = sorted(((w, n) for w, n in owners.items() if w != workspace),
                    key=lambda wn: (-wn[1], wn[0]))
    named = others if confined is None else \
        [(w, n) for w, n in others if confined.allows_workspace(w)]
    return {"workspaces_in_database": len(owners), "shared": bool(others),
            "this_workspace_memories": owners.get(workspace, 0),
            "other_workspaces": [{"workspace": w, "memories": n}
                                 for w, n in named[:OTHER_WORKSPACES_SHOWN]],
            "other_workspaces_not_shown": len(others) - min(len(named),
                                                            OTHER_WORKSPACES_SHOWN),
            "other_memories": sum(n for _, n in others)}


def shared_database_warning(db_path: str, scope: dict) -> str:
    others = len(scope["other_workspaces"]) + scope["other_workspaces_not_shown"]
    return (f"shared database: {db_path} holds the memories of {others} other "
            f"workspace{'s' if others != 1 else ''} besides this one "
            f"({scope['other_memories']} memories, see db_scope.other_workspaces). This "
            "happens when MEMORY_DB_PATH points several projects at one file. Their memories "
            "live in one graph: search, list, get and export stay scoped to each workspace "
            "(unless global_search; memory_query sees every workspace's rows), but a lost or "
            "corrupted file loses all of them at once. To separate them: in each workspace "
            "run memory_export, unset "
            "MEMORY_DB_PATH (each project then keeps its own .memnest/memory.lbug) and "
            "memory_import the export there.")


def vector_index_status(store, census: dict) -> dict:
    """The vector index in one word, from index_census(): `ok` when every row with an
    embedding is in it and nothing else is, `degraded` (with why) when not, `empty` when the
    database has no rows."""
    why = []
    for key, text in (
            ("missing_from_vector_index", "{} rows with an embedding are not in the vector "
                                          "index (vector search cannot find them)"),
            ("stray_in_vector_index", "{} vectors belong to no row in the database"),
            ("rows_without_embedding", "{} rows have no embedding (vector search cannot find "
                                       "them)"),
            ("stale_embedding_signature", "{} rows were embedded by another model than "
                                          f"{store.model}")):
        if census[key]:
            why.append(text.format(census[key]))
    rows = census["rows_in_database"]
    reachable = census["rows_with_embedding"] - census["missing_from_vector_index"]
    out = {"status": "degraded" if why else ("empty" if rows == 0 else "ok"),
           "kind": "exact cosine, in memory", "vectors": census["vector_indexed"],
           "dim": store.vectors.dim, "model": store.model,
           "coverage": round(reachable / rows, 4) if rows else 1.0}
    if why:
        out["degraded_because"] = why
        out["repair"] = ("memory_dream embeds rows without an embedding or with another "
                         "model's; memory_reindex rebuilds the indexes from the database")
    return out


def index_census(store) -> dict:
    """Count, against the database itself, every row the search indexes should hold and do
    not (or hold and should not). Healthy only when every count of a problem is zero."""
    rows = store.db.census_rows()  # (id, has embedding, embedding model) of every row
    in_db = {i for i, _, _ in rows}
    embedded = {i for i, has_vector, _ in rows if has_vector}
    vector_ids, keyword_ids = store.vectors.ids(), store.keywords.ids()
    problems = {
        "missing_from_vector_index": len(embedded - vector_ids),
        "missing_from_keyword_index": len(in_db - keyword_ids),
        "stray_in_vector_index": len(vector_ids - embedded),
        "stray_in_keyword_index": len(keyword_ids - in_db),
        "rows_without_embedding": len(in_db - embedded),
        "stale_embedding_signature": sum(1 for _, _, model in rows if model != store.model),
    }
    return {"rows_in_database": len(in_db), "rows_with_embedding": len(embedded),
            "vector_indexed": len(vector_ids), "keyword_indexed": len(keyword_ids),
            **problems, "healthy": not any(problems.values())}
