"""The workbench's one way to the daemon: tool calls on a workspace, and the daemon's status.

Which workspaces a page may name is decided here: the one the workbench was started for and
those the daemon has open (a URL naming any other folder would create a database there).
"""
from dataclasses import dataclass
from typing import Final

from ..client import DaemonClient
from ..errors import DaemonUnavailable, ToolFailure
from ..tool_json import ToolArguments, ToolResult

CLIENT_NAME: Final = "memnest-workbench"
# Edits made in the browser are the person's own, as with memnest-ctl.
ORIGIN: Final = {"via": "cli", "client": CLIENT_NAME}


class UnknownWorkspace(Exception):
    """A page named a workspace the daemon does not have open."""


@dataclass(frozen=True)
class OpenWorkspace:
    path: str
    db_path: str
    memories: int
    idle_seconds: float


class DaemonLink:
    def __init__(self, client: DaemonClient, home: str, db_path: str = ""):
        self.client, self.home, self.db_path = client, home, db_path
        self._seen = {home}

    def workspace(self, asked: str | None) -> str:
        """The workspace a request names (the home one when it names none)."""
        if not asked or asked == self.home:
            return self.home
        if asked not in self._seen:
            if asked not in {w.path for w in self.open_workspaces()}:
                raise UnknownWorkspace(asked)
            self._seen.add(asked)
        return asked

    def call(self, tool: str, arguments: ToolArguments, workspace: str) -> ToolResult:
        result: ToolResult = self.client.call_tool(
            tool, arguments, workspace, self.db_path if workspace == self.home else "",
            origin=ORIGIN)
        return result

    def open_workspaces(self) -> list[OpenWorkspace]:
        status = self.client.status()
        return [OpenWorkspace(w.workspace, w.db_path, w.memories, w.idle_seconds)
                for w in status.workspaces]


__all__ = ["DaemonLink", "DaemonUnavailable", "OpenWorkspace", "ToolFailure",
           "UnknownWorkspace"]
