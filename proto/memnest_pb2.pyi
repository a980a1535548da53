from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListToolsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ToolAnnotations(_message.Message):
    __slots__ = ("title", "read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_HINT_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_HINT_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENT_HINT_FIELD_NUMBER: _ClassVar[int]
    OPEN_WORLD_HINT_FIELD_NUMBER: _ClassVar[int]
    title: str
    read_only_hint: bool
    destructive_hint: bool
    idempotent_hint: bool
    open_world_hint: bool
    def __init__(self, title: _Optional[str] = ..., read_only_hint: _Optional[bool] = ..., destructive_hint: _Optional[bool] = ..., idempotent_hint: _Optional[bool] = ..., open_world_hint: _Optional[bool] = ...) -> None: ...

class ToolDefinition(_message.Message):
    __slots__ = ("name", "description", "input_schema_json", "annotations", "long_running")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    LONG_RUNNING_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    input_schema_json: str
    annotations: ToolAnnotations
    long_running: bool
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema_json: _Optional[str] = ..., annotations: _Optional[_Union[ToolAnnotations, _Mapping]] = ..., long_running: _Optional[bool] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ("tools",)
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ToolDefinition]
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolDefinition, _Mapping]]] = ...) -> None: ...

class CallToolRequest(_message.Message):
    __slots__ = ("tool", "workspace", "arguments_json", "db_path", "client", "origin", "model")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    DB_PATH_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    tool: str
    workspace: str
    arguments_json: str
    db_path: str
    client: str
    origin: Origin
    model: str
    def __init__(self, tool: _Optional[str] = ..., workspace: _Optional[str] = ..., arguments_json: _Optional[str] = ..., db_path: _Optional[str] = ..., client: _Optional[str] = ..., origin: _Optional[_Union[Origin, _Mapping]] = ..., model: _Optional[str] = ...) -> None: ...

class Origin(_message.Message):
    __slots__ = ("via", "client", "session")
    VIA_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    via: str
    client: str
    session: str
    def __init__(self, via: _Optional[str] = ..., client: _Optional[str] = ..., session: _Optional[str] = ...) -> None: ...

class ToolError(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class CallToolResponse(_message.Message):
    __slots__ = ("result_json", "error")
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    result_json: str
    error: ToolError
    def __init__(self, result_json: _Optional[str] = ..., error: _Optional[_Union[ToolError, _Mapping]] = ...) -> None: ...

class Progress(_message.Message):
    __slots__ = ("progress", "total", "message")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    progress: float
    total: float
    message: str
    def __init__(self, progress: _Optional[float] = ..., total: _Optional[float] = ..., message: _Optional[str] = ...) -> None: ...

class CallToolEvent(_message.Message):
    __slots__ = ("progress", "result")
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    progress: Progress
    result: CallToolResponse
    def __init__(self, progress: _Optional[_Union[Progress, _Mapping]] = ..., result: _Optional[_Union[CallToolResponse, _Mapping]] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ("workspace",)
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    workspace: str
    def __init__(self, workspace: _Optional[str] = ...) -> None: ...

class WorkspaceResolution(_message.Message):
    __slots__ = ("workspace", "checkout", "why", "worktree", "refused")
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    CHECKOUT_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    WORKTREE_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    workspace: str
    checkout: str
    why: str
    worktree: str
    refused: bool
    def __init__(self, workspace: _Optional[str] = ..., checkout: _Optional[str] = ..., why: _Optional[str] = ..., worktree: _Optional[str] = ..., refused: _Optional[bool] = ...) -> None: ...

class WorkspaceStatus(_message.Message):
    __slots__ = ("workspace", "db_path", "memories", "idle_seconds")
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    DB_PATH_FIELD_NUMBER: _ClassVar[int]
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    IDLE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    workspace: str
    db_path: str
    memories: int
    idle_seconds: float
    def __init__(self, workspace: _Optional[str] = ..., db_path: _Optional[str] = ..., memories: _Optional[int] = ..., idle_seconds: _Optional[float] = ...) -> None: ...

class StatusResponse(_message.Message):
    __slots__ = ("version", "protocol_version", "pid", "uptime_seconds", "rss_bytes", "embedding_model", "embedding_dim", "model_load_seconds", "workspaces", "socket_path", "log_path", "calls_served", "calls_in_flight", "resolved")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    UPTIME_SECONDS_FIELD_NUMBER: _ClassVar[int]
    RSS_BYTES_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_DIM_FIELD_NUMBER: _ClassVar[int]
    MODEL_LOAD_SECONDS_FIELD_NUMBER: _ClassVar[int]
    WORKSPACES_FIELD_NUMBER: _ClassVar[int]
    SOCKET_PATH_FIELD_NUMBER: _ClassVar[int]
    LOG_PATH_FIELD_NUMBER: _ClassVar[int]
    CALLS_SERVED_FIELD_NUMBER: _ClassVar[int]
    CALLS_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_FIELD_NUMBER: _ClassVar[int]
    version: str
    protocol_version: int
    pid: int
    uptime_seconds: float
    rss_bytes: int
    embedding_model: str
    embedding_dim: int
    model_load_seconds: float
    workspaces: _containers.RepeatedCompositeFieldContainer[WorkspaceStatus]
    socket_path: str
    log_path: str
    calls_served: int
    calls_in_flight: int
    resolved: WorkspaceResolution
    def __init__(self, version: _Optional[str] = ..., protocol_version: _Optional[int] = ..., pid: _Optional[int] = ..., uptime_seconds: _Optional[float] = ..., rss_bytes: _Optional[int] = ..., embedding_model: _Optional[str] = ..., embedding_dim: _Optional[int] = ..., model_load_seconds: _Optional[float] = ..., workspaces: _Optional[_Iterable[_Union[WorkspaceStatus, _Mapping]]] = ..., socket_path: _Optional[str] = ..., log_path: _Optional[str] = ..., calls_served: _Optional[int] = ..., calls_in_flight: _Optional[int] = ..., resolved: _Optional[_Union[WorkspaceResolution, _Mapping]] = ...) -> None: ...

class ShutdownRequest(_message.Message):
    __slots__ = ("reason", "upgrade")
    REASON_FIELD_NUMBER: _ClassVar[int]
    UPGRADE_FIELD_NUMBER: _ClassVar[int]
    reason: str
    upgrade: bool
    def __init__(self, reason: _Optional[str] = ..., upgrade: _Optional[bool] = ...) -> None: ...

class ShutdownResponse(_message.Message):
    __slots__ = ("accepted", "restarting")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    RESTARTING_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    restarting: bool
    def __init__(self, accepted: _Optional[bool] = ..., restarting: _Optional[bool] = ...) -> None: ...

class SessionStart(_message.Message):
    __slots__ = ("workspace", "db_path", "fallback_workspace", "use_roots", "response_format", "client", "session_id", "model", "previous_version")
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    DB_PATH_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    USE_ROOTS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_VERSION_FIELD_NUMBER: _ClassVar[int]
    workspace: str
    db_path: str
    fallback_workspace: str
    use_roots: bool
    response_format: str
    client: str
    session_id: str
    model: str
    previous_version: str
    def __init__(self, workspace: _Optional[str] = ..., db_path: _Optional[str] = ..., fallback_workspace: _Optional[str] = ..., use_roots: _Optional[bool] = ..., response_format: _Optional[str] = ..., client: _Optional[str] = ..., session_id: _Optional[str] = ..., model: _Optional[str] = ..., previous_version: _Optional[str] = ...) -> None: ...

class SessionState(_message.Message):
    __slots__ = ("workspace", "db_path")
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    DB_PATH_FIELD_NUMBER: _ClassVar[int]
    workspace: str
    db_path: str
    def __init__(self, workspace: _Optional[str] = ..., db_path: _Optional[str] = ...) -> None: ...

class SessionClosing(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class SessionFrame(_message.Message):
    __slots__ = ("start", "message", "state", "closing")
    START_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CLOSING_FIELD_NUMBER: _ClassVar[int]
    start: SessionStart
    message: bytes
    state: SessionState
    closing: SessionClosing
    def __init__(self, start: _Optional[_Union[SessionStart, _Mapping]] = ..., message: _Optional[bytes] = ..., state: _Optional[_Union[SessionState, _Mapping]] = ..., closing: _Optional[_Union[SessionClosing, _Mapping]] = ...) -> None: ...
