"""`make run`: start memnestd (through the shim, as an editor would) and show a real store and
search over MCP stdio. The memories go to examples/demo-workspace/.memnest/."""
import json
import os
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


def payload(result) -> dict:
    if result.is_error:
        raise SystemExit(f"tool error: {result.content[0].text}")
    return json.loads(result.content[0].text)


async def main() -> None:
    WORKSPACE.mkdir(exist_ok=True)
    # MCP clients pass only a minimal environment to servers; forward memnest's own settings
    # as an editor's `env` block would.
    env = {k: v for k, v in os.environ.items() if k.startswith(("MEMORY_", "MEMNEST_"))}
    params = StdioServerParameters(command=SHIM, cwd=str(WORKSPACE), env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            print("tools served by memnestd through memnest-mcp:")
            print("  " + ", ".join(t.name for t in tools.tools))

            stored = payload(await session.call_tool("memory_store", {"items": MEMORIES}))
            print(f"\nmemory_store: {len(MEMORIES)} items -> "
                  + ", ".join(f"{r['status']} #{r['id']}" for r in stored["results"]))

            for query in ("when do we ship to production?", "which language for the UI?"):
                found = payload(await session.call_tool("memory_search", {
                    "query": query, "top_k": 2, "preview_chars": 100}))
                print(f"\nmemory_search: {query!r}")
                for r in found["results"]:
                    print(f"  #{r['id']}  score {r['score']:.3f}  {r['content']}")

            stats = payload(await session.call_tool("memory_stats", {}))
            health = "healthy" if stats["index_health"]["healthy"] else "UNHEALTHY"
            print(f"\nmemory_stats: {stats['memories']} memories in {stats['database']}, "
                  f"indexes {health}, model {stats['embedding_model']}, daemon pid "
                  f"{stats['runtime']['pid']}")
    print("\nThe daemon keeps running for your editors: `.venv/bin/memnest-ctl status` shows "
          "it, `make stop` stops it.")


if __name__ == "__main__":
    anyio.run(main)
