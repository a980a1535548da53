"""Issue 20: memory_stats says whether the database file is this workspace's alone (`db_scope`,
judged from the rows, with a warning when several workspaces share it) and how the vector
index stands (`vector_index`); memory_search's explain says what the search considered
(`explain_meta`)."""
from types import SimpleNamespace

from support import db_edit
from memnest_daemon.tools.stats import vector_index_status
from memnest_proto.contract import OFFLINE_MODEL


def _shared_database(tmp_path, name):
    """A database file several projects name (MEMORY_DB_PATH), in a `.memnest/` of its own."""
    folder = tmp_path / "team" / ".memnest"
    folder.mkdir(mode=0o700, parents=True)
    return str(folder / name)


def _workspaces(tmp_path, *names):
    out = []
    for name in names:
        path = (tmp_path / name)
        path.mkdir()
        out.append(path.resolve())
    return out


# -- db_scope ------------------------------------------------------------------------------

def test_a_workspaces_own_database_is_not_shared(call, workspace):
    empty = call("memory_stats")
    assert empty["db_scope"] == {"workspaces_in_database": 0, "shared": False,
                                 "this_workspace_memories": 0, "other_workspaces": [],
                                 "other_workspaces_not_shown": 0, "other_memories": 0}
    assert empty["warnings"] == []
    assert empty["vector_index"]["status"] == "empty"

    call("memory_store", items=[{"content": "The API gateway retries twice"},
                                {"content": "Staging runs on a single node"}])
    stats = call("memory_stats")
    assert stats["db_scope"]["workspaces_in_database"] == 1
    assert stats["db_scope"]["shared"] is False
    assert stats["db_scope"]["this_workspace_memories"] == 2
    assert stats["warnings"] == []
    vector = stats["vector_index"]
    assert vector["status"] == "ok" and vector["vectors"] == 2 and vector["coverage"] == 1.0
    assert vector["dim"] == 384 and vector["model"] == OFFLINE_MODEL == stats["embedding_model"]
    assert "degraded_because" not in vector


def test_a_database_shared_through_memory_db_path_is_reported_and_warned(daemon, tmp_path):
    """MEMORY_DB_PATH pointing three projects at one file: each sees the others' counts."""
    shared = _shared_database(tmp_path, "shared.lbug")
    alpha, beta, gamma = _workspaces(tmp_path, "alpha", "beta", "gamma")
    client = daemon.client()
    try:
        for ws, n in ((alpha, 3), (beta, 1), (gamma, 2)):
            client.call_tool("memory_store", {"items": [
                {"content": f"{ws.name} fact number {k}: port {9000 + k}"} for k in range(n)]},
                str(ws), shared)
        stats = client.call_tool("memory_stats", {}, str(beta), shared)
        # The same projects on their own databases are not shared.
        alone = client.call_tool("memory_stats", {}, str(alpha))
    finally:
        client.close()
    scope = stats["db_scope"]
    assert scope["workspaces_in_database"] == 3 and scope["shared"] is True
    assert scope["this_workspace_memories"] == 1 and scope["other_memories"] == 5
    assert scope["other_workspaces"] == [{"workspace": str(alpha), "memories": 3},
                                         {"workspace": str(gamma), "memories": 2}]
    assert stats["memories"] == 1  # the counts stay this workspace's
    [warning] = stats["warnings"]
    for words in ("shared database", shared, "2 other workspaces", "MEMORY_DB_PATH",
                  "one graph", "loses all of them", "memory_export", "memory_import"):
        assert words in warning, (words, warning)
    assert alone["db_scope"]["shared"] is False and alone["warnings"] == []


def test_the_list_of_other_workspaces_is_bounded(daemon, tmp_path):
    shared = _shared_database(tmp_path, "many.lbug")
    spaces = _workspaces(tmp_path, *[f"project{n:02d}" for n in range(13)])
    client = daemon.client()
    try:
        for n, ws in enumerate(spaces):
            client.call_tool("memory_store", {"content": f"Project {n} builds with tool {n}"},
                             str(ws), shared)
        stats = client.call_tool("memory_stats", {}, str(spaces[0]), shared)
    finally:
        client.close()
    scope = stats["db_scope"]
    assert scope["workspaces_in_database"] == 13
    assert len(scope["other_workspaces"]) == 10 and scope["other_workspaces_not_shown"] == 2
    assert scope["other_memories"] == 12
    assert "12 other workspaces" in stats["warnings"][0]


# -- vector_index --------------------------------------------------------------------------

def _census(**problems):
    base = {"rows_in_database": 10, "rows_with_embedding": 10, "vector_indexed": 10,
            "keyword_indexed": 10, "missing_from_vector_index": 0,
            "missing_from_keyword_index": 0, "stray_in_vector_index": 0,
            "stray_in_keyword_index": 0, "rows_without_embedding": 0,
            "stale_embedding_signature": 0}
    base.update(problems)
    return base


def test_vector_index_status_follows_the_census():
    store = SimpleNamespace(model="m", vectors=SimpleNamespace(dim=8))
    assert vector_index_status(store, _census())["status"] == "ok"
    assert vector_index_status(store, _census(rows_in_database=0, rows_with_embedding=0,
                                              vector_indexed=0))["status"] == "empty"
    # a keyword-index problem is index_health's business, not the vector index's
    assert vector_index_status(store, _census(missing_from_keyword_index=2))["status"] == "ok"
    missing = vector_index_status(store, _census(missing_from_vector_index=3, vector_indexed=7))
    assert missing["status"] == "degraded" and missing["coverage"] == 0.7
    assert "3 rows with an embedding are not in the vector index" in \
        missing["degraded_because"][0]
    assert "memory_reindex" in missing["repair"]
    stray = vector_index_status(store, _census(stray_in_vector_index=1, vector_indexed=11))
    assert stray["status"] == "degraded" and stray["coverage"] == 1.0
    assert "1 vectors belong to no row" in stray["degraded_because"][0]


def test_a_degraded_vector_index_shows_in_stats_and_in_search_coverage(fresh_daemon,
                                                                        workspace):
    fresh_daemon.env["MEMNEST_UPKEEP_IDLE_MINUTES"] = "0"
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    try:
        stored = client.call_tool("memory_store", {"items": [
            {"content": "The billing job runs at midnight"},
            {"content": "The billing export goes to the finance bucket"}]}, str(workspace))
        kept, stale = [r["id"] for r in stored["results"]]
        fresh_daemon.stop()
        db_edit(workspace, [("MATCH (m:Memory) WHERE m.id = $id SET m.embedding = NULL, "
                              "m.embedding_model = 'old/model'", {"id": stale})])
        fresh_daemon.start()
        stats = client.call_tool("memory_stats", {}, str(workspace))
        found = client.call_tool("memory_search", {"query": "billing", "explain": True},
                                 str(workspace))
        client.call_tool("memory_dream", {"force": True}, str(workspace))  # re-embeds it
        healed = client.call_tool("memory_stats", {}, str(workspace))
    finally:
        client.close()
    vector = stats["vector_index"]
    assert vector["status"] == "degraded" and vector["vectors"] == 1
    assert vector["coverage"] == 0.5
    because = " | ".join(vector["degraded_because"])
    assert "1 rows have no embedding" in because and "another model" in because
    assert any(w.startswith("vector index degraded") for w in stats["warnings"])
    coverage = found["explain_meta"]["vector_coverage"]
    assert coverage["reachable"] == 1 and coverage["in_scope"] == 2
    assert coverage["complete"] is False and coverage["share"] == 0.5
    assert {r["id"] for r in found["results"]} == {kept, stale}  # the keyword channel has it
    assert healed["vector_index"]["status"] == "ok" and healed["warnings"] == []


# -- explain_meta --------------------------------------------------------------------------

def test_explain_meta_counts_what_the_search_considered(call):
    stored = call("memory_store", items=[
        {"content": "Deploys go out on Tuesdays after the standup", "category": "decision",
         "tags": ["deploy"]},
        {"content": "Deploys used to go out on Fridays", "category": "decision",
         "tags": ["deploy"]},
        {"content": "The cafeteria serves soup on Mondays", "category": "general"},
        {"content": "Rollbacks are owned by the on-call engineer", "category": "pattern",
         "importance": 5}])
    new, old = stored["results"][0]["id"], stored["results"][1]["id"]
    call("memory_relate", relations=[{"from_id": new, "to_id": old,
                                      "relationship": "SUPERSEDES"}])

    plain = call("memory_search", query="when do deploys go out")
    assert "explain_meta" not in plain and "explain" not in plain["results"][0]

    found = call("memory_search", query="when do deploys go out", explain=True)
    meta = found["explain_meta"]
    assert {r["id"] for r in found["results"]} == {r["id"] for r in plain["results"]}
    assert meta["fusion"] == "context" and meta["scope"] == "workspace"
    assert meta["corpus"] == meta["in_workspace"] == meta["in_scope"] == 4
    assert meta["pool"] == 100 and meta["filters"] == {}
    candidates = meta["candidates"]
    assert candidates["vector"] == 4  # the vector channel sees every memory in scope
    assert 2 <= candidates["keyword"] <= 4 and candidates["both"] == candidates["keyword"]
    assert candidates["considered"] == meta["ranked"] == 4
    assert meta["dropped_by_filters"] == 0 and meta["superseded_demoted"] == 1
    assert meta["vector_coverage"] == {"census_mode": "ranked_hits", "reachable": 4,
                                       "in_scope": 4, "share": 1.0, "complete": True,
                                       "scan": "full"}

    filtered = call("memory_search", query="when do deploys go out", explain=True,
                    category="decision", min_importance=2, fusion="legacy")["explain_meta"]
    assert filtered["fusion"] == "legacy"
    assert filtered["filters"] == {"category": "decision", "min_importance": 2}
    assert filtered["in_workspace"] == 4 and filtered["in_scope"] == 2
    assert filtered["candidates"]["vector"] == 2 and filtered["ranked"] == 2
    assert filtered["vector_coverage"]["complete"] is True


def test_explain_meta_in_a_shared_database_and_above_the_pool(daemon, tmp_path):
    shared = _shared_database(tmp_path, "shared.lbug")
    mine, theirs = _workspaces(tmp_path, "mine", "theirs")
    client = daemon.client()
    try:
        client.call_tool("memory_store", {"items": [
            {"content": f"Service {n} listens on port {7000 + n}"} for n in range(120)]},
            str(mine), shared)
        client.call_tool("memory_store", {"content": "Their service listens on port 80"},
                         str(theirs), shared)
        scoped = client.call_tool("memory_search", {"query": "which port does service 7 use",
                                                    "explain": True}, str(mine), shared)
        everywhere = client.call_tool("memory_search", {
            "query": "which port", "explain": True, "global_search": True}, str(theirs),
            shared)
    finally:
        client.close()
    meta = scoped["explain_meta"]
    assert meta["corpus"] == 121 and meta["in_workspace"] == meta["in_scope"] == 120
    # The pool (100) is smaller than the scope: coverage is counted id by id, and complete.
    assert meta["candidates"]["vector"] == 100
    assert meta["vector_coverage"] == {"census_mode": "id_probe", "reachable": 120,
                                       "in_scope": 120, "share": 1.0, "complete": True,
                                       "scan": "full"}
    wide = everywhere["explain_meta"]
    assert wide["scope"] == "global" and wide["in_workspace"] == wide["in_scope"] == 121
    assert wide["vector_coverage"]["reachable"] == 121
