"""A digest of a workspace's memories for editors and agents without MCP: the most
important ones as one Markdown file (AGENTS.md, or Claude Code's MEMORY.md), grouped by
kind, one line each, within the size those tools read (Claude Code loads the first 200
lines or 25 KB of MEMORY.md)."""
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from ..core.records import Memory
from ..core.types import Category

DigestStyle = Literal["agents-md", "claude-md"]
MAX_LINES: Final = 200
MAX_BYTES: Final = 25_000
LINE_CHARS: Final = 300  # one memory's line, at most
SIGNATURE: Final = "<!-- memnest digest"  # how a digest starts: one memnest may replace
_SECTIONS: Final[tuple[tuple[Category, str], ...]] = (
    ("decision", "Decisions"), ("preference", "Preferences"), ("pattern", "Patterns"),
    ("learning", "Learnings"), ("general", "Notes"))
_TITLES: Final[dict[DigestStyle, str]] = {"agents-md": "Project notes for agents",
                                          "claude-md": "Project memory"}


@dataclass(frozen=True)
class Digest:
    text: str
    shown: int  # memories in it
    left_out: int  # memories that did not fit


def render_digest(memories: Iterable[Memory], style: DigestStyle, generator: str) -> Digest:
    """The most important memories first (then the most used, the newest), as many as fit
    MAX_LINES and MAX_BYTES, each one line under its kind's heading."""
    ranked = sorted(memories, key=lambda m: (-m.importance, -m.access_count,
                                             -m.updated_at.timestamp(), m.id))
    head = [f"{SIGNATURE}: written by {generator}; memnest-ctl export --format {style} "
            "writes it again -->", f"# {_TITLES[style]}", ""]
    budget_lines = MAX_LINES - len(head) - 2 * len(_SECTIONS)
    budget_bytes = MAX_BYTES - sum(len(h) + 1 for h in head) - 40 * len(_SECTIONS)
    chosen: dict[Category, list[str]] = {c: [] for c, _ in _SECTIONS}
    shown = 0
    for m in ranked:
        line = _line(m)
        size = len(line.encode("utf-8")) + 1
        if budget_lines < 1 or size > budget_bytes:
            break
        chosen[m.category].append(line)
        budget_lines -= 1
        budget_bytes -= size
        shown += 1
    body: list[str] = []
    for category, title in _SECTIONS:
        if chosen[category]:
            body += [f"## {title}", *chosen[category], ""]
    return Digest("\n".join(head + body).rstrip() + "\n", shown, len(ranked) - shown)


def _line(m: Memory) -> str:
    text = " ".join(m.content.split())
    if len(text) > LINE_CHARS:
        text = text[:LINE_CHARS - 1].rstrip() + "…"
    return f"- {text}"
