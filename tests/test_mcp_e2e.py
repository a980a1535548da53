"""Through the real shim, driven by the MCP SDK's stdio client: every core tool as specified."""
import anyio

from support import error_text, result_json


def run(coro_fn):
    return anyio.run(coro_fn)


def test_tool_list_carries_schemas_and_annotations(daemon, workspace):
    async def body():
        async with daemon.mcp(workspace) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
        assert tools["memory_search"].input_schema["required"] == ["query"]
        assert tools["memory_search"].annotations.read_only_hint is True
        assert tools["memory_delete"].annotations.destructive_hint is True
        assert tools["memory_store"].annotations.read_only_hint is False
        assert all(t.description for t in tools.values())
    run(body)


def test_store_search_get_list_update_delete(daemon, workspace):
    async def body():
        async with daemon.mcp(workspace) as s:
            stored = result_json(await s.call_tool("memory_store", {
                "content": "The user prefers tabs over spaces in Go code",
                "category": "preference", "tags": ["Go", "style"], "importance": 4}))
            assert stored["status"] == "stored"
            memory_id = stored["id"]

            batch = result_json(await s.call_tool("memory_store", {"items": [
                {"content": "Release builds are signed with the hardware key"},
                {"content": "The staging database is reset every Monday", "tags": ["ops"]},
                {"content": "Release builds are signed with the hardware key"},
            ]}))
            assert [r["status"] for r in batch["results"]] == ["stored", "stored", "duplicate"]
            assert batch["results"][2]["id"] == batch["results"][0]["id"]

            # Exact duplicate: no second memory, importance bumped.
            again = result_json(await s.call_tool("memory_store", {
                "content": "The user prefers tabs over  spaces in Go code"}))
            assert again == {"status": "duplicate", "id": memory_id, "importance": 5}

            found = result_json(await s.call_tool("memory_search", {
                "query": "indentation style for golang", "top_k": 3}))
            assert found["results"][0]["id"] == memory_id
            assert found["results"][0]["tags"] == ["go", "style"]

            got = result_json(await s.call_tool("memory_get", {"id": memory_id}))
            assert got["content"] == "The user prefers tabs over spaces in Go code"
            assert got["edges"] == []
            many = result_json(await s.call_tool("memory_get", {"ids": [memory_id, 999999]}))
            assert [m["id"] for m in many["memories"]] == [memory_id]
            assert many["missing"] == [999999]

            listed = result_json(await s.call_tool("memory_list", {"limit": 2}))
            assert listed["total"] == 3 and listed["has_more"] is True
            assert len(listed["memories"]) == 2
            rest = result_json(await s.call_tool("memory_list", {"limit": 2, "offset": 2}))
            assert rest["has_more"] is False and len(rest["memories"]) == 1
            seen = {m["id"] for m in listed["memories"] + rest["memories"]}
            assert len(seen) == 3
            ops = result_json(await s.call_tool("memory_list", {"topic": "OPS"}))
            assert [m["content"] for m in ops["memories"]] == [
                "The staging database is reset every Monday"]
            by_importance = result_json(await s.call_tool("memory_list",
                                                          {"order_by": "importance"}))
            assert by_importance["memories"][0]["id"] == memory_id

            updated = result_json(await s.call_tool("memory_update", {
                "id": memory_id, "content": "The user prefers spaces (4) over tabs in Go code",
                "tags": ["go"]}))
            assert updated["status"] == "updated"
            assert updated["memory"]["tags"] == ["go"]
            found = result_json(await s.call_tool("memory_search", {"query": "tabs or spaces"}))
            assert "spaces (4)" in found["results"][0]["content"]
            topics = result_json(await s.call_tool("memory_stats", {}))["top_topics"]
            assert "style" not in topics and topics["go"] == 1

            deleted = result_json(await s.call_tool("memory_delete", {"ids": [memory_id, 424242]}))
            assert deleted == {"status": "partial", "deleted": [memory_id], "missing": [424242]}
            gone = result_json(await s.call_tool("memory_delete", {"id": memory_id}))
            assert gone["status"] == "not_found"
            assert "no memory with id" in error_text(
                await s.call_tool("memory_get", {"id": memory_id}))
            found = result_json(await s.call_tool("memory_search", {"query": "tabs or spaces"}))
            assert memory_id not in {r["id"] for r in found["results"]}

            stats = result_json(await s.call_tool("memory_stats", {}))
            assert stats["memories"] == 2
            assert stats["index_health"]["healthy"] is True
            assert stats["database"] == str(workspace / ".memnest" / "memory.lbug")
    run(body)


def test_search_pages_filters_and_fusion_modes(daemon, workspace, call):
    call("memory_store", items=[
        {"content": f"Note {n} about the payment service retry policy", "category": "learning",
         "tags": ["payments"] if n % 2 else ["billing"]} for n in range(12)]
        + [{"content": "Lunch is at noon", "category": "general"}])
    first = call("memory_search", query="payment retries", top_k=5)
    second = call("memory_search", query="payment retries", top_k=5, offset=5)
    assert first["has_more"] is True and len(first["results"]) == 5
    assert not {r["id"] for r in first["results"]} & {r["id"] for r in second["results"]}
    scores = [r["score"] for r in first["results"] + second["results"]]
    assert scores == sorted(scores, reverse=True)

    only_payments = call("memory_search", query="payment retries", tags=["payments"], top_k=20)
    assert only_payments["results"] and all(
        r["tags"] == ["payments"] for r in only_payments["results"])
    general = call("memory_search", query="payment retries", category="general")
    assert [r["content"] for r in general["results"]] == ["Lunch is at noon"]

    for mode in ("legacy", "rrf"):
        ranked = call("memory_search", query="when is lunch", fusion=mode, explain=True)
        assert ranked["results"][0]["content"] == "Lunch is at noon"
        parts = ranked["results"][0]["explain"]
        assert set(parts) == {"vector", "keyword", "importance", "recency"}


def test_workspaces_are_isolated_unless_global(daemon, tmp_path, call):
    a, b = tmp_path / "alpha", tmp_path / "beta"
    a.mkdir()
    b.mkdir()
    stored = call("memory_store", ws=a, content="Alpha uses PostgreSQL 16 for storage")
    assert call("memory_search", ws=b, query="PostgreSQL storage")["results"] == []
    assert call("memory_get", ws=b, ids=[stored["id"]])["missing"] == [stored["id"]]
    assert call("memory_list", ws=b)["total"] == 0

    # Two workspaces sharing one database (MEMORY_DB_PATH): rows are scoped by workspace.
    (tmp_path / "team" / ".memnest").mkdir(mode=0o700, parents=True)
    shared = str(tmp_path / "team" / ".memnest" / "shared.lbug")
    client = daemon.client()
    client.call_tool("memory_store", {"content": "Alpha deploys with Helm"}, str(a), shared)
    scoped = client.call_tool("memory_search", {"query": "Helm deploys"}, str(b), shared)
    assert scoped["results"] == []
    everywhere = client.call_tool("memory_search", {"query": "Helm deploys",
                                                    "global_search": True}, str(b), shared)
    assert everywhere["results"][0]["content"] == "Alpha deploys with Helm"
    assert everywhere["scope"] == "global"


def test_workspace_from_env_and_db_path_override(daemon, tmp_path):
    pinned = tmp_path / "pinned"
    pinned.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    async def body():
        async with daemon.mcp(elsewhere, MEMORY_WORKSPACE=str(pinned)) as s:
            result_json(await s.call_tool("memory_store", {"content": "pinned workspace note"}))
            stats = result_json(await s.call_tool("memory_stats", {}))
        assert stats["workspace"] == str(pinned.resolve())
        assert (pinned / ".memnest" / "memory.lbug").exists()
        async with daemon.mcp(elsewhere, MEMORY_DB_PATH=":memory:") as s:
            result_json(await s.call_tool("memory_store", {"content": "ephemeral note"}))
            stats = result_json(await s.call_tool("memory_stats", {}))
        assert stats["database"] == ":memory:"
        assert not (elsewhere / ".memnest").exists()
    anyio.run(body)


def test_long_batch_streams_progress(daemon, workspace):
    client = daemon.client()
    events = []
    items = [{"content": f"Streaming item {n}: the queue depth alarm fires at {n * 3}"}
             for n in range(150)]
    result = client.call_tool("memory_store", {"items": items}, str(workspace),
                              on_progress=lambda done, total, msg: events.append((done, total)))
    assert result["stored"] == 150
    assert events and events[-1] == (150, 150)
    assert [d for d, _ in events] == sorted(d for d, _ in events)


def test_progress_reaches_the_mcp_client(daemon, workspace):
    async def body():
        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total))

        async with daemon.mcp(workspace) as s:
            items = [{"content": f"Progress note {n} for the MCP client"} for n in range(130)]
            r = await s.call_tool("memory_store", {"items": items},
                                  progress_callback=on_progress)
            assert result_json(r)["stored"] == 130
        return seen

    seen = anyio.run(body)
    assert seen and seen[-1] == (130, 130)
