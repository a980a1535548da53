"""memnest-ctl service: run memnestd under systemd (Linux) or launchd (macOS)."""
import argparse
from collections.abc import Mapping

from .. import service_units
from ..common import Command, Failure, NothingInstalled, check_model, print_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["install", "uninstall", "status"],
                        help="install: write the unit files and start the service; uninstall: "
                             "stop it and remove them; status: what is installed and running")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the files and commands without acting")
    parser.add_argument("--model", help="embedding model for the service (default: the "
                        "running daemon's, else $MEMORY_EMBEDDING_MODEL, else the default)")


def cmd_service(args: argparse.Namespace) -> None:
    check_model(getattr(args, "model", None))
    lines: list[str] = []
    report = service_units.Report(out=(lines.append if args.json else print))
    result: Mapping[str, object]
    try:
        if args.action == "install":
            result = service_units.install(dry_run=args.dry_run, model=args.model, report=report)
        elif args.action == "uninstall":
            result = service_units.uninstall(dry_run=args.dry_run, report=report)
        else:
            result = facts = service_units.status()
            if not args.json:
                print_status(facts)
    except service_units.ServiceError as exc:
        raise Failure(str(exc)) from None
    if args.json:
        print_json({**result, "steps": report.steps})
    if args.action == "install" and not args.dry_run and not result.get("installed"):
        raise NothingInstalled()  # a script must not take "no service manager" for success


def print_status(facts: service_units.ServiceStatus) -> None:
    manager = facts["manager"]
    if facts["manager_running"]:
        print(f"manager  {manager} (running)")
    else:
        print(f"manager  {manager}: {facts['manager_note']}")
    for path, present in facts["files"].items():
        print(f"file     {path}: {'installed' if present else 'absent'}")
    if facts.get("up_to_date") is False:
        print("         (differs from what `memnest-ctl service install` would write now)")
    for unit, state in (facts.get("units") or {}).items():
        print(f"unit     {unit}: {state['enabled']}, {state['active']}")
    daemon = facts["daemon"]
    if daemon is None:
        print(f"daemon   not answering on {facts['socket']}")
    else:
        run_by = f", {daemon['run_by']}" if "run_by" in daemon else ""
        print(f"daemon   memnestd {daemon['version']} pid {daemon['pid']}{run_by}")
    if not facts["installed"]:
        print("memnestd is not installed as a service: editors start it on demand"
              + ("" if not facts["manager_running"] else
                 "; `memnest-ctl service install` keeps it running"))


COMMANDS = (
    Command("service", "run memnestd under systemd (Linux) or launchd (macOS)", cmd_service,
            "output", add_arguments),
)
