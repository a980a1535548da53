"""memnest-ctl: the daemon and the memories from a terminal or a script.

Every command takes --json for machine-readable output. Failures exit non-zero with one
line on stderr saying why.
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

from memnest_proto.contract import CATEGORIES, DEFAULT_MODEL, OFFLINE_MODEL
from memnest_proto.version import VERSION

from .. import workspace as ws
from ..client import DaemonClient, DaemonUnavailable, ToolFailure
from . import team
from .progress import Progress


class Failure(Exception):
    """A reason to exit 1, already phrased for the user."""


class NothingInstalled(Exception):
    """`service install` found nothing to install into; what it printed says why (exit 3)."""


def _print_json(value) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def _workspace(args) -> str:
    if ws.remote():  # a folder on the daemon's machine: nothing to resolve here
        try:
            return ws.for_remote(args.workspace)
        except ValueError as exc:
            raise Failure(str(exc)) from None
    if args.workspace:
        return str(Path(args.workspace).expanduser().resolve())
    chosen = ws.from_env() or ws.from_cwd()
    if chosen != str(Path.cwd().resolve()) and not getattr(args, "json", False):
        _say_once(f"workspace {chosen}")
    return chosen


_said: set[str] = set()


def _say_once(line: str) -> None:
    """A note on stderr (stdout stays the command's output), once per run."""
    if line not in _said:
        _said.add(line)
        print(f"memnest-ctl: {line}", file=sys.stderr)


def _client(autostart: bool = True) -> DaemonClient:
    return DaemonClient(client_name="memnest-ctl", autostart=autostart)


CLI_ORIGIN = {"via": "cli", "client": "memnest-ctl"}


def _call(client: DaemonClient, args, tool: str, arguments: dict) -> dict:
    try:
        return client.call_tool(tool, arguments, _workspace(args), ws.db_path_override(),
                                origin=CLI_ORIGIN)
    except ToolFailure as exc:
        raise Failure(f"{tool}: {exc.message}") from None


# -- commands ----------------------------------------------------------------------------------

def cmd_status(args) -> None:
    client = _client(autostart=False)
    s = client.running_status()
    if s is None:
        if args.json:
            _print_json({"running": False, "socket": str(client.socket_path),
                         "detail": _why_not_running(client)})
            raise SystemExit(3)
        raise Failure(_why_not_running(client))
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


def _why_not_running(client: DaemonClient) -> str:
    """What running_status() found: nothing on the socket, or a daemon that never answered."""
    if client.last_error and "did not answer" in client.last_error:
        return client.last_error
    return f"memnestd is not running on {client.socket_path}"


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
    running = client.running_status()
    if running is None:
        if args.json:
            _print_json({"stopped": False, "running": False,
                         "detail": _why_not_running(client)})
        else:
            print(_why_not_running(client))
        return
    pid = running.pid
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
    if args.keep_as_is:
        arguments["keep_as_is"] = True
    result = _call(_client(), args, "memory_store", arguments)
    if args.json:
        _print_json(result)
    else:
        print(f"{result['status']}: memory {result['id']} (importance {result['importance']})")


def cmd_relate(args) -> None:
    arguments = {"from_id": args.from_id, "to_id": args.to_id}
    if args.type:
        arguments["relationship"] = args.type.upper()
    result = _call(_client(), args, "memory_relate", arguments)
    if args.json:
        _print_json(result)
        return
    print(f"{result.get('status', 'done')}: {result.get('from_id', args.from_id)} "
          f"-{result.get('relationship', args.type)}-> {result.get('to_id', args.to_id)}")


def cmd_unrelate(args) -> None:
    arguments = {"from_id": args.from_id, "to_id": args.to_id,
                 "both_directions": args.both_directions}
    if args.type:
        arguments["relationship"] = args.type.upper()
    result = _call(_client(), args, "memory_unrelate", arguments)
    if args.json:
        _print_json(result)
        return
    removed = result.get("removed") or []
    print(f"removed {len(removed)} link(s)" + "".join(
        f"\n  {r.get('from_id')} -{r.get('type')}-> {r.get('to_id')}" for r in removed
        if isinstance(r, dict)))


def cmd_keep_separate(args) -> None:
    result = _call(_client(), args, "memory_keep_separate", {"memory_ids": args.ids})
    _print_json(result) if args.json else print(
        f"recorded: memories {', '.join(map(str, args.ids))} both hold; they are no longer "
        "flagged or merged")


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
        note = _code_note(r.get("code") or {})
        if note:
            print(f"{'':>15}({note})")


def _code_note(code: dict) -> str:
    """One line about the code a search result cites, when it is not simply fresh."""
    notes = []
    if code.get("state") in ("changed", "deleted"):
        stale = [a for a in code.get("anchors", []) if a.get("state") == code["state"]]
        notes.append(f"code {code['state']}: " + ", ".join(a["cites"] for a in stale))
    if code.get("branch"):
        notes.append(f"from unmerged branch {code['branch']['written_on']}")
    return "; ".join(notes)


def cmd_stale(args) -> None:
    arguments = {"include_moved": True} if args.include_moved else {}
    result = _call(_client(), args, "memory_stale", arguments)
    if args.json:
        _print_json(result)
        return
    print(f"{result['stale']} of {result['anchored']} anchored memories cite code that "
          "changed or went")
    for f in result["files"]:
        print(f"\n{f['path']}")
        for m in f["memories"]:
            detail = m.get("diff") or m.get("detail") or ""
            print(f"  #{m['id']:<6} {m['state']:<8} {m['cites']}: {m['content']}")
            if detail:
                print(f"          {detail}")
    if result["stale"]:
        print("\nRead the code; for memories that still hold, refresh their anchors "
              "(memory_update with refresh_anchors: true, several in one call); correct or "
              "delete the others.")


# -- service, config, logs, doctor (service_units.py, editor_configs.py, doctor.py) --

def _check_model(name: str | None) -> None:
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


def cmd_service(args) -> None:
    from . import service_units
    _check_model(getattr(args, "model", None))
    lines: list[str] = []
    report = service_units.Report(out=(lines.append if args.json else print))
    try:
        if args.action == "install":
            result = service_units.install(dry_run=args.dry_run, model=args.model, report=report)
        elif args.action == "uninstall":
            result = service_units.uninstall(dry_run=args.dry_run, report=report)
        else:
            result = service_units.status()
            if not args.json:
                _print_service_status(result)
    except service_units.ServiceError as exc:
        raise Failure(str(exc)) from None
    if args.json:
        _print_json({**result, "steps": report.steps})
    if args.action == "install" and not args.dry_run and not result.get("installed"):
        raise NothingInstalled()  # a script must not take "no service manager" for success


def _print_service_status(facts: dict) -> None:
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


def cmd_config(args) -> None:
    from . import agent_hooks, editor_configs
    workspace = Path(args.workspace).expanduser().resolve() if args.workspace else \
        Path.cwd().resolve()
    if not workspace.is_dir():
        raise Failure(f"{workspace} is not a directory: give the project with --workspace DIR")
    path = Path(args.file).expanduser().absolute() if args.file else None
    _check_model(args.model)
    with_extras = args.client in agent_hooks.HOOK_CLIENTS and not args.no_hooks
    try:
        if args.print_hooks:
            _print_integration(args.client, workspace, args.model)
            return
        if args.remove_hooks:
            done = agent_hooks.remove_integration(args.client, workspace) \
                if args.client in agent_hooks.HOOK_CLIENTS else []
            print("\n".join(done) or "no memnest hooks or files to remove")
            return
        if args.check:
            findings = editor_configs.check(args.client, workspace, path, args.name, args.model)
            if with_extras:
                findings += agent_hooks.check_integration(args.client, workspace, args.model)
            _print_findings(args, findings)
            return
        plan = editor_configs.plan(args.client, workspace, path, args.name, args.model)
        if args.print_only:
            print(plan.text(), end="")
            return
        extras = agent_hooks.integration(args.client, workspace, args.model, plan) \
            if with_extras else []
        # an extra in the entry's own file (Gemini's settings, Kiro's agent) holds the entry
        together = any(extra.path == plan.path for extra in extras)
        backup = None if together else editor_configs.apply(plan, workspace)
        backups = [editor_configs.apply(extra, workspace) for extra in extras]
        if together:
            backup = backups[[e.path for e in extras].index(plan.path)]
        kept_local = editor_configs.keep_out_of_git(
            workspace, [plan.path, *(e.path for e in extras if e.path.name in LOCAL_FILES)])
    except editor_configs.ConfigError as exc:
        raise Failure(str(exc)) from None
    notes = editor_configs.notes(plan) + kept_local
    facts = {"client": args.client, "file": str(plan.path), "changed": plan.changed,
             "created": not plan.exists, "backup": str(backup) if backup else None,
             "entry": plan.entry, "other_servers": plan.others,
             "model_source": plan.model_source, "comments_dropped": plan.lenient and plan.changed,
             "notes": notes,
             "integration": [{"file": str(extra.path), "changed": extra.changed,
                              "backup": str(b) if b else None,
                              "does": agent_hooks.what_it_does(extra)}
                             for extra, b in zip(extras, backups)]}
    if args.json:
        _print_json(facts)
        return
    _print_entry(plan, backup)
    for line in notes:
        print(f"note     {line}")
    for extra, extra_backup in zip(extras, backups):
        state = ("updated" if extra.exists else "created") if extra.changed else "unchanged"
        print(f"added    {state} {extra.path}: {agent_hooks.what_it_does(extra)}")
        if extra_backup:
            print(f"backup   {extra_backup}")
    if extras:
        print("         (--no-hooks leaves these out)")
    print(f"next     {plan.client.reload_hint}")


# Project files memnest writes with this machine's paths: kept out of commits when untracked.
LOCAL_FILES = ("settings.local.json",)


def _print_integration(client: str, workspace: Path, model: str | None) -> None:
    from . import agent_hooks
    plans = agent_hooks.integration(client, workspace, model) \
        if client in agent_hooks.HOOK_CLIENTS else []
    if not plans:
        raise Failure(f"memnest adds nothing for {client} beyond its MCP entry "
                      f"(`memnest-ctl config {client} --print`)")
    for plan in plans:
        if len(plans) > 1:
            print(f"==> {plan.path} <==")
        print(plan.text(), end="")


def _print_findings(args, findings: list) -> None:
    if args.json:
        _print_json([f.__dict__ for f in findings])
    else:
        for f in findings:
            print(f"{'ok  ' if f.ok else 'FAIL'}  {f.name}: {f.detail}"
                  + (f" — fix: {f.fix}" if not f.ok and f.fix else ""))
    if not all(f.ok for f in findings):
        raise SystemExit(1)


def _print_entry(plan, backup: Path | None) -> None:
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


def cmd_logs(args) -> None:
    from . import doctor
    path = doctor.log_path()
    if not path.exists():
        raise Failure(f"no log at {path} yet: memnestd has not run with this MEMNEST_LOG_FILE")
    if args.json:
        if args.follow:
            raise Failure("--json prints the last lines once; drop -f to use it")
        _print_json({"log": str(path), "lines": doctor.tail(path, args.lines)})
        return
    for line in doctor.tail(path, args.lines):
        print(line)
    if args.follow:
        sys.stdout.flush()
        try:
            doctor.follow(path, lambda text: (sys.stdout.write(text), sys.stdout.flush()))
        except KeyboardInterrupt:
            return


def cmd_doctor(args) -> None:
    from . import doctor
    findings = doctor.run_checks()
    if args.json:
        _print_json([f.as_dict() for f in findings])
    else:
        for f in findings:
            print(f.line())
    if not all(f.ok for f in findings):
        raise SystemExit(1)


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
                tool, arguments, workspace, ws.db_path_override(), on_progress=progress,
                origin=CLI_ORIGIN)))
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


def cmd_verify(args) -> None:
    reports = _long_call(args, "memory_verify", {"repair": args.repair, "quick": args.quick})
    if args.json:
        views = [{"workspace": w, **r} for w, r in reports]
        _print_json(views if args.all else views[0])
    else:
        for workspace, r in reports:
            print(verify_summary(workspace, r))
            for item in r.get("repaired", {}).get("items", []):
                print(f"  repaired: {item['detail']}")
            for item in r["findings"]["items"]:
                fix = "" if item["repairable"] else " (not repairable: see the text)"
                print(f"  {'FAIL' if not args.repair else 'left'}: {item['detail']}{fix}")
            hidden = r["findings"]["count"] - len(r["findings"]["items"])
            if hidden:
                print(f"  … and {hidden} more ({r['findings']['by_kind']})")
            if r["findings"]["count"] and not args.repair and \
                    any(i["repairable"] for i in r["findings"]["items"]):
                print("  memnest-ctl verify --repair fixes what the database itself can restore")
    if any(r["findings"]["count"] for _, r in reports):
        raise SystemExit(1)


def verify_summary(workspace: str, r: dict) -> str:
    checked = r["checked"]
    what = f"{checked['memories']} memories, {checked['edges']} links"
    if r["healthy"]:
        fixed = r.get("repaired", {}).get("count", 0)
        return (f"{workspace}: healthy ({what}; {r['duration_ms']:.0f} ms"
                f"{f'; {fixed} findings repaired' if fixed else ''})")
    return f"{workspace}: {r['findings']['count']} findings ({what})"


EXPORT_SIGNATURE = b'{\n "format": "memnest-export"'  # how an export file starts


def cmd_export(args) -> None:
    if args.file and ws.remote():
        raise Failure("with a remote daemon (MEMNEST_REMOTE) the export is written on the "
                      "daemon's machine, under the workspace's .memnest/exports/; run "
                      "`memnest-ctl export` without FILE and copy it from there")
    target = Path(args.file).expanduser().absolute() if args.file else None
    if target is not None and target.exists() and not _is_export(target):
        raise Failure(f"{target} exists and is not a memnest export; it is left as it is")
    out = _call(_client(), args, "memory_export", {})
    if target is not None:
        # The daemon writes only under the workspace's .memnest/; this command, run by the
        # user, moves the file where the user asked.
        shutil.move(out["path"], target)
        out["path"] = str(target)
    if args.json:
        _print_json(out)
        return
    print(f"wrote {out['memories']} memories, {out['edges']} links and "
          f"{out['keep_separate']} keep-separate verdicts to {out['path']}")


def _is_export(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(EXPORT_SIGNATURE)) == EXPORT_SIGNATURE
    except OSError:
        return False


def cmd_import(args) -> None:
    # A remote daemon reads the file on its own machine: the path is passed as given there.
    path = args.file if ws.remote() else str(Path(args.file).expanduser().resolve())
    [(workspace, out)] = _long_call(args, "memory_import", {"path": path})
    if args.json:
        _print_json(out)
        return
    m = out["memories"]
    print(f"{workspace}: {m['in_file']} memories in the file: {m['stored']} stored, "
          f"{m['merged']} merged, {m['duplicate']} already here; {out['edges']['created']} "
          f"links and {out['keep_separate']['recorded']} keep-separate verdicts added")


# -- parser --------------------------------------------------------------------------------------

class _HelpWithDefaults(argparse.HelpFormatter):
    """Says each option's default, unless its help already does or it has none worth saying."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text or \
                action.option_strings == []:
            return text
        return f"{text} (default: %(default)s)"


def _bounded(low: int, high: int):
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memnest-ctl",
                                     description="Control memnestd and use its memories.")
    parser.add_argument("--version", action="version", version=f"memnest-ctl {VERSION}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output")
    scoped = argparse.ArgumentParser(add_help=False, parents=[common])
    scoped.add_argument("--workspace", metavar="DIR",
                        help="workspace directory (default: $MEMORY_WORKSPACE, else the "
                             "nearest folder up from here that has .memnest/ or is a "
                             "repository root, else the current directory)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, **kwargs) -> argparse.ArgumentParser:
        """A subcommand whose --help starts with what it does and says every default."""
        return sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".",
                              formatter_class=_HelpWithDefaults, **kwargs)

    command("status", parents=[common], help="is the daemon running, and what it holds"
                   ).set_defaults(run=cmd_status)
    command("start", parents=[common], help="start the daemon if it is not running"
                   ).set_defaults(run=cmd_start)
    command("stop", parents=[common], help="drain and stop the daemon"
                   ).set_defaults(run=cmd_stop)
    command("stats", parents=[scoped], help="counts and index health of a workspace"
                   ).set_defaults(run=cmd_stats)
    store = command("store", parents=[scoped], help="remember something ('-' reads stdin)")
    store.add_argument("content", help="what to remember; '-' reads it from stdin")
    store.add_argument("--category", choices=CATEGORIES,
                       help="what kind of memory (default: general)")
    store.add_argument("--tag", action="append", help="a tag (repeatable)")
    store.add_argument("--importance", type=_bounded(1, 5), default=3, metavar="1-5",
                       help="1 trivial .. 5 critical; ranks search results")
    store.add_argument("--keep-as-is", action="store_true",
                       help="store it even if it reads like a listing, a log or chatter (the "
                            "capture judge would refuse it)")
    store.set_defaults(run=cmd_store)
    relate = command("relate", parents=[scoped],
                            help="link two memories (what dream's review hints ask for)")
    relate.add_argument("from_id", type=int, help="the memory the link starts at")
    relate.add_argument("to_id", type=int, help="the memory it points to")
    relate.add_argument("--type", help="related_to (default), supersedes (from replaces to) or "
                                       "explains (from explains to)")
    relate.set_defaults(run=cmd_relate)
    unrelate = command("unrelate", parents=[scoped],
                              help="remove the links from one memory to another")
    unrelate.add_argument("from_id", type=int, help="the memory the links start at")
    unrelate.add_argument("to_id", type=int, help="the memory they point to")
    unrelate.add_argument("--type", help="only links of this type")
    unrelate.add_argument("--both-directions", action="store_true",
                          help="also the links from to_id to from_id")
    unrelate.set_defaults(run=cmd_unrelate)
    separate = command("keep-separate", parents=[scoped],
                              help="record that memories which look alike all hold")
    separate.add_argument("ids", type=int, nargs="+", metavar="ID",
                          help="two or more memory ids that dream must not merge")
    separate.set_defaults(run=cmd_keep_separate)
    team.add_share(command("share", parents=[scoped],
                           help="share memories with the team through git (.memnest/shared/)"))
    team.add_sync(command("sync", parents=[scoped],
                          help="bring teammates' shared memories in now, and say what came"))
    search = command("search", parents=[scoped], help="find memories")
    search.add_argument("query", help="words or a question; matched by meaning and keywords")
    search.add_argument("--top-k", type=_bounded(1, 100), default=10, metavar="1-100",
                        help="results to show")
    search.add_argument("--global", dest="global_search", action="store_true",
                        help="search every workspace in the database")
    search.set_defaults(run=cmd_search)
    stale = command("stale", parents=[scoped],
                    help="list memories whose cited code changed or went, by file")
    stale.add_argument("--include-moved", action="store_true",
                       help="also those whose code only moved (re-anchored by themselves)")
    stale.set_defaults(run=cmd_stale)
    export = command("export", parents=[scoped],
                            help="write the workspace's memories to a JSON file")
    export.add_argument("file", nargs="?", help="default: .memnest/exports/memories-<time>.json")
    export.set_defaults(run=cmd_export)
    load = command("import", parents=[scoped],
                          help="load a file written by export (progress on a terminal)")
    load.add_argument("file", help="a JSON file that `memnest-ctl export` wrote")
    load.set_defaults(run=cmd_import, all=False)

    svc = command("service", parents=[common],
                         help="run memnestd under systemd (Linux) or launchd (macOS)")
    svc.add_argument("action", choices=["install", "uninstall", "status"],
                     help="install: write the unit files and start the service; uninstall: "
                          "stop it and remove them; status: what is installed and running")
    svc.add_argument("--dry-run", action="store_true",
                     help="print the files and commands without acting")
    svc.add_argument("--model", help="embedding model for the service (default: the running "
                     "daemon's, else $MEMORY_EMBEDDING_MODEL, else the default)")
    svc.set_defaults(run=cmd_service)

    from .editor_configs import CLIENTS
    config = command("config", parents=[common],
                            help="add memnest to an MCP client's config file")
    config.add_argument("client", choices=list(CLIENTS), help="the editor or agent to set up")
    mode = config.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="verify the entry, change nothing")
    mode.add_argument("--print", dest="print_only", action="store_true",
                      help="print the merged file instead of writing it")
    config.add_argument("--workspace", metavar="DIR",
                        help="the project to configure and pin (default: the current directory)")
    config.add_argument("--file", metavar="PATH", help="another config file to merge into")
    config.add_argument("--name", default="memnest", help="server name (default: memnest)")
    config.add_argument("--model", help="embedding model for the entry (default: the running "
                        "daemon's, else $MEMORY_EMBEDDING_MODEL, else the default)")
    config.add_argument("--no-hooks", action="store_true",
                        help="only the MCP entry: no hooks, steering, rule or instructions "
                             "file")
    mode.add_argument("--print-hooks", action="store_true",
                      help="print the hook/rule files config would write, writing nothing")
    mode.add_argument("--remove-hooks", action="store_true",
                      help="take memnest's hooks, steering, rule and instructions files out "
                           "again (the MCP entry stays)")
    config.set_defaults(run=cmd_config)

    from . import hook
    hooked = command("hook", help="run one agent hook event (what `config` installs; "
                            "reads the editor's hook JSON on stdin)")
    hook.add_arguments(hooked)
    hooked.set_defaults(run=lambda args: sys.exit(hook.run(args)))

    logs = command("logs", parents=[common], help="show the daemon's log")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    logs.add_argument("-n", "--lines", type=_bounded(0, 1_000_000), default=50, metavar="N",
                      help="lines to show")
    logs.set_defaults(run=cmd_logs)

    for name, run, text in (("dream", cmd_dream, "consolidate memory (memory_dream)"),
                            ("reindex", cmd_reindex, "rebuild the search indexes"),
                            ("verify", cmd_verify, "check the database against its indexes, "
                             "graph, topics and files (exit 1 on a finding)")):
        cmd = command(name, parents=[scoped], help=text)
        cmd.add_argument("--all", action="store_true",
                         help="every workspace the daemon has open")
        if name == "dream":
            cmd.add_argument("--dry-run", action="store_true",
                             help="report what it would do; change nothing")
            cmd.add_argument("--force", action="store_true", help="run despite the gates")
        if name == "verify":
            cmd.add_argument("--repair", action="store_true",
                             help="fix what the database itself can restore, and say what "
                                  "could not be fixed")
            cmd.add_argument("--quick", action="store_true",
                             help="skip comparing every stored vector")
        cmd.set_defaults(run=run)

    from . import tls_setup
    tls_setup.add_arguments(command("tls", help="make the certificates of a remote daemon "
                                    "(mutual TLS): tls init, tls client NAME"))

    command("doctor", parents=[common],
                   help="check socket, daemon, versions, model, databases, service"
                   ).set_defaults(run=cmd_doctor)
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
    except NothingInstalled:
        return 3
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
