"""The floor for the shim: a stdio MCP server on the same `mcp` SDK as memnest-mcp, with no
daemon and two tools that answer at once. bench/perf.py times spawn -> tool list of this
beside memnest-mcp's, so the difference is what memnest-mcp itself adds (its imports, the
daemon round trip); a call of `noop`: what any tool call costs over MCP stdio at least; a call
of `page`: what carrying a result of that size costs, given a real memory_search result saved
in the file BARE_PAGE_FILE names (answered as the shim answers: JSON text and the same dict
as structured content).

Run by bench/perf.py; by hand: .venv/bin/python bench/bare_mcp_server.py (speaks MCP on stdio).
"""
import json
import os
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


NOOP = types.Tool(name="noop", description="Answers at once.",
                  input_schema={"type": "object", "properties": {"query": {"type": "string"}}})


PAGE = types.Tool(name="page", description="Answers with the saved search result.",
                  input_schema={"type": "object", "properties": {"query": {"type": "string"}}})


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[NOOP, PAGE])


def _saved_page() -> dict:
    path = os.environ.get("BARE_PAGE_FILE")
    return json.loads(Path(path).read_text()) if path else {}


async def call_tool(ctx, params) -> types.CallToolResult:
    # decoded per call, as the shim decodes the daemon's answer; encoded as the shim does
    page = _saved_page() if params.name == "page" else {}
    text = json.dumps(page, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=page)


async def serve() -> None:
    server = Server("bare", version="0", on_list_tools=list_tools,
                    on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        pass
