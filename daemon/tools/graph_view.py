"""memory_graph_html: the workspace's memories, topics and links as one interactive HTML page."""
import os
from pathlib import Path

from ..core.errors import invalid
from ..core.records import iso, utcnow
from ..storage.safe_files import write_file_keeping
from .graph_page import SIGNATURE, render
from .registry import ToolContext, tool

DEFAULT_PATH = ".memnest/graph.html"


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
       },
       "additionalProperties": False},
      idempotent=True)
def memory_graph_html(ctx: ToolContext, args: dict) -> dict:
    ceiling = ctx.settings.graph_max_nodes
    limit = args.get("max_nodes", ceiling)
    if limit > ceiling:
        raise invalid(f"max_nodes {limit} is over MEMORY_GRAPH_MAX_NODES ({ceiling}); a page "
                      "that large is slow to draw. Raise the setting if you really need it")
    with_topics = args.get("include_topics", True)
    store = ctx.store
    with store.reading():
        memories = sorted(store.in_scope(ctx.workspace), key=lambda m: m.id)
        topics: dict[str, int] = {}
        if with_topics:
            for m in memories:
                for t in m.tags:
                    topics[t] = topics.get(t, 0) + 1
        nodes = len(memories) + len(topics)
        if nodes > limit:
            hint = " (leave topics out with include_topics=false)" if topics and \
                len(memories) <= limit else ""
            raise invalid(f"this workspace's graph has {nodes} nodes ({len(memories)} "
                          f"memories, {len(topics)} topics), over the limit of {limit}"
                          f"{hint}; MEMORY_GRAPH_MAX_NODES sets the limit")
        ids = {m.id for m in memories}
        graph = store.graph
        edges = sorted(e for e in graph.edges if e[1] in ids and e[2] in ids)
        separate = sorted(p for p in graph.separate if p[0] in ids and p[1] in ids)
        data = {
            "workspace_name": os.path.basename(ctx.workspace.rstrip(os.sep)) or ctx.workspace,
            "generated_at": iso(utcnow()),
            "memories": [{"id": m.id, "content": m.content, "category": m.category,
                          "tags": list(m.tags), "importance": m.importance,
                          "access_count": m.access_count, "created_at": iso(m.created_at),
                          "updated_at": iso(m.updated_at),
                          "superseded": bool(graph.superseded_by(m.id))} for m in memories],
            "topics": [{"name": t, "count": n} for t, n in sorted(topics.items())],
            "edges": [{"type": rel, "from": a, "to": b} for rel, a, b in edges],
            "separate": [[a, b] for a, b in separate],
        }
    page = render(data)
    path, snapshots = write_file_keeping(ctx.workspace, args.get("path"), DEFAULT_PATH, page,
                                         SIGNATURE, "graph page", ctx.settings.output_dir,
                                         ctx.settings.graph_snapshots, ctx.confinement)
    out = {"path": path, "url": Path(path).as_uri(), "nodes": nodes,
           "memories": len(memories), "topics": len(topics), "edges": len(edges),
           "keep_separate": len(separate), "bytes": len(page)}
    if snapshots is not None:
        out["snapshot"] = snapshots
    return out
