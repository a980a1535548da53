"""memnest-ctl status, start, stop, logs, doctor: the daemon itself and its health."""
import argparse
import sys

import grpc
from memnest_proto import memnest_pb2 as pb

from ... import workspace as ws
from ...client import DaemonClient
from .. import doctor
from ..common import Command, ExitCode, Failure, bounded, client, print_json, workspace
from ..terminal import one_line


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def why_not_running(daemon: DaemonClient) -> str:
    """What running_status() found: nothing on the socket, or a daemon that never answered."""
    if daemon.last_error and "did not answer" in daemon.last_error:
        return daemon.last_error
    return f"memnestd is not running on {daemon.socket_path}"


def status_facts(s: pb.StatusResponse) -> dict[str, object]:
    return {
        "running": True, "version": s.version, "protocol_version": s.protocol_version,
        "pid": s.pid, "uptime_seconds": round(s.uptime_seconds, 1), "rss_bytes": s.rss_bytes,
        "embedding_model": s.embedding_model, "embedding_dim": s.embedding_dim,
        "model_load_seconds": round(s.model_load_seconds, 2), "socket": s.socket_path,
        "log": s.log_path, "calls_served": s.calls_served,
        "workspaces": [{"workspace": w.workspace, "database": w.db_path,
                        "memories": w.memories, "idle_seconds": round(w.idle_seconds, 1)}
                       for w in s.workspaces],
    }


def print_status(s: pb.StatusResponse) -> None:
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
        print(f"  {one_line(w.workspace)}: {w.memories} memories, idle {w.idle_seconds:.0f}s "
              f"({one_line(w.db_path)})")


def cmd_status(args: argparse.Namespace) -> None:
    daemon = client(autostart=False)
    s = daemon.running_status()
    if s is None:
        if args.json:
            print_json({"running": False, "socket": str(daemon.socket_path),
                        "detail": why_not_running(daemon)})
            raise SystemExit(ExitCode.NOT_THERE)
        raise Failure(why_not_running(daemon))
    here = _here(daemon, args)
    if args.json:
        print_json({**status_facts(s), **({"here": here} if here else {})})
        return
    print_status(s)
    if here:
        print(f"here     {one_line(here['workspace'])}: {one_line(here['why'])}")


def _here(daemon: DaemonClient, args: argparse.Namespace) -> dict[str, object] | None:
    """Which memory the command's folder uses, and why, as the daemon resolves it."""
    if ws.remote():
        return None
    try:
        resolved = daemon.status(workspace=workspace(args)).resolved
    except grpc.RpcError:
        return None
    if not resolved.why:
        return None
    out: dict[str, object] = {"workspace": resolved.workspace, "why": resolved.why}
    if resolved.checkout and resolved.checkout != resolved.workspace:
        out["checkout"] = resolved.checkout
    if resolved.refused:
        out["refused"] = True
    return out


def cmd_start(args: argparse.Namespace) -> None:
    daemon = client()
    already = daemon.is_running()
    if not already:
        daemon.start_daemon()
    s = daemon.status()
    if args.json:
        print_json({"running": True, "pid": s.pid, "already_running": already,
                    "socket": s.socket_path})
    else:
        state = "already running" if already else "started"
        print(f"memnestd {state}: pid {s.pid} on {s.socket_path}")


def cmd_stop(args: argparse.Namespace) -> None:
    daemon = client(autostart=False)
    running = daemon.running_status()
    if running is None:
        if args.json:
            print_json({"stopped": False, "running": False,
                        "detail": why_not_running(daemon)})
        else:
            print(why_not_running(daemon))
        return
    pid = running.pid
    daemon.shutdown("memnest-ctl stop")
    if not daemon.wait_stopped(pid, timeout=40):
        raise Failure(f"memnestd (pid {pid}) did not stop within 40s")
    if args.json:
        print_json({"stopped": True, "pid": pid})
    else:
        print(f"memnestd (pid {pid}) stopped")


def add_logs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    parser.add_argument("-n", "--lines", type=bounded(0, 1_000_000), default=50, metavar="N",
                        help="lines to show")


def _write_now(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def cmd_logs(args: argparse.Namespace) -> None:
    path = doctor.log_path()
    if not path.exists():
        raise Failure(f"no log at {path} yet: memnestd has not run with this MEMNEST_LOG_FILE")
    if args.json:
        if args.follow:
            raise Failure("--json prints the last lines once; drop -f to use it")
        print_json({"log": str(path), "lines": doctor.tail(path, args.lines)})
        return
    for line in doctor.tail(path, args.lines):
        print(line)
    if args.follow:
        sys.stdout.flush()
        try:
            doctor.follow(path, _write_now)
        except KeyboardInterrupt:
            return


def cmd_doctor(args: argparse.Namespace) -> None:
    findings = doctor.run_checks()
    if args.json:
        print_json([f.as_dict() for f in findings])
    else:
        for f in findings:
            print(f.line())
    if not all(f.ok for f in findings):
        raise SystemExit(ExitCode.FAILED)


LIFECYCLE = (
    Command("status", "is the daemon running, and what it holds", cmd_status),
    Command("start", "start the daemon if it is not running", cmd_start, "output"),
    Command("stop", "drain and stop the daemon", cmd_stop, "output"),
)
HEALTH = (
    Command("logs", "show the daemon's log", cmd_logs, "output", add_logs_arguments),
    Command("doctor", "check socket, daemon, versions, model, databases, service", cmd_doctor,
            "output"),
)
COMMANDS = LIFECYCLE + HEALTH
