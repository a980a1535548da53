"""What a sync of the shared folder tells the caller (memory_sync, the calls that synced on
their own): one entry per memory that came in, changed or was left alone, and the files
that could not be imported."""
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from ..curation.conflicts import ResolvedFlag
from .format import RESOLVE_HINT

# Why a file naming a memory that is not shared here changed nothing.
Ignoring = Literal["unshared", "withdrawn", "missing"]


class MemoryEntry(TypedDict):
    id: int
    global_id: str
    content: str  # the first 80 characters


class UpdatedEntry(MemoryEntry, total=False):
    shared_again: bool  # a withdrawn memory its file brought back


class MergedEntry(MemoryEntry):
    status: str  # ingest's outcome: duplicate or merged
    into: str    # the global id of the memory it joined


class ConflictEntry(MemoryEntry):
    conflicts: list[ResolvedFlag]


class UnsharedEntry(TypedDict):
    id: int
    global_id: str


class IgnoredEntry(TypedDict):
    global_id: str
    file: str
    why: str


class PrivacyEntry(TypedDict):
    global_id: str
    left_out: str


class UntrustedEntry(TypedDict):
    global_id: str
    markers: list[str]


def shared_file(global_id: str) -> str:
    """A shared memory's file as the caller sees it, relative to the workspace."""
    return f".memnest/shared/{global_id}.json"


@dataclass
class Report:
    came_in: list[MemoryEntry] = field(default_factory=list)
    updated: list[UpdatedEntry] = field(default_factory=list)
    merged: list[MergedEntry] = field(default_factory=list)
    deleted: list[MemoryEntry] = field(default_factory=list)
    unshared: list[UnsharedEntry] = field(default_factory=list)
    conflicts: list[ConflictEntry] = field(default_factory=list)
    # files naming a memory that is not shared here: they changed nothing
    ignored: list[IgnoredEntry] = field(default_factory=list)
    # what admission took out of files (private sections, secrets) or flagged in them
    privacy: list[PrivacyEntry] = field(default_factory=list)
    untrusted: list[UntrustedEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    relations: int = 0
    files_read: int = 0

    def view(self) -> dict[str, Any]:
        """The report as JSON for memory_sync."""
        out: dict[str, Any] = {
            "came_in": self.came_in, "updated": self.updated, "merged": self.merged,
            "deleted": self.deleted, "unshared": self.unshared, "conflicts": self.conflicts,
            "ignored": self.ignored, "relations_added": self.relations,
            "files_read": self.files_read, "problems": self.problems}
        if self.privacy:
            out["privacy"] = self.privacy
        if self.untrusted:
            out["untrusted_content"] = self.untrusted
        if self.problems:
            out["how_to_fix"] = RESOLVE_HINT
        return out

    def __bool__(self) -> bool:
        return bool(self.came_in or self.updated or self.merged or self.deleted
                    or self.unshared or self.ignored or self.relations)
