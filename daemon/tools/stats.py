"""memory_stats: what a workspace holds, the health of its search indexes, whether its
database file is shared with other workspaces, and the daemon's runtime."""
from typing import Any, Mapping, Protocol, TypedDict

from ..core.records import iso
from ..operations.stats import stats
from ..store.registry import database_path
from ..team import published
from .registry import Confinement, ToolContext, tool


class StatsArgs(TypedDict, total=False):
    """memory_stats takes no arguments."""


# -- memory_stats ----------------------------------------------------------------------------

def resolved_view(ctx: ToolContext) -> dict[str, str]:
    """Which workspace the call resolved to, and why (a wrong one is hard to notice)."""
    if ctx.resolution is not None:
        return ctx.resolution.view()
    return {"path": ctx.workspace, "why": "the workspace the client named"}


@tool("memory_stats",
      "Counts for this workspace (memories, categories, topics, most important), the database "
      "location, search index health (`index_health`, and `vector_index` with status ok, "
      "degraded or empty), `db_scope` (whether other workspaces keep memories in the same "
      "database file), `team` (last sync of teammates' files, files that could not be "
      "imported), `last_dream` (when the last dream ran and what it did), `resolved` (which "
      "workspace this call used, and why: a git worktree uses its repository's), `personal` "
      "(your personal tier), `worktree_merges`, `warnings` and the daemon's runtime.",
      {"type": "object", "properties": {}, "additionalProperties": False},
      read_only=True, idempotent=True)
def memory_stats(ctx: ToolContext, args: StatsArgs) -> dict[str, Any]:
    found = stats(ctx)
    store = ctx.store
    scope = db_scope(found.owners, ctx.workspace, ctx.confinement)
    vector_index = vector_index_status(store, found.census)
    warnings = [f"shared memory file not imported: {w}" for w in found.team_warnings]
    if ctx.published:
        warnings.append(published.warning(ctx.published))
    if scope["shared"]:
        warnings.append(shared_database_warning(store.db_path, scope))
    if vector_index["status"] == "degraded":
        warnings.append("vector index degraded: " + "; ".join(vector_index["degraded_because"])
                        + f". {vector_index['repair']}")
    return {
        "workspace": ctx.workspace,
        "resolved": resolved_view(ctx),
        "personal": {"memories": found.personal_memories,
                     "recalled": ctx.settings.user_recall} if found.personal_memories
        is not None else None,
        "worktree_merges": found.worktree_merges,
        "database": store.db_path if not ctx.found_nothing else
        database_path(ctx.workspace, ctx.db_path),
        "db_scope": scope,
        "memories": found.memories,
        "shared_memories": found.shared_memories,
        "team": {"last_sync": iso(found.team_synced_at), "problems": found.team_warnings},
        "last_dream": found.last_dream,
        "categories": found.categories,
        "topics": len(found.topics),
        "top_topics": dict(sorted(found.topics.items(), key=lambda kv: (-kv[1], kv[0]))[:10]),
        "top_memories": [m.view(120) for m in found.top],
        "last_updated": iso(found.last_updated),
        "embedding_model": store.model,
        "index_health": found.census,
        "vector_index": vector_index,
        "warnings": warnings,
        "runtime": ctx.runtime(),
    }


OTHER_WORKSPACES_SHOWN = 10  # db_scope names at most this many other workspaces


def db_scope(owners: Mapping[str, int], workspace: str,
             confined: Confinement | None = None) -> dict[str, Any]:
    """Which workspaces own memories in this database file (the catalog is the file's rows,
    kept in step by every write), not which ones configuration says should: one database
    per workspace holds only when no other workspace owns a memory in it. `confined`: a
    remote caller (tools/registry.py Confinement), shown only the workspaces it may use.
    `owners`: memories per workspace owning any (operations/stats.py)."""
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


def shared_database_warning(db_path: str, scope: Mapping[str, Any]) -> str:
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


class _Sized(Protocol):
    dim: int


class ModelFacts(Protocol):
    """What vector_index_status reads of a store: its model and its vectors' size."""
    model: str

    @property
    def vectors(self) -> _Sized: ...


def vector_index_status(store: ModelFacts, census: Mapping[str, int | bool]) -> dict[str, Any]:
    """The vector index in one word, from index_census(): `ok` when every row with an
    embedding is in it and nothing else is, `degraded` (with why) when not, `empty` when the
    database has no rows."""
    why: list[str] = []
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
    out: dict[str, Any] = {"status": "degraded" if why else ("empty" if rows == 0 else "ok"),
           "kind": "exact cosine, in memory", "vectors": census["vector_indexed"],
           "dim": store.vectors.dim, "model": store.model,
           "coverage": round(reachable / rows, 4) if rows else 1.0}
    if why:
        out["degraded_because"] = why
        out["repair"] = ("memory_dream embeds rows without an embedding or with another "
                         "model's; memory_reindex rebuilds the indexes from the database")
    return out

