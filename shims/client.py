"""Connect to memnestd, starting it on demand, and call it; shared by memnest-mcp and
memnest-ctl."""
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import grpc

from memnest_proto import memnest_pb2 as pb
from memnest_proto import memnest_pb2_grpc as pb_grpc
from memnest_proto import paths
from memnest_proto.version import VERSION

START_DEADLINE_S = float(os.environ.get("MEMNEST_START_TIMEOUT_S", "90"))
CALL_DEADLINE_S = float(os.environ.get("MEMNEST_CALL_TIMEOUT_S", "600"))
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class DaemonUnavailable(RuntimeError):
    """The daemon could not be reached or started; the message says why and what to do."""


@dataclass
class ToolFailure(Exception):
    code: str
    message: str

    def __str__(self) -> str:
        return self.message


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
                 autostart: bool = True):
        self.socket_path = socket_path or paths.socket_path()
        self.client_name = client_name
        self.autostart = autostart
        self._channel: grpc.Channel | None = None
        self._stub: pb_grpc.MemnestStub | None = None

    # -- connection ----------------------------------------------------------------------

    def _connect(self) -> pb_grpc.MemnestStub:
        if self._stub is None:
            self._channel = grpc.insecure_channel(
                paths.grpc_target(self.socket_path),
                options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                         ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                         ("grpc.enable_retries", 0)])
            self._stub = pb_grpc.MemnestStub(self._channel)
        return self._stub

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
        self._channel = self._stub = None

    def status(self, timeout: float = 5.0) -> pb.StatusResponse:
        return self._connect().Status(pb.StatusRequest(), timeout=timeout)

    def is_running(self) -> bool:
        if not self.socket_path.exists():
            return False
        try:
            self.status(timeout=2.0)
            return True
        except grpc.RpcError:
            self.close()
            return False

    def ensure_running(self) -> None:
        if self.is_running():
            return
        if not self.autostart:
            raise DaemonUnavailable(f"memnestd is not running on {self.socket_path}; start it "
                                    "with `memnest-ctl start`")
        self.start_daemon()

    def start_daemon(self) -> None:
        """Start memnestd detached (its own session, output to its log) and wait until it
        answers. Several clients may race here; the daemon's instance lock picks one."""
        log_path = paths.log_file()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, MEMNEST_SOCKET=str(self.socket_path))
        with open(log_path, "ab") as log_file:
            proc = subprocess.Popen(
                daemon_command() + ["--spawned"], stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=log_file, start_new_session=True, env=env, close_fds=True)
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline:
            if self.is_running():
                return
            code = proc.poll()
            # Exit 0 means another daemon holds the lock (it is starting): keep waiting.
            if code not in (None, 0):
                raise DaemonUnavailable(
                    f"memnestd exited with code {code} while starting: "
                    f"{_last_line(log_path)} (full log: {log_path})")
            time.sleep(0.1)
        raise DaemonUnavailable(f"memnestd did not answer on {self.socket_path} within "
                                f"{START_DEADLINE_S:.0f}s; see {log_path}")

    # -- calls ---------------------------------------------------------------------------

    def list_tools(self) -> list[pb.ToolDefinition]:
        return list(self._with_restart(
            lambda stub: stub.ListTools(pb.ListToolsRequest(), timeout=30)).tools)

    def call_tool(self, tool: str, arguments: dict, workspace: str, db_path: str = "",
                  on_progress=None) -> dict:
        """Run a tool; returns its JSON result or raises ToolFailure with the daemon's error."""
        request = pb.CallToolRequest(tool=tool, workspace=workspace, db_path=db_path,
                                     arguments_json=json.dumps(arguments),
                                     client=f"{self.client_name} {VERSION} pid {os.getpid()}")
        if on_progress is None:
            response = self._with_restart(
                lambda stub: stub.CallTool(request, timeout=CALL_DEADLINE_S))
        else:
            def streamed(stub):
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
        return json.loads(response.result_json)

    def shutdown(self, reason: str) -> None:
        self._connect().Shutdown(pb.ShutdownRequest(reason=reason), timeout=10)

    def _with_restart(self, call):
        """Run `call`; if the daemon is gone (crashed, killed, never started), start it and
        try once more. A call that reached a live daemon is never repeated."""
        try:
            self.ensure_running()
            return call(self._connect())
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                raise DaemonUnavailable(f"memnestd failed the call: {exc.code().name}: "
                                        f"{exc.details()}") from None
        self.close()
        self.ensure_running()
        try:
            return call(self._connect())
        except grpc.RpcError as exc:
            raise DaemonUnavailable(f"memnestd failed the call after a restart: "
                                    f"{exc.code().name}: {exc.details()}") from None


def _last_line(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            lines = [ln for ln in f.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1].strip() if lines else "no log"
