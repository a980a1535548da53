"""`memnest-ctl service`: run memnestd under the user's service manager.

Linux: a systemd user unit plus a socket unit (socket activation). macOS: a launchd
LaunchAgent. The unit and plist templates live in the checkout's `systemd/` and `launchd/`
folders; install fills in the real paths of the installed memnestd and of the socket, and the
daemon settings of the current environment (clients pass MCP servers a minimal environment,
and a service manager passes none of the user's shell).

Where no user service manager runs (containers, CI, most remote shells) nothing needs
installing: memnest-mcp starts memnestd on demand and it exits when idle.
"""
import os
import plistlib
import shutil
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

from memnest_proto import paths

from ..client import DaemonClient, daemon_command
from ..own_paths import (
    UNSHARED,
    NotOurs,
    can_make_folders,
    check_target,
    make_folders,
    own_folder,
    write_file,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from importlib.resources.abc import Traversable

    from memnest_proto import memnest_pb2 as pb

# The templates ship as package data (the repository's systemd/ and launchd/ folders).
SYSTEMD_TEMPLATES = files("memnest_shims.cli.systemd")
LAUNCHD_TEMPLATES = files("memnest_shims.cli.launchd")
SERVICE_UNIT = "memnestd.service"
SOCKET_UNIT = "memnestd.socket"
LABEL = "dev.memnest.memnestd"
VERIFY_TIMEOUT_S = 120.0
UNIT_HEADER = "# Installed by `memnest-ctl service install`"  # how memnest's units start

# Daemon settings worth carrying into the service's environment when set in this shell.
DAEMON_ENV = (
    "MEMORY_EMBEDDING_MODEL", "MEMORY_FUSION", "MEMORY_RRF_K", "MEMORY_SEARCH_CANDIDATES",
    "MEMORY_SEARCH_LIMIT", "MEMORY_LIST_LIMIT", "MEMORY_MAX_CONTENT", "MEMORY_MAX_STORE_CHARS",
    "MEMORY_MAX_BATCH", "MEMORY_LATENCY_WARN_MS", "MEMORY_RESPONSE_FORMAT",
    "MEMNEST_BUFFER_POOL_MB", "MEMNEST_MAX_DB_GB", "MEMNEST_IDLE_CLOSE_MINUTES",
    "MEMNEST_LOG_LEVEL", "MEMNEST_LOG_FILE", "HF_HOME", "FASTEMBED_CACHE_PATH",
)


class ServiceError(Exception):
    """Install/uninstall could not do what was asked; the message says why and what to do."""


def run(cmd: list[str], timeout: float = 60) -> "subprocess.CompletedProcess[str]":
    """Run a service-manager command (tests replace this)."""
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


# -- where things are ------------------------------------------------------------------------------

def platform() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd" if sys.platform.startswith(
        "linux") else sys.platform


def unit_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def plist_path() -> Path:
    return Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"


def installed_files(kind: str | None = None) -> list[Path]:
    kind = kind or platform()
    if kind == "systemd":
        return [unit_dir() / SERVICE_UNIT, unit_dir() / SOCKET_UNIT]
    if kind == "launchd":
        return [plist_path()]
    return []


def manager_running(kind: str | None = None) -> tuple[bool, str]:
    """Whether a user service manager answers here, and if not, why not."""
    kind = kind or platform()
    if kind == "systemd":
        if not shutil.which("systemctl"):
            return False, "systemctl is not installed"
        try:
            probe = run(["systemctl", "--user", "show-environment"], timeout=15)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"systemctl --user failed: {exc}"
        if probe.returncode != 0:
            why = (probe.stderr or probe.stdout).strip().splitlines()
            return False, ("no systemd user manager is running"
                           + (f" (systemctl --user: {why[0]})" if why else ""))
        return True, "systemd user manager"
    if kind == "launchd":
        try:
            probe = run(["launchctl", "print", f"gui/{os.getuid()}"], timeout=15)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"launchctl failed: {exc}"
        if probe.returncode != 0:
            return False, f"no launchd GUI session for uid {os.getuid()} (not logged in?)"
        return True, "launchd GUI session"
    return False, f"memnest has no service definition for {kind}"


# -- rendering -------------------------------------------------------------------------------------

@dataclass
class Setup:
    """What a service runs: the command, the socket and the daemon's environment."""
    command: list[str]
    socket: Path
    env: dict[str, str] = field(default_factory=dict)
    log_dir: Path = field(default_factory=paths.log_dir)

    @classmethod
    def current(cls, model: str | None = None) -> "Setup":
        command = daemon_command()
        if not Path(command[0]).is_absolute():
            command[0] = shutil.which(command[0]) or command[0]
        env = {k: os.environ[k] for k in DAEMON_ENV if os.environ.get(k, "").strip()}
        if model:
            env["MEMORY_EMBEDDING_MODEL"] = model
        log_file = env.get("MEMNEST_LOG_FILE")
        log_dir = Path(log_file).parent if log_file else paths.log_dir()
        return cls(command=command, socket=paths.socket_path(), env=env, log_dir=log_dir)

    @property
    def argv(self) -> list[str]:
        return [*self.command, "--service", "--socket", str(self.socket)]


def _systemd_quote(word: str) -> str:
    """One ExecStart= word: double-quoted, with systemd's specifier and escape rules."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{escaped}"'


def _systemd_value(value: str) -> str:
    return value.replace("%", "%%")


def _template(folder: "Traversable", name: str) -> str:
    try:
        text: str = folder.joinpath(name).read_text(encoding="utf-8")
        return text
    except FileNotFoundError:
        raise ServiceError(f"the service template {name} is missing from this install of "
                           "memnest; reinstall it") from None


def render_systemd(setup: Setup) -> dict[str, str]:
    exec_start = " ".join(_systemd_quote(w) for w in setup.argv)
    environment = "\n".join("Environment=" + _systemd_quote(f"{k}={v}")
                            for k, v in sorted(setup.env.items()))
    header = (f"{UNIT_HEADER} from memnest's template; reinstalling overwrites it.\n")
    service = _template(SYSTEMD_TEMPLATES, SERVICE_UNIT) \
        .replace("@EXEC_START@", exec_start) \
        .replace("@ENVIRONMENT@\n", environment + "\n" if environment else "")
    socket_unit = _template(SYSTEMD_TEMPLATES, SOCKET_UNIT) \
        .replace("@SOCKET@", _systemd_value(str(setup.socket)))
    return {SERVICE_UNIT: header + service, SOCKET_UNIT: header + socket_unit}


def render_launchd(setup: Setup) -> bytes:
    try:
        plist = plistlib.loads(LAUNCHD_TEMPLATES.joinpath(f"{LABEL}.plist").read_bytes())
    except FileNotFoundError:
        raise ServiceError(f"the service template {LABEL}.plist is missing from this install "
                           "of memnest; reinstall it") from None
    values = {"@SOCKET@": str(setup.socket), "@HOME@": str(Path.home()),
              "@LOG_DIR@": str(setup.log_dir)}

    def fill(text: str) -> str:
        for key, value in values.items():
            text = text.replace(key, value)
        return text

    args: list[str] = []
    for word in plist["ProgramArguments"]:
        args.extend(setup.command if word == "@MEMNESTD@" else [fill(word)])
    plist["ProgramArguments"] = args
    for key in ("WorkingDirectory", "StandardOutPath", "StandardErrorPath"):
        plist[key] = fill(plist[key])
    plist["EnvironmentVariables"] = dict(sorted(setup.env.items()))
    return plistlib.dumps(plist)


# -- the report ------------------------------------------------------------------------------------

StepKind = Literal["file", "command", "verify", "note", "skipped", "stopped"]


class _StepText(TypedDict):
    step: StepKind
    text: str


class Step(_StepText, total=False):
    """One step of a report, with the facts it is about."""
    path: str  # a file written, removed or that would be
    command: list[str]  # run or that would be
    exit: int  # of the command run
    pid: int  # of the daemon stopped or found


class Report:
    """Every step, as it happens: what was written, run, stopped or found."""

    def __init__(self, out: "Callable[[str], None]" = print) -> None:
        self.out = out
        self.steps: list[Step] = []

    def step(self, kind: StepKind, text: str, *, path: str | None = None,
             command: list[str] | None = None, exit: int | None = None,
             pid: int | None = None) -> None:
        entry: Step = {"step": kind, "text": text}
        if path is not None:
            entry["path"] = path
        if command is not None:
            entry["command"] = command
        if exit is not None:
            entry["exit"] = exit
        if pid is not None:
            entry["pid"] = pid
        self.steps.append(entry)
        self.out(text)


# -- what install, uninstall and status find (`service ... --json` prints it, with the steps) --

class _Acted(TypedDict):
    manager: str
    manager_running: bool
    dry_run: bool
    files: list[str]
    commands: list[list[str]]


class Uninstalled(_Acted):
    """What uninstall did or would do."""


class Installed(_Acted, total=False):
    """What install did or would do; pid and version of the daemon that then answered."""
    installed: bool
    reason: str  # why nothing was installed
    pid: int
    version: str


class UnitState(TypedDict):
    enabled: str
    active: str


class _Daemon(TypedDict):
    pid: int
    version: str


class DaemonFacts(_Daemon, total=False):
    run_by: Literal["service", "on demand"]


class _Found(TypedDict):
    manager: str
    manager_running: bool
    files: dict[str, bool]  # path -> present
    installed: bool


class ServiceStatus(_Found, total=False):
    """What is installed, what the manager says about it, and who serves the socket."""
    manager_note: str  # why the manager is not running
    up_to_date: bool | None  # None: what install would write cannot be told
    units: dict[str, UnitState]
    loaded: bool  # launchd's job
    service_pid: int
    socket: str
    daemon: DaemonFacts | None


# -- install / uninstall / status ------------------------------------------------------------------

def _commands_install(kind: str, files: list[Path]) -> list[list[str]]:
    if kind == "systemd":
        return [["systemctl", "--user", "daemon-reload"],
                ["systemctl", "--user", "enable", "--now", SOCKET_UNIT, SERVICE_UNIT]]
    return [["launchctl", "bootstrap", f"gui/{os.getuid()}", str(files[0])]]


def _commands_uninstall(kind: str) -> list[list[str]]:
    if kind == "systemd":
        return [["systemctl", "--user", "disable", "--now", SERVICE_UNIT, SOCKET_UNIT],
                ["systemctl", "--user", "daemon-reload"]]
    return [["launchctl", "bootout", f"gui/{os.getuid()}/{LABEL}"]]


def _contents(kind: str, setup: Setup) -> dict[Path, bytes]:
    if kind == "systemd":
        return {unit_dir() / name: text.encode() for name, text in render_systemd(setup).items()}
    if kind == "launchd":
        return {plist_path(): render_launchd(setup)}
    raise ServiceError(f"memnest has no service definition for {kind}; memnest-mcp starts "
                       "memnestd on demand there")


def _on_demand_note() -> str:
    return ("Nothing needs installing: each memnest-mcp starts memnestd on demand when the "
            "first editor calls it, every other editor window shares it, and it exits after "
            "MEMNEST_IDLE_EXIT_MINUTES (default 30) without clients.")


def install(dry_run: bool = False, model: str | None = None, report: Report | None = None,
            kind: str | None = None) -> Installed:
    report = report or Report()
    kind = kind or platform()
    setup = Setup.current(model)
    contents = _contents(kind, setup)
    files = list(contents)
    commands = _commands_install(kind, files)
    running, why = manager_running(kind)
    result: Installed = {"manager": kind, "manager_running": running, "dry_run": dry_run,
                         "files": [str(f) for f in files], "commands": commands,
                         "installed": False}
    if dry_run:
        if running:
            _check_files(kind, contents)
        for path, data in contents.items():
            report.step("file", f"# would write {path}:\n{data.decode().rstrip()}\n",
                        path=str(path))
        for cmd in commands:
            report.step("command", "would run: " + " ".join(cmd), command=cmd)
        report.step("verify", f"would then wait for memnestd to answer on {setup.socket}")
        if not running:
            report.step("note", f"(here {why}, so a real install would do nothing. "
                        + _on_demand_note() + ")")
        return result
    if not running:
        report.step("skipped", f"Not installed: {why}. This is normal in containers, CI and "
                    "sessions without a login manager. " + _on_demand_note())
        result["reason"] = why
        return result

    _check_files(kind, contents)
    if kind == "launchd":
        _log_dir(setup.log_dir)
    changed = False
    for path, data in contents.items():
        previous = _read(path)
        try:
            make_folders(path.parent)
            if previous != data:
                write_file(path, data, 0o644)
                changed = True
        except NotOurs as exc:
            raise ServiceError(f"{exc}; the service is not installed") from None
        state = "unchanged" if previous == data else "replaced" if previous else "wrote"
        report.step("file", f"{state} {path}", path=str(path))
    service_pid = _service_pid(kind)
    _stop_on_demand_daemon(setup.socket, report, keep_pid=service_pid)
    if kind == "launchd" and (changed or not service_pid):
        # bootstrap refuses a label that is loaded already: unload the previous version.
        out = run(["launchctl", "bootout", f"gui/{os.getuid()}/{LABEL}"])
        if out.returncode == 0:
            report.step("command", f"ran: launchctl bootout gui/{os.getuid()}/{LABEL} "
                        "(unloaded the previous version)")
        service_pid = 0
    if kind == "launchd" and service_pid:
        commands = []  # loaded, running and unchanged: nothing to do
    for cmd in commands:
        _run_reported(cmd, report)
    if kind == "systemd" and changed and service_pid:
        # The running service still has the previous unit: restart it (it drains first).
        _run_reported(["systemctl", "--user", "restart", SERVICE_UNIT], report)
    status = _verify(setup.socket, report)
    result.update({"installed": True, "pid": status.pid, "version": status.version})
    return result


def _check_files(kind: str, contents: dict[Path, bytes]) -> None:
    """Every file install writes may be written, before any is: its folder one of the
    user's (made when missing), the file no link, and a file there one memnest wrote."""
    for path in contents:
        try:
            exists = can_make_folders(path.parent) == [] and check_target(path)
        except NotOurs as exc:
            raise ServiceError(f"{exc}; nothing was installed") from None
        if exists and not written_by_memnest(kind, _read(path)):
            raise ServiceError(f"{path} is there and was not written by memnest; move it "
                               "away (or name memnest's service otherwise), then install "
                               "again. Nothing was installed.")


def written_by_memnest(kind: str, data: bytes | None) -> bool:
    """Whether a unit file's or plist's contents are what `service install` writes."""
    if data is None:
        return False
    if kind == "systemd":
        return data.startswith(UNIT_HEADER.encode())
    try:
        return bool(plistlib.loads(data).get("Label") == LABEL)
    except Exception:  # noqa: BLE001 - not a plist of ours, whatever plistlib found wrong
        return False


def _read(path: Path) -> bytes | None:
    """A service file's contents, read without following a link; None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(1 << 20) if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else None


def _log_dir(folder: Path) -> None:
    """launchd writes the daemon's output there: made 0700 when missing; refused when it is
    a link, another user's or writable by every user."""
    try:
        own_folder(folder, UNSHARED)
    except NotOurs as exc:
        raise ServiceError(f"the log folder {exc}; nothing was installed") from None


def _run_reported(cmd: list[str], report: Report, tolerate: bool = False) -> None:
    try:
        out = run(cmd)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServiceError(f"`{' '.join(cmd)}` failed: {exc}") from None
    detail = (out.stderr or out.stdout).strip()
    if out.returncode != 0 and not tolerate:
        raise ServiceError(f"`{' '.join(cmd)}` exited with {out.returncode}: {detail}")
    suffix = f" (exit {out.returncode}: {detail.splitlines()[0]})" if out.returncode and \
        detail else f" (exit {out.returncode})" if out.returncode else ""
    report.step("command", "ran: " + " ".join(cmd) + suffix, command=cmd,
                exit=out.returncode)


def _service_pid(kind: str) -> int:
    """The pid of the daemon the service manager runs, 0 if none."""
    try:
        if kind == "systemd":
            out = run(["systemctl", "--user", "show", "-p", "MainPID", "--value",
                       SERVICE_UNIT]).stdout.strip()
        else:
            lines = run(["launchctl", "print", f"gui/{os.getuid()}/{LABEL}"]).stdout
            out = next((ln.split("=", 1)[1].strip() for ln in lines.splitlines()
                        if ln.strip().startswith("pid =")), "")
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return int(out) if out.isdigit() else 0


def _stop_on_demand_daemon(sock: Path, report: Report, keep_pid: int = 0) -> None:
    """A daemon started on demand holds the socket path; the service manager must own it."""
    client = DaemonClient(sock, client_name="memnest-ctl service", autostart=False)
    if not client.is_running():
        return
    status = client.status()
    if keep_pid and status.pid == keep_pid:
        client.close()
        return  # it is the service's own daemon
    client.shutdown("memnest-ctl service install: the service manager takes over")
    if not client.wait_stopped(status.pid):
        raise ServiceError(f"the running memnestd (pid {status.pid}) did not stop within 45s; "
                           "stop it (`memnest-ctl stop`) and install again")
    report.step("stopped", f"stopped the running memnestd (pid {status.pid}) so that the "
                "service manager can own the socket; editors reconnect by themselves",
                pid=status.pid)


def _verify(sock: Path, report: Report) -> "pb.StatusResponse":
    client = DaemonClient(sock, client_name="memnest-ctl service", autostart=False)
    deadline = time.monotonic() + VERIFY_TIMEOUT_S
    last = ""
    while time.monotonic() < deadline:
        try:
            # Connecting is what starts a socket-activated daemon; it answers once loaded.
            status = client.status(timeout=10)
            client.close()
            report.step("verify", f"memnestd {status.version} answers on {sock} (pid "
                        f"{status.pid}, model {status.embedding_model})", pid=status.pid)
            return status
        except Exception as exc:  # noqa: BLE001 - keep trying until the deadline
            last = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            client.close()
            time.sleep(0.5)
    hint = ("journalctl --user -u memnestd -n 50" if platform() == "systemd"
            else f"memnest-ctl logs (and {paths.log_dir()}/memnestd.stderr.log)")
    raise ServiceError(f"the service was installed but memnestd did not answer on {sock} "
                       f"within {VERIFY_TIMEOUT_S:.0f}s ({last}); see `{hint}`")


def uninstall(dry_run: bool = False, report: Report | None = None,
              kind: str | None = None) -> Uninstalled:
    report = report or Report()
    kind = kind or platform()
    files = [f for f in installed_files(kind) if f.exists()]
    running, why = manager_running(kind)
    commands = _commands_uninstall(kind) if running else []
    result: Uninstalled = {"manager": kind, "manager_running": running, "dry_run": dry_run,
                           "files": [str(f) for f in files], "commands": commands}
    if not files:
        report.step("note", "memnest is not installed as a service (no "
                    + " or ".join(str(f) for f in installed_files(kind)) + "); nothing to do")
        return result
    if dry_run:
        for cmd in commands:
            report.step("command", "would run: " + " ".join(cmd), command=cmd)
        for path in files:
            report.step("file", f"would remove {path}", path=str(path))
        return result
    if running:
        for cmd in commands[:1]:  # a unit or job that is not loaded is not an error here
            _run_reported(cmd, report, tolerate=True)
    else:
        report.step("note", f"{why}: removing the files only")
    for path in files:
        if not written_by_memnest(kind, _read(path)):
            report.step("note", f"left {path}: memnest did not write it", path=str(path))
            continue
        path.unlink()
        report.step("file", f"removed {path}", path=str(path))
    for cmd in commands[1:]:
        _run_reported(cmd, report)
    report.step("note", "memnest-mcp starts memnestd on demand again from now on")
    return result


def status(kind: str | None = None) -> ServiceStatus:
    """What is installed, what the manager says about it, and who serves the socket."""
    kind = kind or platform()
    files = {str(f): f.exists() for f in installed_files(kind)}
    running, why = manager_running(kind)
    facts: ServiceStatus = {"manager": kind, "manager_running": running, "files": files,
                            "installed": bool(files) and all(files.values())}
    if not running:
        facts["manager_note"] = why
    if facts["installed"]:
        try:
            expected = _contents(kind, Setup.current())
            facts["up_to_date"] = all(Path(p).read_bytes() == data
                                      for p, data in expected.items())
        except ServiceError:
            facts["up_to_date"] = None
    if running and kind == "systemd":
        units: dict[str, UnitState] = {}
        for unit in (SOCKET_UNIT, SERVICE_UNIT):
            enabled = run(["systemctl", "--user", "is-enabled", unit]).stdout.strip()
            active = run(["systemctl", "--user", "is-active", unit]).stdout.strip()
            units[unit] = {"enabled": enabled or "unknown", "active": active or "unknown"}
        facts["units"] = units
        facts["service_pid"] = _service_pid(kind)
    elif running and kind == "launchd":
        facts["loaded"] = run(["launchctl", "print",
                               f"gui/{os.getuid()}/{LABEL}"]).returncode == 0
        facts["service_pid"] = _service_pid(kind)
    client = DaemonClient(client_name="memnest-ctl service", autostart=False)
    try:
        s = client.status(timeout=3) if client.socket_path.exists() else None
    except Exception:  # noqa: BLE001 - not answering is a fact to report
        s = None
    finally:
        client.close()
    daemon: DaemonFacts | None = None
    if s is not None:
        daemon = {"pid": s.pid, "version": s.version}
        if facts.get("service_pid"):
            daemon["run_by"] = "service" if s.pid == facts.get("service_pid") else "on demand"
    facts["socket"] = str(client.socket_path)
    facts["daemon"] = daemon
    return facts

