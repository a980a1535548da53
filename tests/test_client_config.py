"""`memnest-ctl config <client>`: each client's real config file, merged in place with every
other server kept, backed up, valid JSON after; `--check` and `--print`. HOME and the XDG
folders point into the test's temp dir, so no real user file is touched."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memnest_shims.cli import editor_configs as cc

from support import OFFLINE_MODEL

CTL = Path(sys.executable).parent / "memnest-ctl"
MCP = Path(sys.executable).parent / "memnest-mcp"

OTHER = {"command": "npx", "args": ["-y", "@acme/other-server"], "env": {"TOKEN": "keep-me"}}

# Where each client keeps the file, relative to (project, home).
LOCATIONS = {
    "claude-code": ("project", ".mcp.json", "mcpServers"),
    "claude-desktop": ("home", ".config/Claude/claude_desktop_config.json", "mcpServers"),
    "cursor": ("project", ".cursor/mcp.json", "mcpServers"),
    "vscode": ("project", ".vscode/mcp.json", "servers"),
    "kiro": ("project", ".kiro/settings/mcp.json", "mcpServers"),
}


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("APPDATA", raising=False)
    return home


@pytest.fixture
def env(home, fresh_daemon) -> dict:
    """The CLI's environment: a temp HOME, a socket no daemon listens on (unless a test starts
    one), and no model setting unless a test adds one."""
    # this install's programs on PATH, as Kiro's shared hook file needs memnest-hook
    e = {**fresh_daemon.env, "HOME": str(home),
         "PATH": f"{CTL.parent}:{fresh_daemon.env.get('PATH', '')}"}
    for name in ("XDG_CONFIG_HOME", "APPDATA", "MEMORY_EMBEDDING_MODEL", "MEMNEST_LOG_FILE"):
        e.pop(name, None)
    return e


def ctl(*args, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(CTL), *args], env=env, cwd=str(cwd), capture_output=True,
                          text=True, timeout=60)


def config_file(client: str, project: Path, home: Path) -> tuple[Path, str]:
    where, rel, key = LOCATIONS[client]
    return (project if where == "project" else home) / rel, key



def backups_of(path: Path, workspace: Path) -> list[Path]:
    """Backups of a project file sit in .memnest/backups/ (ignored by git), named after its
    path in the project; of a file outside the project (Claude Desktop's), beside it."""
    try:
        rel = path.relative_to(workspace)
    except ValueError:
        return list(path.parent.glob(path.name + ".memnest-backup-*"))
    return list((workspace / ".memnest" / "backups").glob(
        "__".join(rel.parts) + ".memnest-backup-*"))

@pytest.mark.parametrize("client", list(LOCATIONS))
def test_round_trip_keeps_other_servers(client, workspace, home, env):
    path, key = config_file(client, workspace, home)
    path.parent.mkdir(parents=True, exist_ok=True)
    original = {"$schema": "kept", key: {"other": OTHER}, "inputs": [{"id": "x"}]}
    path.write_text(json.dumps(original, indent=4))

    out = ctl("config", client, env=env, cwd=workspace)
    assert out.returncode == 0, out.stderr
    assert f"updated {path}" in out.stdout and "kept 1 other server(s): other" in out.stdout

    after = json.loads(path.read_text())  # valid JSON
    assert after["$schema"] == "kept" and after["inputs"] == [{"id": "x"}]
    assert after[key]["other"] == OTHER
    entry = after[key]["memnest"]
    assert entry["command"] == str(MCP) and Path(entry["command"]).is_absolute()
    assert entry["args"] == []
    assert entry["env"]["MEMORY_WORKSPACE"] == str(workspace)  # pinned
    assert "MEMORY_EMBEDDING_MODEL" not in entry["env"]  # the default model: nothing to say
    if client in ("claude-code", "vscode"):
        assert entry["type"] == "stdio"
    backups = backups_of(path, workspace)
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == original

    # --check agrees; a second run changes nothing and makes no second backup.
    check = ctl("config", client, "--check", env=env, cwd=workspace)
    assert check.returncode == 0, check.stdout
    assert all(line.startswith("ok") for line in check.stdout.splitlines()), check.stdout
    again = ctl("config", client, env=env, cwd=workspace)
    assert again.returncode == 0 and "nothing to change" in again.stdout
    assert len(backups_of(path, workspace)) == 1

    # And memnest can be taken out again by hand, leaving the other server as it was.
    del after[key]["memnest"]
    assert after == {**original, key: {"other": OTHER}}


@pytest.mark.parametrize("client", list(LOCATIONS))
def test_creates_a_missing_file(client, workspace, home, env):
    path, key = config_file(client, workspace, home)
    out = ctl("config", client, env=env, cwd=workspace)
    assert out.returncode == 0, out.stderr
    assert f"created {path}" in out.stdout
    document = json.loads(path.read_text())
    assert list(document[key]) == ["memnest"]
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
    assert not backups_of(path, workspace)


def test_entry_carries_the_model_of_the_running_daemon(fresh_daemon, workspace, home, env):
    fresh_daemon.start()
    out = ctl("config", "cursor", env=env, cwd=workspace)  # no model in this shell's env
    assert out.returncode == 0, out.stderr
    entry = json.loads((workspace / ".cursor" / "mcp.json").read_text())["mcpServers"]["memnest"]
    assert entry["env"]["MEMORY_EMBEDDING_MODEL"] == OFFLINE_MODEL
    assert "from the running memnestd" in out.stdout
    # The socket the daemon listens on is not the default one: the entry must say so too.
    assert entry["env"]["MEMNEST_SOCKET"] == str(fresh_daemon.socket)


def test_entry_takes_the_model_from_the_environment_when_no_daemon_runs(workspace, env):
    env = {**env, "MEMORY_EMBEDDING_MODEL": OFFLINE_MODEL}
    out = ctl("config", "kiro", "--print", env=env, cwd=workspace)
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    assert printed["mcpServers"]["memnest"]["env"]["MEMORY_EMBEDDING_MODEL"] == OFFLINE_MODEL
    assert not (workspace / ".kiro").exists()  # --print writes nothing


def test_existing_memnest_entry_is_updated_keeping_user_keys(workspace, home, env):
    path = workspace / ".kiro" / "settings" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {"memnest": {
        "command": "/old/venv/bin/memnest-mcp", "disabled": False,
        "autoApprove": ["memory_search"],
        "env": {"MEMORY_WORKSPACE": "/elsewhere", "MEMORY_EMBEDDING_MODEL": "stale/model",
                "MEMORY_SEARCH_LIMIT": "20"}}}}))
    check = ctl("config", "kiro", "--check", env=env, cwd=workspace)
    assert check.returncode == 1
    fails = [ln for ln in check.stdout.splitlines() if ln.startswith("FAIL")]
    assert any("command" in ln and "/old/venv" in ln for ln in fails), check.stdout
    assert any("workspace" in ln and "/elsewhere" in ln for ln in fails), check.stdout
    assert all("fix: run `memnest-ctl config kiro`" in ln for ln in fails), check.stdout

    assert ctl("config", "kiro", env=env, cwd=workspace).returncode == 0
    entry = json.loads(path.read_text())["mcpServers"]["memnest"]
    assert entry["autoApprove"] == ["memory_search"] and entry["disabled"] is False
    assert entry["env"] == {"MEMORY_SEARCH_LIMIT": "20", "MEMORY_WORKSPACE": str(workspace),
                            "MEMNEST_SOCKET": env["MEMNEST_SOCKET"]}
    assert entry["command"] == str(MCP)
    assert ctl("config", "kiro", "--check", env=env, cwd=workspace).returncode == 0


def test_vscode_file_with_comments_is_merged_and_backed_up(workspace, home, env):
    path = workspace / ".vscode" / "mcp.json"
    path.parent.mkdir()
    original = """{
  // servers for this repo
  "servers": {
    "other": {"type": "stdio", "command": "npx", "args": ["-y", "a//b"],},  /* trailing */
  },
}
"""
    path.write_text(original)
    out = ctl("config", "vscode", env=env, cwd=workspace)
    assert out.returncode == 0, out.stderr
    assert "comments or trailing commas" in out.stdout
    document = json.loads(path.read_text())
    assert document["servers"]["other"]["args"] == ["-y", "a//b"]  # strings left intact
    backup = backups_of(path, workspace)[0]
    assert backup.read_text() == original


@pytest.mark.parametrize("content, why", [
    ('{"mcpServers": {"other": ', "not valid JSON"),
    ('["not", "an", "object"]', "not an object"),
    ('{"mcpServers": ["x"]}', "not an object"),
])
def test_unmergeable_files_are_left_alone(content, why, workspace, env):
    path = workspace / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(content)
    out = ctl("config", "cursor", env=env, cwd=workspace)
    assert out.returncode == 1
    assert why in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.splitlines()) == 1
    assert path.read_text() == content
    assert not backups_of(path, workspace)


def test_workspace_and_file_options(tmp_path, workspace, env):
    target = tmp_path / "custom" / "servers.json"
    out = ctl("config", "claude-desktop", "--workspace", str(workspace), "--file", str(target),
              env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    entry = json.loads(target.read_text())["mcpServers"]["memnest"]
    assert entry["env"]["MEMORY_WORKSPACE"] == str(workspace)


def test_check_reports_a_missing_file_with_the_fix(workspace, env):
    out = ctl("config", "cursor", "--check", env=env, cwd=workspace)
    assert out.returncode == 1
    assert out.stdout.startswith("FAIL") and "fix: run `memnest-ctl config cursor`" in out.stdout


def test_config_rejects_unknown_clients(workspace, env):
    out = ctl("config", "emacs", env=env, cwd=workspace)
    assert out.returncode == 2 and "claude-code" in out.stderr


def test_nothing_written_outside_the_temp_home(home):
    assert Path(os.environ["HOME"]) == home
    assert cc.claude_desktop_config().is_relative_to(home)


def test_a_workspace_that_is_not_a_directory_is_refused(tmp_path, env):
    out = ctl("config", "cursor", "--workspace", str(tmp_path / "nope"), env=env, cwd=tmp_path)
    assert out.returncode == 1 and "is not a directory" in out.stderr
    assert not (tmp_path / "nope").exists()
