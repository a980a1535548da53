"""The floor for shim start-up: a stdio MCP server on the same `mcp` SDK as memnest-mcp, with
no tools and no daemon. bench/perf.py times spawn -> tool list of this beside memnest-mcp's,
so the difference is what memnest-mcp itself adds (its imports, the daemon round trip).

Run by bench/perf.py; by hand: .venv/bin/python bench/bare_mcp_server.py (speaks MCP on stdio).
"""
import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[])


async def serve() -> None:
    server = Server("bare", version="0", on_list_tools=list_tools)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        pass
