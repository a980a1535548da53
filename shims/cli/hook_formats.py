"""Each editor's hook format, read and answered by one program (hook.py): the editor is a
parameter, never a copy. The formats, with the editors' documentation they come from, are in
tests/data/hook_payloads/<editor>/FORMAT.md, beside payloads taken from that documentation.

| editor      | session start  | prompt             | end of turn  | adds context by           |
|-------------|----------------|--------------------|--------------|---------------------------|
| claude-code | SessionStart   | UserPromptSubmit   | Stop         | hookSpecificOutput JSON   |
| vscode      | SessionStart   | UserPromptSubmit*  | Stop         | hookSpecificOutput JSON   |
| cursor      | sessionStart   | beforeSubmitPrompt*| stop         | additional_context JSON   |
| gemini      | SessionStart   | BeforeAgent        | AfterAgent   | hookSpecificOutput JSON   |
| codex       | SessionStart   | UserPromptSubmit   | Stop         | hookSpecificOutput JSON   |
| kiro-cli    | agentSpawn     | userPromptSubmit   | (none)       | plain stdout              |
| kiro (IDE)  | (none)         | promptSubmit       | agentStop**  | plain stdout              |

* cannot add context: the prompt is still read (it tells the Stop hook which turn it is in),
  nothing is printed. ** an askAgent action in the hook file, not this program.

The editor that really runs a hook is told by its payload, not only by --client: VS Code and
Cursor run the hooks in Claude Code's settings files too, and then hand them their own
payload and expect their own answer.
"""
import json
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .hook_types import Editor, HookAnswer, HookEvent, RawPayload

# the editor's event name -> memnest-hook's event
EDITOR_EVENTS: "dict[Editor, dict[str, HookEvent]]" = {
    "claude-code": {"SessionStart": "session-start", "UserPromptSubmit": "prompt",
                    "Stop": "stop"},
    "vscode": {"SessionStart": "session-start", "UserPromptSubmit": "prompt", "Stop": "stop"},
    "cursor": {"sessionStart": "session-start", "beforeSubmitPrompt": "prompt",
               "stop": "stop", "afterAgentResponse": "answer"},
    "gemini": {"SessionStart": "session-start", "BeforeAgent": "prompt", "AfterAgent": "stop"},
    "codex": {"SessionStart": "session-start", "UserPromptSubmit": "prompt", "Stop": "stop"},
    "kiro-cli": {"agentSpawn": "session-start", "userPromptSubmit": "prompt", "stop": "stop"},
    "kiro": {"promptSubmit": "prompt"},
}
CLIENTS: "tuple[Editor, ...]" = tuple(EDITOR_EVENTS)
# What each editor lets a hook add, per memnest event: the rest is read, never answered.
ADDS_CONTEXT: "dict[Editor, tuple[HookEvent, ...]]" = {
    "claude-code": ("session-start", "prompt"), "vscode": ("session-start",),
    "cursor": ("session-start",), "gemini": ("session-start", "prompt"),
    "codex": ("session-start", "prompt"), "kiro-cli": ("session-start", "prompt"),
    "kiro": ("prompt",),
}
# Whose stop payload carries the turn's answer, and whom a stop hook's answer reaches.
ANSWER_IN_PAYLOAD: "tuple[Editor, ...]" = ("claude-code", "codex", "gemini")
CONTINUES: "tuple[Editor, ...]" = ("claude-code", "vscode", "cursor", "gemini", "codex")
# The most text an editor keeps of one hook's answer (Claude Code documents 10,000
# characters; Kiro's CLI cuts at 10,240 bytes); a budget never goes above it.
TEXT_CAP: "dict[Editor, int]" = {"claude-code": 10000, "vscode": 10000, "kiro-cli": 10000}


class Payload:
    """One hook run's input as memnest needs it, whichever editor sent it."""

    def __init__(self, editor: "Editor", raw: "RawPayload"):
        self.editor = editor
        self.raw = raw
        self.event_name = _first(raw, "hook_event_name", "hookEventName")
        self.session = _first(raw, "session_id", "sessionId", "conversation_id")
        self.prompt = _first(raw, "prompt")
        self.source = _first(raw, "source")  # startup, resume, clear, compact
        self.transcript = _first(raw, "transcript_path", "transcriptPath")
        roots = raw.get("workspace_roots")
        root = roots[0] if isinstance(roots, list) and roots and isinstance(roots[0], str) \
            else ""
        self.cwd = _first(raw, "cwd") or root
        # the turn's answer, where the editor passes it (the transcript may not hold it yet)
        self.answer = _first(raw, "last_assistant_message", "prompt_response", "text")
        loops = raw.get("loop_count")
        # already continuing because of a stop hook: never ask again, so it cannot loop
        self.continuing = raw.get("stop_hook_active") is True or raw.get("stopHookActive") is True \
            or (isinstance(loops, int) and not isinstance(loops, bool) and loops > 0)
        self.completed = editor != "cursor" or _first(raw, "status") in ("", "completed")

    def event(self, asked: "HookEvent") -> "HookEvent":
        """The memnest event this payload is, `asked` when the payload does not say."""
        return EDITOR_EVENTS[self.editor].get(self.event_name, asked)


def _first(raw: "RawPayload", *keys: str) -> str:
    for key in keys:
        value = raw.get(key)
        if isinstance(value, str):
            return value
    return ""


def editor_of(raw: "RawPayload", client: "Editor") -> "Editor":
    """Who sent this payload: Cursor's and VS Code's own fields name them whatever --client
    says (both run Claude Code's hooks); otherwise the editor --client names."""
    if client in ("claude-code", "vscode", "cursor"):
        if any(k in raw for k in ("conversation_id", "workspace_roots", "cursor_version")):
            return "cursor"
        if any(k in raw for k in ("sessionId", "hookEventName")):
            return "vscode"
        if client == "claude-code" and "timestamp" in raw \
                and "last_assistant_message" not in raw:
            return "vscode"  # VS Code stamps every payload; Claude Code does not
    return client


def kiro_ide_payload() -> "RawPayload":
    """Kiro's IDE passes the prompt in USER_PROMPT and may leave stdin open, so stdin is not
    read. No session id either: the Kiro process running the hook stands in for it."""
    return {"hook_event_name": "promptSubmit", "prompt": os.environ.get("USER_PROMPT", ""),
            "session_id": f"kiro:{os.getppid()}"}


def session_key(payload: Payload) -> str:
    """The session the hook's state is kept for. Kiro's CLI names none: the Kiro process
    that runs the hooks and the folder stand in for it."""
    if payload.session:
        return f"{payload.editor}:{payload.session}"[:240]
    if payload.editor == "kiro-cli":
        return f"kiro-cli:{editor_process()}:{payload.cwd}"[:240]
    return ""


SHELLS = frozenset(("sh", "bash", "dash", "zsh", "fish", "ksh", "env"))


def editor_process() -> int:
    """The process that runs this hook, past the shell it runs the command in (a new shell
    for each hook): the editor's, the same for all hooks of its session. Linux tells it in
    /proc; elsewhere the parent stands in."""
    pid = os.getppid()
    for _ in range(4):
        try:
            with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as f:
                fields = dict(line.split(":\t", 1) for line in f.read(4096).splitlines()
                              if ":\t" in line)
        except OSError:
            return pid
        if fields.get("Name", "").strip() not in SHELLS:
            return pid
        pid = int(fields.get("PPid", "0").strip() or 0)
        if pid <= 1:
            break
    return pid


def answer(editor: "Editor", event: "HookEvent", text: str) -> str:
    """What to print for `text`: the editor's documented shape, or "" when the editor cannot
    take it for this event (printing anyway would show the user noise, or break a turn)."""
    if event == "stop":
        if editor not in CONTINUES:
            return ""
        if editor == "vscode":  # VS Code nests the decision
            return _json({"hookSpecificOutput": {"hookEventName": "Stop", "decision": "block",
                                                 "reason": text}})
        if editor == "cursor":  # sent as the next user message
            return _json({"followup_message": text})
        if editor == "gemini":  # deny: the reason becomes the retry's prompt
            return _json({"decision": "deny", "reason": text})
        return _json({"decision": "block", "reason": text})
    if event not in ADDS_CONTEXT[editor]:
        return ""
    if editor in ("kiro", "kiro-cli"):
        return text
    if editor == "cursor":
        return _json({"additional_context": text})
    name = {"session-start": "SessionStart",
            "prompt": "BeforeAgent" if editor == "gemini" else "UserPromptSubmit"}[event]
    return _json({"hookSpecificOutput": {"hookEventName": name, "additionalContext": text}})


def text_cap(editor: "Editor") -> int:
    return TEXT_CAP.get(editor, 10000)


def _json(value: "HookAnswer") -> str:
    return json.dumps(value, ensure_ascii=False)
