"""memory_graph_html: the workspace's memories, topics and links (operations/graph_view.py
gathers them) as one interactive HTML page (tools/graph_page.py draws it)."""
import os
from pathlib import Path
from typing import Any, TypedDict

from ..core.errors import invalid
from ..core.records import iso
from ..operations.graph_view import Graph, gather_graph
from ..storage.safe_files import write_file_keeping
from .graph_page import SIGNATURE, render
from .registry import ToolContext, tool

DEFAULT_PATH = ".memnest/graph.html"


class GraphHtmlArgs(TypedDict, total=False):
    path: str
    max_nodes: int
    include_topics: bool
    inline: bool


@tool("memory_graph_html",
      "Draw this workspace's memories, their topics and links as one self-contained, "
      "interactive HTML page (opens offline in any browser; click a node for its details). "
      "It is written under the workspace's .memnest/ folder (default .memnest/graph.html); "
      "the page it replaces is kept as a timestamped snapshot beside it (default "
      ".memnest/graph-snapshots/, the newest MEMORY_GRAPH_SNAPSHOTS; `snapshot` in the "
      "result says which was kept and which were pruned). Refuses graphs with more nodes "
      "than MEMORY_GRAPH_MAX_NODES.",
      {"type": "object",
       "properties": {
           "path": {"type": "string", "minLength": 1, "maxLength": 4096,
                    "description": "File to write, under .memnest/ in the workspace (or "
                                   "under MEMNEST_OUTPUT_DIR when the user set one)."},
           "max_nodes": {"type": "integer", "minimum": 1, "maximum": 10**9,
                         "description": "Refuse above this many nodes (memories + topics); "
                                        "at most MEMORY_GRAPH_MAX_NODES, which is the "
                                        "default."},
           "include_topics": {"type": "boolean",
                              "description": "Draw topics (tags) as nodes; default true."},
           "inline": {"type": "boolean",
                      "description": "Return the page as `html` in the result instead of "
                                     "writing a file (what memnest-ctl ui shows); default "
                                     "false."},
       },
       "additionalProperties": False},
      idempotent=True)
def memory_graph_html(ctx: ToolContext, args: GraphHtmlArgs) -> dict[str, Any]:
    ceiling = ctx.settings.graph_max_nodes
    limit = args.get("max_nodes", ceiling)
    if limit > ceiling:
        raise invalid(f"max_nodes {limit} is over MEMORY_GRAPH_MAX_NODES ({ceiling}); a page "
                      "that large is slow to draw. Raise the setting if you really need it")
    ctx.reading = bool(args.get("inline"))  # a page handed back creates nothing
    graph = gather_graph(ctx, limit, args.get("include_topics", True))
    page = render(_page_data(graph, ctx.workspace))
    counts = {"nodes": graph.nodes, "memories": len(graph.memories),
              "topics": len(graph.topics), "edges": len(graph.edges),
              "keep_separate": len(graph.separate), "bytes": len(page)}
    if args.get("inline"):
        if "path" in args:
            raise invalid("give `path` to write the page, or `inline` to get it back, not both")
        return {"html": page.decode("utf-8"), **counts}
    path, snapshots = write_file_keeping(ctx.workspace, args.get("path"), DEFAULT_PATH, page,
                                         SIGNATURE, "graph page", ctx.settings.output_dir,
                                         ctx.settings.graph_snapshots, ctx.confinement)
    out = {"path": path, "url": Path(path).as_uri(), **counts}
    if snapshots is not None:
        out["snapshot"] = snapshots
    return out


def _page_data(graph: Graph, workspace: str) -> dict[str, Any]:
    """What the page's script draws (tools/graph_page.py)."""
    return {
        "workspace_name": os.path.basename(workspace.rstrip(os.sep)) or workspace,
        "generated_at": iso(graph.generated_at),
        "memories": [{"id": m.id, "content": m.content, "category": m.category,
                      "tags": list(m.tags), "importance": m.importance,
                      "access_count": m.access_count, "created_at": iso(m.created_at),
                      "updated_at": iso(m.updated_at),
                      "superseded": m.id in graph.superseded} for m in graph.memories],
        "topics": [{"name": t, "count": n} for t, n in graph.topics.items()],
        "edges": [{"type": rel, "from": a, "to": b} for rel, a, b in graph.edges],
        "separate": [[a, b] for a, b in graph.separate],
    }
