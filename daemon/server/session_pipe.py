"""The Session stream: an editor's JSON-RPC messages into an McpSession and its answers back.

Every session runs on one asyncio loop, a thread of its own started with the first session.
For each stream, the gRPC thread serving it yields the session's outgoing frames from a
queue, and a reader thread parses what the shim sends and hands it to the loop (waiting while
the session is behind, so a flood is held back by gRPC's flow control, not buffered here).

A tools/call of an initialized session whose workspace is known, asking for no progress
(nearly every call), is run and answered from the call executor directly: the SDK's dispatch
and two hops through the loop's thread cost more than the rest of the session's work.

Draining (a stop or an upgrade): a session stops reading, waits until every request it read
has been answered, then sends `closing` and ends; the shim sends whatever was left unanswered
to the next daemon, which therefore never sees a request twice.
"""
import asyncio
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import anyio
import grpc
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from memnest_proto import memnest_pb2 as pb
from memnest_proto.version import VERSION

from . import jsonrpc_guard
from .mcp_session import Caller, McpSession, tool_list

log = logging.getLogger(__name__)

INBOX = 16  # messages a session may have waiting before the reader waits for it
MAX_IN_FLIGHT = 256  # requests one session may have unanswered at once
OUTBOX = 256  # frames waiting for gRPC before the session waits for the shim
SERVER_ERROR = -32000  # JSON-RPC's range for errors the implementation defines
PARSE_ERROR = -32700
_END = None  # closes a stream's outgoing frames
TOOLS_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'


class SessionHub:
    """Every MCP session of this daemon: their loop, their tools, their drain."""

    def __init__(self, service, submit: Callable[..., futures.Future] | None = None):
        self.service = service  # servicer.MemnestService
        # runs a blocking call in a client's turn (FairExecutor.submit_for); a thread of
        # the loop's default executor when the daemon has none (tests)
        self._submit = submit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._pipes: set[Pipe] = set()
        self._closing: str | None = None
        self._tools: list[types.Tool] | None = None

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="mcp-sessions",
                                 daemon=True).start()
            return self._loop

    def tools(self) -> list[types.Tool]:
        """The daemon's tools as MCP lists them (they do not change while it runs)."""
        if self._tools is None:
            self._tools = tool_list(self.service.ListTools(pb.ListToolsRequest(), None))
        return self._tools

    async def run_blocking(self, client: str, fn):
        if self._submit is None:
            return await asyncio.get_running_loop().run_in_executor(None, fn)
        return await asyncio.wrap_future(self._submit(client, fn))

    def submit(self, client: str, fn) -> futures.Future | None:
        """fn in `client`'s turn on the call executor (None: the daemon has none)."""
        return None if self._submit is None else self._submit(client, fn)

    def serve(self, request_iterator, context, identity: str | None) -> Iterator[pb.SessionFrame]:
        first = next(request_iterator, None)
        if first is None or first.WhichOneof("frame") != "start":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          "a Session stream begins with a start frame")
            return
        with self._lock:
            closing = self._closing
            if closing is None:
                pipe = Pipe(self, Caller.from_start(first.start, identity), context.peer())
                self._pipes.add(pipe)
        if closing is not None:
            yield pb.SessionFrame(closing=pb.SessionClosing(reason=closing))
            return
        try:
            yield from pipe.frames(request_iterator, context)
        finally:
            with self._lock:
                self._pipes.discard(pipe)

    def drain(self, reason: str, timeout: float) -> None:
        """Let every session answer what it has read, then close it (bounded by timeout)."""
        with self._lock:
            self._closing = reason
            pipes = list(self._pipes)
        deadline = time.monotonic() + timeout
        for pipe in pipes:
            pipe.stop_reading()
        for pipe in pipes:
            pipe.close_when_answered(reason, deadline)
        if pipes:
            log.info("closed %d MCP session(s)", len(pipes))


class Pipe:
    """One Session stream."""

    def __init__(self, hub: SessionHub, caller: Caller, peer: str):
        self.hub, self.caller, self.peer = hub, caller, peer
        self.out: queue.Queue = queue.Queue(OUTBOX)
        self._cond = threading.Condition()
        self._in_flight: set = set()  # ids of requests read and not answered yet
        self._reading = True
        self._inbox: Any = None  # the session's read stream, once it runs
        self._started = threading.Event()
        self._task: futures.Future | None = None
        self._ended = threading.Event()
        # a shim that was connected to another version of memnestd before: its editor may
        # hold that version's tool list
        self._tools_changed = caller.previous_version not in ("", VERSION)
        self._session: McpSession | None = None
        self._initialized = False  # the editor said so: calls may be answered directly
        self._client_name = ""  # as the editor named itself in initialize
        self._direct: dict[Any, threading.Event] = {}  # calls answered directly: cancelled?

    # -- the gRPC side (threads) -----------------------------------------------------------

    def frames(self, request_iterator, context) -> Iterator[pb.SessionFrame]:
        loop = self.hub.loop()
        self._task = asyncio.run_coroutine_threadsafe(self._run(), loop)
        context.add_callback(self._gone)
        threading.Thread(target=self._read, args=(request_iterator, loop), daemon=True,
                         name="session-in").start()
        while True:
            frame = self.out.get()
            if frame is _END:
                return
            yield frame

    def _read(self, request_iterator, loop) -> None:
        self._started.wait(30)
        try:
            for frame in request_iterator:
                if frame.WhichOneof("frame") != "message":
                    continue  # only one start; the rest is the daemon's to send
                if not self._deliver(frame.message, loop):
                    break
        except grpc.RpcError:
            pass  # the shim went away
        except Exception:  # never let a reader die silently with the session waiting
            log.exception("session reader failed")
        finally:
            self._close_inbox(loop)

    def _deliver(self, data: bytes, loop) -> bool:
        """Parse one message and hand it to the session; False once it cannot take more."""
        line = data.decode("utf-8", errors="replace")
        deepest, request_id = jsonrpc_guard.depth_and_id(line)
        if deepest > jsonrpc_guard.MAX_DEPTH:
            self._reply_error(request_id, jsonrpc_guard.INVALID_REQUEST,
                              f"the message nests more than {jsonrpc_guard.MAX_DEPTH} levels "
                              "deep; send a flatter message")
            return True
        try:
            message = SessionMessage(
                types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except Exception:  # answered here: the SDK would only log it, and the caller wait
            self._refuse_malformed(line, request_id)
            return True
        with self._cond:
            if not self._reading:
                return True  # draining: the shim sends it again to the next daemon
            if not self._track(message.message):
                return True
        if self._answered_directly(message.message):
            return True
        inbox = self._inbox
        if inbox is None:
            return False
        try:
            asyncio.run_coroutine_threadsafe(inbox.send(message), loop).result()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, RuntimeError,
                futures.CancelledError):
            return False
        if isinstance(message.message, types.JSONRPCNotification) and \
                message.message.method == "notifications/initialized":
            self._initialized = True
            if self._tools_changed:
                self._tools_changed = False
                self._put(pb.SessionFrame(message=TOOLS_CHANGED))
        elif isinstance(message.message, types.JSONRPCRequest) and \
                message.message.method == "initialize":
            info = (message.message.params or {}).get("clientInfo")
            self._client_name = str(info.get("name") or "")[:200] \
                if isinstance(info, dict) else ""
        return True

    # -- tools/call without the SDK's dispatch ----------------------------------------------

    def _answered_directly(self, message) -> bool:
        """Run a tools/call on the call executor and answer it from there, without the
        SDK's dispatch, its validation of the result and two hops through the loop's
        thread: when the session is initialized, its workspace known (no roots to ask) and
        the call asks for no progress. Everything else goes to the SDK's session."""
        if not (self._initialized and isinstance(message, types.JSONRPCRequest)
                and message.method == "tools/call"):
            return False
        session, params = self._session, message.params or {}
        meta = params.get("_meta")
        name, arguments = params.get("name"), params.get("arguments")
        if session is None or self.caller.workspace is None or not isinstance(name, str) \
                or not isinstance(arguments, dict | None) \
                or (isinstance(meta, dict) and meta.get("progressToken") is not None):
            return False
        cancelled = threading.Event()
        with self._cond:
            self._direct[message.id] = cancelled
        future = self.hub.submit(self.peer, lambda: session.call_now(
            name, arguments or {}, self._client_name, lambda: not cancelled.is_set()))
        if future is None:
            with self._cond:
                del self._direct[message.id]
            return False
        future.add_done_callback(lambda done: self._answer(message.id, done, cancelled))
        return True

    def _answer(self, request_id, done: futures.Future, cancelled: threading.Event) -> None:
        try:
            data = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": done.result()})
        except MCPError as exc:
            data = json.dumps({"jsonrpc": "2.0", "id": request_id,
                               "error": {"code": exc.code, "message": exc.message}})
        except Exception:  # outcome() turns failures into results: this is a bug of ours
            log.exception("a call answered directly failed")
            data = json.dumps({"jsonrpc": "2.0", "id": request_id,
                               "error": {"code": SERVER_ERROR, "message": "internal error"}})
        if not cancelled.is_set():  # a cancelled request gets no answer
            self._put(pb.SessionFrame(message=data.encode()))
        with self._cond:
            self._direct.pop(request_id, None)
            self._in_flight.discard(request_id)
            self._cond.notify_all()

    def _refuse_malformed(self, line: str, request_id) -> None:
        try:
            parsed = json.loads(line)
        except ValueError:
            self._reply_error(request_id, PARSE_ERROR, "the message is not valid JSON")
            return
        if isinstance(parsed, dict) and "method" not in parsed and "id" in parsed:
            return  # an answer to nothing this session asked: there is no one to tell
        self._reply_error(request_id, jsonrpc_guard.INVALID_REQUEST,
                          "the message is not a JSON-RPC 2.0 request or notification that "
                          "MCP defines (jsonrpc, method, params, id)")

    def _track(self, message) -> bool:
        """Note a request as unanswered (False: refused, too many are); forget a cancelled
        one, which gets no answer. Called with _cond held."""
        if isinstance(message, types.JSONRPCRequest):
            if len(self._in_flight) >= MAX_IN_FLIGHT:
                self._reply_error(message.id, SERVER_ERROR,
                                  f"more than {MAX_IN_FLIGHT} requests of this session are "
                                  "unanswered; wait for some answers before sending more")
                return False
            self._in_flight.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and \
                message.method == "notifications/cancelled":
            request_id = (message.params or {}).get("requestId")
            self._in_flight.discard(request_id)
            direct = self._direct.get(request_id)
            if direct is not None:
                direct.set()
            self._cond.notify_all()
        return True

    def _reply_error(self, request_id, code: int, text: str) -> None:
        reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}
        self._put(pb.SessionFrame(message=json.dumps(reply).encode()))

    def _put(self, frame) -> None:
        try:
            self.out.put(frame, timeout=60)
        except queue.Full:  # a shim that reads nothing for a minute: give up on it
            log.warning("MCP session %s stopped reading; closing it", self.caller.session_id)
            self._gone()

    def _gone(self) -> None:
        """The stream ended (the editor closed, the shim died, or the session finished)."""
        if self._task is not None:
            self._task.cancel()
        self._ended.set()
        try:
            self.out.put_nowait(_END)
        except queue.Full:
            pass

    def stop_reading(self) -> None:
        with self._cond:
            self._reading = False

    def close_when_answered(self, reason: str, deadline: float) -> None:
        with self._cond:
            while self._in_flight and not self._ended.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    log.warning("MCP session %s: %d request(s) unanswered at the drain's end",
                                self.caller.session_id, len(self._in_flight))
                    break
                self._cond.wait(min(left, 0.5))
        if not self._ended.is_set():
            self._put(pb.SessionFrame(closing=pb.SessionClosing(reason=reason)))
        self._close_inbox(self.hub.loop())
        self._ended.wait(max(0.0, deadline - time.monotonic()))

    def _close_inbox(self, loop) -> None:
        inbox = self._inbox
        if inbox is not None:
            loop.call_soon_threadsafe(inbox.close)

    # -- the loop's side ---------------------------------------------------------------------

    async def _run(self) -> None:
        inbox, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](INBOX)
        write_stream, outbox = anyio.create_memory_object_stream[SessionMessage](0)
        self._inbox = inbox
        self._started.set()
        session = McpSession(self.caller, self.hub.service, self.hub.tools,
                             lambda fn: self.hub.run_blocking(self.peer, fn), self._send_state)
        self._session = session
        server = session.server()
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._write, outbox)
                async with write_stream:
                    await server.run(read_stream, write_stream,
                                     session.initialization_options(server))
        except Exception:
            log.exception("MCP session %s failed", self.caller.session_id)
        finally:
            self._ended.set()
            with self._cond:
                self._cond.notify_all()
            try:
                self.out.put_nowait(_END)
            except queue.Full:
                asyncio.get_running_loop().run_in_executor(None, self._finish)

    def _finish(self) -> None:
        try:
            self.out.put(_END, timeout=60)
        except queue.Full:
            pass

    async def _write(self, outbox) -> None:
        async with outbox:
            async for item in outbox:
                message = item.message
                data = message.model_dump_json(by_alias=True, exclude_unset=True).encode()
                frame = pb.SessionFrame(message=data)
                try:
                    self.out.put_nowait(frame)
                except queue.Full:
                    await anyio.to_thread.run_sync(self._put, frame)
                if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
                    with self._cond:
                        self._in_flight.discard(message.id)
                        self._cond.notify_all()

    def _send_state(self, workspace: str, db_path: str) -> None:
        frame = pb.SessionFrame(state=pb.SessionState(workspace=workspace, db_path=db_path))
        try:
            self.out.put_nowait(frame)
        except queue.Full:
            log.info("session state not sent: the shim is not reading")
