"""memnest-ctl: the daemon and the memories from a terminal or a script.

Every command takes --json for machine-readable output. Failures exit non-zero with one
line on stderr saying why. The commands live in commands/, one module per group; this
module builds the parser from them and runs the one asked for.
"""
import argparse
import sys

from memnest_proto.version import VERSION

from .commands import config, daemon, hook, memories, service, team, tls, transfer, ui, upkeep
from .common import Command, HelpWithDefaults, run
from .terminal import printing_to_terminal

GROUPS = (daemon, memories, team, transfer, service, config, hook, upkeep, tls, ui)
# The order `memnest-ctl --help` lists them in; a command not named here comes last.
LISTED = ("status", "start", "stop", "stats", "store", "relate", "unrelate", "keep-separate",
          "share", "sync", "search", "personal", "show", "stale", "ui", "export", "import",
          "service", "config", "hook", "logs", "dream", "reindex", "verify", "tls", "doctor")


def commands() -> list[Command]:
    """Every subcommand, in the order of LISTED."""
    every = [command for group in GROUPS for command in group.COMMANDS]
    return sorted(every, key=lambda c: LISTED.index(c.name) if c.name in LISTED else len(LISTED))


def shared_options() -> dict[str, list[argparse.ArgumentParser]]:
    """The parent parsers of each kind of Command.options."""
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument("--json", action="store_true", help="machine-readable output")
    scoped = argparse.ArgumentParser(add_help=False, parents=[output])
    scoped.add_argument("--workspace", metavar="DIR",
                        help="workspace directory (default: $MEMORY_WORKSPACE, else the "
                             "nearest folder up from here that has .memnest/ or is a "
                             "repository root, else the current directory)")
    return {"none": [], "output": [output], "workspace": [scoped]}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memnest-ctl",
                                     description="Control memnestd and use its memories.")
    parser.add_argument("--version", action="version", version=f"memnest-ctl {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parents = shared_options()
    for command in commands():
        # --help starts with what the command does and says every default
        described = sub.add_parser(command.name, help=command.help,
                                   description=command.help[0].upper() + command.help[1:] + ".",
                                   formatter_class=HelpWithDefaults,
                                   parents=parents[command.options])
        command.add_arguments(described)
        described.set_defaults(run=command.run, to_terminal=command.to_terminal)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.to_terminal:
        return run(args.run, args)
    # Everything a command prints passes terminal.shown: no control character reaches the
    # terminal from a memory, a file or the daemon.
    with printing_to_terminal():
        return run(args.run, args)


if __name__ == "__main__":
    sys.exit(main())
