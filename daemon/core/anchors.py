"""What a memory knows about the code it cites: its anchors, and the branch it was written on.

A Memory carries it parsed; it is stored as one JSON text per memory (the Memory `code`
column, "" for none), parsed by `CodeContext.parse` where a row becomes a Memory and written by
`to_json` where a Memory becomes a row.
"""
import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Literal, TypedDict, get_args

MAX_ANCHORS = 8          # per memory; more citations than this are not anchored
MAX_ANCHOR_TEXT = 1000   # characters of the cited lines kept for a diff summary
MAX_CODE_JSON = 16_384   # a stored context longer than this was not written by memnest
# What a cited piece of code looks like now (code/anchors.py), and which of those make the
# memory citing it stale.
AnchorState = Literal["fresh", "moved", "changed", "deleted"]
ANCHOR_STATES: tuple[AnchorState, ...] = get_args(AnchorState)
STALE_STATES: tuple[AnchorState, ...] = ("changed", "deleted")


@dataclass(frozen=True)
class Anchor:
    """One citation of code, as it was when the memory was written or last refreshed."""
    path: str                # posix path relative to the workspace
    start: int = 0           # first cited line, 1-based; 0 for a whole file or a symbol
    end: int = 0             # last cited line (inclusive)
    symbol: str = ""         # a function or class name, when one was cited
    lines_hash: str = ""     # sha256 of the cited lines or the symbol's body, normalised;
    #                          of a whole file, of its code (comments and layout left out)
    text: str = ""           # those lines, up to MAX_ANCHOR_TEXT characters ("" if longer)
    file_hash: str = ""      # sha256 of the whole file's bytes
    size: int = -1           # the file's size and mtime when hashed: unchanged means fresh
    mtime_ns: int = 0
    commit: str = ""         # HEAD when captured ("" outside a git repository)
    auto: bool = False       # found in the memory's text rather than given explicitly
    outline: str = ""        # a whole file's definitions, each with a short hash of its code

    @property
    def where(self) -> str:
        """How a person would cite it: path, path:12-20, or symbol() in path."""
        if self.symbol:
            return f"{self.symbol}() in {self.path}"
        if self.start:
            lines = str(self.start) if self.end in (0, self.start) else \
                f"{self.start}-{self.end}"
            return f"{self.path}:{lines}"
        return self.path


@dataclass(frozen=True)
class CodeContext:
    """The anchors a memory cites and where it was written; falsy when there are none."""
    anchors: tuple[Anchor, ...] = ()
    branch: str = ""   # the git branch the memory was written on
    commit: str = ""   # HEAD then
    worktree: str = ""  # the git worktree it was written in, when not the main checkout

    def __bool__(self) -> bool:
        return bool(self.anchors or self.branch or self.commit)

    def to_dict(self) -> dict[str, object]:
        """The stored JSON's object: what an export file holds."""
        out: dict[str, object] = {"anchors": [_compact(asdict(a)) for a in self.anchors]}
        if self.branch:
            out["branch"] = self.branch
        if self.commit:
            out["commit"] = self.commit
        if self.worktree:
            out["worktree"] = self.worktree
        return out

    def to_json(self) -> str:
        """The column's text: "" for none."""
        if not self:
            return ""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

    @staticmethod
    def parse(text: str) -> "CodeContext":
        """The column's text as a context; text that does not parse reads as none."""
        return _parse(text or "")


_DEFAULTS = asdict(Anchor(path=""))


def _compact(values: dict[str, object]) -> dict[str, object]:
    """Leave out fields at their default: most anchors cite a path and little else."""
    return {k: v for k, v in values.items() if k == "path" or v != _DEFAULTS[k]}


_FIELDS = set(_DEFAULTS)


NO_CODE = CodeContext()  # a memory that cites no code: shared, as most memories are such


@lru_cache(maxsize=4096)
def _parse(text: str) -> CodeContext:
    """A stored text that does not parse (a raw memory_query write) reads as no context."""
    if not text:
        return NO_CODE
    try:
        value = json.loads(text)
        anchors = tuple(Anchor(**{k: v for k, v in a.items() if k in _FIELDS})
                        for a in value.get("anchors", [])[:MAX_ANCHORS] if _well_typed(a))
        return CodeContext(anchors, str(value.get("branch") or ""),
                           str(value.get("commit") or ""), str(value.get("worktree") or ""))
    except (ValueError, TypeError, AttributeError):
        return CodeContext()


def _well_typed(values: object) -> bool:
    """An anchor as memnest writes it: each field of its type (an import or a raw query may
    hold anything), line numbers and sizes within sane bounds."""
    if not isinstance(values, dict) or not isinstance(values.get("path"), str):
        return False
    for key, value in values.items():
        default = _DEFAULTS.get(key)
        if default is None:
            continue
        if type(value) is not type(default):
            return False
        if isinstance(value, int) and not isinstance(value, bool) and \
                not -1 <= value < 2**62:
            return False
    return 0 <= values.get("start", 0) <= values.get("end", 0) or not values.get("start")


class _Checked(TypedDict):
    cites: str  # Anchor.where
    state: AnchorState


class AnchorView(_Checked, total=False):
    """An anchor's check as a caller sees it."""
    detail: str
    diff: str
    now_at: str  # where moved code is now


@dataclass(frozen=True)
class AnchorCheck:
    """What an anchor's code looks like now."""
    anchor: Anchor
    state: AnchorState
    detail: str = ""                   # a sentence for the model: what changed, where it went
    diff: str = ""                     # a short diff summary of the cited lines (changed)
    now: Anchor | None = None          # the anchor re-captured where the code is now (moved)
    notes: list[str] = field(default_factory=list)

    def view(self) -> AnchorView:
        out = AnchorView(cites=self.anchor.where, state=self.state)
        if self.detail:
            out["detail"] = self.detail
        if self.diff:
            out["diff"] = self.diff
        if self.now is not None and self.now.where != self.anchor.where:
            out["now_at"] = self.now.where
        return out
