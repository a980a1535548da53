"""What every memnest-ctl command shares: the daemon client, calling a tool, the workspace,
printing JSON, the reasons to fail and the exit code each one gives.

Command modules (commands/) import this; nothing here imports them or main.py.
"""
import argparse
import enum
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memnest_proto.contract import DEFAULT_MODEL, OFFLINE_MODEL

from .. import workspace as ws
from ..client import DaemonClient, DaemonUnavailable, ToolFailure
from .progress import Progress
from .terminal import json_text

# A tool's arguments and its JSON answer, as the daemon's schema describes them.
ToolArguments = dict[str, Any]
ToolResult = dict[str, Any]
Handler = Callable[[argparse.Namespace], None]

CLI_ORIGIN = {"via": "cli", "client": "memnest-ctl"}


class ExitCode(enum.IntEnum):
    OK = 0
    FAILED = 1  # a Failure, or the daemon could not be reached
    USAGE = 2  # argparse: a wrong command line
    NOT_THERE = 3  # `status --json` with no daemon; `service install` with nothing to use
    INTERRUPTED = 130  # Ctrl-C


class Failure(Exception):
    """A reason to exit 1, already phrased for the user."""


class NothingInstalled(Exception):
    """`service install` found nothing to install into; what it printed says why (exit 3)."""


def run(handler: Handler, args: argparse.Namespace) -> int:
    """Run one command; its failures become one line on stderr and an exit code."""
    try:
        handler(args)
    except (Failure, DaemonUnavailable) as exc:
        print(f"memnest-ctl: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    except NothingInstalled:
        return ExitCode.NOT_THERE
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    return ExitCode.OK


# -- declaring commands ----------------------------------------------------------------------

# Which shared options a command takes: none, --json, or --json and --workspace.
SharedOptions = Literal["none", "output", "workspace"]


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """A command that takes only the shared options."""


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, its one-line help, its arguments and what runs it."""
    name: str
    help: str
    run: Handler
    options: SharedOptions = "workspace"
    add_arguments: Callable[[argparse.ArgumentParser], None] = _no_arguments
    # False only for a command whose output is a program's input, not a person's terminal
    # (the hook's answer to an editor): what it prints is left as it is (terminal.py).
    to_terminal: bool = True


class HelpWithDefaults(argparse.HelpFormatter):
    """Says each option's default, unless its help already does or it has none worth saying."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text or \
                action.option_strings == []:
            return text
        return f"{text} (default: %(default)s)"


def bounded(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer from low to high, with an error that says the range."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}-{high}")
        return value
    return parse


# -- output ----------------------------------------------------------------------------------

def print_json(value: object) -> None:
    print(json_text(value))


_said: set[str] = set()


def say_once(line: str) -> None:
    """A note on stderr (stdout stays the command's output), once per run."""
    if line not in _said:
        _said.add(line)
        print(f"memnest-ctl: {line}", file=sys.stderr)


# -- the daemon --------------------------------------------------------------------------------

def client(autostart: bool = True) -> DaemonClient:
    return DaemonClient(client_name="memnest-ctl", autostart=autostart)


def workspace(args: argparse.Namespace) -> str:
    """The workspace a command works on: --workspace, else the environment, else from here."""
    if ws.remote():  # a folder on the daemon's machine: nothing to resolve here
        try:
            return ws.for_remote(args.workspace)
        except ValueError as exc:
            raise Failure(str(exc)) from None
    if args.workspace:
        return str(Path(args.workspace).expanduser().resolve())
    chosen = ws.from_env() or ws.from_cwd()
    if chosen != str(Path.cwd().resolve()) and not getattr(args, "json", False):
        say_once(f"workspace {chosen}")
    return chosen


def call(daemon: DaemonClient, args: argparse.Namespace, tool: str,
         arguments: ToolArguments) -> ToolResult:
    """Run a tool on the command's workspace; the daemon's error becomes a Failure."""
    try:
        result: ToolResult = daemon.call_tool(tool, arguments, workspace(args),
                                              ws.db_path_override(), origin=CLI_ORIGIN)
    except ToolFailure as exc:
        raise Failure(f"{tool}: {exc.message}") from None
    return result


def workspaces_for(args: argparse.Namespace, daemon: DaemonClient) -> list[str]:
    """The command's workspace, or with --all every workspace the daemon has open."""
    if not args.all:
        return [workspace(args)]
    daemon.ensure_running()
    found = [w.workspace for w in daemon.status().workspaces]
    if not found:
        raise Failure("the daemon has no workspace open; give --workspace DIR")
    return found


def long_call(args: argparse.Namespace, tool: str,
              arguments: ToolArguments) -> list[tuple[str, ToolResult]]:
    """Run a long tool on one or all workspaces, streaming its progress."""
    daemon = client()
    reports = []
    for name in workspaces_for(args, daemon):
        progress = Progress(f"{tool.removeprefix('memory_')} {name}")
        try:
            reports.append((name, daemon.call_tool(
                tool, arguments, name, ws.db_path_override(), on_progress=progress,
                origin=CLI_ORIGIN)))
        except ToolFailure as exc:
            raise Failure(f"{tool} on {name}: {exc.message}") from None
        finally:
            progress.finish()
    return reports


def check_model(name: str | None) -> None:
    """A --model memnestd could not load would be written into a config or unit file and
    fail only later, in the editor; refuse it here with the names that work."""
    if not name or name in (OFFLINE_MODEL, DEFAULT_MODEL):
        return
    try:
        from fastembed import TextEmbedding
    except ImportError:
        return  # a client-only install: the daemon's machine decides
    known = sorted(m["model"] for m in TextEmbedding.list_supported_models())
    if name in known:
        return
    close = [m for m in known if name.lower().split("/")[-1] in m.lower()]
    hint = f"did you mean {', '.join(close[:3])}? " if close else ""
    raise Failure(f"--model {name!r} is not a model memnestd can load; {hint}use "
                  f"{OFFLINE_MODEL} (offline, installed with memnest), {DEFAULT_MODEL} (the "
                  f"default) or another of fastembed's {len(known)} text models "
                  "(python -c 'from fastembed import TextEmbedding; "
                  "print(TextEmbedding.list_supported_models())'). Nothing was changed")
