"""memnest-mcp's Session stream to a local memnestd without grpcio: HTTP/2 and the few
protobuf fields of SessionFrame written out by hand, over the Unix socket (as lean_call.py
does for one unary call). grpcio alone is most of a shim's memory (bench/RESULTS.md, "The
shim as a pipe"), and a shim lives as long as its editor window.

One connection carries one stream (id 1). What is sent waits for the daemon's flow-control
window; what arrives is acknowledged as it is read, so neither side buffers without bound.
Header blocks from the daemon are not decoded: the stream's end (trailers, a reset, a closed
socket) ends the iteration, and what it meant is for the relay to work out.
"""
import queue
import socket
import struct
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from memnest_proto.contract import MAX_MESSAGE_BYTES

from .lean_call import (
    ACK,
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    PING,
    PREFACE,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    LeanCallFailed,
    _bytes,
    _frame,
    _header,
    _string,
    _varint,
    fields,
    request_headers,
    unary,
)

SESSION = "/memnest.v1.Memnest/Session"
STATUS = "/memnest.v1.Memnest/Status"
WINDOW = 1 << 24  # what the daemon may send before we have read it
DEFAULT_WINDOW = 65535  # HTTP/2's initial windows, until the daemon's SETTINGS say otherwise
MAX_FRAME = 16384
_END = object()


def status(socket_path: Path, timeout: float = 2.0) -> tuple[str, int, int]:
    """The running daemon's (version, protocol, pid); LeanCallFailed when none answers."""
    reply = fields(unary(socket_path, STATUS, b"", time.monotonic() + timeout))
    version = reply.get(1, b"")
    protocol, pid = reply.get(2, 0), reply.get(3, 0)
    if not isinstance(version, bytes) or not isinstance(protocol, int) or \
            not isinstance(pid, int):
        raise LeanCallFailed("a Status reply of unexpected shape")
    return version.decode(errors="replace"), protocol, pid


def start_frame(start: dict) -> bytes:
    """SessionFrame{start}: the fields of SessionStart by name (memnest.proto)."""
    numbers = {"workspace": 1, "db_path": 2, "fallback_workspace": 3, "response_format": 5,
               "client": 6, "session_id": 7, "model": 8, "previous_version": 9}
    body = b"".join(_string(numbers[k], v) for k, v in start.items() if k in numbers)
    if start.get("use_roots"):
        body += _varint(4 << 3) + _varint(1)
    return _varint(1 << 3 | 2) + _varint(len(body)) + body  # kept even when empty


def message_frame(line: bytes) -> bytes:
    return _bytes(2, line)


def read_frame(raw: bytes) -> tuple[str, object] | None:
    """A SessionFrame from the daemon as (kind, value), None for a kind this shim does not
    know (a newer daemon's)."""
    top = fields(raw)
    if isinstance(top.get(2), bytes):
        return "message", top[2]
    if isinstance(top.get(3), bytes):
        state = fields(top[3])  # type: ignore[arg-type]
        return "state", (_text(state.get(1)), _text(state.get(2)))
    if isinstance(top.get(4), bytes):
        return "closing", _text(fields(top[4]).get(1))  # type: ignore[arg-type]
    return None


def _text(value) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else ""


class LeanSession:
    """One Session stream: send() what `outgoing` yields, iterate over what comes back."""

    def __init__(self, socket_path: Path, outgoing: Iterable[bytes], connect_timeout: float = 5):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(connect_timeout)
        try:
            self._sock.connect(str(socket_path))
        except OSError as exc:
            self._sock.close()
            raise LeanCallFailed(f"no daemon on {socket_path}: {exc}") from None
        self._sock.settimeout(None)
        self._send_lock = threading.Lock()
        self._window = threading.Condition()
        self._conn_window = DEFAULT_WINDOW
        self._stream_window = DEFAULT_WINDOW
        self._initial = DEFAULT_WINDOW  # the daemon's INITIAL_WINDOW_SIZE
        self._max_frame = MAX_FRAME
        self._closed = False
        self._incoming: queue.Queue = queue.Queue()
        settings = struct.pack(">HI", 0x2, 0) + struct.pack(">HI", 0x4, WINDOW)  # no push
        self._raw(PREFACE + _frame(SETTINGS, 0, 0, settings) +
                  _frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", WINDOW - DEFAULT_WINDOW)) +
                  _frame(HEADERS, END_HEADERS, 1, request_headers(SESSION)))
        threading.Thread(target=self._read, name="lean-in", daemon=True).start()
        threading.Thread(target=self._write, args=(outgoing,), name="lean-out",
                         daemon=True).start()

    def __iter__(self) -> Iterator[tuple[str, object]]:
        while True:
            item = self._incoming.get()
            if item is _END:
                return
            yield item

    def close(self) -> None:
        with self._window:
            self._closed = True
            self._window.notify_all()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    # -- sending -----------------------------------------------------------------------------

    def _raw(self, data: bytes) -> None:
        with self._send_lock:
            self._sock.sendall(data)

    def _write(self, outgoing: Iterable[bytes]) -> None:
        try:
            for message in outgoing:
                self._send_message(message)
            self._raw(_frame(DATA, END_STREAM, 1, b""))  # the editor is done
        except (OSError, LeanCallFailed):
            self.close()

    def _send_message(self, message: bytes) -> None:
        data = memoryview(b"\x00" + struct.pack(">I", len(message)) + message)
        while data:
            with self._window:
                while min(self._conn_window, self._stream_window) <= 0 and not self._closed:
                    self._window.wait()
                if self._closed:
                    raise LeanCallFailed("the stream is closed")
                size = min(len(data), self._conn_window, self._stream_window, self._max_frame)
                self._conn_window -= size
                self._stream_window -= size
            self._raw(_frame(DATA, 0, 1, bytes(data[:size])))
            data = data[size:]

    # -- receiving ---------------------------------------------------------------------------

    def _read(self) -> None:
        buffer = bytearray()  # the stream's gRPC messages, as they arrive
        unacknowledged = 0
        try:
            reader = self._sock.makefile("rb")
            while True:
                head = reader.read(9)
                if len(head) < 9:
                    return
                length, kind, flags, stream = _header(head)
                payload = reader.read(length)
                if len(payload) < length:
                    return
                if kind == DATA and stream == 1:
                    buffer += payload
                    unacknowledged += length
                    if not self._deliver(buffer):
                        return
                    if unacknowledged >= WINDOW // 2:
                        grant = struct.pack(">I", unacknowledged)
                        self._raw(_frame(WINDOW_UPDATE, 0, 0, grant) +
                                  _frame(WINDOW_UPDATE, 0, 1, grant))
                        unacknowledged = 0
                elif kind == SETTINGS and not flags & ACK:
                    self._settings(payload)
                    self._raw(_frame(SETTINGS, ACK, 0, b""))
                elif kind == PING and not flags & ACK:
                    self._raw(_frame(PING, ACK, 0, payload))
                elif kind == WINDOW_UPDATE and len(payload) == 4:
                    grant = struct.unpack(">I", payload)[0] & 0x7FFFFFFF
                    with self._window:
                        if stream == 0:
                            self._conn_window += grant
                        elif stream == 1:
                            self._stream_window += grant
                        self._window.notify_all()
                elif kind == RST_STREAM and stream == 1:
                    return
                elif kind == GOAWAY:
                    continue  # our stream is finished or reset by what follows
                if stream == 1 and kind in (DATA, HEADERS) and flags & END_STREAM:
                    return
        except (OSError, ValueError, struct.error, LeanCallFailed):
            return
        finally:
            self._incoming.put(_END)
            self.close()

    def _settings(self, payload: bytes) -> None:
        for i in range(0, len(payload) - 5, 6):
            key, value = struct.unpack(">HI", payload[i:i + 6])
            with self._window:
                if key == 0x4:  # INITIAL_WINDOW_SIZE: applies to the open stream too
                    self._stream_window += value - self._initial
                    self._initial = value
                    self._window.notify_all()
                elif key == 0x5:
                    self._max_frame = max(MAX_FRAME, min(value, (1 << 24) - 1))

    def _deliver(self, buffer: bytearray) -> bool:
        """Hand over every whole message in `buffer`; False for one the daemon may not send."""
        while len(buffer) >= 5:
            size = struct.unpack(">I", bytes(buffer[1:5]))[0]
            if buffer[0] != 0 or size > MAX_MESSAGE_BYTES:
                return False  # compressed or oversized: not what memnestd sends
            if len(buffer) < 5 + size:
                return True
            frame = read_frame(bytes(buffer[5:5 + size]))
            del buffer[:5 + size]
            if frame is not None:
                self._incoming.put(frame)
        return True
