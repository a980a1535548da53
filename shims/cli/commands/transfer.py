"""memnest-ctl export, import: a workspace's memories to and from a JSON file."""
import argparse
import errno
import os
import stat
from pathlib import Path

from ... import workspace as ws
from ...own_paths import NotOurs, check_parent, check_target, write_file
from ..common import Command, Failure, call, client, long_call, print_json
from ..terminal import one_line

EXPORT_SIGNATURE = b'{\n "format": "memnest-export"'  # how an export file starts


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", metavar="PATH",
                        help="default: .memnest/exports/memories-<time>.json (with --format "
                             "markdown: a new or empty folder, default one under "
                             ".memnest/exports/)")
    parser.add_argument("--format", choices=("json", "markdown", "agents-md", "claude-md"),
                        default="json",
                        help="json: one file memnest imports; markdown: one note per memory, "
                             "readable in Obsidian, that `import --from markdown` reads back; "
                             "agents-md, claude-md: the most important memories as one "
                             "AGENTS.md or MEMORY.md within 200 lines")
    parser.add_argument("--scope", choices=("shared", "all"),
                        help="with agents-md or claude-md: only shared memories (default for "
                             "agents-md, which lives in the repository) or all")
    parser.add_argument("--personal", action="store_true",
                        help="your personal memories (scope user) instead of the workspace's")


DIGEST_SIGNATURE = b"<!-- memnest digest"  # how a digest starts: one export may replace


def cmd_export(args: argparse.Namespace) -> None:
    if args.scope and args.format not in ("agents-md", "claude-md"):
        raise Failure("--scope goes with --format agents-md or claude-md")
    if args.personal and args.format != "json":
        raise Failure("--personal goes with --format json")
    if args.format == "markdown":
        return _export_notes(args)
    if args.format in ("agents-md", "claude-md"):
        return _export_digest(args)
    target = _target(args, "the export is", "`memnest-ctl export` without FILE and copy it "
                                            "from there")
    if target is not None:
        _check_file(target, EXPORT_SIGNATURE, "is not a memnest export")
    out = call(client(), args, "memory_export", {"personal": True} if args.personal else {})
    if target is not None:
        _move_file(Path(out["path"]), target)
        out["path"] = str(target)
    if args.json:
        print_json(out)
        return
    print(f"wrote {out['memories']} memories, {out['edges']} links and "
          f"{out['keep_separate']} keep-separate verdicts to {out['path']}")


# The kinds `--from` takes: the daemon's memory_import lists and checks them.
SOURCE_KINDS = ("claude-code", "cline", "cursor", "kiro", "agents-md", "copilot", "serena",
                "windsurf", "markdown", "basic-memory", "server-memory", "mem0")


def _target(args: argparse.Namespace, what: str, instead: str) -> Path | None:
    """Where the user asked the export to go (PATH), or None. The daemon writes under the
    workspace's .memnest/ and this command, run by the user, moves it there; a remote
    daemon writes on its own machine, where no local PATH can name."""
    if args.file and ws.remote():
        raise Failure(f"with a remote daemon (MEMNEST_REMOTE) {what} written on the daemon's "
                      f"machine, under the workspace's .memnest/exports/; run {instead}")
    return Path(args.file).expanduser().absolute() if args.file else None


def _export_notes(args: argparse.Namespace) -> None:
    target = _target(args, "the notes are", "`memnest-ctl export --format markdown` without "
                                            "PATH")
    if target is not None:
        _check_notes_folder(target)
    out = call(client(), args, "memory_export", {"format": "markdown"})
    if target is not None and out["notes"]:
        _move_notes(Path(out["folder"]), target)
        out["folder"] = str(target)
    if args.json:
        print_json(out)
        return
    print(f"wrote {out['notes']} notes with {out['links']} links to {out['folder']}")


def _export_digest(args: argparse.Namespace) -> None:
    target = _target(args, "the digest is", "it without PATH")
    if target is not None:
        _check_file(target, DIGEST_SIGNATURE, "was not written by memnest")
    arguments: dict[str, object] = {"format": args.format}
    if args.scope:
        arguments["scope"] = args.scope
    out = call(client(), args, "memory_export", arguments)
    if target is not None:
        _move_file(Path(out["path"]), target)
        out["path"] = str(target)
    if args.json:
        print_json(out)
        return
    print(f"wrote {out['memories']} memories ({out['lines']} lines) to {out['path']}"
          + (f"; {out['left_out']} more did not fit" if out["left_out"] else "")
          + (f"; {out['withheld']} withheld (private, or flagged as speaking to an agent)"
             if out["withheld"] else ""))


def _starts_with(path: Path, signature: bytes) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        return f.read(len(signature)) == signature


# -- putting what the daemon wrote where the user asked ----------------------------------------
# Checked before the daemon is asked, so that a refused export has written nothing; the
# folder it goes into must be there (it is not made), and is never changed but for the file.

def _check_file(target: Path, signature: bytes, otherwise: str) -> None:
    """`target` may be written: no link, a file of the user's that memnest wrote (it starts
    with `signature`) or none, in a folder of the user's that is there."""
    try:
        exists = check_target(target)
    except NotOurs as exc:
        raise Failure(f"{exc}; nothing was written") from None
    if exists and not _starts_with(target, signature):
        raise Failure(f"{target} exists and {otherwise}; it is left as it is (name another "
                      "file, or move it away first)")


def _move_file(written: Path, target: Path) -> None:
    """The file the daemon wrote under .memnest/exports/, moved to `target` (checked again:
    a link that appeared meanwhile is replaced, never followed); an existing export keeps
    its mode."""
    try:
        exists = check_target(target)
        mode = stat.S_IMODE(os.lstat(target).st_mode) if exists else 0o600
        fd = os.open(written, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            data = f.read()
        write_file(target, data, mode)
    except NotOurs as exc:
        raise Failure(f"{exc}; the export stays in {written}") from None
    written.unlink()


def _check_notes_folder(target: Path) -> None:
    """`target` may take the notes: a new folder in a folder of the user's that is there, or
    an empty real folder of the user's (whose mode stays as it is)."""
    try:
        info = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        try:
            check_parent(target.parent)
        except NotOurs as exc:
            raise Failure(f"{exc}; nothing was written") from None
        return
    if stat.S_ISLNK(info.st_mode):
        raise Failure(f"{target} is a symbolic link; memnest does not write through links: "
                      "name the folder itself")
    if not stat.S_ISDIR(info.st_mode) or os.listdir(target):
        raise Failure(f"{target} exists and is not an empty folder; it is left as it is")
    if info.st_uid != os.getuid():
        raise Failure(f"{target} belongs to uid {info.st_uid}, not to you (uid "
                      f"{os.getuid()}); nothing was written")


def _move_notes(written: Path, target: Path) -> None:
    """The notes folder the daemon wrote, moved to `target`: renamed there when `target` is
    new and on the same file system, else each note moved into it."""
    _check_notes_folder(target)
    if not os.path.lexists(target):
        try:
            os.rename(written, target)
            return
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise Failure(f"cannot make {target}: {exc.strerror}; the notes stay in "
                              f"{written}") from None
        try:
            os.mkdir(target, 0o700)
        except OSError as exc:
            raise Failure(f"cannot make {target}: {exc.strerror}; the notes stay in "
                          f"{written}") from None
    for note in sorted(os.listdir(written)):
        _move_file(written / note, target / note)
    written.rmdir()


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", metavar="PATH",
                        help="a JSON file that `memnest-ctl export` wrote; with --from, a "
                             "file or folder of that tool's (default: where it keeps them)")
    parser.add_argument("--from", dest="source", choices=SOURCE_KINDS, metavar="KIND",
                        help="take in another tool's memory files: " + ", ".join(SOURCE_KINDS))
    parser.add_argument("--dry-run", action="store_true",
                        help="with --from: say what would be stored, updated, merged or "
                             "flagged, and change nothing")
    parser.add_argument("--prune", action="store_true",
                        help="with --from: also forget memories whose section is gone")
    following = parser.add_mutually_exclusive_group()
    following.add_argument("--follow", action="store_true",
                           help="with --from: keep the workspace in step with these files "
                                "(imported again whenever they change)")
    following.add_argument("--unfollow", action="store_true",
                           help="with --from: stop following these files")
    parser.add_argument("--personal", action="store_true",
                        help="load the export file into your personal memories (scope user)")
    parser.set_defaults(all=False)  # one workspace: long_call reads --all


def _path(given: str) -> str:
    # A remote daemon reads the file on its own machine: the path is passed as given there.
    return given if ws.remote() else str(Path(given).expanduser().absolute())


def cmd_import(args: argparse.Namespace) -> None:
    if args.source:
        return _adopt(args)
    if args.file is None:
        raise Failure("import needs PATH, the export file (or --from KIND for another tool's "
                      "files)")
    if args.dry_run or args.prune or args.follow or args.unfollow:
        raise Failure("--dry-run, --prune, --follow and --unfollow go with --from; an export "
                      "file is loaded whole")
    path = args.file if ws.remote() else str(Path(args.file).expanduser().resolve())
    arguments: dict[str, object] = {"path": path}
    if args.personal:
        arguments["personal"] = True
    [(workspace, out)] = long_call(args, "memory_import", arguments)
    if args.json:
        print_json(out)
        return
    m = out["memories"]
    print(f"{workspace}: {m['in_file']} memories in the file: {m['stored']} stored, "
          f"{m['merged']} merged, {m['duplicate']} already here; {out['edges']['created']} "
          f"links and {out['keep_separate']['recorded']} keep-separate verdicts added")


def _adopt(args: argparse.Namespace) -> None:
    if args.personal:
        raise Failure("--personal goes with an export file, not with --from")
    arguments: dict[str, object] = {"from": args.source}
    if args.file:
        arguments["path"] = _path(args.file)
    if args.unfollow:
        arguments["follow"] = False
        [(workspace, out)] = long_call(args, "memory_import", arguments)
        if args.json:
            print_json(out)
            return
        print(f"{workspace}: no longer follows {args.source} "
              f"{args.file or '(where it keeps its files)'}")
        return
    arguments.update(dry_run=args.dry_run, prune=args.prune)
    if args.follow:
        arguments["follow"] = True
    [(workspace, out)] = long_call(args, "memory_import", arguments)
    if args.json:
        print_json(out)
        return
    verb = "would be" if out["dry_run"] else "were"
    print(f"{workspace}: {out['pieces']} pieces in {len(out['files'])} {args.source} files: "
          f"{out['store']} {verb} stored, {out['update']} updated, {out['merge']} merged, "
          f"{out['conflict']} flagged as conflicts; {out['unchanged'] + out['moved']} "
          f"unchanged, {out['duplicate'] + out['held']} already held")
    for row in out.get("planned" if out["dry_run"] else "changes", []):
        print(f"  {row['action']:<9} {one_line(row['source'])}  {one_line(row['content'][:70])}")
    for memory in out["removed"]:
        state = "forgotten" if memory["id"] in out.get("pruned", []) else "gone from its file"
        print(f"  {state}: #{memory['id']} {one_line(memory['source'])}  "
              f"{one_line(memory['content'][:60])}")
    if out["removed"] and not out.get("pruned") and not out["dry_run"]:
        print("  (memnest-ctl import --from ... --prune forgets them)")
    for where, why in out.get("skipped", {}).items():
        print(f"  skipped {one_line(where)}: {one_line(why)}")
    if args.follow:
        print("  followed: imported again whenever these files change")


COMMANDS = (
    Command("export", "write the workspace's memories to a JSON file", cmd_export,
            add_arguments=add_export_arguments),
    Command("import", "load a file written by export, or another tool's memory files "
            "(--from)", cmd_import,
            add_arguments=add_import_arguments),
)
