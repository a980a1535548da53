"""Tool definitions: name, description, JSON schema, MCP annotations and handler, in one place.

The shim builds its MCP tools from these definitions (fetched over gRPC), so adding a tool
here is all it takes to offer it in every editor.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

import jsonschema

from ..core.config import RETIRED_FUSION, Settings
from ..core.errors import ToolError, invalid
from ..core.records import Origin
from ..core.strict_schema import StrictValidator
from ..core.types import Tier
from ..curation import admission
from ..operations import following
from ..operations.carry_over import carry_over
from ..operations.worktree_merge import merge_worktree
from ..store import relocation
from ..store.registry import StoreRegistry, database_path, has_memory
from ..store.resolution import Resolved, personal_folder, resolve
from ..store.store import MemoryStore
from ..team import published
from ..team import sync as team

if TYPE_CHECKING:  # the model's imports are heavy; the daemon loads them once, in main
    from ..model.embedder import Embedder


@dataclass(frozen=True)
class Confinement:
    """A remote caller (a TLS client) and the folders its identity may use, which bound every
    path a tool takes from it and every workspace a tool shows it. A ToolContext without one
    serves the local user on the Unix socket."""
    identity: str
    # (absolute path as written, where it was found to lead or None to resolve it now)
    path_allowed: Callable[[str, str | None], bool]
    workspace_allowed: Callable[[str], bool]  # a workspace as recorded (its real path)
    folders: Callable[[], list[str]]
    personal: bool = False  # its allow-list entry grants the user's personal tier

    def allows(self, path: str, real: str | None = None) -> bool:
        return self.path_allowed(path, real)

    def allows_workspace(self, workspace: str) -> bool:
        return self.workspace_allowed(workspace)

    def hides_any(self, workspaces) -> bool:
        """Some of these workspaces are not this caller's to see."""
        return any(not self.workspace_allowed(w) for w in workspaces)

    def where(self) -> str:
        """Which files this caller may name, for a refusal."""
        folders = ", ".join(self.folders()) or "none"
        return f"tls client {self.identity!r} may use only its allowed folders ({folders})"


@dataclass
class ToolContext:
    workspace: str
    db_path: str
    stores: StoreRegistry
    embedder: Embedder
    settings: Settings
    runtime: Callable[[], dict]  # the daemon's runtime facts, for memory_stats
    progress: Callable[[float, float, str], None] = lambda done, total, message: None
    still_wanted: Callable[[], bool] = lambda: True  # False once the caller has gone
    origin: Origin = Origin()  # who asks: the provenance of what this call stores
    confinement: Confinement | None = None  # a remote caller's reach; None: the local user
    # how the workspace was found (a worktree's repository); None: the workspace as given
    resolution: Resolved | None = None
    tier: Tier = "workspace"  # "user": the personal tier's own context (personal())
    looking_in: bool = False  # another workspace a search reads (elsewhere()): only read
    reading: bool = False  # a read-only tool: a workspace with no memory is not created
    found_nothing: bool = False  # set when it was read so: no database, nothing created
    published: list[str] = field(default_factory=list)  # private files git would publish
    restored_ignore: bool = False  # memnest put its rules back in .memnest/.gitignore now
    _store: MemoryStore | None = None
    _personal: ToolContext | None = None
    _others: list[ToolContext] = field(default_factory=list)  # elsewhere()'s, closed with it

    @property
    def checkout(self) -> str:
        """Where the call runs: the worktree whose files anchors are checked against."""
        return self.resolution.checkout if self.resolution is not None else self.workspace

    @property
    def store(self) -> MemoryStore:
        """The workspace's database, opened on first use; released by close()."""
        if self._store is None:
            if (self.reading or self.looking_in) and self.tier != "user" and \
                    not self.has_memory():
                self.found_nothing = True
                self._store = self.stores.acquire_empty()
                return self._store
            self._store = self.stores.acquire(self.workspace, self.db_path)
            if self.tier == "user" or self.looking_in:  # read as it is: no team, no
                return self._store  # followed files, no takeover
            if not self.db_path:  # the workspace's own database
                self.stores.known.saw(self.workspace)
                moved_check(self)
            team_check(self)  # what it brought in waits for memory_sync (sync.unreported)
            if self._store.team is not None:
                self.published = published.exposed(self.workspace)
                self.restored_ignore = published.take_restored(self.workspace)
            if self.origin.via != "hook":  # a hook's budget is too short for an import
                follow_check(self)
        return self._store

    def has_memory(self) -> bool:
        """Something to read: the workspace's memory, or a worktree's own earlier database
        that the first call merges into it (moved_check)."""
        where = self.resolution
        return has_memory(self.workspace, self.db_path) or (
            not self.db_path and where is not None and where.moved
            and os.path.exists(database_path(where.checkout, "")))

    def no_memory_note(self) -> str:
        where = database_path(self.workspace, self.db_path) if self.db_path else \
            os.path.join(self.workspace, ".memnest")
        return (f"{self.workspace} has no memory yet ({where} does not exist); reading "
                "created nothing. The first memory_store there creates it.")

    def personal(self) -> ToolContext | None:
        """The user's personal tier as a context of its own, or None when this caller may
        not reach it (a remote client whose certificate is not granted it)."""
        if self.tier == "user":
            return self
        if self.confinement is not None and not self.confinement.personal:
            return None
        if self._personal is None:
            folder = personal_folder(self.settings.user_dir)
            self._personal = replace(self, workspace=folder, db_path="", resolution=None,
                                     tier="user", found_nothing=False, _store=None,
                                     _personal=None, _others=[])
        return self._personal

    def check_still_wanted(self) -> None:
        """Before a write: a caller that hung up or passed its deadline will never learn
        what was stored, so nothing is."""
        if not self.still_wanted():
            raise ToolError("cancelled", "the caller hung up or its deadline passed before "
                                         "this write was committed; nothing was written")

    def elsewhere(self, workspace: str) -> ToolContext:
        """A context of another of the user's workspaces, checked as a call's is (and, for
        a remote caller, against its allowed folders); closed with this one."""
        if self.confinement is not None and not self.confinement.allows(workspace):
            raise ToolError("permission_denied", f"tls client {self.confinement.identity!r} "
                            f"may not search workspace {workspace!r}: "
                            f"{self.confinement.where()}")
        where = resolve(workspace, self.settings.worktrees, self.settings.user_dir)
        if self.confinement is not None and \
                not self.confinement.allows_workspace(where.workspace):
            raise ToolError("permission_denied", f"tls client {self.confinement.identity!r} "
                            f"may not search the memory of {where.workspace}")
        other = replace(self, workspace=where.workspace, db_path="", resolution=where,
                        tier="workspace", looking_in=True, found_nothing=False,
                        _store=None, _personal=None, _others=[])
        self._others.append(other)
        return other

    def known_workspaces(self) -> list[str]:
        """The user's workspaces; a remote caller is told only of those it may use."""
        known = self.stores.known.all()
        if self.confinement is None:
            return known
        return [w for w in known if self.confinement.allows_workspace(w)]

    def close(self) -> None:
        for other in self._others:
            other.close()
        self._others.clear()
        if self._store is not None:
            self.stores.release(self._store)
            self._store = None
        if self._personal is not None and self._personal is not self:
            self._personal.close()


def team_check(ctx: ToolContext) -> team.Report | None:
    """Teammates' shared memories (a pull, a checkout): brought in on the first use of the
    store in a call, when the shared folder's fingerprint changed (a few stat calls
    otherwise); not for a store opened without team memory (StoreRegistry's open_team).
    A failure is logged, never the call's failure."""
    store = ctx._store
    if store is None or store.team is None:
        return None
    try:
        return team.check(store, ctx.workspace, ctx.embedder.embed, ctx.settings)
    except Exception:  # noqa: BLE001 - the call goes on with what the store holds
        logging.getLogger(__name__).exception("syncing %s/.memnest/shared failed",
                                              ctx.workspace)
        return None


def moved_check(ctx: ToolContext) -> None:
    """A workspace moved or copied here takes over its memory (store/relocation.py); a
    worktree's own earlier database is merged into its repository's, once
    (operations/worktree_merge.py). Never the call's failure."""
    store = ctx._store
    assert store is not None
    try:
        left = relocation.take_over_moved(store, ctx.workspace)
        if left:
            carry_over(store, left, ctx.workspace)
        where = ctx.resolution
        if where is None or not where.moved or ctx.origin.via == "hook":
            return
        key = f"worktree:{where.checkout}"
        own = database_path(where.checkout, "")
        if key in store.settled or not os.path.exists(own):
            return
        store.settled.add(key)
        source = ctx.stores.acquire(where.checkout, "")
        try:
            merge_worktree(ctx, source, where.checkout)
        finally:
            ctx.stores.release(source)
    except Exception:  # noqa: BLE001 - the call goes on with what the store holds
        logging.getLogger(__name__).exception("taking over the memory of %s failed",
                                              ctx.workspace)


def follow_check(ctx: ToolContext) -> None:
    """The sources this workspace follows, imported again when their files changed (a few
    stat calls otherwise, at most every following.FOLLOW_CHECK_S). Never the call's
    failure."""
    try:
        following.keep_in_step(ctx)
    except Exception:  # noqa: BLE001 - the call goes on with what the store holds
        logging.getLogger(__name__).exception("following sources of %s failed",
                                              ctx.workspace)


@dataclass
class Tool:
    name: str
    description: str
    schema: dict
    handler: Callable[[ToolContext, dict], dict]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    long_running: bool = False
    validator: jsonschema.protocols.Validator = field(init=False, repr=False)

    def __post_init__(self):
        StrictValidator.check_schema(self.schema)
        self.validator = StrictValidator(self.schema)

    def validate(self, arguments: dict) -> None:
        errors = sorted(self.validator.iter_errors(arguments), key=lambda e: list(e.path))
        if errors:
            raise invalid("; ".join(_describe(e) for e in errors[:3]))


# Tools of the reference server that memnest does not offer, and what does the job instead.
RETIRED_TOOLS = {
    "memory_traverse": "memory_traverse (deprecated in the reference server) is not offered: "
                       "memory_get shows a memory's links, and memory_query with "
                       "read_only=true walks them, e.g. MATCH (a:Memory {id: 7})-[*1..2]-"
                       "(b:Memory) RETURN DISTINCT b.id, b.content",
}


def unknown_tool_message(name: str) -> str:
    retired = RETIRED_TOOLS.get(name)
    known = "known tools: " + ", ".join(sorted(TOOLS))
    return f"{retired}; {known}" if retired else f"no tool named {name!r}; {known}"


def _describe(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "arguments"
    value, limit = error.instance, error.validator_value
    if error.validator == "enum" and where == "fusion" and isinstance(value, str) \
            and value in RETIRED_FUSION:
        return f"fusion: {RETIRED_FUSION[value]}"
    if error.validator == "maxLength":
        return f"{where}: {len(value)} characters, over the limit of {limit}"
    if error.validator == "maxItems":
        return f"{where}: {len(value)} entries, over the limit of {limit}"
    message = error.message
    shown = repr(value)
    if len(shown) > 60 and message.startswith(shown):  # jsonschema quotes the whole value
        message = shown[:40] + "…" + message[len(shown):]
    return f"{where}: {message}"


def _check_text(value, where: str = "arguments", depth: int = 0) -> None:
    """Every string of the arguments must be storable text (curation/admission.py): JSON
    allows a NUL and an unpaired surrogate, UTF-8 and the database do not."""
    if depth > 32:
        raise invalid(f"{where}: nested too deeply")
    if isinstance(value, str):
        try:
            admission.check_storable(value, where)
        except admission.Refused as exc:
            raise invalid(str(exc)) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key, where, depth + 1)
            _check_text(item, f"{where}.{key}" if where != "arguments" else key, depth + 1)
    elif isinstance(value, list):
        for n, item in enumerate(value):
            _check_text(item, f"{where}.{n}", depth + 1)


TOOLS: dict[str, Tool] = {}


def tool(name: str, description: str, schema: dict, **flags):
    def register(handler):
        TOOLS[name] = Tool(name, description, schema, handler, **flags)
        return handler
    return register


def parse_arguments(raw: str) -> dict:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise invalid(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise invalid("arguments must be a JSON object")
    _check_text(value)
    return value
