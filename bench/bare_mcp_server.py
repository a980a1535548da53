"""The floor for the shim: a stdio MCP server on the same `mcp` SDK as memnest-mcp, with no
daemon and one tool, `noop`, that answers at once. bench/perf.py times spawn -> tool list of
this beside memnest-mcp's, so the difference is what memnest-mcp itself adds (its imports, the
daemon round trip), and a call of `noop`: what any tool call costs over MCP stdio at least.

Run by bench/perf.py; by hand: .venv/bin/python bench/bare_mcp_server.py (speaks MCP on stdio).
"""
import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


NOOP = types.Tool(name="noop", description="Answers at once.",
                  input_schema={"type": "object", "properties": {"query": {"type": "string"}}})


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[NOOP])


async def call_tool(ctx, params) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text="{}")],
                                structured_content={})


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
