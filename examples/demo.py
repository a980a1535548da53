"""`make run`: start memnestd (through the shim, as an editor would) and show a real store and
search over MCP stdio. The memories go to examples/demo-workspace/.memnest/."""
import json
import shutil
import sys
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "demo-workspace"
SHIM = shutil.which("memnest-mcp", path=str(Path(sys.executable).parent)) or "memnest-mcp"

MEMORIES = [
    {"content": "The team prefers Python for backend tools and TypeScript for the web UI.",
     "category": "preference", "tags": ["python", "typescript"]},
    {"content": "Deploys go out on Thursdays after the 14:00 sync; never on Fridays.",
     "category": "decision", "tags": ["deploy"], "importance": 4},
    {"content": "The integration tests need a running daemon on a temp socket.",
     "category": "learning", "tags": ["tests"]},
]


def show(title: str, result) -> dict:
    payload = json.loads(result.content[0].text) if not result.is_error else None
    print(f"\n== {title}")
    print(result.content[0].text if payload is None else json.dumps(payload, indent=2)[:1500])
    return payload


async def main() -> None:
    WORKSPACE.mkdir(exist_ok=True)
    params = StdioServerParameters(command=SHIM, cwd=str(WORKSPACE))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            print("tools from memnestd via memnest-mcp:", ", ".join(t.name for t in tools.tools))
            show("memory_store (batch)", await session.call_tool(
                "memory_store", {"items": MEMORIES}))
            found = show("memory_search: 'when do we ship to production?'",
                         await session.call_tool("memory_search", {
                             "query": "when do we ship to production?", "top_k": 2,
                             "preview_chars": 120}))
            top = found["results"][0]["content"]
            print(f"\nTop hit: {top}")
            show("memory_stats", await session.call_tool("memory_stats", {}))
    print("\nThe daemon keeps running for your editors; `.venv/bin/memnest-ctl status` shows "
          "it and `make stop` stops it.")


if __name__ == "__main__":
    anyio.run(main)
