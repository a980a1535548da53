"""memnest-ctl config given hostile paths (--file, --workspace, planted links and folders),
through the real program: each is refused in one line before any file is written, or served
without changing a folder that was there, and no decoy's mode, owner, times or entries
changed (tests/decoys.py). HOME points into the test's folder."""
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from decoys import OTHER_UID, Decoys

CTL = Path(sys.executable).parent / "memnest-ctl"


@pytest.fixture
def decoys(tmp_path) -> Decoys:
    return Decoys(tmp_path / "decoys")


@pytest.fixture
def home(tmp_path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def project(tmp_path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def env(home, fresh_daemon) -> dict:
    e = {**fresh_daemon.env, "HOME": str(home),
         "PATH": f"{CTL.parent}:{fresh_daemon.env.get('PATH', '')}"}
    for name in ("XDG_CONFIG_HOME", "APPDATA", "MEMORY_EMBEDDING_MODEL", "MEMNEST_LOG_FILE"):
        e.pop(name, None)
    return e


def config(*args: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(CTL), "config", *args], env=env, cwd=str(cwd),
                          capture_output=True, text=True, timeout=60)


def refused(out: subprocess.CompletedProcess, says: str) -> None:
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out
    assert says in out.stderr and "Traceback" not in out.stderr, out.stderr


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


FILE_REFUSALS = {"file": "is not valid JSON", "folder": "is not a regular file",
                 "others": "is not a regular file", "root": "is not a regular file",
                 "link": "is a symbolic link", "file-link": "is a symbolic link",
                 "project": "is not a regular file"}


@pytest.mark.parametrize("name", sorted(FILE_REFUSALS))
def test_a_hostile_file_is_refused_and_nothing_is_written(env, project, decoys, name):
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    before = listing(project)
    out = config("claude-code", "--file", str(decoys.hostile()[name]), env=env, cwd=project)
    refused(out, FILE_REFUSALS[name])
    assert listing(project) == before  # nor the hooks' file, nor a backup
    decoys.assert_untouched()


@pytest.mark.parametrize("where, says", [("others/mcp.json", "another user's folder"),
                                         ("others/new/mcp.json", "another user's folder"),
                                         ("file/mcp.json", "is not a folder")])
def test_no_file_or_folder_is_made_inside_what_is_not_ours(env, project, decoys, where, says):
    name, _, rest = where.partition("/")
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    before = listing(project)
    out = config("claude-code", "--file", str(decoys.hostile()[name] / rest), env=env,
                 cwd=project)
    refused(out, says)
    assert listing(project) == before
    decoys.assert_untouched()


@pytest.mark.parametrize("name, says", [("others", "belongs to uid"),
                                        ("root", "is a system folder"),
                                        ("file", "is not a directory")])
def test_a_project_that_is_not_ours_gets_no_files(env, project, decoys, name, says):
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    for client in ("claude-code", "cursor"):
        refused(config(client, "--workspace", str(decoys.hostile()[name]), env=env,
                       cwd=project), says)
    decoys.assert_untouched()


def test_a_link_planted_in_the_project_is_not_written_through(env, project, decoys):
    (project / ".cursor").symlink_to(decoys.folder)
    refused(config("cursor", env=env, cwd=project), "is a symbolic link")
    (project / ".cursor").unlink()
    (project / ".mcp.json").symlink_to(decoys.file)
    refused(config("claude-code", env=env, cwd=project), "is a symbolic link")
    decoys.assert_untouched()


def test_a_home_file_that_is_a_link_is_refused_with_the_file_to_name(env, home, project,
                                                                     decoys):
    """Gemini's settings linked from a dotfiles folder: neither replaced nor written
    through; the message names the file the link leads to."""
    (home / ".gemini").mkdir()
    real = decoys.root / "dotfiles-settings.json"
    real.write_text("{}\n")
    (home / ".gemini" / "settings.json").symlink_to(real)
    decoys.before = decoys.snapshot()
    out = config("gemini", env=env, cwd=project)
    refused(out, f"--file {real}")
    assert os.readlink(home / ".gemini" / "settings.json") == str(real)
    decoys.assert_untouched()


def test_a_backups_folder_others_can_enter_is_refused_not_chmodded(env, project):
    (project / ".mcp.json").write_text('{"mcpServers": {}}\n')
    backups = project / ".memnest" / "backups"
    backups.mkdir(parents=True)
    backups.chmod(0o755)
    (project / ".memnest").chmod(0o700)
    refused(config("claude-code", env=env, cwd=project), f"chmod 700 {backups}")
    assert stat.S_IMODE(backups.stat().st_mode) == 0o755
    assert (project / ".mcp.json").read_text() == '{"mcpServers": {}}\n'
    assert not (project / ".claude").exists()  # the hooks' file was not written either


def test_a_backups_folder_that_is_a_link_is_refused(env, project, decoys):
    (project / ".mcp.json").write_text('{"mcpServers": {}}\n')
    (project / ".memnest").mkdir(mode=0o700)
    (project / ".memnest" / "backups").symlink_to(decoys.folder)
    refused(config("claude-code", env=env, cwd=project), "is a symbolic link")
    decoys.assert_untouched()


def test_another_users_config_file_is_not_replaced(env, project, decoys):
    if not decoys.other_user:
        pytest.skip("needs root to give a file to another user")
    theirs = project / ".mcp.json"
    theirs.write_text('{"mcpServers": {}}\n')
    os.chown(theirs, OTHER_UID, OTHER_UID)
    refused(config("claude-code", env=env, cwd=project), "belongs to uid")
    assert theirs.stat().st_uid == OTHER_UID


def test_served_the_folders_that_were_there_keep_their_modes(env, project):
    """The editor's folders are made when missing; .memnest/ and its backups 0700; the
    project's folders as they were."""
    (project / ".vscode").mkdir()
    (project / ".vscode").chmod(0o775)
    (project / ".vscode" / "mcp.json").write_text('{"servers": {}}\n')
    project.chmod(0o755)
    before = {p: os.lstat(p) for p in (project, project / ".vscode")}
    out = config("vscode", env=env, cwd=project)
    assert out.returncode == 0, out.stderr
    for path, was in before.items():
        now = os.lstat(path)
        assert (now.st_mode, now.st_uid) == (was.st_mode, was.st_uid), path
    assert stat.S_IMODE((project / ".memnest").stat().st_mode) == 0o700
    assert stat.S_IMODE((project / ".memnest" / "backups").stat().st_mode) == 0o700
    assert json.loads((project / ".vscode" / "mcp.json").read_text())["servers"]["memnest"]


def test_the_exclude_list_is_written_only_in_the_projects_own_git_folder(env, project,
                                                                         decoys, tmp_path):
    """A .git file (a worktree's, or one planted) names another repository's folder: memnest
    says what to add there and writes nothing outside the project."""
    other = tmp_path / "other-repo"
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    exclude = other / ".git" / "info" / "exclude"
    was = exclude.read_bytes()
    (project / ".git").write_text(f"gitdir: {other / '.git'}\n")
    out = config("claude-code", env=env, cwd=project)
    assert out.returncode == 0, out.stderr
    assert exclude.read_bytes() == was
    assert f"to {exclude} to keep them out of commits" in out.stdout
    decoys.assert_untouched()


def test_the_exclude_list_is_not_written_through_a_link(env, project, decoys):
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    exclude = project / ".git" / "info" / "exclude"
    exclude.unlink()
    exclude.symlink_to(decoys.file)
    out = config("claude-code", env=env, cwd=project)
    assert out.returncode == 0, out.stderr
    assert "memnest did not" in out.stdout
    decoys.assert_untouched()
    exclude.unlink()
    assert config("cursor", env=env, cwd=project).returncode == 0
    assert "/.cursor/mcp.json" in exclude.read_text()


def test_the_projects_git_config_runs_no_program(env, project, tmp_path):
    """The git calls `config` makes in a project (where its exclude list is, what is ignored)
    run none of the programs a cloned project's .git/config can name."""
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    ran = tmp_path / "ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {ran}\n")
    hook.chmod(0o755)
    for key, value in (("core.fsmonitor", str(hook)), ("core.pager", str(hook)),
                       ("core.hooksPath", str(tmp_path))):
        subprocess.run(["git", "-C", str(project), "config", key, value], check=True)
    out = config("claude-code", env=env, cwd=project)
    assert out.returncode == 0, out.stderr
    assert not ran.exists(), ran.read_text()
