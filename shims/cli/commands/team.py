"""memnest-ctl share, sync: team memory through git (the daemon's daemon/team/)."""
import argparse

from ..common import Command, Failure, ToolResult, call, client, print_json
from ..terminal import one_line


def add_share_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", type=int, nargs="+", metavar="ID", help="memory ids")
    parser.add_argument("--unshare", action="store_true",
                        help="stop sharing them: their files are removed (commit that)")


def add_sync_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all", action="store_true",
                        help="read every shared file, not only those that changed")


def cmd_share(args: argparse.Namespace) -> None:
    result = call(client(), args, "memory_share", {"ids": args.ids, "unshare": args.unshare})
    if args.json:
        print_json(result)
        return
    for m in result.get("memories", []):
        if args.unshare:
            print(f"unshared {m['id']} (global id {m.get('global_id') or '-'})")
        else:
            print(f"shared {m['id']} -> {one_line(m.get('file'))}")
    for path in result.get("removed_files", []):
        print(f"removed {one_line(path)}")
    if result.get("missing"):
        print(f"not found here: {', '.join(map(str, result['missing']))}")
    if result.get("next"):
        print(f"next: {result['next']}")


def cmd_sync(args: argparse.Namespace) -> None:
    result = call(client(), args, "memory_sync", {"all": args.all})
    if args.json:
        print_json(result)
        return
    print_arrivals(result)
    problems = result.get("problems") or []
    if problems:
        raise Failure(f"{len(problems)} shared file(s) could not be imported")


def print_arrivals(result: ToolResult) -> None:
    """What a sync brought in, what it could not, and what to do about it."""
    for key, label in (("came_in", "came in"), ("updated", "updated"),
                       ("merged", "merged"), ("deleted", "deleted"),
                       ("unshared", "unshared by a teammate (kept here, private)")):
        entries = result.get(key) or []
        print(f"{label}: {len(entries)}")
        for e in entries:
            into = f" into {e['into']}" if e.get("into") else ""
            print(f"  {e.get('id')} [{one_line(e.get('global_id'))}]{into} "
                  f"{one_line(e.get('content', ''))}")
    conflicts = result.get("conflicts") or []
    print(f"conflicts: {len(conflicts)}")
    for c in conflicts:
        others = ", ".join(str(x.get("memory_id")) for x in c.get("conflicts", []))
        print(f"  {c.get('id')} [{one_line(c.get('global_id'))}] may contradict {others}: read "
              "both with memnest-ctl show, then relate --type supersedes or keep-separate")
    ignored = result.get("ignored") or []
    if ignored:
        print(f"ignored ({len(ignored)}): they name a memory that is not shared here")
        for e in ignored:
            print(f"  {one_line(e.get('file'))}: {one_line(e.get('why'))}")
    print(f"relations added: {result.get('relations_added', 0)}; shared memories here: "
          f"{result.get('shared_memories', 0)}")
    problems = result.get("problems") or []
    if problems:
        print(f"not imported ({len(problems)}):")
        for p in problems:
            print(f"  {one_line(p)}")
        print(f"to fix: {result.get('how_to_fix', '')}")


COMMANDS = (
    Command("share", "share memories with the team through git (.memnest/shared/)", cmd_share,
            add_arguments=add_share_arguments),
    Command("sync", "bring teammates' shared memories in now, and say what came", cmd_sync,
            add_arguments=add_sync_arguments),
)
