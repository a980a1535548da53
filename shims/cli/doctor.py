"""`memnest-ctl doctor` and `memnest-ctl logs`.

doctor runs every check it can without starting anything and prints one line per check: `ok`
or `FAIL`, what it found, and for a failure the command or change that fixes it.
"""
import os
import stat
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from memnest_proto import memnest_pb2 as pb
from memnest_proto import paths
from memnest_proto.version import PROTOCOL_VERSION, VERSION, version_key

from ..client import DaemonClient
from ..errors import DaemonUnavailable, ToolFailure
from . import service_units
from .editor_configs import ConfigError, mcp_command


@dataclass
class Finding:
    ok: bool
    check: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{'ok  ' if self.ok else 'FAIL'}  {self.check}: {self.detail}"
        return text + (f" — fix: {self.fix}" if self.fix and not self.ok else "")

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def run_checks() -> list[Finding]:
    found: list[Finding] = []
    sock = paths.socket_path()
    found.append(_socket_folder(sock))
    client = DaemonClient(sock, client_name="memnest-ctl doctor", autostart=False)
    # Waits for a daemon a service manager is starting on this connection; starts none.
    status = client.running_status()
    error = client.last_error.splitlines()[0] if client.last_error else ""
    found.append(_socket_file(sock, status is not None, _service_owns_socket()))
    if status is None and not sock.exists():
        # The normal state after an idle exit: healthy, it starts on the next call.
        found.append(Finding(True, "daemon", "not running; the first call from an editor or "
                             "memnest-ctl starts it"))
    elif status is None:
        found.append(Finding(False, "daemon", f"nothing answers on {sock}"
                             + (f" ({error})" if error else ""),
                             "`memnest-ctl start` (editors also start it on their first call; "
                             "`memnest-ctl logs` shows why a start failed)"))
    else:
        found.append(Finding(True, "daemon", f"memnestd pid {status.pid} answers, up "
                             f"{status.uptime_seconds:.0f}s, calls served: {status.calls_served}"))
        found.append(_versions(status))
        found.append(_model(status))
        found.extend(_databases(client, status))
    client.close()
    found.append(_log_file(status))
    found.append(_shim())
    found.append(_service())
    return found


def _socket_folder(sock: Path) -> Finding:
    folder = sock.parent
    if not folder.exists():
        return Finding(True, "socket folder", f"{folder} does not exist yet; memnestd creates "
                       "it (0700) when it first starts")
    info = folder.stat()
    if info.st_uid != os.getuid():
        return Finding(False, "socket folder", f"{folder} belongs to uid {info.st_uid}, not to "
                       f"you ({os.getuid()})", "set MEMNEST_SOCKET to a path in a folder of your "
                       "own")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        return Finding(False, "socket folder", f"{folder} is mode {mode:o}: other users could "
                       "reach the socket, and memnestd refuses to start", f"chmod 700 {folder}")
    return Finding(True, "socket folder", f"{folder} is yours, mode 700")


def _service_owns_socket() -> bool:
    """An installed systemd socket unit holds the socket: memnestd does not recreate it
    (launchd runs memnestd, which makes its own socket)."""
    try:
        facts = service_units.status()
        return bool(facts["installed"]) and facts["manager"] == "systemd"
    except Exception:  # noqa: BLE001 - the service check below reports a broken manager
        return False


def _socket_file(sock: Path, answering: bool, service_owned: bool = False) -> Finding:
    if not sock.exists():
        return Finding(True, "socket", f"{sock} does not exist yet: it appears when memnestd "
                       "starts")
    info = sock.stat()
    if not stat.S_ISSOCK(info.st_mode):
        return Finding(False, "socket", f"{sock} is not a socket", f"remove {sock}")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        if service_owned:  # the socket unit creates it; stopping the daemon keeps it
            fix = (f"chmod 600 {sock}; for good, `memnest-ctl service install` (its socket "
                   f"unit says mode 0600) and restart the socket: `systemctl --user restart "
                   f"{service_units.SOCKET_UNIT}`")
        else:
            fix = f"chmod 600 {sock}, or `memnest-ctl stop` (memnestd recreates it 0600)"
        return Finding(False, "socket", f"{sock} is mode {mode:o}, readable by others", fix)
    if not answering:
        return Finding(False, "socket", f"{sock} exists but nothing answers on it (left by a "
                       "crashed daemon, or a daemon still starting)",
                       "`memnest-ctl start` replaces a stale socket")
    return Finding(True, "socket", f"{sock}, mode {mode:o}")


def _versions(status: pb.StatusResponse) -> Finding:
    detail = (f"memnestd {status.version} (protocol {status.protocol_version}), memnest-ctl "
              f"{VERSION} (protocol {PROTOCOL_VERSION})")
    if status.protocol_version != PROTOCOL_VERSION:
        return Finding(False, "versions", detail + ": they cannot talk",
                       "`memnest-ctl stop`, then any call starts the memnestd of this install"
                       if version_key(status.version) < version_key(VERSION) else
                       "update this memnest install to match the daemon's")
    if version_key(status.version) < version_key(VERSION):
        return Finding(False, "versions", detail + ": the daemon is older than this install",
                       "nothing, usually: the next editor call upgrades it; or `memnest-ctl "
                       "stop` now")
    return Finding(True, "versions", detail)


def _model(status: pb.StatusResponse) -> Finding:
    if not status.embedding_model or status.embedding_dim <= 0:
        return Finding(False, "model", "the daemon reports no embedding model",
                       "`memnest-ctl logs` shows the load error; then `memnest-ctl stop`")
    detail = (f"{status.embedding_model}, {status.embedding_dim} dims, loaded in "
              f"{status.model_load_seconds:.1f}s")
    wanted = os.environ.get("MEMORY_EMBEDDING_MODEL", "").strip()
    if wanted and wanted != status.embedding_model:
        return Finding(False, "model", detail + f"; but this shell sets MEMORY_EMBEDDING_MODEL="
                       f"{wanted}, and a daemon started from here would use that",
                       "use one model everywhere: fix MEMORY_EMBEDDING_MODEL here or in the "
                       "editor configs (`memnest-ctl config <client> --check`)")
    return Finding(True, "model", detail)


def _databases(client: DaemonClient, status: pb.StatusResponse) -> list[Finding]:
    if not status.workspaces:
        return [Finding(True, "databases", "none open right now (each opens on first use)")]
    found = []
    for w in status.workspaces:
        try:
            stats = client.call_tool("memory_stats", {}, w.workspace, w.db_path)
        except (ToolFailure, DaemonUnavailable) as exc:
            found.append(Finding(False, f"database {w.db_path}", f"memory_stats failed: {exc}",
                                 "`memnest-ctl logs` shows the cause"))
            continue
        detail = f"{stats.get('memories', '?')} memories in {w.workspace}"
        unimported = [x for x in stats.get("warnings", [])
                      if x.startswith("shared memory file not imported")]
        if unimported:  # team memory: a teammate's file with conflict markers, bad JSON, ...
            found.append(Finding(False, f"shared memories in {w.workspace}",
                                 f"{len(unimported)} file(s) not imported: {unimported[0]}",
                                 "edit each file to keep one version (or `git checkout "
                                 "--ours/--theirs -- FILE`), git add and commit; "
                                 "`memnest-ctl sync` lists them all"))
        try:  # a quick verify: the database against its indexes, graph, topics and files
            report = client.call_tool("memory_verify", {"quick": True}, w.workspace, w.db_path)
        except (ToolFailure, DaemonUnavailable) as exc:
            found.append(Finding(False, f"database {w.db_path}", f"memory_verify failed: {exc}",
                                 "`memnest-ctl logs` shows the cause"))
            continue
        if report["healthy"]:
            found.append(Finding(True, f"database {w.db_path}",
                                 detail + ", verified healthy (quick)"))
        else:
            kinds = ", ".join(f"{k.replace('_', ' ')} {n}"
                              for k, n in report["findings"]["by_kind"].items())
            found.append(Finding(False, f"database {w.db_path}",
                                 detail + f", {report['findings']['count']} findings ({kinds})",
                                 f"`memnest-ctl verify --workspace {w.workspace}` lists them; "
                                 "`--repair` fixes what the database itself can restore"))
    return found


def _log_file(status: pb.StatusResponse | None) -> Finding:
    path = Path(status.log_path) if status is not None and status.log_path else paths.log_file()
    if not path.exists():
        return Finding(True, "log", f"{path} (not written yet)")
    if not os.access(path, os.W_OK):
        return Finding(False, "log", f"{path} is not writable", f"chmod u+w {path}")
    return Finding(True, "log", f"{path}, {path.stat().st_size / 1024:.0f} KiB "
                   "(`memnest-ctl logs`)")


def _shim() -> Finding:
    try:
        return Finding(True, "memnest-mcp", str(mcp_command()))
    except ConfigError as exc:
        return Finding(False, "memnest-mcp", str(exc), "pip install -e '.[offline]'")


def _service() -> Finding:
    try:
        facts = service_units.status()
    except Exception as exc:  # noqa: BLE001 - a broken service manager is itself a finding
        return Finding(False, "service", f"could not ask the service manager: {exc}",
                       "`memnest-ctl service status` for details")
    where = " or ".join(facts["files"]) or "no definition"
    if not facts["installed"]:
        if not facts["manager_running"]:
            return Finding(True, "service", f"not installed, and {facts['manager_note']}: "
                           "editors start memnestd on demand")
        return Finding(True, "service", f"not installed ({where}); editors start memnestd on "
                       "demand. `memnest-ctl service install` keeps it running")
    if facts.get("up_to_date") is False:
        return Finding(False, "service", "installed, but its files name other paths or settings "
                       "than this install", "`memnest-ctl service install`")
    if not facts["manager_running"]:
        return Finding(True, "service", f"installed, but {facts['manager_note']}")
    units = facts.get("units")
    if units and units[service_units.SOCKET_UNIT]["active"] != "active":
        return Finding(False, "service", f"installed, but {service_units.SOCKET_UNIT} is "
                       f"{units[service_units.SOCKET_UNIT]['active']}",
                       f"systemctl --user enable --now {service_units.SOCKET_UNIT}")
    if facts["manager"] == "launchd" and not facts.get("loaded"):
        return Finding(False, "service", "installed, but not loaded",
                       "`memnest-ctl service install`")
    return Finding(True, "service", f"installed and enabled ({facts['manager']})")


# -- logs ------------------------------------------------------------------------------------------

def log_path() -> Path:
    """The running daemon's log (it may have been started with another MEMNEST_LOG_FILE)."""
    client = DaemonClient(client_name="memnest-ctl logs", autostart=False)
    try:
        if client.socket_path.exists():
            reported = client.status(timeout=3).log_path
            if reported:
                return Path(reported)
    except Exception:  # noqa: BLE001 - not running: the configured path
        pass
    finally:
        client.close()
    configured: Path = paths.log_file()
    return configured


def tail(path: Path, lines: int) -> list[str]:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        block, data = 8192, b""
        while size > 0 and data.count(b"\n") <= lines:
            step = min(block, size)
            size -= step
            f.seek(size)
            data = f.read(step) + data
    text = data.decode("utf-8", "replace").splitlines()
    return text[-lines:] if lines > 0 else []


def follow(path: Path, out: Callable[[str], object], poll: float = 0.25) -> None:
    """Print what is appended to the log, across rotations, until interrupted."""
    f = open(path, "rb")  # noqa: SIM115 - reopened on rotation
    f.seek(0, os.SEEK_END)
    inode = os.fstat(f.fileno()).st_ino
    try:
        while True:
            chunk = f.read()
            if chunk:
                out(chunk.decode("utf-8", "replace"))
                continue
            time.sleep(poll)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                continue
            if now.st_ino != inode or now.st_size < f.tell():  # rotated or truncated
                f.close()
                f = open(path, "rb")  # noqa: SIM115
                inode = os.fstat(f.fileno()).st_ino
    finally:
        f.close()
