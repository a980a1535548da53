"""MEMORY_RESPONSE_FORMAT through the real shim: compact JSON by default (measured cheaper
than TOON for memnest's results, bench/response_tokens.py), TOON when asked, the same data
either way; a bad value falls back to JSON with a warning. The rendering itself:
tests/daemon/server/test_render.py."""
import json

import anyio
import toon_format

MEMORIES = [
    {"content": "Deploys go out on Tuesday after the 10:00 sync, never on Fridays.",
     "category": "decision", "tags": ["deploy", "process"], "importance": 4},
    {"content": 'Run the checks before pushing:\n  make lint\n  make test -k "not slow"',
     "category": "pattern", "tags": ["testing"], "importance": 3},
    {"content": "Alice prefers ruff over flake8, because it is faster; \"quotes\", commas: "
                "and C:\\paths stay intact …", "category": "preference", "tags": ["tooling"]},
]


def calls(ids: list[int]) -> list[tuple[str, dict]]:
    return [("memory_search", {"query": "when do deploys go out", "top_k": 3, "explain": True}),
            ("memory_list", {"limit": 20}),
            ("memory_get", {"ids": [*ids, 999999]}),
            ("memory_get", {"id": ids[0]}),
            ("memory_stats", {})]


# -- through the real shim -------------------------------------------------------------------

def test_the_shim_sends_the_same_data_in_both_formats(daemon, workspace):
    """Each result's text, JSON by default and TOON when asked, decodes to the structured
    content the shim sends beside it; errors stay plain text in both."""
    seen: dict[str, list] = {}

    async def session(fmt: str | None, ids: list[int]) -> list:
        env = {} if fmt is None else {"MEMORY_RESPONSE_FORMAT": fmt}
        out = []
        async with daemon.mcp(workspace, **env) as s:
            for tool, arguments in calls(ids):
                result = await s.call_tool(tool, arguments)
                assert not result.is_error, result.content[0].text
                out.append((tool, result.content[0].text, result.structured_content))
            missing = await s.call_tool("memory_get", {"id": 999999})
            assert missing.is_error and missing.content[0].text.startswith("not_found: ")
        return out

    async def body():
        async with daemon.mcp(workspace) as s:
            stored = await s.call_tool("memory_store", {"items": MEMORIES})
        ids = [r["id"] for r in json.loads(stored.content[0].text)["results"]]
        seen["json"] = await session(None, ids)
        seen["toon"] = await session("toon", ids)
    anyio.run(body)

    for tool, text, structured in seen["json"]:
        assert text.startswith("{") and json.loads(text) == structured, tool
    for tool, text, structured in seen["toon"]:
        assert not text.lstrip().startswith("{"), tool
        assert toon_format.decode(text) == structured, tool
    for fmt, decode in (("json", json.loads), ("toon", toon_format.decode)):
        search, listed, got, one, stats = (decode(text) for _, text, _ in seen[fmt])
        assert search["results"] and all("explain" in r for r in search["results"])
        assert {m["content"] for m in listed["memories"]} == {m["content"] for m in MEMORIES}
        assert len(got["memories"]) == 3 and got["missing"] == [999999]
        assert one["content"] == MEMORIES[0]["content"] and one["tags"] == ["deploy", "process"]
        assert stats["memories"] == 3

def test_the_shim_warns_about_a_bad_value_and_answers_in_json(daemon, workspace):
    async def body():
        async with daemon.mcp(workspace, MEMORY_RESPONSE_FORMAT="yaml-please") as s:
            return await s.call_tool("memory_stats", {})
    result = anyio.run(body)
    assert json.loads(result.content[0].text) == result.structured_content
    log = (daemon.root / "shim-stderr.log").read_text()
    assert "MEMORY_RESPONSE_FORMAT='yaml-please' is not one of json, toon; using json" in log
