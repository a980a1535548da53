"""`memnest-hook <event>` (also `memnest-ctl hook <event>`): memnest as an agent's hooks.

The editor runs this once per event with its hook JSON on stdin; the warm daemon answers over
gRPC. One program for every editor: `--client` names the editor's format (hook_formats.py has
them all, with each editor's event names), and a payload from VS Code or Cursor is known by
its own fields whatever --client says. Events:

- session-start: a digest of the workspace (most important, then most recent decisions,
  preferences and lessons; memories in conflict) within a token budget. Also after /clear
  and after a compaction (source "compact"), when the context lost it.
- prompt: memory_search with the prompt; the few results above the relevance floor are
  injected with their ids and why each came back, marked as recalled data. Nothing when
  nothing is relevant; a memory shown once in a session (by the digest too) is not shown
  again unless it changed.
- stop: after a turn that did real work (tool calls or a long answer) and stored nothing,
  ask the agent once to store the turn's decisions, preferences and lessons. Never when the
  agent is already continuing because of a stop hook, so it cannot loop.
- answer (Cursor's afterAgentResponse): notes the turn's answer for the stop that follows.

What memories say is shown inside a block whose tags carry a token drawn for that run
(hook_text.py), which stored text cannot hold, and whose first line says it is data, not
instructions. So no memory, a teammate's shared one included, can end the block and speak
outside it.

It must never hold up or break the editor: everything runs under a time budget
(MEMNEST_HOOK_BUDGET_MS, or --budget-ms); on any failure or when the budget runs out the hook
exits 0 having printed nothing, and writes one line to the hook log. When the daemon is not
running the hook starts it; that first call may run out of budget, the next ones are warm.
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import hook_formats as formats
from . import hook_text
from .hook_text import (  # noqa: F401 - what tests and callers read from here
    FENCE_TOKEN_BYTES,
    PREVIEW_CHARS,
    digest_text,
    fence_token,
    neutralised,
    recall_fitted,
    recall_text,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeGuard

    from ..client import DaemonClient
    from ..tool_json import ToolArguments, ToolResult
    from .hook_types import Editor, HookEvent, MemoryLine, RawPayload

EVENTS: "tuple[HookEvent, ...]" = ("session-start", "prompt", "stop", "answer")
CLIENTS = formats.CLIENTS
# Under a second each: with no daemon running, the hook that starts it gives up at its
# budget and the daemon goes on starting for the next event.
DEFAULT_BUDGET_MS: "dict[HookEvent, int]" = {"session-start": 900, "prompt": 800, "stop": 500,
                                             "answer": 300}
MAX_INPUT_BYTES = 1 << 20  # the hook JSON; a prompt is far smaller
MAX_TRANSCRIPT_TAIL = 4 << 20  # of the transcript, only the end is read (the last turn)
MAX_PROMPT_CHARS = 2000  # of the prompt, what the search sees (the tool's own limit is larger)
# Recall: a result is shown only when its score less the context channel (the lift from the
# memories stored next to it, which a lone memory never gets) reaches this floor, chosen on
# LOCOMO (bench/recall_floor.py --direct; bench/RESULTS.md#recall-floor). MEMNEST_RECALL_FLOOR
# overrides it.
RECALL_FLOOR = 0.97
RECALL_LIMIT = 5
RECALL_SEARCH_CAP = 40  # results asked for at most, to find RECALL_LIMIT not shown yet
DIGEST_LIST = 8  # per order (importance, recency) asked of the daemon for the digest
DIGEST_PERSONAL = 4  # the person's own memories (scope user) asked for the digest
MAX_SHOWN = 2000  # per session, memory ids remembered as shown
# Capture: a turn is worth asking about when it used this many tools or wrote this much.
CAPTURE_MIN_TOOL_CALLS = 2
CAPTURE_MIN_ANSWER_CHARS = 600
# Where nothing tells what a turn did (no transcript memnest can read, no answer in the
# payload), a prompt this long stands for a task, not a word in passing; what the agent then
# stores is judged by the daemon before it is kept.
CAPTURE_MIN_TASK_PROMPT = 25
STORE_TOOL_SUFFIXES = ("memory_store", "memory_update")
CAPTURE_REQUEST = (
    "Before you finish: if this turn settled a decision, revealed a preference of the user or "
    "taught a lesson worth keeping for later sessions, store each with memnest's memory_store "
    "(one short, self-contained memory per fact, with a category and tags; not file listings, "
    "logs or progress notes), then stop. If nothing is worth keeping, just stop.")


class _Skip(Exception):
    """Nothing to inject; the reason goes to the log only when it is worth a line."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _plain_arguments(argv)
    if args is None:  # --help, a mistake: argparse explains
        parser = argparse.ArgumentParser(prog="memnest-hook", description=(
            "Run one agent hook event against memnestd (reads the editor's hook JSON on "
            "stdin). Always exits 0; failures go to the hook log."))
        add_arguments(parser)
        try:
            args = parser.parse_args(argv)
        except SystemExit as done:  # exit 2 would block the prompt in Claude Code
            if done.code:
                log_line("arguments", f"memnest-hook {' '.join(argv)}: not understood")
            return 0
    return run(args)


def _plain_arguments(argv: list[str]) -> argparse.Namespace | None:
    """The command lines `config` writes, read without building a parser (which costs a hook
    several milliseconds); None for anything else."""
    if not argv or argv[0] not in EVENTS:
        return None
    values: dict[str, str | None] = {"--client": "claude-code", "--workspace": None,
                                     "--budget-ms": None, "--max-tokens": None}
    rest = argv[1:]
    if len(rest) % 2:
        return None
    for flag, value in zip(rest[::2], rest[1::2]):
        if flag not in values:
            return None
        values[flag] = value
    numbers = [values["--budget-ms"], values["--max-tokens"]]
    if values["--client"] not in CLIENTS or any(n is not None and not n.isdigit()
                                                for n in numbers):
        return None
    return argparse.Namespace(event=argv[0], client=values["--client"],
                              workspace=values["--workspace"],
                              budget_ms=None if numbers[0] is None else int(numbers[0]),
                              max_tokens=None if numbers[1] is None else int(numbers[1]))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("event", choices=list(EVENTS),
                        help="session-start: a digest of the workspace; prompt: recall for "
                             "the prompt; stop: capture what the turn settled; answer: note "
                             "the turn's answer (Cursor's afterAgentResponse)")
    parser.add_argument("--client", default="claude-code", choices=list(CLIENTS),
                        help="whose hook format to read and write (default: claude-code; a "
                             "VS Code or Cursor payload is recognised by its fields)")
    parser.add_argument("--workspace", metavar="DIR",
                        help="the project (default: $MEMORY_WORKSPACE, else the folder the "
                             "editor names in its payload)")
    parser.add_argument("--budget-ms", type=int, default=None,
                        help="give up after this long, injecting nothing (default: "
                             "$MEMNEST_HOOK_BUDGET_MS, else 900 at session start, 800 for a "
                             "prompt, 500 at the end of a turn)")
    parser.add_argument("--max-tokens", type=int, default=None,
                        help="the most this event may inject (default: $MEMNEST_HOOK_TOKENS, "
                             "else 700 at session start, 500 for a prompt)")


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    budget_s = _budget_ms(args) / 1000
    _watchdog(args.event, budget_s)
    try:
        raw = formats.kiro_ide_payload() if args.client == "kiro" else _read_input()
        payload = formats.Payload(formats.editor_of(raw, args.client), raw)
        if payload.editor == "cursor" and args.client == "claude-code":
            raise _Skip("")  # Cursor running Claude Code's hooks: its own hooks file serves it
        event = payload.event(args.event)
        workspace = _workspace(args, payload)
        budget = min(hook_text.budget_tokens(event if event in hook_text.DEFAULT_TOKENS
                                             else "stop", args.max_tokens),
                     formats.text_cap(payload.editor) // 3)
        text = _HANDLERS[event](Event(payload, workspace, started + budget_s, budget))
    except _Skip as skip:
        if str(skip):
            log_line(args.event, str(skip))
        return 0
    except Exception as exc:  # noqa: BLE001 - a hook must never break the editor
        log_line(args.event, f"{type(exc).__name__}: {exc}")
        return 0
    if text:
        _emit(event, text, payload.editor)
    return 0


def _budget_ms(args: argparse.Namespace) -> int:
    flag: int | None = args.budget_ms
    if flag is not None:
        return max(1, flag)
    raw = os.environ.get("MEMNEST_HOOK_BUDGET_MS", "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return DEFAULT_BUDGET_MS[args.event]


def _watchdog(event: str, budget_s: float) -> None:
    """When the budget runs out, leave at once: exit 0 with nothing printed. A daemon this
    hook started keeps starting (it is in a session of its own)."""
    def expire() -> None:
        log_line(event, f"out of time budget ({budget_s * 1000:.0f} ms); nothing injected")
        os._exit(0)
    timer = threading.Timer(budget_s, expire)
    timer.daemon = True
    timer.start()


def _read_input() -> "RawPayload":
    data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise _Skip(f"hook input over {MAX_INPUT_BYTES} bytes; ignored")
    if not data.strip():
        return {}
    # an invalid byte in a prompt costs that character, not the recall
    payload: object = json.loads(data.decode("utf-8", "replace"), strict=False)  # a raw NUL too
    if not isinstance(payload, dict):
        raise _Skip("hook input is not a JSON object; ignored")
    return payload


def _workspace(args: argparse.Namespace, payload: formats.Payload) -> str:
    from .. import workspace as ws
    if ws.remote():  # a folder of the remote daemon's machine, taken as given
        try:
            return ws.for_remote(args.workspace)
        except ValueError as exc:
            raise _Skip(str(exc)) from None
    chosen = args.workspace or os.environ.get("MEMORY_WORKSPACE", "").strip() \
        or os.environ.get("CLAUDE_PROJECT_DIR", "").strip() \
        or os.environ.get("GEMINI_PROJECT_DIR", "").strip()
    if chosen:
        path = Path(chosen).expanduser().resolve()
    else:  # where the editor runs: its project, as memnest-mcp finds it
        from ..workspace import enclosing_project
        path = enclosing_project(Path(payload.cwd or os.getcwd()).expanduser())
    if not path.is_dir():
        raise _Skip(f"workspace {path} is not a directory")
    if not args.workspace and payload.editor == "cursor" and not _cursor_configured(path):
        raise _Skip("")  # a user-wide hook, in a project memnest was not set up for
    return str(path)


def _cursor_configured(workspace: Path) -> bool:
    """Cursor's hooks are the user's, for every project: they act only where Cursor has the
    memnest MCP server (the project's or the user's mcp.json names memnest-mcp)."""
    for path in (workspace / ".cursor" / "mcp.json", Path.home() / ".cursor" / "mcp.json"):
        try:
            with open(path, "rb") as f:
                if b"memnest-mcp" in f.read(1 << 20):
                    return True
        except OSError:
            continue
    return False


def clean_prompt(text: str) -> str:
    """The prompt as a search can take it: no NUL or other control characters, no lone
    surrogates (a JSON escape can carry one), whitespace folded."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    return " ".join("".join(c if c.isprintable() or c.isspace() else " " for c in text).split())


# -- what each event injects ---------------------------------------------------------------

class Event:
    """One hook run. (A plain class: the dataclasses module costs a hook ~10 ms to load.)"""

    def __init__(self, payload: formats.Payload, workspace: str, deadline: float,
                 budget: int):
        self.payload = payload  # the editor's hook JSON, read
        self.workspace = workspace
        self.deadline = deadline  # time.monotonic() by which the hook must be done
        self.budget = budget  # tokens it may inject

    @property
    def session(self) -> str:
        return formats.session_key(self.payload)

    def daemon(self) -> "_Daemon":
        return _Daemon(self.payload.editor, self.session[:200])


def _session_start(event: Event) -> str:
    session = SessionState.load(event.session)
    if event.payload.source in ("clear", "compact"):
        session.shown.clear()  # the context no longer holds what was shown
    client = event.daemon()
    # the project's most important and newest, and the person's own (the personal tier)
    asks = [{"order_by": "importance", "limit": DIGEST_LIST},
            {"order_by": "importance", "limit": DIGEST_PERSONAL, "scope": "user"},
            {"order_by": "recent", "limit": DIGEST_LIST}]
    pages = [_personal_listed(client, event, ask) if ask.get("scope") == "user"
             else _call(client, "memory_list", event.workspace, event.deadline,
                        {**ask, "preview_chars": 0}) for ask in asks]
    debug_workspace("session-start", event.workspace, pages[0])
    listed = [m["id"] for page in pages for m in page["memories"]]
    if not listed:
        session.save()
        return ""
    # memory_get flags what addresses the agent, what was superseded and what conflicts
    got = _call(client, "memory_get", event.workspace, event.deadline,
                {"ids": list(dict.fromkeys(listed))})["memories"]
    text, shown = digest_text(got, event.workspace, event.budget)
    for m in shown:  # the prompt recall of this session does not show them again
        session.mark_shown(m)
    session.save()
    return text


def _personal_listed(client: "_Daemon", event: Event, ask: "ToolArguments") -> "ToolResult":
    """The person's own memories for the digest; none when the daemon will not show them
    (a remote daemon whose allow-list does not grant this client the personal tier)."""
    try:
        return _call(client, "memory_list", event.workspace, event.deadline,
                     {**ask, "preview_chars": 0})
    except _Skip as skip:
        if "personal tier" not in str(skip):
            raise
        return {"memories": []}


def _prompt(event: Event) -> str:
    prompt = clean_prompt(event.payload.prompt)
    if len(prompt) < 3:
        raise _Skip("")
    session = SessionState.load(event.session)
    session.prompts += 1
    session.prompt_digests = (session.prompt_digests + [prompt_digest(prompt)])[-2:]
    session.prompt_chars = len(prompt)
    session.answer_chars = 0
    if "prompt" not in formats.ADDS_CONTEXT[event.payload.editor]:
        session.save()  # the editor cannot take context here; the turn is counted
        return ""
    # what this session was shown is left out after the search: ask for that many more, so
    # that a newer relevant memory below them still comes back
    wanted = min(RECALL_LIMIT + len(session.shown), RECALL_SEARCH_CAP)
    found = _call(event.daemon(), "memory_search", event.workspace, event.deadline,
                  {"query": prompt[:MAX_PROMPT_CHARS], "top_k": wanted,
                   "preview_chars": PREVIEW_CHARS, "explain": True})
    debug_workspace("prompt", event.workspace, found)
    floor = _float_env("MEMNEST_RECALL_FLOOR", RECALL_FLOOR)
    picked: list[MemoryLine] = [r for r in found["results"]
              if _direct_score(r) >= floor and not r.get("untrusted_content")
              and not r.get("superseded") and not session.was_shown(r)][:RECALL_LIMIT]
    text, shown = recall_fitted(picked, prompt, event.budget)
    for r in shown:  # what did not fit is not marked shown
        session.mark_shown(r)
    session.save()
    return text


def _answer(event: Event) -> str:
    """Cursor passes the turn's answer to afterAgentResponse, not to stop: kept for it."""
    session = SessionState.load(event.session)
    session.answer_chars = max(session.answer_chars, len(event.payload.answer))
    session.save()
    return ""


def _stop(event: Event) -> str:
    payload = event.payload
    if payload.continuing or not payload.completed:
        raise _Skip("")  # already continuing because of a stop hook: never loop
    session = SessionState.load(event.session)
    if session.asked_at_prompt == session.prompts and session.prompts:
        raise _Skip("")  # asked once for this turn already
    turn = this_turn(last_turn(payload.transcript), session, payload.answer)
    if turn.prompt:  # the transcript holds this turn: what it did decides
        worked = turn.tool_calls >= CAPTURE_MIN_TOOL_CALLS \
            or turn.answer_chars >= CAPTURE_MIN_ANSWER_CHARS
    elif turn.answer_chars or payload.editor in formats.ANSWER_IN_PAYLOAD:
        worked = turn.answer_chars >= CAPTURE_MIN_ANSWER_CHARS  # the answer is all it knows
    else:  # nothing tells what the turn did (VS Code): a task-sized prompt stands for it
        worked = session.prompt_chars >= CAPTURE_MIN_TASK_PROMPT
    if turn.stored or not worked:
        raise _Skip("")
    session.asked_at_prompt = session.prompts
    session.save()
    return CAPTURE_REQUEST


_HANDLERS: "dict[HookEvent, Callable[[Event], str]]" = {
    "session-start": _session_start, "prompt": _prompt, "stop": _stop, "answer": _answer}


def _direct_score(result: "MemoryLine") -> float:
    """How well the memory itself matches the prompt: its score without the lift of its
    neighbours and without the demotion of stale code (a stale memory that matches is still
    shown, with the note saying to verify it)."""
    explain = result.get("explain")
    parts = explain if isinstance(explain, dict) else {}
    return float(result.get("score", 0)) - float(parts.get("context", 0)) \
        - float(parts.get("code", 0))


def _emit(event: "HookEvent", text: str, client: "Editor") -> None:
    """Print `text` as `client` takes it for `event` (nothing when it cannot)."""
    out = formats.answer(client, event, text)
    if out:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


# -- the daemon ------------------------------------------------------------------------------

class _Daemon:
    """Calls from this hook: first without grpcio (lean_call.py), which is most of a hook's
    time to load; the full client when that cannot answer (no daemon yet, an error status),
    which also starts the daemon."""

    def __init__(self, client: str, session: str) -> None:
        self._full: DaemonClient | None = None
        self.origin = {"via": "hook", "client": client, "session": session}

    def call(self, tool: str, workspace: str, deadline: float,
             arguments: "ToolArguments") -> "ToolResult":
        from memnest_proto import paths

        from ..lean_call import LeanCallFailed, LeanToolError, call_tool
        db_path = os.environ.get("MEMORY_DB_PATH", "").strip()
        if self._full is None and not os.environ.get("MEMNEST_REMOTE", "").strip():
            try:
                return call_tool(paths.socket_path(), tool, arguments, workspace, db_path,
                                 "memnest-hook", max(0.01, deadline - time.monotonic()),
                                 self.origin)
            except LeanToolError as exc:
                raise _Skip(f"{tool}: {exc.message}") from None
            except LeanCallFailed as exc:
                log_line("call", f"lean call failed ({exc}); using the full client")
        return self._full_call(tool, workspace, db_path, arguments)

    def _full_call(self, tool: str, workspace: str, db_path: str,
                   arguments: "ToolArguments") -> "ToolResult":
        from ..client import DaemonClient
        from ..errors import ToolFailure
        if self._full is None:
            self._full = DaemonClient(client_name="memnest-hook")
        try:
            return self._full.call_tool(tool, arguments, workspace, db_path,
                                        origin=self.origin)
        except ToolFailure as exc:
            raise _Skip(f"{tool}: {exc.message}") from None


def _call(client: _Daemon, tool: str, workspace: str, deadline: float,
          arguments: "ToolArguments") -> "ToolResult":
    if time.monotonic() >= deadline:
        raise _Skip("out of time budget before the call")
    return client.call(tool, workspace, deadline, arguments)


# -- per-session state -----------------------------------------------------------------------

class SessionState:
    """What this session's hooks have shown and asked, in a private file per session (the
    runtime folder, 0700): memory ids with the updated_at they were shown at, the number of
    prompts, the prompt at which capture was last asked for."""

    def __init__(self, name: str | None, data: "dict[str, object]"):
        self.name = name  # of its file in state_dir(); None: not kept (no session id)
        shown = data.get("shown")
        self.shown: dict[str, str] = {str(k): str(v) for k, v in shown.items()} \
            if isinstance(shown, dict) else {}
        self.prompts = _int(data.get("prompts"))
        self.asked_at_prompt = _int(data.get("asked_at_prompt"))
        # digests of the last two prompts (the newest last): the Stop hook tells by them
        # whether the transcript holds this turn yet
        digests = data.get("prompt_digests")
        self.prompt_digests: list[str] = [str(d) for d in digests[-2:]] \
            if isinstance(digests, list) else []
        self.prompt_chars = _int(data.get("prompt_chars"))  # of this turn's prompt
        self.answer_chars = _int(data.get("answer_chars"))  # of its answer, where told apart

    @classmethod
    def load(cls, session_id: str) -> "SessionState":
        """This session's state; reading makes nothing (save makes the folder)."""
        if not session_id:
            return cls(None, {})
        name = hashlib.sha256(session_id.encode()).hexdigest()[:32] + ".json"
        folder = state_dir(create=False)
        if folder is None:
            return cls(name, {})
        try:
            fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return cls(name, {})
        with os.fdopen(fd, "rb") as f:
            try:
                data = json.loads(f.read(1 << 20))
            except ValueError:
                data = {}
        return cls(name, data if isinstance(data, dict) else {})

    def was_shown(self, m: "MemoryLine") -> bool:
        return self.shown.get(str(m["id"])) == _version(m)

    def mark_shown(self, m: "MemoryLine") -> None:
        self.shown.pop(str(m["id"]), None)
        self.shown[str(m["id"])] = _version(m)
        while len(self.shown) > MAX_SHOWN:  # the oldest go first
            self.shown.pop(next(iter(self.shown)))

    def save(self) -> None:
        if self.name is None:
            return
        data = json.dumps({"shown": self.shown, "prompts": self.prompts,
                           "asked_at_prompt": self.asked_at_prompt,
                           "prompt_digests": self.prompt_digests,
                           "prompt_chars": self.prompt_chars,
                           "answer_chars": self.answer_chars}).encode()
        folder = state_dir(create=True)
        if folder is None:  # (never: made when missing, or refused)
            return
        path = folder / self.name
        tmp = folder / f".{self.name}.{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def _version(m: "MemoryLine") -> str:
    """What changes when a memory changes (updated_at alone has whole seconds)."""
    content = str(m.get("content", ""))[:PREVIEW_CHARS].encode()  # as a search preview has it
    return f"{m.get('updated_at')}:{hashlib.sha256(content).hexdigest()[:16]}"


def _float_env(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, "").strip() or default)
    except ValueError:
        return default


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def state_dir(create: bool) -> Path | None:
    """The sessions' state: hooks/ in the daemon's socket folder, both made 0700 when missing
    (as memnestd makes its folder; a remote daemon's client has none of its own) only when
    `create`, else None. A folder that is there must be a real folder of this user that
    others cannot enter: one that is not (a link, another user's, open to others) is
    refused, never chmodded, and the hook then keeps no state and injects nothing."""
    from memnest_proto import paths

    from ..own_paths import PRIVATE, Missing, NotOurs, own_folder
    folder = paths.socket_path().parent / "hooks"
    try:
        own_folder(folder.parent, PRIVATE, create=create)
        own_folder(folder, PRIVATE, create=create)
    except Missing:
        return None
    except NotOurs as exc:
        raise _Skip(f"session state not kept: {exc}") from None
    return folder


# -- the transcript's last turn ----------------------------------------------------------------

class Turn:
    def __init__(self) -> None:
        self.tool_calls = 0
        self.answer_chars = 0
        self.stored = False
        self.prompt = ""  # the digest of the prompt that began it, "" when none was found


def prompt_digest(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).encode("utf-8", "replace")).hexdigest()[:16]


def this_turn(turn: Turn, session: SessionState, answer: str) -> Turn:
    """The turn as far as the Stop hook can know it. Claude Code runs Stop before it writes
    the turn's answer to the transcript, and passes the answer as `last_assistant_message`:
    its length counts. When the transcript still ends with the previous prompt's turn, what
    it holds is that turn, not this one: only the answer is known."""
    digests = session.prompt_digests
    if len(digests) == 2 and turn.prompt == digests[0] != digests[1]:
        turn = Turn()
    turn.answer_chars = max(turn.answer_chars, len(answer), session.answer_chars)
    return turn


def last_turn(transcript: str) -> Turn:
    """What the agent did since the user's last prompt, from the tail of Claude Code's JSONL
    transcript (one message per line). Unreadable or missing: an empty turn."""
    turn = Turn()
    if not transcript:
        return turn
    try:
        fd = os.open(transcript, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return turn
    if not _regular(fd):  # a folder, a device, a pipe: nothing to read
        os.close(fd)
        return turn
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(max(0, size - MAX_TRANSCRIPT_TAIL))
        lines = f.read(MAX_TRANSCRIPT_TAIL).splitlines()
    for raw in reversed(lines):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        message = entry.get("message")
        role = message.get("role") if isinstance(message, dict) else None
        content: object = message.get("content") if isinstance(message, dict) else None
        if entry.get("type") == "user" and role == "user" and _is_prompt(content):
            turn.prompt = prompt_digest(_prompt_text(content))
            break
        if role != "assistant" or not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                turn.tool_calls += 1
                if str(block.get("name", "")).endswith(STORE_TOOL_SUFFIXES):
                    turn.stored = True
            elif block.get("type") == "text":
                turn.answer_chars += len(str(block.get("text", "")))
    return turn


def _regular(fd: int) -> bool:
    import stat
    return stat.S_ISREG(os.fstat(fd).st_mode)


def _prompt_text(content: "str | list[object]") -> str:
    if isinstance(content, str):
        return content
    return " ".join(str(b.get("text", "")) for b in content
                    if isinstance(b, dict) and b.get("type") == "text")


def _is_prompt(content: object) -> "TypeGuard[str | list[object]]":
    """A user entry that is the person's prompt, not a tool result sent back to the agent."""
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def debug_workspace(event: str, sent: str, answer: "dict[str, object]") -> None:
    """With MEMNEST_HOOK_DEBUG set, hooks.log says which workspace the hook sent and, when
    the daemon took another's memory (a worktree's repository), which and why."""
    if not os.environ.get("MEMNEST_HOOK_DEBUG", "").strip():
        return
    resolved = answer.get("resolved_workspace")
    if isinstance(resolved, dict):
        log_line(event, f"workspace {sent} -> {resolved.get('path')} ({resolved.get('why')})")
    else:
        log_line(event, f"workspace {sent}")


def log_line(event: str, message: str) -> None:
    """One line in hooks.log, beside the daemon's log; never raises."""
    try:
        from memnest_proto import paths

        from ..own_paths import UNSHARED, open_append, own_folder
        folder = paths.log_file().parent
        own_folder(folder, UNSHARED)  # the log's folder: one others could write is refused
        line = (f"{time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()} {event}: "
                f"{' '.join(message.split())[:500]}\n")
        with os.fdopen(open_append(folder / "hooks.log"), "a", encoding="utf-8") as f:
            f.write(line)
    except Exception:  # noqa: BLE001 - logging must not fail the hook
        pass


if __name__ == "__main__":
    sys.exit(main())
