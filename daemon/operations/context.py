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


class Reach(Protocol):
    """The workspaces a remote caller may see (tools' Confinement is one); a local caller
    has none."""

    def hides_any(self, workspaces: Iterable[str]) -> bool:
        """Some of these workspaces are not this caller's to see."""
