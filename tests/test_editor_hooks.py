"""Every editor memnest configures, fed its own documented payloads (tests/data/hook_payloads,
taken from each editor's documentation) through the very commands `memnest-ctl config` wrote
into that editor's files, against a real daemon: the documented answer shape, the session
kept across events, capture at the end of a working turn, never a loop, always exit 0.
Issue 37."""
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
from support import BIN
from memnest_shims.cli.hook_text import DEFAULT_TOKENS, tokens

PAYLOADS = Path(__file__).parent / "data" / "hook_payloads"
CTL = BIN / "memnest-ctl"
PLACEHOLDER = "/home/user/project"
LONG_ANSWER = ("The sync job failed on its second run because the lock file of the first run "
               "was never removed; I moved the cleanup into a finally block and added a test "
               "that runs the job twice. ") * 5

# editor -> (fixture folder, {memnest event: fixture name}, the file its hooks are in)
EDITORS = {
    "claude-code": ("claude-code", {"session-start": "SessionStart",
                                    "prompt": "UserPromptSubmit", "stop": "Stop"}),
    "vscode": ("vscode", {"session-start": "SessionStart", "prompt": "UserPromptSubmit",
                          "stop": "Stop"}),
    "cursor": ("cursor", {"session-start": "sessionStart", "prompt": "beforeSubmitPrompt",
                          "answer": "afterAgentResponse", "stop": "stop"}),
    "gemini": ("gemini", {"session-start": "SessionStart", "prompt": "BeforeAgent",
                          "stop": "AfterAgent"}),
    "codex": ("codex", {"session-start": "SessionStart", "prompt": "UserPromptSubmit",
                        "stop": "Stop"}),
    "kiro-cli": ("kiro-cli", {"session-start": "agentSpawn", "prompt": "userPromptSubmit"}),
}


@pytest.fixture
def editor_env(tmp_path, daemon) -> dict:
    home = tmp_path / "home"
    home.mkdir()
    env = {**daemon.env, "HOME": str(home), "MEMNEST_HOOK_BUDGET_MS": "20000",
           "PATH": f"{BIN}:{daemon.env.get('PATH', os.environ.get('PATH', ''))}"}
    for name in ("MEMORY_WORKSPACE", "CLAUDE_PROJECT_DIR", "XDG_CONFIG_HOME"):
        env.pop(name, None)
    return env


@pytest.fixture
def memories(call) -> dict[str, int]:
    texts = {
        "export": ("The export command guards against an empty store before dividing by the "
                   "item count", "decision", 3),
        "style": ("The user wants every new test written with pytest fixtures, never unittest "
                  "classes", "preference", 5),
    }
    ids = {}
    for key, (text, category, importance) in texts.items():
        ids[key] = call("memory_store", content=text, category=category,
                        importance=importance)["id"]
    return ids


def configure(editor: str, workspace: Path, env: dict) -> dict[str, str]:
    """Run `memnest-ctl config <editor>` and read back the hook command it installed for
    each editor event."""
    out = subprocess.run([str(CTL), "config", editor, "--workspace", str(workspace)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    home = Path(env["HOME"])
    where = {"claude-code": workspace / ".claude" / "settings.local.json",
             "vscode": workspace / ".claude" / "settings.local.json",
             "cursor": home / ".cursor" / "hooks.json",
             "gemini": home / ".gemini" / "settings.json",
             "codex": home / ".codex" / "hooks.json",
             "kiro-cli": home / ".kiro" / "agents" / "memnest.json"}[editor]
    hooks = json.loads(where.read_text())["hooks"]
    commands = {}
    for event, entries in hooks.items():
        flat = [h for e in entries for h in (e["hooks"] if "hooks" in e else [e])]
        ours = [h["command"] for h in flat if "memnest-hook" in h["command"]]
        assert len(ours) == 1, (event, flat)
        commands[event] = ours[0]
    return commands


def payload(editor: str, name: str, workspace: Path, session: str, **changes) -> dict:
    folder = EDITORS[editor][0]
    text = (PAYLOADS / folder / f"{name}.json").read_text().replace(PLACEHOLDER,
                                                                   str(workspace))
    data = json.loads(text)
    for key in ("session_id", "conversation_id"):
        if key in data:
            data[key] = session
    if "transcript_path" in data:  # the editor's transcript, not there yet
        data["transcript_path"] = str(workspace.parent / f"{session}.transcript")
    data.update(changes)
    return data


def run(command: str, data: dict, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    out = subprocess.run(["bash", "-c", command], input=json.dumps(data), env=env,
                         cwd=str(cwd), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return out


def documented(editor: str, name: str):
    folder = PAYLOADS / EDITORS[editor][0]
    found = list(folder.glob(f"{name}.answer.*"))
    if not found:
        return None
    text = found[0].read_text()
    return json.loads(text) if found[0].suffix == ".json" else text


def shape(value):
    """The keys of a JSON answer, nested, with the values that name events kept."""
    if isinstance(value, dict):
        return {k: (v if k == "hookEventName" or k == "decision" else shape(v))
                for k, v in value.items()}
    return type(value).__name__


def context_of(editor: str, out: str) -> str:
    if editor == "kiro-cli":
        return out
    reply = json.loads(out)
    if editor == "cursor":
        return reply["additional_context"]
    return reply["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("editor", list(EDITORS))
def test_each_editor_gets_its_documented_answers(editor, editor_env, workspace, memories,
                                                call):
    commands = configure(editor, workspace, editor_env)
    events = EDITORS[editor][1]
    by_event = {ours: commands[name] for ours, name in events.items()}
    assert set(by_event) == set(events)  # every event it documents and memnest uses
    session = str(uuid.uuid4())
    cwd = Path(editor_env["HOME"])  # the hook must not depend on where it is started

    # Session start: a digest, in the documented shape.
    start = events["session-start"]
    out = run(by_event["session-start"], payload(editor, start, workspace, session),
              editor_env, cwd).stdout
    digest = context_of(editor, out)
    answer = documented(editor, start)
    if isinstance(answer, dict):
        assert shape(json.loads(out)) == shape(answer)
    assert f"[#{memories['style']} " in digest and "memnest-digest-" in digest
    assert f"[#{memories['export']} " in digest and tokens(digest) <= DEFAULT_TOKENS[
        "session-start"]
    lock = call("memory_store", content="The sync job must remove its lock file in a finally "
                "block; a leftover lock made the second run fail", category="learning")["id"]

    # The prompt: recalled where the editor lets a prompt hook add context, never what the
    # digest already showed in this session.
    prompt = events["prompt"]
    asked = payload(editor, prompt, workspace, session,
                    prompt="Why does the sync job fail on the second run? Check the lock file; the "
                           "export command guards an empty store, is that related?")
    out = run(by_event["prompt"], asked, editor_env, cwd).stdout
    if editor in ("vscode", "cursor"):  # their prompt hooks cannot add context
        assert out == ""
    else:
        recalled = context_of(editor, out)
        assert f"[#{lock} " in recalled and "(why: matches" in recalled
        assert f"[#{memories['export']} " not in recalled  # matches, but the digest showed it
        assert tokens(recalled) <= DEFAULT_TOKENS["prompt"]
        answer = documented(editor, prompt)
        if isinstance(answer, dict):
            assert shape(json.loads(out)) == shape(answer)
        # the same prompt again in the session: nothing new to show
        assert run(by_event["prompt"], asked, editor_env, cwd).stdout == ""

    if "stop" not in events:
        return
    # The end of a working turn: asked once to store, in the documented shape.
    if "answer" in events:  # Cursor tells the answer to afterAgentResponse
        run(by_event["answer"], payload(editor, events["answer"], workspace, session,
                                        text=LONG_ANSWER), editor_env, cwd)
    stop = events["stop"]
    long_answer = {"last_assistant_message": LONG_ANSWER} if editor in ("claude-code",
                                                                        "codex") else \
        {"prompt_response": LONG_ANSWER} if editor == "gemini" else {}
    out = run(by_event["stop"], payload(editor, stop, workspace, session, **long_answer),
              editor_env, cwd).stdout
    assert "memory_store" in out
    answer = documented(editor, stop)
    assert shape(json.loads(out)) == shape(answer)
    # The turn that follows because of it is not asked again: no loop.
    continuing = {"loop_count": 1} if editor == "cursor" else {"stop_hook_active": True}
    assert run(by_event["stop"], payload(editor, stop, workspace, session, **long_answer,
                                         **continuing), editor_env, cwd).stdout == ""
    assert run(by_event["stop"], payload(editor, stop, workspace, session, **long_answer),
               editor_env, cwd).stdout == ""  # once per turn


def test_claude_code_stop_before_the_transcript_holds_the_answer(editor_env, workspace,
                                                                  memories, tmp_path):
    """Claude Code runs Stop before it writes the turn's answer to the transcript: the
    transcript has the prompt and one tool call, the payload has the answer."""
    commands = configure("claude-code", workspace, editor_env)
    session = str(uuid.uuid4())
    prompt = "Why does the sync job fail on the second run?"
    run(commands["UserPromptSubmit"], payload("claude-code", "UserPromptSubmit", workspace,
                                              session, prompt=prompt), editor_env, workspace)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(line) for line in [
        {"type": "user", "message": {"role": "user", "content": prompt}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}},
    ]) + "\n")
    short = payload("claude-code", "Stop", workspace, session,
                    transcript_path=str(transcript))
    assert run(commands["Stop"], short, editor_env, workspace).stdout == ""  # a light turn
    run(commands["UserPromptSubmit"], payload("claude-code", "UserPromptSubmit", workspace,
                                              session, prompt=prompt), editor_env, workspace)
    out = run(commands["Stop"], {**short, "last_assistant_message": LONG_ANSWER}, editor_env,
              workspace)
    assert json.loads(out.stdout)["decision"] == "block"


def test_claude_codes_hooks_in_vscode_and_cursor(editor_env, workspace, memories):
    """VS Code and Cursor run the hooks in .claude/settings*.json too: VS Code's payload gets
    VS Code's answer; in Cursor they stay silent (Cursor has memnest's own hooks)."""
    commands = configure("claude-code", workspace, editor_env)
    session = str(uuid.uuid4())
    out = run(commands["Stop"], payload("vscode", "Stop.camelCase-2026-06", workspace,
                                        session), editor_env, workspace)
    assert out.stdout == ""  # a new session that did nothing yet
    run(commands["UserPromptSubmit"], payload("vscode", "UserPromptSubmit", workspace, session,
                                              prompt="Refactor the sync job's locking"),
        editor_env, workspace)
    reply = json.loads(run(commands["Stop"], payload("vscode", "Stop", workspace, session),
                           editor_env, workspace).stdout)
    assert reply["hookSpecificOutput"]["decision"] == "block" and "decision" not in reply
    for name in ("sessionStart", "beforeSubmitPrompt", "stop"):
        event = {"sessionStart": "SessionStart", "beforeSubmitPrompt": "UserPromptSubmit",
                 "stop": "Stop"}[name]
        assert run(commands[event], payload("cursor", name, workspace, session), editor_env,
                   workspace).stdout == ""


def test_kiro_ide_hooks(editor_env, workspace, memories):
    out = subprocess.run([str(CTL), "config", "kiro", "--workspace", str(workspace)],
                         env=editor_env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    recall = json.loads((workspace / ".kiro/hooks/memnest-recall.kiro.hook").read_text())
    env = {**editor_env, "USER_PROMPT": "Why does the export command fail on an empty store?"}
    proc = subprocess.run(["bash", "-c", recall["then"]["command"]], env=env, cwd=workspace,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and f"[#{memories['export']} " in proc.stdout
    assert proc.stdout.startswith("<memnest-recall-")  # plain text: Kiro adds it as it is
    capture = json.loads((workspace / ".kiro/hooks/memnest-capture.kiro.hook").read_text())
    assert capture["when"] == {"type": "agentStop"} and "memory_store" in capture["then"][
        "prompt"]
    assert "/" not in recall["then"]["command"]  # a shared file: no path of this machine


def test_user_wide_hooks_stay_silent_where_memnest_is_not_set_up(editor_env, workspace,
                                                                  memories, tmp_path):
    commands = configure("cursor", workspace, editor_env)
    other = tmp_path / "unrelated"
    other.mkdir()
    session = str(uuid.uuid4())
    for name in ("sessionStart", "stop"):
        data = payload("cursor", name, other, session)
        assert run(commands[name], data, editor_env, other).stdout == ""


def test_codex_entry_is_merged_into_the_users_toml(editor_env, workspace, tmp_path):
    import tomllib
    config = Path(editor_env["HOME"]) / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    theirs = ('# my settings\nmodel = "gpt-5-codex"\n\n[mcp_servers.github]\ncommand = "gh-mcp"'
              '\n\n[mcp_servers.memnest]\ncommand = "/old/memnest-mcp"\nstartup_timeout_sec = 30'
              '\n\n[mcp_servers.memnest.env]\nMEMORY_WORKSPACE = "/old"\n\n[features]\nhooks = '
              'true\n')
    config.write_text(theirs)
    configure("codex", workspace, editor_env)
    text = config.read_text()
    written = tomllib.loads(text)
    assert text.startswith("# my settings\n") and written["model"] == "gpt-5-codex"
    assert written["mcp_servers"]["github"] == {"command": "gh-mcp"}
    assert written["features"] == {"hooks": True}
    entry = written["mcp_servers"]["memnest"]
    assert entry["command"] == str(BIN / "memnest-mcp") and entry["startup_timeout_sec"] == 30
    assert "MEMORY_WORKSPACE" not in entry.get("env", {})  # global: the folder decides
    checked = subprocess.run([str(CTL), "config", "codex", "--check", "--workspace",
                              str(workspace)], env=editor_env, capture_output=True, text=True,
                             timeout=60)
    assert checked.returncode == 0, checked.stdout
    # an inline table memnest does not edit: refused, file untouched
    config.write_text('mcp_servers = { memnest = { command = "x" } }\n')
    out = subprocess.run([str(CTL), "config", "codex", "--workspace", str(workspace)],
                         env=editor_env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "inline" in out.stderr
    assert config.read_text() == 'mcp_servers = { memnest = { command = "x" } }\n'


@pytest.mark.parametrize("editor, rel", [("gemini", ".gemini/settings.json"),
                                         ("kiro-cli", ".kiro/agents/memnest.json")])
def test_entry_and_hooks_in_one_user_file(editor, rel, editor_env, workspace):
    """Gemini's settings and Kiro's agent hold the MCP entry and the hooks: one write, one
    backup, the user's keys kept, and a second run changes nothing."""
    path = Path(editor_env["HOME"]) / rel
    path.parent.mkdir(parents=True)
    theirs = {"theme": "dark", "mcpServers": {"github": {"command": "gh-mcp"}},
              "hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "audit"}]}]}}
    path.write_text(json.dumps(theirs))
    first = subprocess.run([str(CTL), "config", editor, "--json", "--workspace",
                            str(workspace)], env=editor_env, capture_output=True, text=True,
                           timeout=60)
    assert first.returncode == 0, first.stderr
    written = json.loads(path.read_text())
    assert written["theme"] == "dark" and written["mcpServers"]["github"] == {
        "command": "gh-mcp"}
    assert written["hooks"]["BeforeTool"] == theirs["hooks"]["BeforeTool"]
    assert "MEMORY_WORKSPACE" not in written["mcpServers"]["memnest"].get("env", {})
    assert len(list(path.parent.glob(path.name + ".memnest-backup-*"))) == 1
    again = subprocess.run([str(CTL), "config", editor, "--json", "--workspace",
                            str(workspace)], env=editor_env, capture_output=True, text=True,
                           timeout=60)
    facts = json.loads(again.stdout)
    assert facts["changed"] is False and not any(i["changed"] for i in facts["integration"])
    assert json.loads(path.read_text()) == written
    checked = subprocess.run([str(CTL), "config", editor, "--check", "--workspace",
                              str(workspace)], env=editor_env, capture_output=True, text=True,
                             timeout=60)
    assert checked.returncode == 0, checked.stdout
