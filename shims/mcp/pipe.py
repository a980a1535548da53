"""memnest-mcp as a pipe: the editor's JSON-RPC lines go to memnestd unparsed, over one
Session stream, and the daemon's lines come back to stdout. The daemon runs the MCP session.

What the pipe still knows about the messages is what it needs to survive a daemon that stops:
which of the editor's requests are unanswered, and the editor's initialize handshake.

- The daemon drains (a stop, an upgrade): it answers every request it read, says `closing`,
  and ends the stream. Requests it did not read are sent again to the next daemon.
- The daemon dies: an unanswered tools/call may or may not have taken effect, so it is
  answered with an error that says so (never repeated); other requests are sent again.
- Either way the next connection starts (or upgrades) the daemon, replays the editor's
  initialize with an id of its own, keeps its answer to itself, and the editor never notices.
  A daemon is started again only when there is something to send, so `memnest-ctl stop`
  stays stopped until the editor asks for something.
"""
import json
import logging
import os
import queue
import re
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import BinaryIO

from memnest_proto.contract import MAX_MESSAGE_BYTES, RESPONSE_FORMATS
from memnest_proto.version import VERSION

from .. import workspace as ws
from ..daemon_process import process_alive
from ..errors import DaemonUnavailable
from ..lean_stream import InFrame, OutFrame, SessionStart
from .transports import Transport

log = logging.getLogger("memnest-mcp")

MAX_LINE = MAX_MESSAGE_BYTES - 4096  # room for the frame around the line
INVALID_REQUEST, INTERNAL_ERROR = -32600, -32603
REPLAY_ID = "memnest-replay-"
GIVE_UP_AFTER = 3  # streams in a row that end before the daemon says anything
# A frame for a connection to send, with the key of the editor's request it carries; None
# ends the connection's outgoing frames.
Outgoing = tuple[str | None, OutFrame] | None
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
OUTCOME_UNKNOWN = ("outcome_unknown: memnestd stopped while it was running this call, so "
                   "whether it took effect is unknown; it was not repeated, since it may be "
                   "what stopped the daemon. Check with memory_get, memory_list or "
                   "memory_search before calling it again; the next call starts the daemon "
                   "again")


def _key(request_id: object) -> str:
    """A request id (a JSON number, string or null, as the editor sent it) as a dict key
    that keeps 1 and "1" apart."""
    return json.dumps(request_id)


class Connection:
    """One Session stream to one daemon."""

    def __init__(self, frames: "queue.Queue[Outgoing]", replay_key: str | None):
        self.frames = frames
        self.replay_key = replay_key  # the replayed initialize, whose answer is ours
        self.version = ""
        self.pid: int | None = None  # of a local daemon
        self.asks: set[str] = set()  # the daemon's requests to the editor, unanswered
        self.taken: set[str] = set()  # the editor's requests gRPC has taken to send
        self.closing = False  # the daemon said it drains
        self.received = 0  # frames from the daemon
        self.refused = ""  # why this daemon cannot serve a pipe, if it cannot

    def send(self, data: bytes, key: str | None = None) -> None:
        self.frames.put((key, ("message", data)))

    def end(self) -> None:
        self.frames.put(None)

    def outgoing(self) -> Iterator[OutFrame]:
        """The frames for gRPC to send, noting which requests it took: one it never took
        cannot have reached the daemon."""
        while True:
            item = self.frames.get()
            if item is None:
                return
            key, frame = item
            if key is not None:
                self.taken.add(key)
            yield frame

    def dead(self) -> bool:
        """Its local daemon is gone (killed between two messages)."""
        return self.pid is not None and not process_alive(self.pid)


class Relay:
    def __init__(self, transport: Transport, stdin: BinaryIO | None = None,
                 stdout: BinaryIO | None = None):
        self.transport = transport
        self.stdin = stdin or sys.stdin.buffer
        self.stdout = stdout or sys.stdout.buffer
        self._lock = threading.RLock()  # the connection and what is unanswered
        self._out_lock = threading.Lock()
        self.conn: Connection | None = None
        self.pending: dict[str, tuple[str, bytes]] = {}  # the editor's requests: method, line
        # the editor's initialize request, answered
        self.initialize: dict[str, object] | None = None
        self.initialized: bytes | None = None
        self._initialize_key: str | None = None
        self._replays = 0
        self.session_id = uuid.uuid4().hex[:16]
        self.state: tuple[str, str] | None = None  # (workspace, db_path) the daemon settled on
        self.previous_version = ""
        self._ended_at_once = 0  # streams in a row that ended before the daemon said anything
        self._receivers: list[threading.Thread] = []

    # -- from the editor ------------------------------------------------------------------

    def run(self) -> None:
        """Relay until the editor closes stdin."""
        while True:
            line = self.stdin.readline(MAX_LINE + 1)
            if not line:
                break
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                self._skip_rest_of_line()
                match = _ID.search(line[:4096])
                self._reply_error(json.loads(match.group(1)) if match else None,
                                  INVALID_REQUEST, f"the message is larger than {MAX_LINE} "
                                  "bytes; send a smaller one")
                continue
            line = line.strip()
            if line:
                try:
                    self.from_editor(line)
                except Exception as exc:  # never the end of the editor's connection
                    log.exception("could not relay a message")
                    with self._lock:
                        self._fail_pending(f"memnest-mcp could not relay this request: "
                                           f"{type(exc).__name__}: {exc}")
        with self._lock:
            conn, self.conn = self.conn, None
        if conn is not None:
            conn.end()  # the daemon ends the session once it has read everything
        for receiver in self._receivers:
            receiver.join(timeout=10)

    def _skip_rest_of_line(self) -> None:
        while True:
            chunk = self.stdin.readline(1 << 20)
            if not chunk or chunk.endswith(b"\n"):
                return

    def from_editor(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            message = None  # the daemon answers what can be answered of it
        with self._lock:
            forward, key = self._note_from_editor(message, line) \
                if isinstance(message, dict) else (True, None)
            if forward:
                self._send(line, key)

    def _note_from_editor(self, message: dict[str, object], line: bytes) -> tuple[bool, str | None]:
        """Track what the editor sends: whether it is for the daemon, and the key of the
        request it is, if it is one."""
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                key = _key(message["id"])
                self.pending[key] = (method, line)
                if method == "initialize":
                    self._initialize_key, self.initialize = key, message
                return True, key
            if method == "notifications/initialized":
                self.initialized = line
            elif method == "notifications/cancelled":
                params = message.get("params")
                if isinstance(params, dict) and "requestId" in params:
                    self.pending.pop(_key(params["requestId"]), None)
            return True, None
        if "id" in message:  # the editor answers the daemon: only the daemon that asked
            key = _key(message["id"])
            if self.conn is None or key not in self.conn.asks:
                return False, None
            self.conn.asks.discard(key)
        return True, None

    def _send(self, line: bytes, key: str | None) -> None:
        """Send a line to the daemon, connecting first if need be. Called with _lock held."""
        if self.conn is not None and self.conn.dead():
            conn, self.conn = self.conn, None
            self._settle(conn)
            if key is not None:
                return  # a request is pending: sent again (or answered) with the others
        if self._connected():
            assert self.conn is not None
            self.conn.send(line, key)

    def _connected(self) -> bool:
        """Connect if need be; when that fails every waiting request is answered with why.
        Called with _lock held."""
        if self.conn is not None:
            return True
        try:
            self._connect()
            return True
        except DaemonUnavailable as exc:
            self._fail_pending(f"memnest daemon unavailable: {exc}")
            return False

    def _connect(self) -> None:
        """Open a Session stream, replaying the editor's handshake to a new daemon; every
        failure is DaemonUnavailable."""
        try:
            self._open_stream()
        except DaemonUnavailable:
            raise
        except Exception as exc:
            log.exception("could not open a session")
            raise DaemonUnavailable(f"{type(exc).__name__}: {exc}") from None

    def _open_stream(self) -> None:
        version, pid = self.transport.ensure()  # starts or upgrades the daemon if need be
        frames: queue.Queue[Outgoing] = queue.Queue()
        conn = Connection(frames, None)
        workspace, db_path = self.state or (ws.from_env() or "", ws.db_path_override())
        remote = bool(ws.remote())
        start: SessionStart = {
            "workspace": workspace, "db_path": db_path,
            "fallback_workspace": "" if remote else ws.from_cwd(), "use_roots": not remote,
            "response_format": os.environ.get("MEMORY_RESPONSE_FORMAT", ""),
            "client": f"memnest-mcp {VERSION} pid {os.getpid()}",
            "session_id": self.session_id,
            "model": os.environ.get("MEMORY_EMBEDDING_MODEL", "").strip(),
            "previous_version": self.previous_version}
        frames.put((None, ("start", start)))
        if self.initialize is not None and self._initialize_key not in self.pending:
            self._replays += 1
            replay = {**self.initialize, "id": f"{REPLAY_ID}{self._replays}"}
            conn.replay_key = _key(replay["id"])
            conn.send(json.dumps(replay).encode())
            if self.initialized is not None:
                conn.send(self.initialized)
        responses = self.transport.open(conn.outgoing())
        conn.version, conn.pid = version, pid
        self.conn = conn
        receiver = threading.Thread(target=self._receive, args=(conn, responses),
                                    name="from-daemon", daemon=True)
        self._receivers = [r for r in self._receivers if r.is_alive()] + [receiver]
        receiver.start()

    # -- from the daemon -------------------------------------------------------------------

    def _receive(self, conn: Connection, responses: Iterator[InFrame]) -> None:
        try:
            self._relay_from_daemon(conn, responses)
        except Exception:  # a broken stream is a lost connection, whatever broke it
            log.exception("the stream from memnestd broke")
        self._lost(conn)

    def _relay_from_daemon(self, conn: Connection, responses: Iterator[InFrame]) -> None:
        for frame in responses:
            conn.received += 1
            if frame[0] == "message":
                self._from_daemon(conn, frame[1])
            elif frame[0] == "state":
                with self._lock:
                    self.state = frame[1]
            elif frame[0] == "closing":
                conn.closing = True
            elif frame[0] == "unsupported":  # a daemon from before MCP sessions
                conn.refused = (f"memnestd {conn.version or '(older)'} at "
                                f"{self.transport.address} cannot serve memnest-mcp {VERSION}: "
                                "it predates MCP sessions in the daemon. Upgrade memnest where "
                                "memnestd runs, or run `memnest-ctl stop` so that this "
                                "client starts its own")

    def _from_daemon(self, conn: Connection, data: bytes) -> None:
        try:
            message = json.loads(data)
        except (ValueError, RecursionError):
            message = None
        if isinstance(message, dict) and "id" in message:
            key = _key(message["id"])
            if "method" in message:
                conn.asks.add(key)  # the daemon asks the editor (roots)
            else:
                with self._lock:
                    if key == conn.replay_key:
                        return  # the answer to our replayed initialize
                    self.pending.pop(key, None)
        self._write(data)

    def _lost(self, conn: Connection) -> None:
        """The stream ended: answer or resend what the editor still waits for."""
        with self._lock:
            if conn is not self.conn:
                return  # the editor closed stdin, or a newer connection took over
            self.conn = None
            self._settle(conn)

    def _settle(self, conn: Connection) -> None:
        """After `conn` ended: an unanswered tools/call that may have reached a daemon that
        died is answered as such; the other requests go to the next daemon, now. Called with
        _lock held."""
        conn.end()
        self.previous_version = conn.version or self.previous_version
        self._ended_at_once = 0 if conn.received or conn.closing else self._ended_at_once + 1
        if not conn.refused and self._ended_at_once >= GIVE_UP_AFTER:
            conn.refused = (f"memnestd {conn.version} at {self.transport.address} ended the MCP "
                            f"session at once, {self._ended_at_once} times in a row: it cannot "
                            f"serve memnest-mcp {VERSION} (it predates MCP sessions, or fails "
                            "them: see its log, `memnest-ctl logs`)")
        if conn.refused:  # answered now; the editor's next message tries again
            self._ended_at_once = 0
            self._fail_pending(conn.refused)
            return
        for key, (method, _line) in list(self.pending.items()):
            if method == "tools/call" and not conn.closing and key in conn.taken:
                del self.pending[key]
                self._write(_tool_error(json.loads(key), OUTCOME_UNKNOWN))
        for key, (_method, line) in list(self.pending.items()):
            if not self._connected():
                return
            assert self.conn is not None
            self.conn.send(line, key)

    # -- to the editor ---------------------------------------------------------------------

    def _fail_pending(self, why: str) -> None:
        """Answer every unanswered request with `why`. Called with _lock held."""
        for key, (method, _line) in list(self.pending.items()):
            del self.pending[key]
            request_id = json.loads(key)
            if method == "tools/call":
                self._write(_tool_error(request_id, why))
            else:
                self._reply_error(request_id, INTERNAL_ERROR, why)

    def _reply_error(self, request_id: object, code: int, message: str) -> None:
        self._write(json.dumps({"jsonrpc": "2.0", "id": request_id,
                                "error": {"code": code, "message": message}}).encode())

    def _write(self, data: bytes) -> None:
        with self._out_lock:
            self.stdout.write(data + b"\n")
            self.stdout.flush()


def _tool_error(request_id: object, text: str) -> bytes:
    """A tools/call answered with a tool error: the model reads it and can act on it."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {
        "content": [{"type": "text", "text": text}], "isError": True}}).encode()


def warn_about_settings() -> None:
    """What the editor's MCP log should show: a setting the daemon will not honour."""
    chosen = os.environ.get("MEMORY_RESPONSE_FORMAT", "").strip().lower()
    if chosen and chosen not in RESPONSE_FORMATS:
        log.warning("MEMORY_RESPONSE_FORMAT=%r is not one of %s; using %s", chosen,
                    ", ".join(RESPONSE_FORMATS), RESPONSE_FORMATS[0])
