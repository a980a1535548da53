"""The types of the hooks' JSON: the editors' payloads and the answers each editor takes
(hook_formats.py), and what the daemon says of a memory (hook_text.py). Imported only for type
checking (under TYPE_CHECKING, the annotations written as strings): a hook runs once per event
and does not pay for building them."""
from typing import Literal, TypedDict, Union

Editor = Literal["claude-code", "vscode", "cursor", "gemini", "codex", "kiro-cli", "kiro"]
HookEvent = Literal["session-start", "prompt", "stop", "answer"]  # memnest-hook's events

# An editor's hook JSON as read from stdin: its fields are the editor's, each read with a
# check of its type (Payload), since nothing but the editor vouches for them.
RawPayload = dict[str, object]


class _ContextOutput(TypedDict):
    hookEventName: str
    additionalContext: str


class ContextAnswer(TypedDict):
    """Context added at session start or for a prompt (Claude Code, VS Code, Gemini, Codex)."""
    hookSpecificOutput: _ContextOutput


class CursorContext(TypedDict):
    additional_context: str


class _VSCodeStopOutput(TypedDict):
    hookEventName: Literal["Stop"]
    decision: Literal["block"]
    reason: str


class VSCodeStop(TypedDict):
    """VS Code nests a stop hook's decision."""
    hookSpecificOutput: _VSCodeStopOutput


class CursorFollowup(TypedDict):
    """Cursor sends it as the next user message."""
    followup_message: str


class StopDecision(TypedDict):
    """Claude Code and Codex block the stop; Gemini denies it (the reason is the retry's
    prompt)."""
    decision: Literal["block", "deny"]
    reason: str


HookAnswer = Union[ContextAnswer, CursorContext, VSCodeStop, CursorFollowup, StopDecision]


# -- what the daemon says of a memory --------------------------------------------------------

class CodeAnchor(TypedDict, total=False):
    cites: str  # the symbol or lines the memory cites


class CodeBranch(TypedDict, total=False):
    written_on: str  # the unmerged branch it was written on


class CodeCheck(TypedDict, total=False):
    """What the daemon found of the code a memory cites."""
    state: str  # "changed", "deleted", or as it was
    anchors: list[CodeAnchor]
    branch: CodeBranch


class Conflict(TypedDict):
    """Another memory this one conflicts with, as the daemon flags it."""
    type: str  # "value_disagreement", ...
    memory_id: int
    similarity: float


class Explain(TypedDict, total=False):
    """Parts of a search score (memory_search with explain): those the recall floor reads."""
    context: float
    code: float


class _Identified(TypedDict):
    id: int


class MemoryLine(_Identified, total=False):
    """A memory as memory_list, memory_get and memory_search return it: the fields the hooks
    read (each read as the daemon may leave it out)."""
    content: str
    category: str
    updated_at: str
    tags: list[str]
    importance: int
    code: CodeCheck
    conflicts: list[Conflict]
    untrusted_content: object  # what screening found, when it found anything
    superseded: bool
    score: float
    explain: Explain
