"""The MCP server of memnest-mcp (started by mcp_shim.main): forwards every tool call to
memnestd.

Its tools are data fetched from the daemon, not functions defined here, so it uses the SDK's
low-level server. It exits when its client closes stdin; the daemon stays for other clients.
"""
import io
import json
import logging
import sys
import uuid
import warnings
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from memnest_proto.version import VERSION

from .. import workspace as ws
from ..errors import DaemonUnavailable, OutcomeUnknown, ToolFailure
from . import jsonrpc_guard, lean
from .render import render, response_format

Server, stdio_server = lean.load()
from mcp.shared.exceptions import MCPError  # noqa: E402 (after the lean import above)
from mcp.shared.message import SessionMessage  # noqa: E402

log = logging.getLogger("memnest-mcp")
ROOTS_TIMEOUT_S = 2.0


class Shim:
    def __init__(self, warmup):
        self.warmup = warmup  # holds the daemon client once it has loaded
        self.workspace: str | None = ws.from_env()
        self.db_path = ws.db_path_override()
        self.format = response_format()
        # stdio has no session id: one per shim process, which lives as long as the editor's
        # connection to it
        self.session_id = uuid.uuid4().hex[:16]

    async def resolve_workspace(self, ctx) -> str:
        if self.workspace is None:
            if ws.remote():  # the editor's roots and cwd are folders of this machine
                raise ToolFailure("no_workspace", ws.REMOTE_NEEDS_WORKSPACE)
            self.workspace = await self._workspace_from_roots(ctx) or ws.from_cwd()
            log.info("workspace: %s", self.workspace)
        return self.workspace

    async def _workspace_from_roots(self, ctx) -> str | None:
        caps = ctx.session.client_capabilities
        if caps is None or caps.roots is None or not ctx.session.can_send_request:
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # roots is deprecated in newest protocol
                with anyio.fail_after(ROOTS_TIMEOUT_S):
                    result = await ctx.session.list_roots()
        except Exception as exc:  # a client that declares roots but cannot answer
            log.info("client roots unavailable (%s); using the current directory", exc)
            return None
        for root in result.roots:
            path = ws.from_root_uri(str(root.uri))
            if path:
                return path
        return None

    async def list_tools(self, ctx, params) -> types.ListToolsResult:
        try:
            definitions = await anyio.to_thread.run_sync(self._definitions)
        except DaemonUnavailable as exc:  # JSON-RPC's internal error, not the SDK's code 0
            raise MCPError(types.INTERNAL_ERROR, f"memnest daemon unavailable: {exc}",
                           {"reason": "daemon_unavailable"}) from None
        return types.ListToolsResult(tools=[
            types.Tool(
                name=d.name, description=d.description,
                input_schema=json.loads(d.input_schema_json),
                annotations=types.ToolAnnotations(
                    title=d.annotations.title or None,
                    read_only_hint=d.annotations.read_only_hint,
                    destructive_hint=d.annotations.destructive_hint,
                    idempotent_hint=d.annotations.idempotent_hint,
                    open_world_hint=d.annotations.open_world_hint))
            for d in definitions])

    def _definitions(self) -> list:
        """The daemon's tools: the ones the warm-up fetched if that daemon is still the one
        connected (a daemon's tools do not change while it runs), else fetched now."""
        client = self.warmup.client()
        fetched = self.warmup.take_tools()
        if fetched is not None and client.accepted_pid == fetched[0]:
            return fetched[1]
        return client.list_tools()

    async def call_tool(self, ctx, params) -> types.CallToolResult:
        try:
            workspace = await self.resolve_workspace(ctx)
        except ToolFailure as exc:
            return _error(f"{exc.code}: {exc.message}")
        arguments = dict(params.arguments or {})
        on_progress = None
        token = (ctx.meta or {}).get("progress_token")
        if token is not None:  # the client wants progress: stream the call from the daemon
            session = ctx.session

            def on_progress(done: float, total: float, message: str) -> None:
                anyio.from_thread.run(session.send_progress_notification,
                                      token, done, total or None, message or None)

        try:
            origin = {"via": "agent", "client": _client_name(ctx), "session": self.session_id}
            result = await anyio.to_thread.run_sync(
                lambda: self.warmup.client().call_tool(params.name, arguments, workspace,
                                                       self.db_path, on_progress, origin))
        except ToolFailure as exc:
            if exc.code == "unknown_tool":  # a protocol error, as the MCP specification has it
                raise MCPError(types.INVALID_PARAMS, f"unknown tool: {exc.message}") from None
            return _error(f"{exc.code}: {exc.message}")
        except OutcomeUnknown as exc:
            return _error(f"outcome_unknown: {exc}")
        except DaemonUnavailable as exc:
            return _error(f"memnest daemon unavailable: {exc}")
        if isinstance(result, dict) and isinstance(result.get("session"), dict):
            self.apply(result["session"])
        text = render(result, self.format)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=result if isinstance(result, dict)
                                    else None)


    def apply(self, session: dict) -> None:
        """A tool (memory_set_workspace) pinned this session to another workspace."""
        if session.get("workspace"):
            self.workspace = session["workspace"]
            self.db_path = session.get("db_path", "")
            log.info("workspace pinned to %s", self.workspace)


def _client_name(ctx) -> str:
    """The editor, as it named itself when it connected (clientInfo)."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    return str(getattr(info, "name", "") or "")


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                is_error=True)


async def serve(warmup) -> None:
    shim = Shim(warmup)
    server = Server("memnest", version=VERSION,
                    instructions="Persistent memory for this project: search it before you "
                                 "answer, store decisions, preferences and lessons as you go.",
                    on_list_tools=shim.list_tools, on_call_tool=shim.call_tool)
    replies: dict[str, Any] = {}

    async def refuse(request_id, message: str) -> None:
        error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
            code=jsonrpc_guard.INVALID_REQUEST, message=message))
        await replies["stream"].send(SessionMessage(error))

    stdin = jsonrpc_guard.DepthGuardedLines(
        anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")), refuse)
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):
        replies["stream"] = write_stream
        await server.run(read_stream, write_stream, server.create_initialization_options())
    warmup.close()


def run(warmup) -> None:
    try:
        anyio.run(serve, warmup)
    except KeyboardInterrupt:
        pass
