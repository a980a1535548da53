"""One editor's MCP server, run by the daemon: memnest-mcp only relays the editor's messages.

The SDK's low-level server speaks the protocol (initialize, capabilities, roots, progress,
cancellation); the two handlers here list the daemon's tools and run a call through the same
path as the CallTool RPC (MemnestService.outcome), on the daemon's call executor so that
editor windows still take turns.
"""
import asyncio
import json
import logging
import threading
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.shared.exceptions import MCPError
from memnest_proto import memnest_pb2 as pb
from memnest_proto.contract import REMOTE_NEEDS_WORKSPACE
from memnest_proto.version import VERSION

from ..core.errors import ToolError
from .render import render, response_format

log = logging.getLogger(__name__)

INSTRUCTIONS = ("Persistent memory for this project: search it before you answer, store "
                "decisions, preferences and lessons as you go.")
ROOTS_TIMEOUT_S = 2.0
PROGRESS_SEND_TIMEOUT_S = 5.0
MAX_FIELD = 4096  # longest workspace, path or name a session start may carry


@dataclass
class Caller:
    """Who the session serves and how, from the shim's start frame."""
    workspace: str | None
    db_path: str
    fallback_workspace: str | None
    use_roots: bool
    response_format: str
    client: str
    session_id: str
    model: str
    identity: str | None  # the TLS client's common name; None on the Unix socket
    previous_version: str  # the daemon the shim was connected to before, if any

    @classmethod
    def from_start(cls, start: pb.SessionStart, identity: str | None) -> "Caller":
        def text(value: str) -> str:
            return value.strip()[:MAX_FIELD]
        return cls(workspace=text(start.workspace) or None, db_path=text(start.db_path),
                   fallback_workspace=text(start.fallback_workspace) or None,
                   use_roots=start.use_roots and identity is None,
                   response_format=response_format(start.response_format),
                   client=text(start.client)[:200] or "memnest-mcp",
                   session_id=text(start.session_id)[:64], model=text(start.model)[:200],
                   identity=identity, previous_version=text(start.previous_version)[:40])


# Runs a blocking function on the daemon's call executor, in this session's turn.
RunBlocking = Callable[[Callable[[], Any]], Awaitable[Any]]


class McpSession:
    def __init__(self, caller: Caller, service, tools: Callable[[], list[types.Tool]],
                 run_blocking: RunBlocking, on_state: Callable[[str, str], None]):
        self.caller = caller
        self.service = service  # servicer.MemnestService: outcome() runs a call
        self._tools = tools
        self._run_blocking = run_blocking
        self._on_state = on_state  # tells the shim what to start with after a reconnect

    def server(self) -> Server:
        return Server("memnest", version=VERSION, instructions=INSTRUCTIONS,
                      on_list_tools=self.list_tools, on_call_tool=self.call_tool)

    def initialization_options(self, server: Server):
        return server.create_initialization_options(NotificationOptions(tools_changed=True))

    # -- handlers ------------------------------------------------------------------------

    async def list_tools(self, ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._tools())

    async def call_tool(self, ctx, params) -> types.CallToolResult:
        try:
            workspace = await self._workspace(ctx)
        except ToolError as exc:
            return _result(_failed(exc))
        request = self._request(params.name, params.arguments or {}, workspace,
                                _client_name(ctx))
        cancelled = threading.Event()
        progress = self._progress_sender(ctx, cancelled)
        try:
            result, error = await self._run_blocking(lambda: self.service.outcome(
                request, progress, lambda: not cancelled.is_set(), self.caller.identity))
        except BaseException:  # cancelled by the editor, or the session ended
            cancelled.set()
            raise
        return _result(self._answer(result, error))

    def call_now(self, name: str, arguments: dict, client_name: str,
                 still_wanted: Callable[[], bool]) -> dict:
        """call_tool() for a session whose workspace is known and a call that asks for no
        progress, run on the call executor by session_pipe.py without the SDK's dispatch:
        the JSON-RPC result as a dict (MCPError for a protocol error)."""
        request = self._request(name, arguments, self.caller.workspace or "", client_name)
        result, error = self.service.outcome(request, lambda done, total, message: None,
                                             still_wanted, self.caller.identity)
        return self._answer(result, error)

    def _request(self, name: str, arguments: dict, workspace: str,
                 client_name: str) -> pb.CallToolRequest:
        caller = self.caller
        return pb.CallToolRequest(
            tool=name, workspace=workspace, db_path=caller.db_path,
            arguments_json=json.dumps(arguments), client=caller.client,
            origin=pb.Origin(via="agent", client=client_name, session=caller.session_id),
            model=caller.model)

    def _answer(self, result, error) -> dict:
        """A call's outcome as MCP's CallToolResult, in its wire form."""
        if error is not None:
            if error.code == "unknown_tool":  # a protocol error, as the MCP specification has it
                raise MCPError(types.INVALID_PARAMS, f"unknown tool: {error.message}")
            return _failed(error)
        if isinstance(result, dict) and isinstance(result.get("session"), dict):
            self._pin(result["session"])
        text = render(result, self.caller.response_format)
        answer: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if isinstance(result, dict):
            # the text's JSON when it is JSON; results may hold values only default=str writes
            answer["structuredContent"] = json.loads(text) \
                if self.caller.response_format == "json" \
                else json.loads(json.dumps(result, default=str))
        return answer

    def _progress_sender(self, ctx, cancelled: threading.Event):
        token = (ctx.meta or {}).get("progress_token")
        if token is None:
            return lambda done, total, message: None
        loop = asyncio.get_running_loop()
        session = ctx.session

        def send(done: float, total: float, message: str) -> None:
            if cancelled.is_set():
                return
            future = asyncio.run_coroutine_threadsafe(session.send_progress_notification(
                token, done, total or None, message or None), loop)
            try:
                future.result(PROGRESS_SEND_TIMEOUT_S)
            except Exception as exc:  # the editor went away: the call goes on regardless
                log.info("progress not delivered: %s", exc)
        return send

    # -- the workspace ---------------------------------------------------------------------

    async def _workspace(self, ctx) -> str:
        caller = self.caller
        if caller.workspace is None:
            found = await self._from_roots(ctx) if caller.use_roots else None
            found = found or caller.fallback_workspace
            if not found:
                raise ToolError("no_workspace", REMOTE_NEEDS_WORKSPACE)
            caller.workspace = found
            log.info("session %s works in %s", caller.session_id, found)
            self._on_state(found, caller.db_path)
        return caller.workspace

    async def _from_roots(self, ctx) -> str | None:
        caps = ctx.session.client_capabilities
        if caps is None or caps.roots is None or not ctx.session.can_send_request:
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # roots is deprecated in the newest protocol
                with anyio.fail_after(ROOTS_TIMEOUT_S):
                    result = await ctx.session.list_roots()
        except Exception as exc:  # a client that declares roots but cannot answer
            log.info("client roots unavailable (%s); using the shim's directory", exc)
            return None
        for root in result.roots[:100]:
            path = folder_of_root(str(root.uri))
            if path:
                return path
        return None

    def _pin(self, session: dict) -> None:
        """memory_set_workspace pinned this session to another workspace."""
        if session.get("workspace"):
            self.caller.workspace = str(session["workspace"])
            self.caller.db_path = str(session.get("db_path", "") or "")
            log.info("session %s pinned to %s", self.caller.session_id, self.caller.workspace)
            self._on_state(self.caller.workspace, self.caller.db_path)


def folder_of_root(uri: str) -> str | None:
    """The existing folder a file:// root names, resolved; None for anything else."""
    parsed = urlparse(uri[:MAX_FIELD])
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = Path(unquote(parsed.path))
    try:
        return str(path.resolve()) if path.is_absolute() and path.is_dir() else None
    except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL byte
        return None


def _client_name(ctx) -> str:
    """The editor, as it named itself when it connected (clientInfo)."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    return str(getattr(info, "name", "") or "")[:200]


def _failed(error: ToolError) -> dict:
    """A call that failed, in CallToolResult's wire form: what went wrong, for the model."""
    return {"content": [{"type": "text", "text": f"{error.code}: {error.message}"}],
            "isError": True}


def _result(answer: dict) -> types.CallToolResult:
    """CallToolResult from its wire form (_answer(), _failed())."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=answer["content"][0]["text"])],
        structured_content=answer.get("structuredContent"),
        is_error=answer.get("isError", False))


def tool_list(definitions: pb.ListToolsResponse) -> list[types.Tool]:
    """The daemon's tools, as MCP describes them."""
    return [types.Tool(
        name=d.name, description=d.description, input_schema=json.loads(d.input_schema_json),
        annotations=types.ToolAnnotations(
            title=d.annotations.title or None, read_only_hint=d.annotations.read_only_hint,
            destructive_hint=d.annotations.destructive_hint,
            idempotent_hint=d.annotations.idempotent_hint,
            open_world_hint=d.annotations.open_world_hint))
        for d in definitions.tools]
