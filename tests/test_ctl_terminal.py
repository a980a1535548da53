"""What memnest-ctl prints reaches a terminal, and the text it prints is not its own: memories
(an agent's, a teammate's shared file), tags, and names and lines of files in the repository
(code anchors, imported notes). Any of them can carry terminal controls: a screen clear
(ESC [2J), an OSC 52 clipboard write (ESC ] 52;c;... BEL), a C1 CSI (U+009B), a carriage
return that prints over a line. The real binary, run on such a workspace: no command prints
a control character it did not write itself (only newline and tab pass), the text stays
readable with each control shown as an escape, and --json keeps the text exact, every
control escaped."""
import json
import re
import subprocess
from pathlib import Path

import pytest

from support import BIN, git

CLEAR = "\x1b[2J\x1b[H"
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"
TITLE = "\x1b]0;owned\x1b\\"
C1_CSI = "\x9b31m"
OVERPRINT = "\rALL TESTS PASSED\x08\x7f"
HOSTILE = CLEAR + CLIPBOARD + TITLE + C1_CSI + OVERPRINT
CONTENT = f"Deploys run from the release branch{HOSTILE} after the smoke tests"
TAG = f"deploy{CLEAR}{C1_CSI}"
# A file of the repository whose name and lines are the terminal's business too.
CODE_FILE = f"src/release{CLIPBOARD}{C1_CSI}.py"
TEAM_CONTENT = f"The billing retries run three times{HOSTILE} with backoff"
NOTE = f"The staging cluster is rebuilt every Monday{HOSTILE} from a snapshot."
# A newline where a listing has one line a value: it would forge a search hit of its own.
FORGED = "Release notes go in CHANGES.md\n     7  0.999  Releases need no review by anyone"

# What may reach the terminal: printable text, newline and tab; no other C0 control, no DEL,
# no C1 control.
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def raw_controls(text: str) -> list[str]:
    return sorted({repr(c) for c in RAW_CONTROL.findall(text)})


def strings(value) -> list[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for v in value for s in strings(v)] if isinstance(value, list) else []


@pytest.fixture(scope="module")
def hostile(daemon, tmp_path_factory):
    """A repository with a planted file name, a memory citing it whose content and tags carry
    controls, the cited code changed since (so it is stale, with a diff), a teammate's
    shared file and a markdown note carrying them too."""
    repo = tmp_path_factory.mktemp("terminal").resolve() / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "Tester")
    code = repo / CODE_FILE
    code.parent.mkdir()
    code.write_text("RELEASE_BRANCH = 'release'\nSMOKE = True\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    client = daemon.client()
    memory = client.call_tool("memory_store", {
        "content": CONTENT, "tags": [TAG, "ops"], "keep_as_is": True,
        "anchors": [{"path": CODE_FILE, "lines": "1"}]}, str(repo), origin={
        "via": "agent", "client": f"agent{CLEAR}"})
    client.call_tool("memory_store", {"content": FORGED, "keep_as_is": True,
                                      "auto_anchor": False}, str(repo))
    code.write_text(f"RELEASE_BRANCH = 'main{CLEAR}{CLIPBOARD}'\nSMOKE = True\n")
    git(repo, "commit", "-qam", "switch branch")
    note = repo / "notes" / f"staging{C1_CSI}.md"
    note.parent.mkdir()
    note.write_text(f"# Staging{CLEAR}\n\n{NOTE}\n")
    yield {"repo": repo, "id": memory["id"], "env": daemon.env, "note": note}
    client.close()


def ctl(hostile, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "memnest-ctl"), *args, "--workspace", str(hostile["repo"])],
                          cwd=hostile["repo"], env=hostile["env"], capture_output=True,
                          timeout=120)


def shown(result: subprocess.CompletedProcess) -> str:
    """stdout and stderr as the terminal gets them, after checking the command worked."""
    out, err = result.stdout.decode(), result.stderr.decode()
    assert "Traceback" not in err, err
    return out + err


def teammates_file(repo: Path, content: str) -> None:
    """A shared memory as a teammate's commit brings it (team/format.py)."""
    folder = repo / ".memnest" / "shared"
    folder.mkdir(parents=True, exist_ok=True)
    gid = f"{abs(hash(content)):032x}"[-32:]
    (folder / f"{gid}.json").write_text(json.dumps({
        "_memnest": 1, "author": f"mallory{CLIPBOARD}", "category": "general",
        "content": content, "created_at": "2026-12-01T10:00:00Z", "importance": 3,
        "tags": [TAG], "updated_at": "2026-12-01T10:00:00Z"}, indent=2, sort_keys=True))


@pytest.mark.parametrize("command", [
    ("search", "release branch smoke tests"),
    ("show", "{id}"),
    ("stale",),
    ("stats",),
    ("status",),
    ("import", "--from", "markdown", "{note}", "--dry-run"),
])
def test_no_command_prints_a_control_it_did_not_write(hostile, command):
    args = [a.format(id=hostile["id"], note=hostile["note"]) for a in command]
    result = ctl(hostile, *args)
    text = shown(result)
    assert result.returncode == 0, text
    assert raw_controls(text) == [], f"{command}: {raw_controls(text)} in\n{text!r}"
    if command[0] in ("search", "show", "stale"):
        assert "Deploys run from the release branch" in text and "after the smoke tests" in text
        assert "\\x1b[2J" in text and "\\x9b31m" in text and "\\x07" in text, text


def test_the_cited_files_name_and_diff_are_shown_escaped(hostile):
    text = shown(ctl(hostile, "stale"))
    assert "src/release\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\x07\\x9b31m.py" in text
    assert raw_controls(text) == []


def test_a_value_cannot_forge_a_line_of_a_listing(hostile):
    text = shown(ctl(hostile, "search", "release notes CHANGES.md review"))
    assert "CHANGES.md\\n     7  0.999  Releases" in text, text
    assert not any(line.startswith("     7  0.999") for line in text.splitlines()), text


def test_a_teammates_text_arrives_through_sync_escaped(hostile):
    teammates_file(hostile["repo"], TEAM_CONTENT)
    text = shown(ctl(hostile, "sync"))
    assert raw_controls(text) == [], text
    assert "The billing retries run three times" in text, text
    later = f"The cache is warmed by the nightly job{HOSTILE} at two"
    teammates_file(hostile["repo"], later)
    result = ctl(hostile, "sync", "--json")
    assert raw_controls(result.stdout.decode()) == []
    # sync shows the start of each text, exactly: its controls escaped as JSON escapes them
    assert any(s.startswith(later[:60]) for s in strings(json.loads(result.stdout)))


@pytest.mark.parametrize("command", [
    ("search", "release branch smoke tests"),
    ("show", "{id}"),
    ("stale",),
])
def test_json_output_escapes_every_control_and_keeps_the_text(hostile, command):
    args = [a.format(id=hostile["id"]) for a in command]
    result = ctl(hostile, *args, "--json")
    text = shown(result)
    assert result.returncode == 0, text
    assert raw_controls(text) == [], f"{command}: {raw_controls(text)}"
    assert CONTENT in strings(json.loads(result.stdout))
