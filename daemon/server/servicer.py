"""The gRPC service: turns wire requests into tool calls and tool outcomes into replies.

Every failure becomes a structured ToolError; nothing a caller sends can raise out of here.
"""
import json
import logging
import os
import queue
import threading
import time
from typing import Any

import grpc
import psutil
from memnest_proto import memnest_pb2 as pb
from memnest_proto import memnest_pb2_grpc as pb_grpc
from memnest_proto.version import PROTOCOL_VERSION, VERSION

from ..core.errors import ToolError
from ..core.records import Origin
from ..core.storage_errors import DISK_REASONS, DiskFailure, disk_trouble
from ..store.resolution import resolve
from ..team import published
from ..tools import TOOLS, ToolContext
from ..tools.registry import Confinement, parse_arguments, unknown_tool_message
from .tls import IDENTITY_PREFIX, tls_identity

log = logging.getLogger(__name__)


class Runtime:
    """Facts about the running daemon, for Status and memory_stats."""

    def __init__(self, embedder, stores, socket_path: str, log_path: str):
        self.started = time.monotonic()
        self.version = VERSION
        self.embedder, self.stores = embedder, stores
        self.socket_path, self.log_path = socket_path, log_path
        self.calls_served = 0
        self.in_flight = 0
        self._lock = threading.Lock()

    def begin(self) -> None:
        with self._lock:
            self.in_flight += 1

    def end(self) -> None:
        with self._lock:
            self.in_flight -= 1
            self.calls_served += 1

    def facts(self) -> dict:
        return {
            "version": self.version,
            "protocol_version": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "uptime_seconds": round(time.monotonic() - self.started, 1),
            "rss_bytes": psutil.Process().memory_info().rss,
            "embedding_model": self.embedder.name,
            "model_load_seconds": round(self.embedder.load_seconds, 2),
            "open_databases": len(self.stores.stores()),
            "open_workspaces": sorted(self.stores.workspaces),
            "calls_served": self.calls_served,
        }


class MemnestService(pb_grpc.MemnestServicer):
    def __init__(self, runtime: Runtime, settings, on_shutdown, policy=None):
        self.runtime = runtime
        self.settings = settings
        self._on_shutdown = on_shutdown
        self.policy = policy  # tls.ClientPolicy when the daemon also listens on TLS
        self._model_notes_logged: set[tuple[str, str]] = set()
        self._submit = None  # the server's FairExecutor.submit_for, once attached
        self._sessions = None  # session_pipe.SessionHub, from the first MCP session on
        self._sessions_lock = threading.Lock()

    def attach_executor(self, executor) -> None:
        """The executor gRPC runs calls on: MCP sessions' tool calls take turns on it too."""
        self._submit = executor.submit_for

    @property
    def sessions(self):
        with self._sessions_lock:
            if self._sessions is None:
                from .session_pipe import SessionHub  # the MCP SDK: only once a session comes

                self._sessions = SessionHub(self, self._submit)
            return self._sessions

    def drain_sessions(self, reason: str, timeout: float) -> None:
        if self._sessions is not None:
            self._sessions.drain(reason, timeout)

    # -- tools ---------------------------------------------------------------------------

    def ListTools(self, request, context):
        return pb.ListToolsResponse(tools=[
            pb.ToolDefinition(
                name=t.name, description=t.description,
                input_schema_json=json.dumps(t.schema),
                annotations=pb.ToolAnnotations(
                    title=t.name.replace("_", " "), read_only_hint=t.read_only,
                    destructive_hint=t.destructive, idempotent_hint=t.idempotent,
                    open_world_hint=False),
                long_running=t.long_running)
            for t in TOOLS.values()])

    def CallTool(self, request, context):
        return self._call(request, lambda done, total, message: None, context.is_active,
                          tls_identity(context))

    def Session(self, request_iterator, context):
        return self.sessions.serve(request_iterator, context, tls_identity(context))

    def serve_session(self, request_iterator, context, identity):
        """A session over the Unix socket without gRPC (session_socket.py)."""
        return self.sessions.serve(request_iterator, context, identity)

    def CallToolStream(self, request, context):
        events: queue.Queue = queue.Queue()
        identity = tls_identity(context)

        def progress(done: float, total: float, message: str) -> None:
            events.put(pb.CallToolEvent(progress=pb.Progress(
                progress=done, total=total, message=message)))

        def work():
            events.put(pb.CallToolEvent(result=self._call(request, progress,
                                                           context.is_active, identity)))

        threading.Thread(target=work, name=f"stream-{request.tool}", daemon=True).start()
        while True:
            event = events.get()
            yield event
            if event.HasField("result"):
                return

    def _model_note(self, request) -> str | None:
        """A caller configured for another model is served by this daemon's: say so, in the
        result and (once per caller and model) in the log."""
        wanted = request.model.strip()[:200]
        served = self.runtime.embedder.name
        if not wanted or wanted == served:
            return None
        key = (request.client.split(" pid ")[0], wanted)
        if key not in self._model_notes_logged and len(self._model_notes_logged) < 1000:
            self._model_notes_logged.add(key)
            log.warning("%s asks for model %r; this daemon serves %r", request.client, wanted,
                        served)
        return (f"this client is configured for the embedding model {wanted!r}, but the "
                f"running memnestd serves {served!r} (one model per daemon, and a database "
                "keeps the model it was embedded with). To switch, stop memnestd "
                "(`memnest-ctl stop`) and start it with MEMORY_EMBEDDING_MODEL set.")

    def _call(self, request, progress, still_wanted,
              identity: str | None = None) -> pb.CallToolResponse:
        result, error = self.outcome(request, progress, still_wanted, identity)
        if error is not None:
            return pb.CallToolResponse(error=pb.ToolError(code=error.code, message=error.message))
        return pb.CallToolResponse(result_json=json.dumps(result, ensure_ascii=False,
                                                          default=str))

    def outcome(self, request, progress, still_wanted,
                identity: str | None = None) -> tuple[Any, ToolError | None]:
        """Run one tool call: (its result, None) or (None, the error); nothing raises out.
        `identity` is None for the local user (the Unix socket), the client certificate's
        common name for a call over TLS."""
        started = time.monotonic()
        self.runtime.begin()
        ctx = None
        try:
            tool = TOOLS.get(request.tool)
            if tool is None:
                raise ToolError("unknown_tool", unknown_tool_message(request.tool))
            arguments = parse_arguments(request.arguments_json)
            tool.validate(arguments)
            claimed = request.origin.client
            if identity is not None:
                self._authorize(identity, request, arguments)
                claimed = IDENTITY_PREFIX + identity  # the certificate says who, not the client
            where = resolve(request.workspace, self.settings.worktrees, self.settings.user_dir)
            workspace = where.workspace
            if identity is not None:  # where the folder led, and whose memory that is
                self._authorize(identity, request, arguments, where.checkout)
                if where.moved and (self.policy is None
                                    or not self.policy.allows_real(identity, workspace)):
                    raise ToolError("permission_denied", f"tls client {identity!r} may not "
                                    f"use the memory of {workspace}, the repository this "
                                    "worktree belongs to")
            ctx = ToolContext(workspace=workspace, resolution=where,
                              db_path=request.db_path, stores=self.runtime.stores,
                              embedder=self.runtime.embedder, settings=self.settings,
                              runtime=self._facts_for(identity), progress=progress,
                              still_wanted=still_wanted,
                              origin=Origin.claimed(request.origin.via, claimed,
                                                    request.origin.session),
                              confinement=self._confinement(identity),
                              reading=tool.read_only)
            result = tool.handler(ctx, arguments)
            if ctx.found_nothing and isinstance(result, dict):
                result = {**result, "no_memory": ctx.no_memory_note()}
            if ctx.published and isinstance(result, dict):
                result = {**result, "git_warning": published.warning(ctx.published)}
            if ctx.restored_ignore and isinstance(result, dict):
                result = {**result, "git_note": published.RESTORED_NOTE}
            note = self._model_note(request)
            if note and isinstance(result, dict):
                result = {**result, "model_note": note}
            return result, None
        except ToolError as exc:
            log.info("%s failed (%s): %s", request.tool, exc.code, exc.message)
            return None, exc
        except Exception as exc:  # a bug or a storage failure: report it, keep serving
            storage = storage_failure(exc)
            if storage is not None:
                log.warning("%s could not write: %s", request.tool, exc)
                return None, ToolError("storage_error", storage)
            log.exception("%s raised", request.tool)
            logs = self.runtime.log_path if identity is None else "the daemon's log"
            return None, ToolError(
                "internal", f"{request.tool} failed inside the daemon: "
                f"{type(exc).__name__}: {exc}. The daemon is still running; details are in "
                f"{logs}")
        finally:
            if ctx is not None:
                ctx.close()
            elapsed_ms = (time.monotonic() - started) * 1000
            if elapsed_ms > self.settings.latency_warn_ms:
                log.warning("%s took %.0f ms", request.tool, elapsed_ms)
            self.runtime.end()

    # -- remote callers (TLS) ------------------------------------------------------------

    def _authorize(self, identity: str, request, arguments: dict,
                   resolved: str | None = None) -> None:
        """A TLS caller may use only the workspaces its allow-list entry names, and only
        their own databases. Checked on the path as sent (before the daemon looks at the
        folder, so a refused caller learns nothing about it) and again once resolved."""
        def refuse(message: str) -> ToolError:
            log.warning("refused tls client %r: %s %s", identity, request.tool, message)
            return ToolError("permission_denied", message)

        policy = self.policy
        if policy is None or not identity:
            raise refuse("this TLS client has no identity (its certificate has no common "
                         "name) and may use no workspace")
        if request.db_path:
            raise refuse(f"tls client {identity!r} may not choose the database file "
                         f"({request.db_path!r}): a remote client uses each workspace's own "
                         "database; unset MEMORY_DB_PATH")
        # as sent, then (once resolved) as sent and where it led
        if not policy.allows(identity, request.workspace, resolved):
            raise refuse(policy.refusal(identity, request.workspace))
        if request.tool == "memory_set_workspace":
            if arguments.get("db_path"):
                raise refuse(f"tls client {identity!r} may not choose the database file: "
                             "memory_set_workspace takes no db_path over TLS")
            given = str(arguments.get("workspace", "")).strip()
            target = os.path.expanduser(given)
            # the tool joins it to the resolved workspace; the lexical check uses the path sent
            real = None if resolved is None else os.path.realpath(os.path.join(resolved, target))
            if not policy.allows(identity, os.path.join(request.workspace, target), real):
                # "~" would show the daemon user's home: such a path is named as given
                shown = given if given.startswith("~") else \
                    os.path.normpath(os.path.join(request.workspace, target))
                raise refuse(policy.refusal(identity, shown))

    def _confinement(self, identity: str | None) -> Confinement | None:
        """What a TLS caller's tools may reach: its allowed folders. None: the local user."""
        if identity is None:
            return None
        policy = self.policy

        def path_allowed(path: str, real: str | None) -> bool:
            return policy is not None and policy.allows(identity, path, real)

        def workspace_allowed(workspace: str) -> bool:
            return policy is not None and policy.allows_real(identity, workspace)

        def folders() -> list[str]:
            return [] if policy is None else policy.allowed_folders(identity)

        return Confinement(identity, path_allowed, workspace_allowed, folders,
                           personal=policy is not None and policy.allows_personal(identity))

    def _facts_for(self, identity: str | None):
        """The runtime facts a caller may see: a TLS caller sees only its own workspaces."""
        if identity is None:
            return self.runtime.facts
        policy = self.policy

        def facts() -> dict:
            out = self.runtime.facts()
            out["open_workspaces"] = [w for w in out["open_workspaces"] if policy is not None
                                      and policy.allows_real(identity, w)]
            return out
        return facts

    # -- daemon --------------------------------------------------------------------------

    def Status(self, request, context):
        identity = tls_identity(context)
        facts = self.runtime.facts()
        now = time.monotonic()
        workspaces = []
        stores = {s.db_path: s for s in self.runtime.stores.stores()}
        personal = os.path.realpath(self.settings.user_dir) if self.settings.user_dir else ""
        for workspace, db_path in sorted(self.runtime.stores.workspaces.items()):
            store = stores.get(db_path)
            if store is None or workspace == personal:  # the personal tier: no workspace
                continue
            if identity is not None and (self.policy is None or
                                         not self.policy.allows_real(identity, workspace)):
                continue  # a TLS caller sees only the workspaces it may use
            if identity is not None and db_path != ":memory:" and \
                    not self.policy.allows_real(identity, db_path):
                db_path = ""  # the local user's MEMORY_DB_PATH, outside this client's folders
            workspaces.append(pb.WorkspaceStatus(
                workspace=workspace, db_path=db_path,
                memories=sum(1 for m in list(store.catalog.values()) if m.workspace == workspace),
                idle_seconds=now - store.last_used))
        return pb.StatusResponse(
            version=facts["version"], protocol_version=facts["protocol_version"],
            pid=facts["pid"], uptime_seconds=facts["uptime_seconds"],
            rss_bytes=facts["rss_bytes"], embedding_model=facts["embedding_model"],
            embedding_dim=self.runtime.embedder.dim,
            model_load_seconds=facts["model_load_seconds"], workspaces=workspaces,
            socket_path=self.runtime.socket_path if identity is None else "",
            log_path=self.runtime.log_path if identity is None else "",
            calls_served=self.runtime.calls_served, calls_in_flight=self.runtime.in_flight,
            resolved=self._resolution(request.workspace) if request.workspace
            and identity is None else None)

    def _resolution(self, folder: str) -> pb.WorkspaceResolution:
        """Which memory calls from `folder` use, and why (memnest-ctl status): resolved as a
        call's workspace is, without opening its database."""
        try:
            where = resolve(folder, self.settings.worktrees, self.settings.user_dir)
        except ToolError as exc:
            return pb.WorkspaceResolution(workspace=folder, why=exc.message, refused=True)
        return pb.WorkspaceResolution(workspace=where.workspace, checkout=where.checkout,
                                      why=where.why, worktree=where.worktree)

    def Shutdown(self, request, context):
        identity = tls_identity(context)
        if identity is not None:
            log.warning("refused a shutdown%s request from tls client %r", " (upgrade)"
                        if request.upgrade else "", identity)
            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          f"tls client {identity!r} may not stop or upgrade memnestd: only the "
                          "local user, on the daemon's Unix socket, may (`memnest-ctl stop` "
                          "on the daemon's machine)")
        log.info("shutdown requested%s: %s", " for an upgrade" if request.upgrade else "",
                 request.reason or "no reason given")
        # Only flags the stop: the main thread drains (this call included) and exits.
        restarting = bool(self._on_shutdown(upgrade=request.upgrade))
        return pb.ShutdownResponse(accepted=True, restarting=restarting)


def storage_failure(exc: Exception) -> str | None:
    """A sentence for the caller when `exc` is a full or read-only disk (the storage layer's
    DiskFailure, or an OSError saying so), else None. The write was one transaction, so
    nothing of it was stored and the database stays usable."""
    if isinstance(exc, DiskFailure):
        needle: str | None = exc.strerror
    elif isinstance(exc, OSError):
        needle = disk_trouble(str(exc))
    else:
        return None
    if needle is None:
        return None
    return (f"nothing was written: {DISK_REASONS[needle]} ({needle}); free space or make the "
            "database folder writable and retry; what was stored before is intact")
