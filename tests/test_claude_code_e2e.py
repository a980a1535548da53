"""Claude Code itself (the CLI from npm, `make editors`) through twenty identical working turns
against a scripted model on loopback (fake_messages_api.py), with memnest set up the way a
user sets it up: a real daemon, `memnest-ctl config claude-code` writing the MCP entry and the
hooks, and nothing else of memnest in Claude Code's environment.

Every turn runs two tools and answers; memnest's Stop hook must then ask for a store (the fake
sees the hook's reason come back as a message), the fake stores one memory naming the turn
through memnest's MCP tool, and the daemon must hold it afterwards. From the second turn on,
the memory of the turn before should reach the model through a hook (the prompt's recall, or
the digest of a resumed session). Two ways of running the same session: one process reading
twenty prompts (what an interactive session does), and twenty `claude -p` runs that each
resume the session (what scripts do). Claude Code's hook events and transcript say how each
hook ended."""
import json
import os
import queue
import re
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import BIN
from fake_messages_api import FakeMessagesAPI, Recorded, TurnScript, texts

REPO = Path(__file__).resolve().parent.parent
CLAUDE = REPO / ".tools" / "editors" / "node_modules" / ".bin" / "claude"
TURNS = 20
PROMPT = "Run the two release checks and report what the checklist says."
CODENAMES = ("amber birch cedar delta ember fjord garnet harbor indigo juniper kestrel lagoon "
             "maple nectar onyx pepper quartz raven saffron tundra").split()
RECALL_LIMIT = 5  # results the prompt hook shows at most (shims/cli/hook.py)
TURN_SECONDS = 60  # one turn, generous: a turn takes about a second, a cold start three
# Claude Code's own variables and memnest's are left out: the hooks and the MCP server must
# find the daemon through what `memnest-ctl config` wrote, nothing inherited.
NOT_INHERITED = ("MEMNEST_", "MEMORY_", "CLAUDE", "ANTHROPIC_")


def memory_text(turn: int) -> str:
    return (f"Turn {turn}: the release checklist asks for a signed tag before publishing "
            f"(codename {CODENAMES[(turn - 1) % len(CODENAMES)]}).")


def claude_binary() -> Path:
    if CLAUDE.is_file() and os.access(CLAUDE, os.X_OK):
        return CLAUDE
    message = f"{CLAUDE.relative_to(REPO)} is missing: run `make editors`"
    if os.environ.get("MEMNEST_EDITOR_CLIS") == "1":
        pytest.fail(message)
    pytest.skip(message)


class Setup:
    """A daemon, a git workspace configured by `memnest-ctl config claude-code`, a fake model
    and the environment Claude Code runs in (a home of its own, the fake as its API)."""

    def __init__(self, daemon, tmp_path: Path, api: FakeMessagesAPI):
        self.claude = claude_binary()
        self.daemon = daemon
        self.api = api
        self.workspace = (tmp_path / "project").resolve()
        self.workspace.mkdir()
        subprocess.run(["git", "init", "-q", str(self.workspace)], check=True)
        configured = subprocess.run([str(BIN / "memnest-ctl"), "config", "claude-code",
                                     "--workspace", str(self.workspace)],
                                    env=daemon.env, capture_output=True, text=True, timeout=60)
        assert configured.returncode == 0, configured.stdout + configured.stderr
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(NOT_INHERITED)}
        self.env.update(HOME=str(self.home), ANTHROPIC_BASE_URL=api.url,
                        ANTHROPIC_API_KEY="sk-ant-test-not-a-key", DISABLE_TELEMETRY="1",
                        DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")

    def command(self, *args: str) -> list[str]:
        # as root, Claude Code refuses bypassPermissions: allow just the tools the turns use
        return [str(self.claude), "-p", *args, "--allowedTools",
                "Bash,mcp__memnest__memory_store"]

    def hooks_log(self) -> str:
        path = self.daemon.log.parent / "hooks.log"
        return path.read_text() if path.exists() else "(no hooks.log)"

    def memories(self) -> list[dict]:
        client = self.daemon.client(autostart=False)
        try:
            return client.call_tool("memory_list", {"limit": 100},
                                    str(self.workspace))["memories"]
        finally:
            client.close()


def new_in_turn(request: Recorded) -> str:
    """What a request adds after the last answer of the conversation (the prompt and what
    hooks attached to it), as text."""
    messages = request.messages
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    return "\n".join(texts(m) for m in messages[last + 1:])


def memnest_block_with(text: str, request: Recorded, kinds: str) -> bool:
    """Whether the request's new messages hold `text` inside a memnest block of these kinds
    (a regex alternative: "recall", "digest|recall")."""
    pattern = rf"<memnest-(?:{kinds})-[0-9a-f]+[^>]*>(?:(?!</memnest-).)*{re.escape(text)}"
    return re.search(pattern, new_in_turn(request), re.S) is not None


def first_request(s: Setup, turn: int) -> Recorded:
    return next(r for r in s.api.agent_requests() if r.turn == turn and r.step == "prompt")


class StreamSession:
    """One `claude -p --input-format stream-json` process: a prompt in, the turn's events out
    until its result."""

    def __init__(self, s: Setup, log: Path):
        self.stderr = log.open("w")
        self.proc = subprocess.Popen(
            s.command("--input-format", "stream-json", "--output-format", "stream-json",
                      "--verbose", "--include-hook-events"),
            cwd=s.workspace, env=s.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.put(line)
        self.lines.put("")

    def turn(self, prompt: str) -> list[dict]:
        self.proc.stdin.write(json.dumps({"type": "user", "message": {  # type: ignore
            "role": "user", "content": [{"type": "text", "text": prompt}]}}) + "\n")
        self.proc.stdin.flush()  # type: ignore[union-attr]
        events = []
        deadline = time.monotonic() + TURN_SECONDS
        while True:
            line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if not line:
                raise AssertionError(f"claude exited ({self.proc.wait(10)}) mid-turn")
            events.append(json.loads(line))
            if events[-1].get("type") == "result":
                return events

    def close(self) -> int:
        self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            return self.proc.wait(30)
        finally:
            self.proc.kill()
            self.stderr.close()


@dataclass
class Run:
    """What a run of TURNS turns left: the fake's record, what Claude Code printed per turn,
    and the workspace's memories as the daemon held them afterwards."""
    setup: Setup
    outputs: list  # per turn: the stream's events, or the --output-format json result
    memories: list[dict]
    seconds: float
    session_id: str = ""

    def steps(self) -> dict[int, list[str]]:
        return self.setup.api.steps()


@contextmanager
def environment(request, root: Path):
    """Claude Code first (skip or fail before a daemon starts), then the shared daemon."""
    claude_binary()
    daemon = request.getfixturevalue("daemon")
    with FakeMessagesAPI(TurnScript(memory_text)) as api:
        yield Setup(daemon, root, api)


@pytest.fixture(scope="module")
def one_session(request, tmp_path_factory):
    """One Claude Code process, given the same prompt TURNS times: one session, as in an
    interactive window (SessionStart once, then UserPromptSubmit and Stop per prompt)."""
    root = tmp_path_factory.mktemp("claude-session")
    with environment(request, root) as s:
        session = StreamSession(s, root / "claude.stderr")
        started = time.monotonic()
        try:
            outputs = [session.turn(PROMPT) for _ in range(TURNS)]
        finally:
            code = session.close()
        seconds = time.monotonic() - started
        assert code == 0, (root / "claude.stderr").read_text()
        yield Run(s, outputs, s.memories(), seconds)


@pytest.fixture(scope="module")
def resumed_runs(request, tmp_path_factory):
    """TURNS runs of `claude -p PROMPT --output-format json`, each after the first resuming
    the session the first began (SessionStart with source "resume" every run)."""
    root = tmp_path_factory.mktemp("claude-print")
    with environment(request, root) as s:
        outputs: list[dict] = []
        started = time.monotonic()
        for n in range(1, TURNS + 1):
            resume = ["--resume", outputs[0]["session_id"]] if outputs else []
            run = subprocess.run(s.command(PROMPT, "--output-format", "json", *resume),
                                 cwd=s.workspace, env=s.env, capture_output=True, text=True,
                                 timeout=TURN_SECONDS)
            assert run.returncode == 0, f"turn {n}: {run.stdout[-2000:]}{run.stderr[-2000:]}"
            outputs.append(json.loads(run.stdout))
        seconds = time.monotonic() - started
        yield Run(s, outputs, s.memories(), seconds, outputs[0]["session_id"])


def assert_every_turn_captured(run: Run) -> None:
    """The Stop hook's reason reached the model in every turn, which then stored the turn's
    memory through memnest's MCP tool; the daemon holds exactly those memories."""
    steps = run.steps()
    # the first store of a conversation loads the tool's schema; later ones call it directly
    loading = list(TurnScript.STEPS)
    direct = [step for step in TurnScript.STEPS if step != "tool-search"]
    for turn in range(1, TURNS + 1):
        assert steps.get(turn) in (loading, direct), \
            f"turn {turn}: {steps.get(turn)}\nhooks.log:\n{run.setup.hooks_log()[-3000:]}"
    assert sorted(steps) == list(range(1, TURNS + 1)), sorted(steps)
    answers = run.setup.api.script.store_results
    assert sorted(answers) == list(range(1, TURNS + 1))
    for turn, answer in answers.items():
        assert "stored" in answer and "error" not in answer.lower(), (turn, answer)
    stored = sorted(run.memories, key=lambda m: m["id"])
    assert [m["content"] for m in stored] == [memory_text(t) for t in range(1, TURNS + 1)]
    assert [m["tags"] for m in stored] == [[f"turn-{t:02d}"] for t in range(1, TURNS + 1)]


def recalled_the_turn_before(run: Run, turn: int, kinds: str) -> bool:
    return memnest_block_with(memory_text(turn - 1), first_request(run.setup, turn), kinds)


def test_session_every_turn_is_asked_for_and_stores_its_memory(one_session):
    assert_every_turn_captured(one_session)
    print(f"{TURNS} turns in one session: {one_session.seconds:.1f} s")


def test_session_hooks_exit_0_and_stop_asks_once_a_turn(one_session):
    for n, events in enumerate(one_session.outputs, 1):
        result = events[-1]
        assert result.get("subtype") == "success" and not result.get("is_error"), result
        hooks = [e for e in events if e.get("type") == "system"
                 and e.get("subtype") == "hook_response"]
        assert hooks and all(h.get("exit_code") == 0 and h.get("outcome") == "success"
                             for h in hooks), hooks
        assert [h["hook_event"] for h in hooks if h["hook_event"] != "SessionStart"] == \
            ["UserPromptSubmit", "Stop", "Stop"], \
            f"turn {n}: {hooks}\nhooks.log:\n{one_session.setup.hooks_log()[-3000:]}"
        stops = [h for h in hooks if h["hook_event"] == "Stop"]
        assert json.loads(stops[0]["stdout"])["decision"] == "block", stops[0]
        assert not stops[1].get("stdout", "").strip(), \
            f"turn {n}: the Stop hook asked again while the agent was storing: {stops[1]}"
    starts = [e for events in one_session.outputs for e in events
              if e.get("subtype") == "hook_response" and e.get("hook_event") == "SessionStart"]
    assert len(starts) == 1, starts


def test_session_prompt_hook_recalls_what_earlier_turns_stored(one_session):
    # while the turns' memories fill fewer than the recall limit of results, each prompt
    # recalls the memory the turn before stored (the others were shown already)
    for turn in range(2, RECALL_LIMIT + 2):
        assert recalled_the_turn_before(one_session, turn, "recall"), \
            f"turn {turn}: {new_in_turn(first_request(one_session.setup, turn))[:3000]}"


def test_session_every_prompt_recalls_the_turn_before(one_session):
    """Once the first five memories were shown, the sixth and later rank below them: the
    prompt hook asks for more results than it shows, so they still come back."""
    missing = [turn for turn in range(2, TURNS + 1)
               if not recalled_the_turn_before(one_session, turn, "recall")]
    assert not missing, f"turns whose prompt did not recall the turn before: {missing}"


def test_resumed_runs_every_turn_is_asked_for_and_stores_its_memory(resumed_runs):
    assert_every_turn_captured(resumed_runs)
    print(f"{TURNS} resumed print runs: {resumed_runs.seconds:.1f} s")


def test_resumed_runs_succeed_in_one_session_and_hooks_exit_0(resumed_runs):
    for n, result in enumerate(resumed_runs.outputs, 1):
        assert result.get("subtype") == "success" and not result.get("is_error"), result
        assert result["session_id"] == resumed_runs.session_id, f"turn {n}"
    hooks = [a for a in transcript_attachments(resumed_runs.setup, resumed_runs.session_id)
             if str(a.get("type", "")).startswith("hook_")]
    assert sum(a["type"] == "hook_blocking_error" and a.get("hookEvent") == "Stop"
               for a in hooks) == TURNS, hooks
    failed = [a for a in hooks if a.get("exitCode") not in (None, 0)
              or a["type"] in ("hook_non_blocking_error", "hook_error", "hook_cancelled")]
    assert not failed, failed


def test_resumed_runs_each_turn_sees_the_turn_before(resumed_runs):
    # each run starts the session again: the session-start digest carries the newest memory
    for turn in range(2, TURNS + 1):
        assert recalled_the_turn_before(resumed_runs, turn, "digest|recall"), \
            f"turn {turn}: {new_in_turn(first_request(resumed_runs.setup, turn))[:3000]}"


def transcript_attachments(s: Setup, session_id: str) -> list[dict]:
    """The attachments of Claude Code's transcript of the session (where it records how each
    hook ended, with its exit code when it failed)."""
    found = list((s.home / ".claude" / "projects").glob(f"*/{session_id}.jsonl"))
    assert len(found) == 1, found
    entries = [json.loads(line) for line in found[0].read_text().splitlines() if line.strip()]
    return [e["attachment"] for e in entries if isinstance(e.get("attachment"), dict)]
