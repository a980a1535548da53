"""The client's one file of its own: the log it hands a daemon it starts (MEMNEST_LOG_FILE).
Its folder is made 0700 when missing; a folder that is a link, another user's, not a folder
or writable by others, and a log that is a link, are refused before memnestd is started, in
one line, and no decoy changed (tests/decoys.py)."""
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from decoys import Decoys

CTL = Path(sys.executable).parent / "memnest-ctl"


@pytest.fixture
def decoys(tmp_path) -> Decoys:
    return Decoys(tmp_path / "decoys")


def start(fresh_daemon, log: Path) -> subprocess.CompletedProcess:
    env = {**fresh_daemon.env, "MEMNEST_LOG_FILE": str(log)}
    return subprocess.run([str(CTL), "start"], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("log, says", [
    ("link/memnestd.log", "is a symbolic link"),
    ("others/memnestd.log", "belongs to uid"),
    ("file/memnestd.log", "is not a folder"),
    ("file-link", "symbolic link"),
    ("others/new/memnestd.log", "another user's folder"),
])
def test_a_log_it_may_not_write_is_refused_before_the_daemon_starts(fresh_daemon, decoys, log,
                                                                    says):
    name, _, rest = log.partition("/")
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    path = decoys.hostile()[name] / rest if rest else decoys.hostile()[name]
    out = start(fresh_daemon, path)
    assert out.returncode == 1 and says in out.stderr and out.stderr.count("\n") == 1, out
    assert "memnestd was not started" in out.stderr
    assert not fresh_daemon.pids()
    decoys.assert_untouched()


def test_a_log_folder_others_may_write_is_refused(fresh_daemon, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    out = start(fresh_daemon, shared / "memnestd.log")
    assert out.returncode == 1 and "other users could change" in out.stderr, out
    assert os.listdir(shared) == []


def test_a_missing_log_folder_is_made_private(fresh_daemon, tmp_path):
    log = tmp_path / "state" / "memnest" / "log" / "memnestd.log"
    out = start(fresh_daemon, log)
    assert out.returncode == 0, out.stderr
    assert [stat.S_IMODE(p.stat().st_mode) for p in (log.parent, log.parent.parent)] == \
        [0o700, 0o700]
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
