"""Which workspace a client works in: MEMORY_WORKSPACE, else (for memnest-mcp, asked by the
daemon's session) the MCP client's first root, else the project around the current directory:
the nearest folder up from it that holds a `.memnest/` or is a repository's root (as git finds
its repository), else the current directory itself. Run from `src/` of a project, memory is
still the project's.

With a remote daemon (MEMNEST_REMOTE) a workspace is a folder on the daemon's machine: it is
passed on as given (the daemon checks it), never resolved or looked for here, and the
editor's roots and the current directory, which are folders of this machine, are not used."""
import os
from pathlib import Path

from memnest_proto.contract import REMOTE_NEEDS_WORKSPACE


def remote() -> str:
    """HOST:PORT of a remote daemon (MEMNEST_REMOTE), or "" for the local one."""
    return os.environ.get("MEMNEST_REMOTE", "").strip()


def for_remote(explicit: str | None = None) -> str:
    """The workspace on a remote daemon's machine, as given; ValueError when none is."""
    value = (explicit or "").strip() or os.environ.get("MEMORY_WORKSPACE", "").strip()
    if not value:
        raise ValueError(REMOTE_NEEDS_WORKSPACE)
    return value


def from_env() -> str | None:
    value = os.environ.get("MEMORY_WORKSPACE", "").strip()
    if value and remote():
        return value
    return str(Path(value).expanduser().resolve()) if value else None


PROJECT_MARKERS = (".memnest", ".git", ".hg", ".svn")


def from_cwd() -> str:
    return str(enclosing_project(Path.cwd()))


def enclosing_project(start: Path) -> Path:
    """The nearest folder from `start` up that has memnest's folder or a repository's; `start`
    when none has."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return start


def db_path_override() -> str:
    return os.environ.get("MEMORY_DB_PATH", "").strip()
