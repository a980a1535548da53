"""memnest-ctl stats, store, relate, unrelate, keep-separate, search, personal, show, stale:
the memories of one workspace (and the person's own, the personal tier)."""
import argparse
import os
import sys

from memnest_proto.contract import CATEGORIES

from ..common import Command, ToolArguments, ToolResult, bounded, call, client, print_json
from ..terminal import one_line


def cmd_stats(args: argparse.Namespace) -> None:
    stats = call(client(), args, "memory_stats", {})
    if args.json:
        print_json(stats)
        return
    health = stats["index_health"]
    print(f"workspace  {stats['workspace']}")
    resolved = stats.get("resolved") or {}
    if resolved.get("why"):
        print(f"           ({resolved['why']})")
    print(f"database   {stats['database']}"
          + ("  (none yet: the first store creates it)" if stats.get("no_memory") else ""))
    print(f"memories   {stats['memories']}  (topics {stats['topics']})")
    if stats["categories"]:
        print("categories " + ", ".join(f"{k} {v}" for k, v in stats["categories"].items()))
    personal = stats.get("personal")
    if personal is not None:
        print(f"personal   {personal['memories']} memories of yours, recalled in every "
              f"workspace{'' if personal['recalled'] else ' (off: MEMNEST_USER_TIER)'}")
    for merged in stats.get("worktree_merges") or []:
        print(f"merged     worktree {merged['worktree']}: {merged['memories']} memories "
              f"({merged['stored']} new) on {str(merged['at'])[:10]}")
    print(f"model      {stats['embedding_model']}")
    print(f"indexes    {'healthy' if health['healthy'] else 'UNHEALTHY'} "
          f"(vector {health['vector_indexed']}, keyword {health['keyword_indexed']} of "
          f"{health['rows_in_database']})")


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("content", help="what to remember; '-' reads it from stdin")
    parser.add_argument("--category", choices=CATEGORIES,
                        help="what kind of memory (default: general)")
    parser.add_argument("--tag", action="append", help="a tag (repeatable)")
    parser.add_argument("--importance", type=bounded(1, 5), default=3, metavar="1-5",
                        help="1 trivial .. 5 critical; ranks search results")
    parser.add_argument("--keep-as-is", action="store_true",
                        help="store it even if it reads like a listing, a log or chatter (the "
                             "capture judge would refuse it)")
    parser.add_argument("--personal", action="store_true",
                        help="yours in every project (scope user): kept once in your own "
                             "data folder, recalled beside each workspace's memories")


def cmd_store(args: argparse.Namespace) -> None:
    content = args.content if args.content != "-" else sys.stdin.read()
    arguments: ToolArguments = {"content": content, "importance": args.importance}
    if args.category:
        arguments["category"] = args.category
    if args.tag:
        arguments["tags"] = args.tag
    if args.keep_as_is:
        arguments["keep_as_is"] = True
    if args.personal:
        arguments["scope"] = "user"
    result = call(client(), args, "memory_store", arguments)
    if args.json:
        print_json(result)
    else:
        print(f"{result['status']}: memory {result['id']} (importance {result['importance']})")


def add_relate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("from_id", type=int, help="the memory the link starts at")
    parser.add_argument("to_id", type=int, help="the memory it points to")
    parser.add_argument("--type", help="related_to (default), supersedes (from replaces to) or "
                                       "explains (from explains to)")


def cmd_relate(args: argparse.Namespace) -> None:
    arguments: ToolArguments = {"from_id": args.from_id, "to_id": args.to_id}
    if args.type:
        arguments["relationship"] = args.type.upper()
    result = call(client(), args, "memory_relate", arguments)
    if args.json:
        print_json(result)
        return
    print(f"{result.get('status', 'done')}: {result.get('from_id', args.from_id)} "
          f"-{result.get('relationship', args.type)}-> {result.get('to_id', args.to_id)}")


def add_unrelate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("from_id", type=int, help="the memory the links start at")
    parser.add_argument("to_id", type=int, help="the memory they point to")
    parser.add_argument("--type", help="only links of this type")
    parser.add_argument("--both-directions", action="store_true",
                        help="also the links from to_id to from_id")


def cmd_unrelate(args: argparse.Namespace) -> None:
    arguments: ToolArguments = {"from_id": args.from_id, "to_id": args.to_id,
                                "both_directions": args.both_directions}
    if args.type:
        arguments["relationship"] = args.type.upper()
    result = call(client(), args, "memory_unrelate", arguments)
    if args.json:
        print_json(result)
        return
    removed = result.get("removed") or []
    print(f"removed {len(removed)} link(s)" + "".join(
        f"\n  {r.get('from_id')} -{r.get('type')}-> {r.get('to_id')}" for r in removed
        if isinstance(r, dict)))


def add_keep_separate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", type=int, nargs="+", metavar="ID",
                        help="two or more memory ids that dream must not merge")


def cmd_keep_separate(args: argparse.Namespace) -> None:
    result = call(client(), args, "memory_keep_separate", {"memory_ids": args.ids})
    if args.json:
        print_json(result)
    else:
        print(f"recorded: memories {', '.join(map(str, args.ids))} both hold; they are no "
              "longer flagged or merged")


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="words or a question; matched by meaning and keywords")
    parser.add_argument("--top-k", type=bounded(1, 100), default=10, metavar="1-100",
                        help="results to show")
    parser.add_argument("--global", dest="global_search", action="store_true",
                        help="search every workspace in the database")
    parser.add_argument("--in", dest="workspaces", action="append", metavar="PATH",
                        help="also search this other project (repeatable)")
    parser.add_argument("--all-projects", action="store_true",
                        help="also search every project of yours memnest has served")


def cmd_search(args: argparse.Namespace) -> None:
    arguments: ToolArguments = {"query": args.query, "top_k": args.top_k}
    if args.global_search:
        arguments["global_search"] = True
    if args.all_projects:
        arguments["workspaces"] = ["*"]
    elif args.workspaces:
        arguments["workspaces"] = [os.path.abspath(os.path.expanduser(w))
                                   for w in args.workspaces]
    result = call(client(), args, "memory_search", arguments)
    if args.json:
        print_json(result)
        return
    if not result["results"]:
        print(result.get("no_memory") or "no memories found")
    for r in result["results"]:  # one line a hit: its text, tags and project on it
        tags = f" [{', '.join(map(one_line, r['tags']))}]" if r["tags"] else ""
        where = " (personal)" if r.get("scope") == "user" else \
            f" (in {one_line(r['from_workspace'])})" if r.get("from_workspace") else ""
        print(f"{r['id']:>6}  {r['score']:.3f}  {one_line(r['content'])}{tags}{where}")
        note = code_note(r.get("code") or {})
        if note:
            print(f"{'':>15}({note})")


def add_show_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=bounded(1, 2**53 - 1), help="the memory's id")


def cmd_show(args: argparse.Namespace) -> None:
    m = call(client(), args, "memory_get", {"id": args.id})
    if args.json:
        print_json(m)
        return
    tags = ", ".join(map(one_line, m.get("tags") or [])) or "none"
    print(f"memory {m['id']}  {m['category']}, importance {m['importance']}, "
          f"{m.get('scope', 'private')}")
    print(f"tags     {tags}")
    print(f"written  {m['created_at']}, updated {m['updated_at']}")
    origin = m.get("origin") or {}
    if origin.get("via"):
        by = f" by {one_line(origin['client'])}" if origin.get("client") else ""
        print(f"via      {one_line(origin['via'])}{by}")
    for label, key in (("replaced by", "superseded_by"), ("replaces", "supersedes"),
                       ("kept apart from", "kept_separate_from")):
        if m.get(key):
            print(f"{label} {', '.join(str(i) for i in m[key])}")
    for c in m.get("conflicts") or []:
        print(f"may contradict {c.get('memory_id')}")
    note = code_note(m.get("code") or {})
    if note:
        print(note)
    print()
    print(m["content"])


def code_note(code: ToolResult) -> str:
    """One line about the code a search result cites, when it is not simply fresh."""
    notes = []
    if code.get("state") in ("changed", "deleted"):
        stale = [a for a in code.get("anchors", []) if a.get("state") == code["state"]]
        notes.append(f"code {code['state']}: " + ", ".join(one_line(a["cites"]) for a in stale))
    if code.get("branch"):
        notes.append(f"from unmerged branch {one_line(code['branch']['written_on'])}")
    return "; ".join(notes)


def add_personal_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", type=bounded(1, 2**53 - 1), nargs="+", metavar="ID",
                        help="memories of this workspace that hold in every project")


def cmd_personal(args: argparse.Namespace) -> None:
    updates = [{"id": i, "scope": "user"} for i in args.ids]
    result = call(client(), args, "memory_update", {"updates": updates})
    if args.json:
        print_json(result)
        return
    for r in result["results"]:
        if r.get("moved_to"):
            print(f"memory {r['id']} is now personal memory {r['moved_to']}")
        else:
            print(f"memory {r['id']}: {r['status']}")


def add_stale_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--include-moved", action="store_true",
                        help="also those whose code only moved (re-anchored by themselves)")


def cmd_stale(args: argparse.Namespace) -> None:
    arguments: ToolArguments = {"include_moved": True} if args.include_moved else {}
    result = call(client(), args, "memory_stale", arguments)
    if args.json:
        print_json(result)
        return
    print(f"{result['stale']} of {result['anchored']} anchored memories cite code that "
          "changed or went")
    for f in result["files"]:  # the file's name on a line, then a line a memory
        print(f"\n{one_line(f['path'])}")
        for m in f["memories"]:
            detail = m.get("diff") or m.get("detail") or ""
            print(f"  #{m['id']:<6} {m['state']:<8} {one_line(m['cites'])}: "
                  f"{one_line(m['content'])}")
            if detail:
                print(f"          {detail}")
    if result["stale"]:
        print("\nRead the code; for memories that still hold, refresh their anchors "
              "(memory_update with refresh_anchors: true, several in one call); correct or "
              "delete the others.")


WRITING = (
    Command("stats", "counts and index health of a workspace", cmd_stats),
    Command("store", "remember something ('-' reads stdin)", cmd_store,
            add_arguments=add_store_arguments),
    Command("relate", "link two memories (what dream's review hints ask for)", cmd_relate,
            add_arguments=add_relate_arguments),
    Command("unrelate", "remove the links from one memory to another", cmd_unrelate,
            add_arguments=add_unrelate_arguments),
    Command("keep-separate", "record that memories which look alike all hold",
            cmd_keep_separate, add_arguments=add_keep_separate_arguments),
)
READING = (
    Command("search", "find memories", cmd_search, add_arguments=add_search_arguments),
    Command("personal", "move memories to your personal tier, recalled in every project",
            cmd_personal, add_arguments=add_personal_arguments),
    Command("show", "read one memory in full, with what replaced it and what it may "
            "contradict", cmd_show, add_arguments=add_show_arguments),
    Command("stale", "list memories whose cited code changed or went, by file", cmd_stale,
            add_arguments=add_stale_arguments),
)
COMMANDS = WRITING + READING
