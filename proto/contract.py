"""What the daemon and its clients must agree on beyond the messages of memnest.proto."""
import struct
from typing import Literal, get_args

# The largest gRPC message either side sends or accepts (a whole export, a large import).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

# The embedding model the daemon loads when MEMORY_EMBEDDING_MODEL is unset; clients name it
# when they report or write configuration.
DEFAULT_MODEL = "BAAI/bge-small-en-v1.5"
# all-MiniLM-L6-v2 (int8 ONNX) from the `offline` extra: no model hub needed.
OFFLINE_MODEL = "memnest/all-MiniLM-L6-v2-int8"

# The kinds of memory a tool or a CLI command may store.
Category = Literal["learning", "preference", "decision", "pattern", "general"]
CATEGORIES: tuple[Category, ...] = get_args(Category)

# systemd socket activation: meant for one process only, so never passed to a child.
SOCKET_ACTIVATION_VARS = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")

# How tool results may be written for the model (MEMORY_RESPONSE_FORMAT); the first is the
# default.
RESPONSE_FORMATS = ("json", "toon")

# What a client of a remote daemon (MEMNEST_REMOTE) is told when it names no workspace.
REMOTE_NEEDS_WORKSPACE = ("MEMNEST_REMOTE is set, so the workspace is a folder on the "
                          "daemon's machine: name it with MEMORY_WORKSPACE (or --workspace) "
                          "as an absolute path there")

# An MCP session over the local Unix socket without gRPC: a client that opens a connection
# with these bytes then sends SessionFrame messages (memnest.proto), each framed as gRPC
# frames its messages (a zero byte, then the length as 4 bytes big-endian), the start frame
# first, and shuts down its writing side when its editor is done. The daemon answers with
# SessionFrames framed the same way and closes the connection when the session ends. Any
# other first bytes are gRPC's (HTTP/2). Served from VERSION 0.3.0.
SESSION_PREFACE = b"MEMNEST-SESSION/1\r\n"
_FRAME_HEAD = struct.Struct(">BI")  # not compressed (0), then the length


class FrameRefused(ValueError):
    """A session frame neither side sends: compressed, or longer than MAX_MESSAGE_BYTES."""


def framed(message: bytes) -> bytes:
    """One serialized SessionFrame as it travels after SESSION_PREFACE."""
    return _FRAME_HEAD.pack(0, len(message)) + message


def read_framed(reader) -> bytes | None:
    """The next serialized SessionFrame from a binary file, or None once it ends (or ends
    inside a frame). FrameRefused for a frame neither side sends."""
    head = reader.read(_FRAME_HEAD.size)
    if len(head) < _FRAME_HEAD.size:
        return None
    compressed, size = _FRAME_HEAD.unpack(head)
    if compressed or size > MAX_MESSAGE_BYTES:
        raise FrameRefused("compressed" if compressed else f"{size} bytes")
    body = reader.read(size)
    return body if len(body) == size else None
