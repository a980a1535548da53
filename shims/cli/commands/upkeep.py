"""memnest-ctl dream, reindex, verify: long upkeep of one workspace or, with --all, of every
workspace the daemon has open (progress on a terminal)."""
import argparse

from ..common import Command, ExitCode, ToolResult, long_call, print_json


def add_all(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all", action="store_true",
                        help="every workspace the daemon has open")


def add_dream_arguments(parser: argparse.ArgumentParser) -> None:
    add_all(parser)
    parser.add_argument("--dry-run", action="store_true",
                        help="report what it would do; change nothing")
    parser.add_argument("--force", action="store_true", help="run despite the gates")


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    add_all(parser)
    parser.add_argument("--repair", action="store_true",
                        help="fix what the database itself can restore, and say what "
                             "could not be fixed")
    parser.add_argument("--quick", action="store_true",
                        help="skip comparing every stored vector")


def cmd_dream(args: argparse.Namespace) -> None:
    reports = [r for _, r in long_call(args, "memory_dream",
                                       {"dry_run": args.dry_run, "force": args.force})]
    if args.json:
        print_json(reports if args.all else reports[0])
        return
    for r in reports:
        print_dream(r)


def print_dream(r: ToolResult) -> None:
    if r["status"] == "skipped":
        print(f"{r['workspace']}: skipped ({'; '.join(r['gates']['reasons'])}); "
              "--force runs it anyway")
        return
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


def cmd_reindex(args: argparse.Namespace) -> None:
    reports = long_call(args, "memory_reindex", {})
    if args.json:
        views = [{"workspace": w, **r} for w, r in reports]
        print_json(views if args.all else views[0])
        return
    for workspace, r in reports:
        print(f"{workspace}: {r['memories']} memories; vector index {r['vector_indexed']}, "
              f"keyword index {r['keyword_indexed']} ({r['duration_ms']:.0f} ms)")


def cmd_verify(args: argparse.Namespace) -> None:
    reports = long_call(args, "memory_verify", {"repair": args.repair, "quick": args.quick})
    if args.json:
        views = [{"workspace": w, **r} for w, r in reports]
        print_json(views if args.all else views[0])
    else:
        for workspace, r in reports:
            print_verify(workspace, r, args.repair)
    if any(r["findings"]["count"] for _, r in reports):
        raise SystemExit(ExitCode.FAILED)


def print_verify(workspace: str, r: ToolResult, repair: bool) -> None:
    print(verify_summary(workspace, r))
    for item in r.get("repaired", {}).get("items", []):
        print(f"  repaired: {item['detail']}")
    for item in r["findings"]["items"]:
        fix = "" if item["repairable"] else " (not repairable: see the text)"
        print(f"  {'FAIL' if not repair else 'left'}: {item['detail']}{fix}")
    hidden = r["findings"]["count"] - len(r["findings"]["items"])
    if hidden:
        print(f"  … and {hidden} more ({r['findings']['by_kind']})")
    if r["findings"]["count"] and not repair and \
            any(i["repairable"] for i in r["findings"]["items"]):
        print("  memnest-ctl verify --repair fixes what the database itself can restore")


def verify_summary(workspace: str, r: ToolResult) -> str:
    checked = r["checked"]
    what = f"{checked['memories']} memories, {checked['edges']} links"
    if r["healthy"]:
        fixed = r.get("repaired", {}).get("count", 0)
        return (f"{workspace}: healthy ({what}; {r['duration_ms']:.0f} ms"
                f"{f'; {fixed} findings repaired' if fixed else ''})")
    return f"{workspace}: {r['findings']['count']} findings ({what})"


COMMANDS = (
    Command("dream", "consolidate memory (memory_dream)", cmd_dream,
            add_arguments=add_dream_arguments),
    Command("reindex", "rebuild the search indexes", cmd_reindex, add_arguments=add_all),
    Command("verify", "check the database against its indexes, graph, topics and files (exit "
            "1 on a finding)", cmd_verify, add_arguments=add_verify_arguments),
)
