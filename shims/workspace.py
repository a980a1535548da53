"""Which workspace a client works in: MEMORY_WORKSPACE, else the MCP client's first root,
else the current directory."""
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


def from_cwd() -> str:
    return str(Path.cwd().resolve())


def db_path_override() -> str:
    return os.environ.get("MEMORY_DB_PATH", "").strip()
