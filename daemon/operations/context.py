"""What an operation is given about the call it serves: the workspace and its store, the
settings, the model, who asks, and the ways to report progress or learn the caller left.
The tools' ToolContext is one; tests build their own."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Protocol

from ..core.config import Settings
from ..core.records import Origin
from ..store.store import MemoryStore

if TYPE_CHECKING:  # the model's imports are heavy; the daemon loads them once, in main
    from ..model.embedder import Embedder


class CallContext(Protocol):
    workspace: str
    settings: Settings
    origin: Origin

    @property
    def store(self) -> MemoryStore: ...

    @property
    def embedder(self) -> Embedder: ...

    def progress(self, done: float, total: float, message: str) -> None:
        """Tell a streaming caller how far a long operation has come."""

    def check_still_wanted(self) -> None:
        """Raise before a write when the caller will never learn its result."""

    @property
    def checkout(self) -> str:
        """Where the call runs (a worktree of the workspace's repository, or the workspace):
        the files code anchors are checked against, the HEAD a memory is written on."""

    def personal(self) -> CallContext | None:
        """The user's personal tier as a context of its own (itself when it is one); None
        when this caller may not reach it."""

    def elsewhere(self, workspace: str) -> CallContext:
        """A context of another of the user's workspaces (resolved and checked as a call's
        workspace is); a ToolError when it is not one or this caller may not use it."""

    def known_workspaces(self) -> list[str]:
        """The user's workspaces the daemon has served, most recently used first."""


def worktree_of(ctx: CallContext) -> str:
    """The worktree a memory written by this call records: its checkout when that is not
    the workspace itself."""
    return ctx.checkout if ctx.checkout != ctx.workspace else ""


class Reach(Protocol):
    """The workspaces a remote caller may see (tools' Confinement is one); a local caller
    has none."""

    def hides_any(self, workspaces: Iterable[str]) -> bool:
        """Some of these workspaces are not this caller's to see."""
