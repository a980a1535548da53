"""memory_set_workspace pins a shim's later calls; MEMORY_RESPONSE_FORMAT picks the text."""
import json

import anyio
import toon_format

from support import error_text, result_json


def test_set_workspace_pins_the_rest_of_the_session(daemon, tmp_path):
    start, other = tmp_path / "start", tmp_path / "other"
    start.mkdir()
    other.mkdir()

    async def body():
        async with daemon.mcp(start) as s:
            result_json(await s.call_tool("memory_store", {"content": "lives in start"}))
            pinned = result_json(await s.call_tool("memory_set_workspace",
                                                   {"workspace": "../other"}))
            assert pinned["workspace"] == str(other.resolve())
            assert pinned["database"] == str(other.resolve() / ".memnest" / "memory.lbug")
            result_json(await s.call_tool("memory_store", {"content": "lives in other"}))
            listed = result_json(await s.call_tool("memory_list", {}))
            assert [m["content"] for m in listed["memories"]] == ["lives in other"]
            bad = error_text(await s.call_tool("memory_set_workspace",
                                               {"workspace": "/does/not/exist"}))
            assert "not an existing directory" in bad
            # A failed pin leaves the session where it was.
            stats = result_json(await s.call_tool("memory_stats", {}))
            assert stats["workspace"] == str(other.resolve())
    anyio.run(body)


def test_toon_response_format(daemon, workspace):
    async def body():
        async with daemon.mcp(workspace, MEMORY_RESPONSE_FORMAT="toon") as s:
            await s.call_tool("memory_store", {"items": [
                {"content": "TOON keeps lists of records compact", "tags": ["format"]},
                {"content": "JSON stays the default format", "tags": ["format"]}]})
            result = await s.call_tool("memory_search", {"query": "compact format"})
        text = result.content[0].text
        assert not text.lstrip().startswith("{")
        decoded = toon_format.decode(text)
        assert decoded["results"][0]["content"] == "TOON keeps lists of records compact"
        assert result.structured_content["results"][0]["tags"] == ["format"]
        async with daemon.mcp(workspace) as s:
            plain = (await s.call_tool("memory_list", {})).content[0].text
        assert json.loads(plain)["total"] == 2 and ", " not in plain[:20]
    anyio.run(body)
