"""memnest-ctl config: add memnest to an MCP client's config file, with the hooks, rules and
instructions files that make memory work unasked (editor_configs.py, agent_hooks.py)."""
import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from memnest_proto import paths
from memnest_proto.contract import DEFAULT_MODEL

from .. import agent_hooks, editor_configs
from ..common import Command, ExitCode, Failure, check_model, print_json
from ..editor_configs import CLIENTS, Check, FilePlan, Plan

# Project files memnest writes with this machine's paths: kept out of commits when untracked.
LOCAL_FILES = ("settings.local.json",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("client", choices=list(CLIENTS), help="the editor or agent to set up")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="verify the entry, change nothing")
    mode.add_argument("--print", dest="print_only", action="store_true",
                      help="print the merged file instead of writing it")
    parser.add_argument("--workspace", metavar="DIR",
                        help="the project to configure and pin (default: the current directory)")
    parser.add_argument("--file", metavar="PATH", help="another config file to merge into")
    parser.add_argument("--name", default="memnest", help="server name (default: memnest)")
    parser.add_argument("--model", help="embedding model for the entry (default: the running "
                        "daemon's, else $MEMORY_EMBEDDING_MODEL, else the default)")
    parser.add_argument("--no-hooks", action="store_true",
                        help="only the MCP entry: no hooks, steering, rule or instructions "
                             "file")
    mode.add_argument("--print-hooks", action="store_true",
                      help="print the hook/rule files config would write, writing nothing")
    mode.add_argument("--remove-hooks", action="store_true",
                      help="take memnest's hooks, steering, rule and instructions files out "
                           "again (the MCP entry stays)")


@dataclass
class Written:
    """What `config` wrote: the entry's plan, the extra files, and the backups it made."""
    plan: Plan
    backup: Path | None
    extras: list[FilePlan]
    backups: list[Path | None]
    kept_local: list[str]


def cmd_config(args: argparse.Namespace) -> None:
    workspace = Path(args.workspace).expanduser().resolve() if args.workspace else \
        Path.cwd().resolve()
    if not workspace.is_dir():
        raise Failure(f"{workspace} is not a directory: give the project with --workspace DIR")
    path = Path(args.file).expanduser().absolute() if args.file else None
    check_model(args.model)
    with_extras = args.client in agent_hooks.HOOK_CLIENTS and not args.no_hooks
    try:
        if args.print_hooks:
            print_integration(args.client, workspace, args.model)
        elif args.remove_hooks:
            remove_integration(args.client, workspace)
        elif args.check:
            check(args, workspace, path, with_extras)
        elif args.print_only:
            plan = editor_configs.plan(args.client, workspace, path, args.name, args.model)
            print(plan.text(), end="")
        else:
            report(args, write(args, workspace, path, with_extras))
    except editor_configs.ConfigError as exc:
        raise Failure(str(exc)) from None


def write(args: argparse.Namespace, workspace: Path, path: Path | None,
          with_extras: bool) -> Written:
    check_project(workspace)
    plan = editor_configs.plan(args.client, workspace, path, args.name, args.model)
    extras = agent_hooks.integration(args.client, workspace, args.model, plan) \
        if with_extras else []
    # an extra in the entry's own file (Gemini's settings, Kiro's agent) holds the entry
    together = any(extra.path == plan.path for extra in extras)
    # Every file is checked before any is written: a refused config changes nothing.
    for each in (plan, *extras):
        editor_configs.check_writable(each, workspace)
    backup = None if together else editor_configs.apply(plan, workspace)
    backups = [editor_configs.apply(extra, workspace) for extra in extras]
    if together:
        backup = backups[[e.path for e in extras].index(plan.path)]
    kept_local = editor_configs.keep_out_of_git(
        workspace, [plan.path, *(e.path for e in extras if e.path.name in LOCAL_FILES)])
    return Written(plan, backup, extras, backups, kept_local)


def report(args: argparse.Namespace, done: Written) -> None:
    plan = done.plan
    notes = editor_configs.notes(plan) + done.kept_local
    if args.json:
        print_json(facts(args.client, done, notes))
        return
    print_entry(plan, done.backup)
    for line in notes:
        print(f"note     {line}")
    for extra, extra_backup in zip(done.extras, done.backups):
        state = ("updated" if extra.exists else "created") if extra.changed else "unchanged"
        print(f"added    {state} {extra.path}: {agent_hooks.what_it_does(extra)}")
        if extra_backup:
            print(f"backup   {extra_backup}")
    if done.extras:
        print("         (--no-hooks leaves these out)")
    print(f"next     {plan.client.reload_hint}")


def facts(client: str, done: Written, notes: list[str]) -> dict[str, object]:
    plan = done.plan
    return {"client": client, "file": str(plan.path), "changed": plan.changed,
            "created": not plan.exists, "backup": str(done.backup) if done.backup else None,
            "entry": plan.entry, "other_servers": plan.others,
            "model_source": plan.model_source,
            "comments_dropped": plan.lenient and plan.changed, "notes": notes,
            "integration": [{"file": str(extra.path), "changed": extra.changed,
                             "backup": str(b) if b else None,
                             "does": agent_hooks.what_it_does(extra)}
                            for extra, b in zip(done.extras, done.backups)]}


def print_integration(client: str, workspace: Path, model: str | None) -> None:
    plans = agent_hooks.integration(client, workspace, model) \
        if client in agent_hooks.HOOK_CLIENTS else []
    if not plans:
        raise Failure(f"memnest adds nothing for {client} beyond its MCP entry "
                      f"(`memnest-ctl config {client} --print`)")
    for plan in plans:
        if len(plans) > 1:
            print(f"==> {plan.path} <==")
        print(plan.text(), end="")


def check_project(workspace: Path) -> None:
    """config writes in the project only when it is a project of the user's: not a system
    folder (as the daemon refuses it), not another user's (files made there as root would
    be theirs no more)."""
    if paths.system_folder(str(workspace)):
        raise Failure(f"{workspace} is a system folder, not a project: run this in a project "
                      "or give --workspace DIR")
    owner = workspace.stat().st_uid
    if owner != os.getuid():
        raise Failure(f"{workspace} belongs to uid {owner}, not to you (uid {os.getuid()}): "
                      "memnest writes editor configs only in your own projects")


def remove_integration(client: str, workspace: Path) -> None:
    check_project(workspace)
    done = agent_hooks.remove_integration(client, workspace) \
        if client in agent_hooks.HOOK_CLIENTS else []
    print("\n".join(done) or "no memnest hooks or files to remove")


def check(args: argparse.Namespace, workspace: Path, path: Path | None,
          with_extras: bool) -> None:
    findings = editor_configs.check(args.client, workspace, path, args.name, args.model)
    if with_extras:
        findings += agent_hooks.check_integration(args.client, workspace, args.model)
    print_findings(args.json, findings)


def print_findings(as_json: bool, findings: list[Check]) -> None:
    if as_json:
        print_json([f.__dict__ for f in findings])
    else:
        for f in findings:
            print(f"{'ok  ' if f.ok else 'FAIL'}  {f.name}: {f.detail}"
                  + (f" — fix: {f.fix}" if not f.ok and f.fix else ""))
    if not all(f.ok for f in findings):
        raise SystemExit(ExitCode.FAILED)


def print_entry(plan: Plan, backup: Path | None) -> None:
    if not plan.changed:
        print(f"{plan.path} already has this memnest entry; nothing to change")
    else:
        verb = "created" if not plan.exists else "updated"
        kept = f"; kept {len(plan.others)} other server(s): {', '.join(plan.others)}" \
            if plan.others else ""
        print(f"{verb} {plan.path}{kept}")
        if backup:
            print(f"backup   {backup}")
        if plan.lenient:
            print("note     the file had comments or trailing commas, which JSON cannot keep; "
                  "the backup has them")
    env = plan.entry.get("env", {})
    print(f"command  {plan.entry['command']}")
    for key, value in env.items():
        print(f"env      {key}={value}")
    if "MEMORY_EMBEDDING_MODEL" not in env:
        print(f"model    default ({DEFAULT_MODEL}), from {plan.model_source}")
    else:
        print(f"model    from {plan.model_source}")


COMMANDS = (
    Command("config", "add memnest to an MCP client's config file", cmd_config, "output",
            add_arguments),
)
