"""Which workspace a client works in: MEMORY_WORKSPACE, else the MCP client's first root,
else the project around the current directory: the nearest folder up from it that holds a
`.memnest/` or is a repository's root (as git finds its repository), else the current
directory itself. Run from `src/` of a project, memory is still the project's."""
import os
from pathlib import Path
from urllib.parse import unquote, urlparse


def from_env() -> str | None:
    value = os.environ.get("MEMORY_WORKSPACE", "").strip()
    return str(Path(value).expanduser().resolve()) if value else None


def from_root_uri(uri: str) -> str | None:
    parsed = urlparse(str(uri))
    if parsed.scheme != "file":
        return None
    path = Path(unquote(parsed.path))
    return str(path.resolve()) if path.is_dir() else None


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
