"""The gRPC service: turns wire requests into tool calls and tool outcomes into replies.

Every failure becomes a structured ToolError; nothing a caller sends can raise out of here.
"""
import json
import logging
import os
import queue
import threading
import time

import psutil
from memnest_proto import memnest_pb2 as pb
from memnest_proto import memnest_pb2_grpc as pb_grpc
from memnest_proto.version import PROTOCOL_VERSION, VERSION

from ..core.errors import ToolError
from ..core.records import Origin
from ..store.registry import check_workspace
from ..tools import TOOLS, ToolContext
from ..tools.registry import parse_arguments, unknown_tool_message

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
    def __init__(self, runtime: Runtime, settings, on_shutdown):
        self.runtime = runtime
        self.settings = settings
        self._on_shutdown = on_shutdown
        self._model_notes_logged: set[tuple[str, str]] = set()

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
        return self._call(request, lambda done, total, message: None, context.is_active)

    def CallToolStream(self, request, context):
        events: queue.Queue = queue.Queue()

        def progress(done: float, total: float, message: str) -> None:
            events.put(pb.CallToolEvent(progress=pb.Progress(
                progress=done, total=total, message=message)))

        def work():
            events.put(pb.CallToolEvent(result=self._call(request, progress,
                                                           context.is_active)))

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

    def _call(self, request, progress, still_wanted) -> pb.CallToolResponse:
        started = time.monotonic()
        self.runtime.begin()
        ctx = None
        try:
            tool = TOOLS.get(request.tool)
            if tool is None:
                raise ToolError("unknown_tool", unknown_tool_message(request.tool))
            arguments = parse_arguments(request.arguments_json)
            tool.validate(arguments)
            ctx = ToolContext(workspace=check_workspace(request.workspace),
                              db_path=request.db_path, stores=self.runtime.stores,
                              embedder=self.runtime.embedder, settings=self.settings,
                              runtime=self.runtime.facts, progress=progress,
                              still_wanted=still_wanted,
                              origin=Origin.claimed(request.origin.via, request.origin.client,
                                                    request.origin.session))
            result = tool.handler(ctx, arguments)
            note = self._model_note(request)
            if note and isinstance(result, dict):
                result = {**result, "model_note": note}
            return pb.CallToolResponse(result_json=json.dumps(result, ensure_ascii=False,
                                                              default=str))
        except ToolError as exc:
            log.info("%s failed (%s): %s", request.tool, exc.code, exc.message)
            return pb.CallToolResponse(error=pb.ToolError(code=exc.code, message=exc.message))
        except Exception as exc:  # a bug or a storage failure: report it, keep serving
            storage = storage_failure(exc)
            if storage is not None:
                log.warning("%s could not write: %s", request.tool, exc)
                return pb.CallToolResponse(error=pb.ToolError(code="storage_error",
                                                              message=storage))
            log.exception("%s raised", request.tool)
            return pb.CallToolResponse(error=pb.ToolError(
                code="internal", message=f"{request.tool} failed inside the daemon: "
                f"{type(exc).__name__}: {exc}. The daemon is still running; details are in "
                f"{self.runtime.log_path}"))
        finally:
            if ctx is not None:
                ctx.close()
            elapsed_ms = (time.monotonic() - started) * 1000
            if elapsed_ms > self.settings.latency_warn_ms:
                log.warning("%s took %.0f ms", request.tool, elapsed_ms)
            self.runtime.end()

    # -- daemon --------------------------------------------------------------------------

    def Status(self, request, context):
        facts = self.runtime.facts()
        now = time.monotonic()
        workspaces = []
        stores = {s.db_path: s for s in self.runtime.stores.stores()}
        for workspace, db_path in sorted(self.runtime.stores.workspaces.items()):
            store = stores.get(db_path)
            if store is None:
                continue
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
            socket_path=self.runtime.socket_path, log_path=self.runtime.log_path,
            calls_served=self.runtime.calls_served, calls_in_flight=self.runtime.in_flight)

    def Shutdown(self, request, context):
        log.info("shutdown requested%s: %s", " for an upgrade" if request.upgrade else "",
                 request.reason or "no reason given")
        # Only flags the stop: the main thread drains (this call included) and exits.
        restarting = bool(self._on_shutdown(upgrade=request.upgrade))
        return pb.ShutdownResponse(accepted=True, restarting=restarting)


# What the storage layer says when the disk, not the call, is at fault (LadybugDB raises a
# RuntimeError "IO exception: ... Error: <strerror>"; Python raises OSError).
_STORAGE_REASONS = {"No space left on device": "the disk is full",
                    "Disk quota exceeded": "the disk quota is exhausted",
                    "Read-only file system": "the file system is read-only",
                    "Permission denied": "the database folder is not writable"}


def storage_failure(exc: Exception) -> str | None:
    """A sentence for the caller when `exc` is a full or read-only disk, else None. The write
    was one transaction, so nothing of it was stored and the database stays usable."""
    text = str(exc)
    if not isinstance(exc, (OSError, RuntimeError)):
        return None
    if isinstance(exc, RuntimeError) and "IO exception" not in text:
        return None
    for needle, reason in _STORAGE_REASONS.items():
        if needle in text:
            return (f"nothing was written: {reason} ({needle}); free space or make the "
                    "database folder writable and retry; what was stored before is intact")
    return None
