"""One CallTool to a running memnestd without loading grpcio: HTTP/2 and the two protobuf
messages written out by hand, over the Unix socket.

For short-lived processes that make one call and exit (the agent hooks): importing grpcio
and the generated messages costs more than the call itself (bench/RESULTS.md#hook-latency).
This speaks only what a unary call needs: the client preface, SETTINGS (and their
acknowledgement), one HEADERS and DATA, then frames until the stream ends. Header blocks the
daemon sends are not decoded: the reply is the message in the DATA frames. Anything else
(no daemon, a trailers-only error, an unexpected frame) raises LeanCallFailed, and the
caller falls back to the full client (shims/client.py), which also starts and upgrades the
daemon. The message layout follows proto/memnest.proto; tests/test_hooks.py runs both ways
against the real daemon.
"""
import json
import os
import socket
import struct
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tool_json import ToolArguments, ToolResult

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 6, 7, 8
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
MAX_FRAME = 16384  # the HTTP/2 default; the daemon never asks for less
# What may be sent before the daemon grants more window: larger requests go to the full client.
MAX_REQUEST = 65535 - 5
WINDOW = 1 << 24  # what we let the daemon send before we would have to say more
MAX_REPLY = 64 << 20  # proto/contract.py MAX_MESSAGE_BYTES
PATH = "/memnest.v1.Memnest/CallTool"


class LeanCallFailed(Exception):
    """The lean call could not get an answer; the full client should try."""


class LeanToolError(Exception):
    """The daemon answered with a tool error (code, message)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def call_tool(socket_path: Path, tool: str, arguments: "ToolArguments", workspace: str,
              db_path: str, client: str, timeout: float,
              origin: dict[str, str] | None = None) -> "ToolResult":
    deadline = time.monotonic() + timeout
    origin = origin or {}
    who = b"".join([_string(1, origin.get("via", "")), _string(2, origin.get("client", "")),
                    _string(3, origin.get("session", ""))])
    request = b"".join([_string(1, tool), _string(2, workspace),
                        _string(3, json.dumps(arguments)), _string(4, db_path),
                        _string(5, client), _bytes(6, who),
                        _string(7, os.environ.get("MEMORY_EMBEDDING_MODEL", "").strip())])
    return _response(unary(socket_path, PATH, request, deadline))


def unary(socket_path: Path, path: str, request: bytes, deadline: float) -> bytes:
    """One unary gRPC call: the reply message's bytes."""
    if len(request) > MAX_REQUEST:
        raise LeanCallFailed(f"a request of {len(request)} bytes is for the full client")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            sock.connect(str(socket_path))
        except OSError as exc:
            raise LeanCallFailed(f"no daemon on {socket_path}: {exc}") from None
        sock.sendall(_opening(request, path))
        return _read_reply(sock, deadline)
    except (OSError, struct.error) as exc:
        raise LeanCallFailed(f"{type(exc).__name__}: {exc}") from None
    finally:
        sock.close()


def request_headers(path: str) -> bytes:
    """The HEADERS block of a gRPC call to `path`."""
    return b"".join(_literal(k, v) for k, v in (
        (":method", "POST"), (":scheme", "http"), (":path", path),
        (":authority", "localhost"), ("content-type", "application/grpc"),
        ("te", "trailers")))


def _opening(request: bytes, path: str) -> bytes:
    settings = struct.pack(">HI", 0x2, 0) + struct.pack(">HI", 0x4, WINDOW)  # no push; window
    headers = request_headers(path)
    message = b"\x00" + struct.pack(">I", len(request)) + request
    out = [PREFACE, _frame(SETTINGS, 0, 0, settings),
           _frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", WINDOW - 65535)),
           _frame(HEADERS, END_HEADERS, 1, headers)]
    chunks = [message[i:i + MAX_FRAME] for i in range(0, len(message), MAX_FRAME)]
    for n, chunk in enumerate(chunks):
        out.append(_frame(DATA, END_STREAM if n == len(chunks) - 1 else 0, 1, chunk))
    return b"".join(out)


def _read_reply(sock: socket.socket, deadline: float) -> bytes:
    buffer = b""
    body = bytearray()

    def need(n: int) -> bytes:
        nonlocal buffer
        while len(buffer) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LeanCallFailed("timed out")
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                raise LeanCallFailed("the daemon closed the connection")
            buffer += chunk
        out, buffer = buffer[:n], buffer[n:]
        return out

    while True:
        length, kind, flags, stream = _header(need(9))
        payload = need(length)
        if kind == SETTINGS and not flags & ACK:
            sock.sendall(_frame(SETTINGS, ACK, 0, b""))
        elif kind == PING and not flags & ACK:
            sock.sendall(_frame(PING, ACK, 0, payload))
        elif kind in (RST_STREAM, GOAWAY) and (stream in (0, 1)):
            if kind == GOAWAY and body:
                continue  # the answer is complete once the stream ends
            raise LeanCallFailed(f"the daemon reset the call (frame type {kind})")
        elif stream == 1 and kind == DATA:
            body += payload
            if len(body) > MAX_REPLY + 5:
                raise LeanCallFailed("reply over the message size limit")
        if stream == 1 and kind in (DATA, HEADERS) and flags & END_STREAM:
            break
    if len(body) < 5 or body[0] != 0:
        raise LeanCallFailed("no reply message (a gRPC error status)")
    size = struct.unpack(">I", bytes(body[1:5]))[0]
    if len(body) != 5 + size:
        raise LeanCallFailed("a reply of unexpected length")
    return bytes(body[5:])


def _header(raw: bytes) -> tuple[int, int, int, int]:
    length = int.from_bytes(raw[:3], "big")
    return length, raw[3], raw[4], int.from_bytes(raw[5:9], "big") & 0x7FFFFFFF


def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + \
        struct.pack(">I", stream) + payload


def _literal(name: str, value: str) -> bytes:
    """HPACK: a literal header field without indexing, new name, no Huffman coding."""
    return b"\x00" + _hpack_string(name.encode()) + _hpack_string(value.encode())


def _hpack_string(raw: bytes) -> bytes:
    return _prefixed_int(len(raw), 7) + raw


def _prefixed_int(value: int, bits: int) -> bytes:
    limit = (1 << bits) - 1
    if value < limit:
        return bytes([value])
    out, value = [limit], value - limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    return bytes(out + [value])


# -- protobuf: CallToolRequest out, CallToolResponse in ------------------------------------------

def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _string(field: int, text: str) -> bytes:
    return _bytes(field, text.encode())


def _bytes(field: int, raw: bytes) -> bytes:
    """A length-delimited field (a string or an embedded message); empty ones are left out."""
    return _varint(field << 3 | 2) + _varint(len(raw)) + raw if raw else b""


def _fields(raw: bytes) -> dict[int, bytes]:
    """Length-delimited fields of a message by number (others skipped)."""
    return {k: v for k, v in fields(raw).items() if isinstance(v, bytes)}


def fields(raw: bytes) -> dict[int, bytes | int]:
    """Length-delimited and varint fields of a message by number (others skipped)."""
    out: dict[int, bytes | int] = {}
    i = 0
    while i < len(raw):
        key, i = _read_varint(raw, i)
        wire = key & 7
        if wire == 2:
            size, i = _read_varint(raw, i)
            out[key >> 3] = raw[i:i + size]
            i += size
        elif wire == 0:
            out[key >> 3], i = _read_varint(raw, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise LeanCallFailed(f"unexpected protobuf wire type {wire}")
    return out


def _read_varint(raw: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(raw) or shift > 63:
            raise LeanCallFailed("a truncated protobuf varint")
        byte = raw[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if not byte & 0x80:
            return value, i


def _response(raw: bytes) -> "ToolResult":
    fields = _fields(raw)
    if 2 in fields:
        error = _fields(fields[2])
        raise LeanToolError(error.get(1, b"").decode(errors="replace"),
                            error.get(2, b"").decode(errors="replace"))
    if 1 not in fields:
        raise LeanCallFailed("a reply with neither a result nor an error")
    result: ToolResult = json.loads(fields[1])
    return result

