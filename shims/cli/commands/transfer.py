"""memnest-ctl export, import: a workspace's memories to and from a JSON file."""
import argparse
import shutil
from pathlib import Path

from ... import workspace as ws
from ..common import Command, Failure, call, client, long_call, print_json

EXPORT_SIGNATURE = b'{\n "format": "memnest-export"'  # how an export file starts


def is_export(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(EXPORT_SIGNATURE)) == EXPORT_SIGNATURE
    except OSError:
        return False


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?",
                        help="default: .memnest/exports/memories-<time>.json")


def cmd_export(args: argparse.Namespace) -> None:
    if args.file and ws.remote():
        raise Failure("with a remote daemon (MEMNEST_REMOTE) the export is written on the "
                      "daemon's machine, under the workspace's .memnest/exports/; run "
                      "`memnest-ctl export` without FILE and copy it from there")
    target = Path(args.file).expanduser().absolute() if args.file else None
    if target is not None and target.exists() and not is_export(target):
        raise Failure(f"{target} exists and is not a memnest export; it is left as it is")
    out = call(client(), args, "memory_export", {})
    if target is not None:
        # The daemon writes only under the workspace's .memnest/; this command, run by the
        # user, moves the file where the user asked.
        shutil.move(out["path"], target)
        out["path"] = str(target)
    if args.json:
        print_json(out)
        return
    print(f"wrote {out['memories']} memories, {out['edges']} links and "
          f"{out['keep_separate']} keep-separate verdicts to {out['path']}")


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a JSON file that `memnest-ctl export` wrote")
    parser.set_defaults(all=False)  # one workspace: long_call reads --all


def cmd_import(args: argparse.Namespace) -> None:
    # A remote daemon reads the file on its own machine: the path is passed as given there.
    path = args.file if ws.remote() else str(Path(args.file).expanduser().resolve())
    [(workspace, out)] = long_call(args, "memory_import", {"path": path})
    if args.json:
        print_json(out)
        return
    m = out["memories"]
    print(f"{workspace}: {m['in_file']} memories in the file: {m['stored']} stored, "
          f"{m['merged']} merged, {m['duplicate']} already here; {out['edges']['created']} "
          f"links and {out['keep_separate']['recorded']} keep-separate verdicts added")


COMMANDS = (
    Command("export", "write the workspace's memories to a JSON file", cmd_export,
            add_arguments=add_export_arguments),
    Command("import", "load a file written by export (progress on a terminal)", cmd_import,
            add_arguments=add_import_arguments),
)
