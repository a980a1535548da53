"""memnest-hook's own files, given hostile folders: the session state (hooks/ in the daemon's
socket folder) and hooks.log (beside the daemon's log). The real program runs; each folder
it may not use is refused (a line in hooks.log says why) and never chmodded, and no decoy's
mode, owner, times or entries changed (tests/decoys.py). No daemon is needed: the `answer`
event only reads and writes the state, `stop` after an idle turn only reads it."""
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from decoys import OTHER_UID, Decoys
from support import BIN

HOOK = BIN / "memnest-hook"


@pytest.fixture
def decoys(tmp_path) -> Decoys:
    return Decoys(tmp_path / "decoys")


@pytest.fixture
def logs(tmp_path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir(mode=0o700)
    return folder


def hook(event: str, socket_folder: Path, log_folder: Path, workspace: Path,
         payload: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMNEST_SOCKET": str(socket_folder / "memnestd.sock"),
           "MEMNEST_LOG_FILE": str(log_folder / "memnestd.log"),
           "MEMNEST_HOOK_BUDGET_MS": "20000"}
    env.pop("MEMORY_WORKSPACE", None)
    payload = payload or {"session_id": "s-1", "text": "the turn's answer"}
    out = subprocess.run([str(HOOK), event, "--workspace", str(workspace)],
                         input=json.dumps(payload).encode(), env=env, capture_output=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout == b"" and out.stderr == b"", out
    return out


def said(logs: Path) -> str:
    path = logs / "hooks.log"
    return path.read_text() if path.exists() else ""


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


REFUSED = {"folder": "has permissions 755", "others": "belongs to uid",
           "root": "has permissions 755", "link": "is a symbolic link",
           "project": "has permissions 755", "file": "is not a folder"}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_socket_folder_memnestd_would_refuse_keeps_no_state(decoys, logs, tmp_path, name):
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    hook("answer", decoys.hostile()[name], logs, decoys.project)
    assert "session state not kept" in said(logs) and REFUSED[name] in said(logs)
    decoys.assert_untouched()


@pytest.fixture
def private(tmp_path) -> Path:
    """A socket folder as memnestd makes it."""
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    return folder


def test_the_state_folder_is_made_private_when_state_is_saved(private, logs, decoys):
    hook("answer", private, logs, decoys.project)
    state = private / "hooks"
    assert _mode(state) == 0o700 and [_mode(p) for p in state.iterdir()] == [0o600]
    assert said(logs) == ""
    decoys.assert_untouched()


def test_reading_the_state_makes_nothing(private, logs, decoys):
    idle = {"session_id": "s-2", "stop_hook_active": False}
    hook("stop", private, logs, decoys.project, idle)  # an idle turn: read, nothing asked
    assert os.listdir(private) == [] and said(logs) == ""


@pytest.mark.parametrize("kind, says", [("open", "has permissions 755"),
                                        ("link", "is a symbolic link"),
                                        ("file", "is not a folder"),
                                        ("theirs", "belongs to uid")])
def test_a_state_folder_it_may_not_use_is_refused_never_chmodded(private, logs, decoys, kind,
                                                                 says):
    state = private / "hooks"
    if kind == "open":
        state.mkdir()
        state.chmod(0o755)
    elif kind == "link":
        state.symlink_to(decoys.folder)
    elif kind == "file":
        state.write_text("not a folder\n")
    else:
        if not decoys.other_user:
            pytest.skip("needs root to give a folder to another user")
        state.mkdir(mode=0o700)
        os.chown(state, OTHER_UID, OTHER_UID)
    before = os.lstat(state)
    hook("answer", private, logs, decoys.project)
    after = os.lstat(state)
    assert (after.st_mode, after.st_uid, after.st_ctime_ns) == \
        (before.st_mode, before.st_uid, before.st_ctime_ns)
    assert "session state not kept" in said(logs) and says in said(logs)
    if kind == "open":
        assert os.listdir(state) == [] and f"chmod 700 {state}" in said(logs)
    decoys.assert_untouched()


@pytest.mark.parametrize("name", ["link", "others", "file", "file-link"])
def test_hooks_log_is_never_written_where_it_may_not_be(private, decoys, name):
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    # a socket folder it refuses, so that the hook has a line to write
    hook("answer", decoys.folder, decoys.hostile()[name], decoys.project)
    decoys.assert_untouched()


def test_hooks_log_is_not_written_through_a_link_nor_into_a_folder_anyone_may_write(
        private, logs, decoys, tmp_path):
    (logs / "hooks.log").symlink_to(decoys.file)
    hook("answer", decoys.folder, logs, decoys.project)
    assert os.readlink(logs / "hooks.log") == str(decoys.file)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    hook("answer", decoys.folder, shared, decoys.project)
    assert os.listdir(shared) == []
    decoys.assert_untouched()


def test_a_missing_log_folder_is_made_private(private, decoys, tmp_path):
    logs = tmp_path / "state" / "memnest" / "log"
    hook("answer", decoys.folder, logs, decoys.project)  # refused: a line to write
    assert "session state not kept" in said(logs)
    assert [_mode(p) for p in (logs, logs.parent, logs.parent.parent)] == [0o700] * 3
    assert _mode(logs / "hooks.log") == 0o600
    decoys.assert_untouched()


def test_a_missing_socket_folder_is_made_as_memnestd_makes_it(logs, decoys, tmp_path):
    """A client of a remote daemon has no socket folder of a local one: saving the state
    makes it, 0700, with hooks/ in it."""
    run = tmp_path / "runtime" / "memnest"
    hook("answer", run, logs, decoys.project)
    assert [_mode(p) for p in (run.parent, run, run / "hooks")] == [0o700] * 3
    assert said(logs) == ""
    decoys.assert_untouched()
