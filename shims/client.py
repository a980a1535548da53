"""Connect to memnestd, starting it on demand, and call it; shared by memnest-mcp and
memnest-ctl.

On connecting, the client and the daemon exchange versions (Status). A client newer than the
daemon asks it to drain and exit, then starts the new memnestd (or lets the service manager
start it); calls that other clients have in flight complete during the drain, and calls that
arrive meanwhile find no daemon to connect to and are sent once more to the new one. A client
older than the daemon keeps working while their protocol numbers match. A call that reached a
daemon is never sent twice (see _with_restart).

With MEMNEST_REMOTE=HOST:PORT the daemon is another machine's, reached over mutual TLS
(remote.py): versions are still compared, but a remote daemon is never started, stopped or
upgraded from here.
"""
import errno
import fcntl
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import grpc
from memnest_proto import memnest_pb2 as pb
from memnest_proto import paths
from memnest_proto import stub as pb_stub
from memnest_proto.contract import MAX_MESSAGE_BYTES, SOCKET_ACTIVATION_VARS
from memnest_proto.version import PROTOCOL_VERSION, VERSION, version_key

from .daemon_process import process_alive
from .errors import DaemonUnavailable as DaemonUnavailable
from .errors import OutcomeUnknown as OutcomeUnknown
from .errors import ToolFailure as ToolFailure
from .tool_json import ToolArguments, ToolResult

log = logging.getLogger("memnest.client")

START_DEADLINE_S = float(os.environ.get("MEMNEST_START_TIMEOUT_S", "90"))
CALL_DEADLINE_S = float(os.environ.get("MEMNEST_CALL_TIMEOUT_S", "600"))
CHANNEL_CLOSE_DELAY_S = 0.5  # see DaemonClient.close()
# The daemon drains for up to 30 s; allow for closing databases on top.
DRAIN_WAIT_S = 45.0
# How long to let a service manager bring its daemon back after an upgrade before starting one.
MANAGER_RESTART_WAIT_S = 15.0

Answer = TypeVar("Answer")
ProgressCallback = Callable[[float, float, str], None]  # (done, total, message)



def daemon_command() -> list[str]:
    """The memnestd beside this interpreter (same install), else on PATH, else -m."""
    beside = Path(sys.executable).with_name("memnestd")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("memnestd")
    if found:
        return [found]
    return [sys.executable, "-m", "memnest_daemon"]


class DaemonClient:
    def __init__(self, socket_path: Path | None = None, client_name: str = "client",
                 autostart: bool = True, version: str = VERSION,
                 protocol: int = PROTOCOL_VERSION, remote: str | None = None):
        # HOST:PORT of a remote daemon (MEMNEST_REMOTE), "" for the local one
        self.remote = (os.environ.get("MEMNEST_REMOTE", "") if remote is None
                       else remote).strip()
        self.socket_path = socket_path or paths.socket_path()
        self.client_name = client_name
        self.autostart = autostart and not self.remote
        self.version, self.protocol = version, protocol
        self._channel: grpc.Channel | None = None
        # our connectivity callback on _channel
        self._watcher: Callable[[grpc.ChannelConnectivity], None] | None = None
        self._stub: pb_stub.Stub | None = None
        self._checked_pid: int | None = None  # the daemon whose version we have accepted
        self._upgrade_tried = False
        self.upgraded_from: str | None = None  # the version this client replaced, if any
        self._last_error = ""
        self.daemon_version = ""  # of the daemon last accepted

    # -- connection ----------------------------------------------------------------------

    @property
    def address(self) -> str:
        """Where this client reaches its daemon, for messages."""
        return f"{self.remote} (TLS)" if self.remote else str(self.socket_path)

    def _connect(self) -> pb_stub.Stub:
        if self._stub is None:
            options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                       ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                       ("grpc.enable_retries", 0)]
            if self.remote:
                from . import remote  # TLS only when asked for: the shim stays lean

                self._channel = remote.channel(self.remote, options)
            else:
                self._channel = grpc.insecure_channel(paths.grpc_target(self.socket_path),
                                                      options=options)
            self._stub = pb_stub.connect(self._channel)
            self._watcher = self._watch(self._channel)
            self._channel.subscribe(self._watcher)
        return self._stub

    def _watch(self, channel: grpc.Channel) -> Callable[[grpc.ChannelConnectivity], None]:
        """When a connection that was up goes down (the daemon exited, was replaced by an
        upgrade, or the channel idled), the next call checks the daemon's version again:
        gRPC reconnects by itself, possibly to another daemon."""
        seen_ready = False

        def on_state(state: grpc.ChannelConnectivity) -> None:
            nonlocal seen_ready
            if state == grpc.ChannelConnectivity.READY:
                seen_ready = True
            elif seen_ready and channel is self._channel:
                self._checked_pid = None
                seen_ready = False
        return on_state

    def close(self) -> None:
        if self._channel is not None:
            # gRPC's connectivity poller dies with "Cannot monitor channel state: Channel
            # closed!" if the channel closes under it. Unsubscribed, it ends by itself within
            # one 0.2 s poll; the channel is closed after that.
            self._channel.unsubscribe(self._watcher)
            closer = threading.Timer(CHANNEL_CLOSE_DELAY_S, self._channel.close)
            closer.daemon = True
            closer.start()
        self._channel = self._stub = None
        self._checked_pid = None

    def __del__(self) -> None:
        try:
            self.close()  # a client dropped without close() must not leave a poller behind
        except Exception:  # noqa: BLE001 (interpreter shutdown: modules may be gone)
            pass

    def status(self, timeout: float = 5.0, workspace: str = "") -> pb.StatusResponse:
        """The daemon's status; with `workspace`, also which memory calls from that folder
        use, and why (StatusResponse.resolved)."""
        return self._connect().Status(pb.StatusRequest(workspace=workspace), timeout=timeout)

    def is_running(self) -> bool:
        if not self.remote and not self.socket_path.exists():
            return False
        try:
            self.status(timeout=2.0)
            return True
        except grpc.RpcError:
            self.close()
            return False

    def running_status(self) -> pb.StatusResponse | None:
        """The status of the daemon on the socket, waiting for one that is starting (a
        service manager starts it on this very connection under socket activation); None
        when none runs and none is starting. Starts no daemon itself."""
        status = self._probe()
        if self.remote and status is None:
            self._last_error = self._remote_error()
        if status is not None or self.remote or not self.socket_path.exists():
            return status
        try:
            return self._await_daemon(spawn=False)
        except DaemonUnavailable as exc:
            self._last_error = str(exc)
            return None

    @property
    def last_error(self) -> str:
        return self._last_error

    def ensure_running(self) -> None:
        """Make sure a compatible daemon answers, starting (or upgrading) it if needed. Once a
        daemon is accepted, calls go straight to it until the connection fails."""
        if self._checked_pid is not None and self._channel is not None:
            return
        status = self._probe()
        if status is None:
            status = self._await_daemon(spawn=self.autostart)
        status = self._handshake(status)
        self._checked_pid = status.pid
        self.daemon_version = status.version

    @property
    def accepted_pid(self) -> int | None:
        """The daemon whose version this client accepted, until its connection drops."""
        return self._checked_pid

    def start_daemon(self) -> None:
        """Start memnestd detached (its own session, output to its log) unless one is
        running or starting, and wait until it answers. Several clients may race here; the
        daemon's instance lock picks one."""
        self._await_daemon(spawn=True)

    def _probe(self, timeout: float = 2.0) -> pb.StatusResponse | None:
        if not self.remote and not self.socket_path.exists():
            return None
        try:
            return self.status(timeout=timeout)
        except grpc.RpcError as exc:
            self._last_error = f"{exc.code().name}: {exc.details()}"
            self.close()  # a fresh channel next time, not one in reconnect back-off
            return None

    def _listening(self) -> bool:
        """Something accepts connections on the socket: a daemon still starting, or a
        systemd socket unit that starts the service-managed daemon on our connection."""
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(1.0)
        try:
            probe.connect(str(self.socket_path))
            return True
        except OSError:
            return False
        finally:
            probe.close()

    def _lock_free(self) -> bool:
        """No daemon holds the instance lock: none is starting, serving or draining."""
        lock = self.socket_path.with_name(self.socket_path.name + ".lock")
        try:
            fd = os.open(lock, os.O_RDONLY)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return False
            raise
        finally:
            os.close(fd)

    def _await_daemon(self, spawn: bool, hold_spawn_s: float = 0.0) -> pb.StatusResponse:
        """Wait until a daemon answers. Start one (if `spawn`) whenever none is running,
        starting or draining; with `hold_spawn_s`, first give a service manager that long
        to start its own. A remote daemon is only asked, once more."""
        if self.remote:
            status = self._probe(timeout=5.0)
            if status is None:
                raise DaemonUnavailable(self._remote_error())
            return status
        log_path = paths.log_file()
        started = time.monotonic()
        deadline = started + START_DEADLINE_S + hold_spawn_s
        proc: subprocess.Popen[bytes] | None = None
        while time.monotonic() < deadline:
            status = self._probe()
            if status is not None:
                return status
            code = proc.poll() if proc is not None else None
            # Exit 0 means another daemon held the lock: it may have answered by now.
            if code not in (None, 0):
                raise DaemonUnavailable(
                    f"memnestd exited with code {code} while starting: "
                    f"{_last_line(log_path)} (full log: {log_path})")
            idle = (proc is None or code is not None) and not self._listening() \
                and self._lock_free()
            if idle:
                if not spawn:
                    raise DaemonUnavailable(f"memnestd is not running on {self.socket_path}; "
                                            "start it with `memnest-ctl start`")
                if time.monotonic() - started >= hold_spawn_s:
                    proc = self._spawn(log_path)
            time.sleep(0.1)
        raise DaemonUnavailable(f"memnestd did not answer on {self.socket_path} within "
                                f"{START_DEADLINE_S + hold_spawn_s:.0f}s (last error: "
                                f"{self._last_error or 'no socket'}); see {log_path}")

    def _remote_error(self) -> str:
        from . import remote
        return remote.explain(self.remote, self._last_error)

    def _spawn(self, log_path: Path) -> subprocess.Popen[bytes]:
        log_fd = _open_log(log_path)
        env = dict(os.environ, MEMNEST_SOCKET=str(self.socket_path))
        for name in SOCKET_ACTIVATION_VARS:
            env.pop(name, None)
        try:
            return subprocess.Popen(
                daemon_command() + ["--spawned"], stdin=subprocess.DEVNULL, stdout=log_fd,
                stderr=log_fd, start_new_session=True, env=env, close_fds=True)
        finally:
            os.close(log_fd)

    # -- versions ------------------------------------------------------------------------

    def _handshake(self, status: pb.StatusResponse) -> pb.StatusResponse:
        older = version_key(status.version) < version_key(self.version)
        if older and self.autostart and not self._upgrade_tried:
            self._upgrade_tried = True
            status = self._upgrade(status)
            older = version_key(status.version) < version_key(self.version)
        if status.protocol_version != self.protocol:
            if self.remote:
                fix = ("install the same memnest release here and on the daemon's machine "
                       f"({self.remote})")
            elif older:
                fix = ("run `memnest-ctl stop`; the next call starts the memnestd installed "
                       "with this client")
            else:
                fix = (f"update this {self.client_name} to memnest {status.version} (the "
                       "install memnestd runs from) and restart your editor")
            raise DaemonUnavailable(
                f"memnestd {status.version} speaks protocol {status.protocol_version}, this "
                f"{self.client_name} {self.version} speaks protocol {self.protocol}: {fix}")
        if older:
            log.warning("memnestd %s is older than this client (%s) and was not replaced; "
                        "continuing, the protocol is the same", status.version, self.version)
        return status

    def _upgrade(self, old: pb.StatusResponse) -> pb.StatusResponse:
        """Ask an older daemon to drain and exit, then make sure the new one runs."""
        log.warning("memnestd %s (pid %d) is older than this client (%s): asking it to drain "
                    "and make way for the new version", old.version, old.pid, self.version)
        restarting = False
        try:
            reply = self._connect().Shutdown(pb.ShutdownRequest(
                reason=f"upgrade to {self.version} requested by {self.client_name} "
                       f"pid {os.getpid()}", upgrade=True), timeout=10)
            restarting = reply.restarting
        except grpc.RpcError as exc:  # another client asked first: it is draining already
            log.info("shutdown request not delivered (%s); waiting for the old daemon",
                     exc.code().name)
        self.close()
        deadline = time.monotonic() + DRAIN_WAIT_S
        while time.monotonic() < deadline:
            status = self._probe()
            if status is not None and status.pid != old.pid:
                break  # the new daemon is already up (another client or the manager)
            if status is None and self._lock_free():
                break  # the old one is gone
            time.sleep(0.1)
        status = self._await_daemon(
            spawn=True, hold_spawn_s=MANAGER_RESTART_WAIT_S if restarting else 0.0)
        self.upgraded_from = old.version
        log.warning("memnestd upgraded from %s to %s (pid %d)", old.version, status.version,
                    status.pid)
        return status

    # -- calls ---------------------------------------------------------------------------

    def list_tools(self) -> list[pb.ToolDefinition]:
        return list(self._with_restart(
            lambda stub: stub.ListTools(pb.ListToolsRequest(), timeout=30)).tools)

    def call_tool(self, tool: str, arguments: ToolArguments, workspace: str, db_path: str = "",
                  on_progress: ProgressCallback | None = None,
                  origin: dict[str, str] | None = None) -> ToolResult:
        """Run a tool; returns its JSON result or raises ToolFailure with the daemon's error.
        `origin` (via, client, session) is recorded with what the call stores."""
        request = pb.CallToolRequest(tool=tool, workspace=workspace, db_path=db_path,
                                     arguments_json=json.dumps(arguments),
                                     client=f"{self.client_name} {VERSION} pid {os.getpid()}",
                                     origin=pb.Origin(**(origin or {})),
                                     model=os.environ.get("MEMORY_EMBEDDING_MODEL", "").strip())
        if on_progress is None:
            response = self._with_restart(
                lambda stub: stub.CallTool(request, timeout=CALL_DEADLINE_S))
        else:
            def streamed(stub: pb_stub.Stub) -> pb.CallToolResponse:
                for event in stub.CallToolStream(request, timeout=CALL_DEADLINE_S):
                    if event.HasField("progress"):
                        on_progress(event.progress.progress, event.progress.total,
                                    event.progress.message)
                    else:
                        return event.result
                raise DaemonUnavailable("the daemon closed the stream without a result")
            response = self._with_restart(streamed)
        if response.HasField("error"):
            raise ToolFailure(response.error.code, response.error.message)
        result: ToolResult = json.loads(response.result_json)
        return result

    def open_session(self, frames: Iterator[pb.SessionFrame]) -> Iterator[pb.SessionFrame]:
        """An MCP session stream (memnest-mcp's pipe), starting or upgrading the daemon first
        if need be. No deadline: it lasts as long as the editor's connection."""
        self.ensure_running()
        responses: Iterator[pb.SessionFrame] = self._connect().Session(frames)
        return responses

    def shutdown(self, reason: str) -> None:
        if self.remote:
            raise DaemonUnavailable(f"memnestd at {self.remote} (MEMNEST_REMOTE) is another "
                                    "machine's: only its local user may stop it, there")
        self._connect().Shutdown(pb.ShutdownRequest(reason=reason), timeout=10)

    def wait_stopped(self, pid: int, timeout: float = DRAIN_WAIT_S) -> bool:
        """Wait until the daemon `pid` has drained and exited. The socket file is no sign: a
        systemd socket unit keeps it after the daemon exits."""
        self.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._lock_free():
                return True
            status = self._probe(timeout=1.0)
            if status is not None and status.pid != pid:
                return True  # a successor already runs (socket activation)
            time.sleep(0.1)
        return False

    def _with_restart(self, call: Callable[[pb_stub.Stub], Answer]) -> Answer:
        """Run `call`; if the daemon is gone (crashed, killed, never started) before the
        call reached it, start it and try once more. A call that reached a daemon is never
        repeated: a daemon that died running it may have died of it, and a write may
        already have happened; the caller is told the outcome is unknown."""
        if self._checked_pid is not None and not self.remote and \
                not process_alive(self._checked_pid):
            self.close()  # it died since the last call: this one goes to a new daemon
        try:
            self.ensure_running()
            return call(self._connect())
        except grpc.RpcError as exc:
            self._raise_unless_unsent(exc)
        self.close()
        self.ensure_running()
        try:
            return call(self._connect())
        except grpc.RpcError as exc:
            self._raise_unless_unsent(exc, "after a restart")
            raise DaemonUnavailable(f"memnestd could not be reached after a restart: "
                                    f"{exc.details()}") from None

    def _raise_unless_unsent(self, exc: grpc.RpcError, when: str = "") -> None:
        """Return if the call never reached a daemon (safe to repeat); raise otherwise."""
        code = exc.code()
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            raise DaemonUnavailable("memnestd is busy: it has accepted as many calls as "
                                    "it will hold at once; retry in a moment") from None
        if code == grpc.StatusCode.UNAVAILABLE and never_sent(exc.details() or ""):
            return
        if code != grpc.StatusCode.UNAVAILABLE:
            raise DaemonUnavailable(f"memnestd failed the call{' ' + when if when else ''}: "
                                    f"{code.name}: {exc.details()}") from None
        self.close()  # the next call starts a daemon again
        raise OutcomeUnknown(
            "memnestd stopped while it was running this call, so whether it took effect is "
            "unknown; it was not repeated, since it may be what stopped the daemon. Check "
            "with memory_get, memory_list or memory_search before calling it again; the next "
            "call starts the daemon again") from None



# What gRPC reports when a call could not even be sent: no daemon listens on the socket.
_NOT_SENT = ("failed to connect", "connect failed", "connection refused",
             "no such file or directory")


def never_sent(details: str) -> bool:
    lowered = details.lower()
    return any(marker in lowered for marker in _NOT_SENT)


def _open_log(path: Path) -> int:
    """The daemon's log, for its output: its folder made 0700 when missing, refused when it
    is a link, another user's or writable by others (the log itself is never followed
    through a link, and made 0600)."""
    from .own_paths import UNSHARED, NotOurs, open_append, own_folder
    try:
        own_folder(path.parent, UNSHARED)
        return open_append(path)
    except NotOurs as exc:
        raise DaemonUnavailable(f"memnestd was not started: its log {path} cannot be "
                                f"written: {exc} (or set MEMNEST_LOG_FILE)") from None


def _last_line(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            lines = [ln for ln in f.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1].strip() if lines else "no log"
