"""memnest-mcp's session with a local memnestd without grpcio: SessionFrames straight over
the Unix socket (memnest_proto.contract.SESSION_PREFACE), their few protobuf fields written
out by hand, and the daemon's Status as one unary HTTP/2 call (lean_call.py). grpcio alone
is most of a shim's memory (bench/RESULTS.md#shim-pipe), and a shim lives as
long as its editor window; the daemon serves the session without gRPC on its side too.

What the daemon's frames meant when the connection ends is for the relay to work out.
"""
import queue
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal, TypedDict, Union

from memnest_proto.contract import SESSION_PREFACE, framed, read_framed

from .lean_call import LeanCallFailed, _bytes, _string, _varint, fields, unary

STATUS = "/memnest.v1.Memnest/Status"


class SessionStart(TypedDict, total=False):
    """The fields of SessionStart (memnest.proto) the shim sends, by name."""
    workspace: str
    db_path: str
    fallback_workspace: str
    use_roots: bool
    response_format: str
    client: str
    session_id: str
    model: str
    previous_version: str


# What travels on a session, as (kind, value): out to the daemon, and in from it (a daemon
# with no Session stream at all is "unsupported", told by the remote transport).
OutFrame = Union[tuple[Literal["start"], SessionStart], tuple[Literal["message"], bytes]]
InFrame = Union[tuple[Literal["message"], bytes], tuple[Literal["state"], tuple[str, str]],
                tuple[Literal["closing"], str], tuple[Literal["unsupported"], str]]


def status(socket_path: Path, timeout: float = 2.0) -> tuple[str, int, int]:
    """The running daemon's (version, protocol, pid); LeanCallFailed when none answers."""
    reply = fields(unary(socket_path, STATUS, b"", time.monotonic() + timeout))
    version = reply.get(1, b"")
    protocol, pid = reply.get(2, 0), reply.get(3, 0)
    if not isinstance(version, bytes) or not isinstance(protocol, int) or \
            not isinstance(pid, int):
        raise LeanCallFailed("a Status reply of unexpected shape")
    return version.decode(errors="replace"), protocol, pid


def start_frame(start: SessionStart) -> bytes:
    """SessionFrame{start}: the fields of SessionStart by name (memnest.proto)."""
    numbers = {"workspace": 1, "db_path": 2, "fallback_workspace": 3, "response_format": 5,
               "client": 6, "session_id": 7, "model": 8, "previous_version": 9}
    body = b"".join(_string(numbers[k], v) for k, v in start.items()
                    if k in numbers and isinstance(v, str))
    if start.get("use_roots"):
        body += _varint(4 << 3) + _varint(1)
    return _varint(1 << 3 | 2) + _varint(len(body)) + body  # kept even when empty


def message_frame(line: bytes) -> bytes:
    return _bytes(2, line)


def read_frame(raw: bytes) -> InFrame | None:
    """A SessionFrame from the daemon as (kind, value), None for a kind this shim does not
    know (a newer daemon's)."""
    top = fields(raw)
    message, state, closing = top.get(2), top.get(3), top.get(4)
    if isinstance(message, bytes):
        return "message", message
    if isinstance(state, bytes):
        settled = fields(state)
        return "state", (_text(settled.get(1)), _text(settled.get(2)))
    if isinstance(closing, bytes):
        return "closing", _text(fields(closing).get(1))
    return None


def _text(value: bytes | int | None) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else ""


class LeanSession:
    """One session (SESSION_PREFACE): send what `outgoing` yields, iterate over what comes
    back. The socket's own buffers are the flow control both ways."""

    def __init__(self, socket_path: Path, outgoing: Iterable[bytes], connect_timeout: float = 5):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(connect_timeout)
        try:
            self._sock.connect(str(socket_path))
        except OSError as exc:
            self._sock.close()
            raise LeanCallFailed(f"no daemon on {socket_path}: {exc}") from None
        self._sock.settimeout(None)
        self._incoming: queue.Queue[InFrame | None] = queue.Queue()  # None: the end
        self._sock.sendall(SESSION_PREFACE)
        threading.Thread(target=self._read, name="lean-in", daemon=True).start()
        threading.Thread(target=self._write, args=(outgoing,), name="lean-out",
                         daemon=True).start()

    def __iter__(self) -> Iterator[InFrame]:
        while True:
            item = self._incoming.get()
            if item is None:
                return
            yield item

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    def _write(self, outgoing: Iterable[bytes]) -> None:
        try:
            for message in outgoing:
                self._sock.sendall(framed(message))
            self._sock.shutdown(socket.SHUT_WR)  # the editor is done
        except OSError:
            self.close()

    def _read(self) -> None:
        try:
            reader = self._sock.makefile("rb")
            while (payload := read_framed(reader)) is not None:  # FrameRefused: not ours
                frame = read_frame(payload)
                if frame is not None:
                    self._incoming.put(frame)
        except (OSError, ValueError, LeanCallFailed):
            return
        finally:
            self._incoming.put(None)
            self.close()
