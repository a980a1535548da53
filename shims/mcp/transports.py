"""How memnest-mcp reaches memnestd for its Session stream.

Local (the Unix socket): SessionFrames straight over it (lean_stream.py), no grpcio in the
process. When no compatible daemon answers, starting or upgrading one is the full client's
job (client.py, which needs grpcio): it runs in a short-lived process of its own
(ensure_daemon.py), so that the shim of the window that started the daemon stays as small
as every other.

Remote (MEMNEST_REMOTE, mutual TLS): the full client in this process.

Frames travel as (kind, value) pairs: ("start", {field: value}) and ("message", line) out;
("message", line), ("state", (workspace, db_path)), ("closing", reason) and, from a daemon
that has no Session stream, ("unsupported", "") in.
"""
import json
import logging
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from memnest_proto import paths
from memnest_proto.version import PROTOCOL_VERSION, VERSION, version_key

from .. import lean_stream
from ..errors import DaemonUnavailable
from ..lean_call import LeanCallFailed
from ..lean_stream import InFrame, OutFrame

log = logging.getLogger("memnest-mcp")
ENSURE_TIMEOUT_S = 300.0  # a start waits up to 90 s, an upgrade drains up to 45 s on top


class Transport(Protocol):
    address: str

    def ensure(self) -> tuple[str, int | None]:
        """Make sure a compatible daemon runs; its (version, pid), pid None when remote."""

    def open(self, outgoing: Iterable[OutFrame]) -> Iterator[InFrame]:
        """A Session stream sending `outgoing`, iterated for what the daemon sends."""


class LocalTransport:
    def __init__(self, socket_path: Path | None = None):
        self.socket_path = socket_path or paths.socket_path()
        self.address = str(self.socket_path)

    def ensure(self) -> tuple[str, int | None]:
        found = self._compatible()
        if found is None:
            self._start_or_upgrade()
            found = self._compatible()
            if found is None:
                raise DaemonUnavailable(f"memnestd on {self.socket_path} was started but does "
                                        "not answer; see `memnest-ctl doctor`")
        return found

    def _compatible(self) -> tuple[str, int] | None:
        try:
            version, protocol, pid = lean_stream.status(self.socket_path)
        except LeanCallFailed:
            return None
        if protocol != PROTOCOL_VERSION or version_key(version) < version_key(VERSION):
            return None
        return version, pid

    def _start_or_upgrade(self) -> None:
        """The full client, in a process of its own; its log lines go to our stderr."""
        try:
            done = subprocess.run([sys.executable, "-m", "memnest_shims.mcp.ensure_daemon",
                                   str(self.socket_path)], stdout=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, timeout=ENSURE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DaemonUnavailable(f"could not start memnestd: {exc}") from None
        try:
            outcome = json.loads(done.stdout.decode(errors="replace").strip().splitlines()[-1])
        except (ValueError, IndexError):
            outcome = {"error": f"the daemon starter exited with status {done.returncode}"}
        if outcome.get("error"):
            raise DaemonUnavailable(str(outcome["error"]))

    def open(self, outgoing: Iterable[OutFrame]) -> Iterator[InFrame]:
        try:
            return iter(lean_stream.LeanSession(self.socket_path, _encoded(outgoing)))
        except (LeanCallFailed, OSError) as exc:  # a daemon stopping as we connect
            raise DaemonUnavailable(f"memnestd on {self.socket_path} closed the session as "
                                    f"it opened: {exc}") from None


def _encoded(outgoing: Iterable[OutFrame]) -> Iterator[bytes]:
    for frame in outgoing:
        if frame[0] == "start":
            yield lean_stream.start_frame(frame[1])
        elif frame[0] == "message":
            yield lean_stream.message_frame(frame[1])


class RemoteTransport:
    """The full gRPC client (mutual TLS to MEMNEST_REMOTE)."""

    def __init__(self) -> None:
        from ..client import DaemonClient

        self.client = DaemonClient(client_name="memnest-mcp")
        self.address = self.client.address

    def ensure(self) -> tuple[str, int | None]:
        self.client.close()  # a fresh check of which daemon answers
        self.client.ensure_running()
        return self.client.daemon_version, None

    def open(self, outgoing: Iterable[OutFrame]) -> Iterator[InFrame]:
        import grpc
        from memnest_proto import memnest_pb2 as pb

        def frames() -> Iterator[pb.SessionFrame]:
            for frame in outgoing:
                if frame[0] == "start":
                    yield pb.SessionFrame(start=pb.SessionStart(**frame[1]))
                elif frame[0] == "message":
                    yield pb.SessionFrame(message=frame[1])

        responses = self.client.open_session(frames())

        def incoming() -> Iterator[InFrame]:
            try:
                for frame in responses:
                    kind = frame.WhichOneof("frame")
                    if kind == "message":
                        yield "message", frame.message
                    elif kind == "state":
                        yield "state", (frame.state.workspace, frame.state.db_path)
                    elif kind == "closing":
                        yield "closing", frame.closing.reason
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
                    yield "unsupported", ""
                elif exc.code() != grpc.StatusCode.CANCELLED:
                    log.info("connection to memnestd lost: %s", exc.code().name)
        return incoming()

    def close(self) -> None:
        self.client.close()
