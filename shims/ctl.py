"""memnest-ctl: the daemon and the memories from a terminal or a script.

Every command takes --json for machine-readable output. Failures exit non-zero with one
line on stderr saying why.
"""
import argparse
import json
import sys
from pathlib import Path

from memnest_proto.version import VERSION

from . import workspace as ws
from .client import DaemonClient, DaemonUnavailable, ToolFailure
from .progress import Progress


class Failure(Exception):
    """A reason to exit 1, already phrased for the user."""


def _print_json(value) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def _workspace(args) -> str:
    if args.workspace:
        return str(Path(args.workspace).expanduser().resolve())
    return ws.from_env() or ws.from_cwd()


def _client(autostart: bool = True) -> DaemonClient:
    return DaemonClient(client_name="memnest-ctl", autostart=autostart)


def _call(client: DaemonClient, args, tool: str, arguments: dict) -> dict:
    try:
        return client.call_tool(tool, arguments, _workspace(args), ws.db_path_override())
    except ToolFailure as exc:
        raise Failure(f"{tool}: {exc.message}") from None


# -- commands ----------------------------------------------------------------------------------

def cmd_status(args) -> None:
    client = _client(autostart=False)
    if not client.is_running():
        if args.json:
            _print_json({"running": False, "socket": str(client.socket_path)})
            raise SystemExit(3)
        raise Failure(f"memnestd is not running on {client.socket_path}")
    s = client.status()
    facts = {
        "running": True, "version": s.version, "protocol_version": s.protocol_version,
        "pid": s.pid, "uptime_seconds": round(s.uptime_seconds, 1), "rss_bytes": s.rss_bytes,
        "embedding_model": s.embedding_model, "embedding_dim": s.embedding_dim,
        "model_load_seconds": round(s.model_load_seconds, 2), "socket": s.socket_path,
        "log": s.log_path, "calls_served": s.calls_served,
        "workspaces": [{"workspace": w.workspace, "database": w.db_path,
                        "memories": w.memories, "idle_seconds": round(w.idle_seconds, 1)}
                       for w in s.workspaces],
    }
    if args.json:
        _print_json(facts)
        return
    print(f"memnestd {s.version} (protocol {s.protocol_version}) pid {s.pid}, up "
          f"{s.uptime_seconds:.0f}s, {_mib(s.rss_bytes)} resident")
    print(f"model    {s.embedding_model} ({s.embedding_dim} dims, loaded in "
          f"{s.model_load_seconds:.1f}s)")
    print(f"socket   {s.socket_path}")
    print(f"log      {s.log_path}")
    print(f"calls    {s.calls_served}")
    if not s.workspaces:
        print("no workspace open")
    for w in s.workspaces:
        print(f"  {w.workspace}: {w.memories} memories, idle {w.idle_seconds:.0f}s ({w.db_path})")


def cmd_start(args) -> None:
    client = _client()
    already = client.is_running()
    if not already:
        client.start_daemon()
    s = client.status()
    if args.json:
        _print_json({"running": True, "pid": s.pid, "already_running": already,
                     "socket": s.socket_path})
    else:
        state = "already running" if already else "started"
        print(f"memnestd {state}: pid {s.pid} on {s.socket_path}")


def cmd_stop(args) -> None:
    client = _client(autostart=False)
    if not client.is_running():
        if args.json:
            _print_json({"stopped": False, "running": False})
        else:
            print("memnestd is not running")
        return
    pid = client.status().pid
    client.shutdown("memnest-ctl stop")
    if not client.wait_stopped(pid, timeout=40):
        raise Failure(f"memnestd (pid {pid}) did not stop within 40s")
    if args.json:
        _print_json({"stopped": True, "pid": pid})
    else:
        print(f"memnestd (pid {pid}) stopped")


def cmd_stats(args) -> None:
    stats = _call(_client(), args, "memory_stats", {})
    if args.json:
        _print_json(stats)
        return
    health = stats["index_health"]
    print(f"workspace  {stats['workspace']}")
    print(f"database   {stats['database']}")
    print(f"memories   {stats['memories']}  (topics {stats['topics']})")
    if stats["categories"]:
        print("categories " + ", ".join(f"{k} {v}" for k, v in stats["categories"].items()))
    print(f"model      {stats['embedding_model']}")
    print(f"indexes    {'healthy' if health['healthy'] else 'UNHEALTHY'} "
          f"(vector {health['vector_indexed']}, keyword {health['keyword_indexed']} of "
          f"{health['rows_in_database']})")


def cmd_store(args) -> None:
    content = args.content if args.content != "-" else sys.stdin.read()
    arguments = {"content": content, "importance": args.importance}
    if args.category:
        arguments["category"] = args.category
    if args.tag:
        arguments["tags"] = args.tag
    result = _call(_client(), args, "memory_store", arguments)
    if args.json:
        _print_json(result)
    else:
        print(f"{result['status']}: memory {result['id']} (importance {result['importance']})")


def cmd_search(args) -> None:
    arguments = {"query": args.query, "top_k": args.top_k}
    if args.global_search:
        arguments["global_search"] = True
    result = _call(_client(), args, "memory_search", arguments)
    if args.json:
        _print_json(result)
        return
    if not result["results"]:
        print("no memories found")
    for r in result["results"]:
        tags = f" [{', '.join(r['tags'])}]" if r["tags"] else ""
        print(f"{r['id']:>6}  {r['score']:.3f}  {r['content']}{tags}")


def _workspaces_for(args, client: DaemonClient) -> list[str]:
    if not args.all:
        return [_workspace(args)]
    client.ensure_running()
    found = [w.workspace for w in client.status().workspaces]
    if not found:
        raise Failure("the daemon has no workspace open; give --workspace DIR")
    return found


def _long_call(args, tool: str, arguments: dict) -> list[tuple[str, dict]]:
    """Run a long tool on one or all workspaces, streaming its progress."""
    client = _client()
    reports = []
    for workspace in _workspaces_for(args, client):
        progress = Progress(f"{tool.removeprefix('memory_')} {workspace}")
        try:
            reports.append((workspace, client.call_tool(
                tool, arguments, workspace, ws.db_path_override(), on_progress=progress)))
        except ToolFailure as exc:
            raise Failure(f"{tool} on {workspace}: {exc.message}") from None
        finally:
            progress.finish()
    return reports


def cmd_dream(args) -> None:
    reports = [r for _, r in _long_call(args, "memory_dream",
                                        {"dry_run": args.dry_run, "force": args.force})]
    if args.json:
        _print_json(reports if args.all else reports[0])
        return
    for r in reports:
        if r["status"] == "skipped":
            print(f"{r['workspace']}: skipped ({'; '.join(r['gates']['reasons'])}); "
                  "--force runs it anyway")
            continue
        verb = "would " if r["dry_run"] else ""
        merged = r.get("would_merge" if r["dry_run"] else "merged", [])
        pruned = r.get("would_prune" if r["dry_run"] else "pruned", [])
        cover = r["scan_coverage"]
        print(f"{r['workspace']}: {verb}merge {len(merged)}, {verb}prune {len(pruned)}, "
              f"{len(r['clusters'])} clusters to review, "
              f"{len(r['supersession_cycles'])} SUPERSEDES cycles; scanned {cover['examined']} "
              f"of {cover['corpus']} ({r['duration_ms']:.0f} ms)")
        for c in r["clusters"]:
            ids = ", ".join(f"#{m['id']}" for m in c["memories"])
            print(f"  review [{c['gate']}] {ids}: {c['resolution']}")


def cmd_reindex(args) -> None:
    reports = _long_call(args, "memory_reindex", {})
    if args.json:
        views = [{"workspace": w, **r} for w, r in reports]
        _print_json(views if args.all else views[0])
        return
    for workspace, r in reports:
        print(f"{workspace}: {r['memories']} memories; vector index {r['vector_indexed']}, "
              f"keyword index {r['keyword_indexed']} ({r['duration_ms']:.0f} ms)")


# -- parser --------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memnest-ctl",
                                     description="Control memnestd and use its memories.")
    parser.add_argument("--version", action="version", version=f"memnest-ctl {VERSION}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output")
    scoped = argparse.ArgumentParser(add_help=False, parents=[common])
    scoped.add_argument("--workspace", metavar="DIR",
                        help="workspace directory (default: $MEMORY_WORKSPACE or the "
                             "current directory)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("status", parents=[common], help="is the daemon running, and what it holds"
                   ).set_defaults(run=cmd_status)
    sub.add_parser("start", parents=[common], help="start the daemon if it is not running"
                   ).set_defaults(run=cmd_start)
    sub.add_parser("stop", parents=[common], help="drain and stop the daemon"
                   ).set_defaults(run=cmd_stop)
    sub.add_parser("stats", parents=[scoped], help="counts and index health of a workspace"
                   ).set_defaults(run=cmd_stats)
    store = sub.add_parser("store", parents=[scoped], help="remember something ('-' reads stdin)")
    store.add_argument("content")
    store.add_argument("--category", choices=["learning", "preference", "decision", "pattern",
                                              "general"])
    store.add_argument("--tag", action="append", help="a tag (repeatable)")
    store.add_argument("--importance", type=int, default=3, choices=range(1, 6))
    store.set_defaults(run=cmd_store)
    search = sub.add_parser("search", parents=[scoped], help="find memories")
    search.add_argument("query")
    search.add_argument("--top-k", type=int, default=10)
    search.add_argument("--global", dest="global_search", action="store_true",
                        help="search every workspace in the database")
    search.set_defaults(run=cmd_search)
    for name, run, text in (("dream", cmd_dream, "consolidate memory (memory_dream)"),
                            ("reindex", cmd_reindex, "rebuild the search indexes")):
        cmd = sub.add_parser(name, parents=[scoped], help=text)
        cmd.add_argument("--all", action="store_true",
                         help="every workspace the daemon has open")
        if name == "dream":
            cmd.add_argument("--dry-run", action="store_true",
                             help="report what it would do; change nothing")
            cmd.add_argument("--force", action="store_true", help="run despite the gates")
        cmd.set_defaults(run=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except Failure as exc:
        print(f"memnest-ctl: {exc}", file=sys.stderr)
        return 1
    except DaemonUnavailable as exc:
        print(f"memnest-ctl: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
