"""A workspace from a stranger, or a folder another user can write, must not make the daemon
write anywhere else: links and foreign files in `.memnest/` are refused before anything is
opened, and whatever the daemon creates is readable by nobody but its user."""
import os
import stat
import subprocess

import pytest

from memnest_shims.client import ToolFailure

VICTIM_TEXT = b"export PATH=$HOME/bin:$PATH\n"
NOBODY = 65534


def _victim(tmp_path):
    victim = tmp_path / "bashrc"
    victim.write_bytes(VICTIM_TEXT)
    return victim


def _refused(call, workspace, *words):
    """A write there is refused, and nothing beside the workspace (the planted files, their
    targets, the `.memnest/` folder as the clone made it) changed mode, owner or content."""
    before = _snapshot(workspace.parent)
    with pytest.raises(ToolFailure) as failure:
        call("memory_store", ws=workspace, content="The cache key includes the tenant id")
    assert failure.value.code == "permission_denied", failure.value
    for word in words:
        assert word in failure.value.message, failure.value.message
    assert _snapshot(workspace.parent) == before
    return failure.value.message


@pytest.mark.parametrize("name", ["memory.lbug.deferred", "memory.lbug", "memory.lbug.wal",
                                  "memory.lbug.vectors.npz", "memory.lbug.vectors.npz.tmp"])
def test_a_link_planted_in_a_cloned_repository_is_refused(call, tmp_path, name):
    workspace = tmp_path / "cloned"
    (workspace / ".memnest").mkdir(parents=True)
    victim = _victim(tmp_path)
    (workspace / ".memnest" / name).symlink_to(victim)
    _refused(call, workspace, name, "symbolic link")
    assert victim.read_bytes() == VICTIM_TEXT


def test_a_hard_link_to_another_file_is_refused(call, tmp_path):
    workspace = tmp_path / "cloned"
    (workspace / ".memnest").mkdir(parents=True)
    victim = _victim(tmp_path)
    os.link(victim, workspace / ".memnest" / "memory.lbug.deferred")
    _refused(call, workspace, "hard link")
    assert victim.read_bytes() == VICTIM_TEXT


def test_a_memnest_folder_that_is_a_link_is_refused(call, tmp_path):
    workspace = tmp_path / "cloned"
    workspace.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (workspace / ".memnest").symlink_to(elsewhere)
    _refused(call, workspace, ".memnest", "symbolic link")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a folder to another uid")
def test_a_memnest_folder_of_another_user_is_refused(call, tmp_path):
    workspace = tmp_path / "shared"
    (workspace / ".memnest").mkdir(parents=True)
    os.chown(workspace / ".memnest", NOBODY, NOBODY)
    _refused(call, workspace, "another user")


def test_a_workspace_every_user_can_write_is_refused(call, tmp_path):
    workspace = tmp_path / "shared"
    workspace.mkdir()
    os.chmod(workspace, 0o777)
    _refused(call, workspace, "every user")
    assert not (workspace / ".memnest").exists()


def test_everything_the_daemon_creates_is_private_and_open_modes_are_fixed(call, tmp_path):
    workspace = tmp_path / "older"
    (workspace / ".memnest").mkdir(parents=True)
    os.chmod(workspace / ".memnest", 0o755)  # as an older memnest left it
    call("memory_store", ws=workspace, content="The cache key includes the tenant id")
    call("memory_export", ws=workspace)
    call("memory_graph_html", ws=workspace)
    folder = workspace / ".memnest"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in folder.rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is {mode:o}"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a process as another uid")
def test_another_user_cannot_read_the_memories(call, tmp_path):
    workspace = tmp_path / "readable"
    workspace.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(workspace, 0o755)
    call("memory_store", ws=workspace, content="The staging password is in the vault")
    database = workspace / ".memnest" / "memory.lbug"
    # setpriv changes user in the child it execs: a process running gRPC threads must not
    # run code between fork and exec (setuid there crashed the child, seen as SIGSEGV)
    reader = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
         "head", "-c", "16", str(database)],
        capture_output=True, text=True)
    assert reader.returncode != 0 and "Permission denied" in reader.stderr


@pytest.mark.parametrize("target", ["/", "/etc", "/usr/lib", "/home", "/tmp"])
def test_system_folders_are_no_workspace(call, target):
    with pytest.raises(ToolFailure) as refused:
        call("memory_set_workspace", workspace=target)
    assert refused.value.code == "permission_denied"
    assert "system folder" in refused.value.message
    assert not os.path.exists(os.path.join(target, ".memnest"))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a folder to another uid")
def test_another_users_folder_is_no_workspace(call, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(ToolFailure) as refused:
        call("memory_set_workspace", workspace=str(theirs))
    assert refused.value.code == "permission_denied" and "another user" in refused.value.message
    assert not (theirs / ".memnest").exists()


def test_a_database_path_never_overwrites_another_file(call, tmp_path):
    """A caller's db_path is a file in a `.memnest/` folder or nothing: an ordinary folder
    and file (the issue's case: they came back 0700 and 0600) are refused untouched, and in
    a `.memnest/` folder another file is never written over."""
    plain = tmp_path / "plain"
    plain.mkdir(mode=0o755)
    os.chmod(plain, 0o755)
    notes = plain / "notes.txt"
    notes.write_text("my notes\n")
    os.chmod(notes, 0o644)
    team = tmp_path / "team" / ".memnest"
    team.mkdir(mode=0o700, parents=True)
    kept = team / "notes.txt"
    kept.write_text("kept notes\n")
    before = _snapshot(tmp_path)
    for path, why in ((notes, "not a file in a .memnest/ folder"),
                      (plain / "memory.lbug", "not a file in a .memnest/ folder"),
                      (kept, "not a LadybugDB database"),
                      (tmp_path / "new" / ".memnest" / "memory.lbug", "does not exist")):
        with pytest.raises(ToolFailure) as refused:
            call("memory_set_workspace", workspace=str(tmp_path), db_path=str(path))
        assert refused.value.code == "permission_denied" and why in refused.value.message, \
            refused.value.message
        assert _snapshot(tmp_path) == before, path
    pinned = call("memory_set_workspace", workspace=str(tmp_path),
                  db_path=str(team / "own.lbug"))
    assert pinned["memories"] == 0 and pinned["database"] == str(team / "own.lbug")
    assert not (team / "own.lbug").exists()  # made by the first write, not by a switch


def _snapshot(root):
    """Every entry under `root` with its mode, owner and mtime."""
    return sorted((str(p), p.lstat().st_mode, p.lstat().st_uid, p.lstat().st_mtime_ns)
                  for p in [root, *root.rglob("*")])
