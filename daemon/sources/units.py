"""What a source file yields: Units (one fact or section each, with the lines it came from),
and the files left out with why."""
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..core.records import normalise_tags
from ..core.types import Category

MAX_TAGS = 6  # tags a piece takes from where it came from
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class SourceFile:
    """One file of a source, read. `shown`: how it is named to the person and in provenance
    (relative to the workspace when inside it, else with ~ for the home folder);
    `inside`: its path relative to the workspace, or "" when it is outside (not anchored)."""
    shown: str
    inside: str
    text: str
    absolute: str = ""  # where it is, for a check that it changed


@dataclass(frozen=True)
class Unit:
    """One memory-to-be: its text, where it came from, and what was inferred of it."""
    text: str
    file: SourceFile
    start: int  # first line, 1-based
    end: int  # last line (inclusive)
    category: Category = "general"
    tags: tuple[str, ...] = ()
    importance: int = 3
    keys: tuple[str, ...] = ()  # the names other pieces link to it by (a note's title)
    links: tuple[tuple[str, str], ...] = ()  # (relation, the name of the piece it links to)

    @property
    def lines(self) -> str:
        return str(self.start) if self.end == self.start else f"{self.start}-{self.end}"

    @property
    def session(self) -> str:
        """The provenance it is stored with (origin session): the file and its lines."""
        return f"{self.file.shown}:{self.lines}"


def slug(text: str) -> str:
    """camelCase and words to kebab-case: techContext -> tech-context."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return "-".join(_WORD.findall(spaced.lower()))[:50]


def piece_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """A piece's tags: normalised, the empty ones dropped, MAX_TAGS at most."""
    return tuple(normalise_tags([t for t in tags if t])[:MAX_TAGS])


def file_of_session(session: str) -> str:
    """The file part of a Unit.session (a path may hold ':', the lines never do)."""
    head, _, lines = session.rpartition(":")
    return head if head and lines.replace("-", "").isdigit() else ""


@dataclass
class Found:
    """What a source yielded: its units in file order, the files read, and those left out
    (shown path -> why)."""
    units: list[Unit] = field(default_factory=list)
    files: list[SourceFile] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    looked_in: list[str] = field(default_factory=list)  # the places searched, absolute
