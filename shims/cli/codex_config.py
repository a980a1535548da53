"""Codex's MCP entry: `[mcp_servers.memnest]` in the user's ~/.codex/config.toml.

Python reads TOML (tomllib) but does not write it, and the file is the user's, comments and
all: so the text is edited, not re-serialised. memnest's two tables (`[mcp_servers.memnest]`
and `[mcp_servers.memnest.env]`) are taken out where they are and written again at the end;
every other line stays as it was, and the result must parse to the same document but for
memnest's entry. The file is global: the entry pins no workspace (the shim finds the project
from the folder Codex runs in).
"""
import json
import re
from pathlib import Path

import tomllib

from .editor_configs import ConfigError, Document

NAME_PATTERN = r'(?:{name}|"{name}"|\'{name}\')'
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def load_toml(path: Path) -> Document:
    try:
        document: Document = tomllib.loads(path.read_text(encoding="utf-8-sig"))
        return document
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix it or move it away, then run "
                          "this again. Nothing was changed.") from None


def merged_text(text: str, name: str, entry: Document) -> str:
    """`text` with the tables of server `name` replaced by `entry`'s (at the end)."""
    own = {f"mcp_servers.{name}", f"mcp_servers.{name}.env"}
    kept: list[str] = []
    skipping = False
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            key = ".".join(part.strip().strip("'\"") for part in header.group(1).split("."))
            skipping = key in own and not line.lstrip().startswith("[[")
        if not skipping:
            kept.append(line)
    body = "\n".join(kept).rstrip()
    return (body + "\n\n" if body else "") + render(name, entry)


def render(name: str, entry: Document) -> str:
    main = {k: v for k, v in entry.items() if k != "env"}
    lines = [f"[mcp_servers.{_key(name)}]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in main.items()]
    env = entry.get("env")
    if isinstance(env, dict) and env:
        lines += ["", f"[mcp_servers.{_key(name)}.env]"]
        lines += [f"{_key(k)} = {_value(v)}" for k, v in env.items()]
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON's escapes are TOML's
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise ConfigError(f"cannot write a TOML value of type {type(value).__name__}")


def inline_entry(text: str, name: str) -> bool:
    """Whether the server is defined some way memnest does not edit (an inline table)."""
    pattern = re.compile(r"^\s*" + NAME_PATTERN.format(name=re.escape(name)) + r"\s*=",
                         re.M)
    return bool(pattern.search(text)) or bool(
        re.search(r"^\s*mcp_servers\s*=", text, re.M))
