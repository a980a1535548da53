"""storage/db_files.py: every check runs before anything changes, and only memnest's own
folders and files are ever made private. A refused path is left exactly as it was."""
import os

import pytest
from memnest_daemon.storage.db_files import UnsafeLocation, prepare

NOBODY = 65534


def _snapshot(root):
    return sorted((str(p), p.lstat().st_mode, p.lstat().st_uid, p.lstat().st_mtime_ns)
                  for p in [root, *root.rglob("*")])


def _folder(path, mode):
    path.mkdir(parents=True)
    os.chmod(path, mode)
    return path


def _file(path, data, mode=0o644):
    path.write_bytes(data)
    os.chmod(path, mode)
    return path


def test_an_ordinary_file_in_an_ordinary_folder_is_refused_untouched(tmp_path):
    """The issue's case: /some/folder/file came back 0700/0600 after being refused."""
    folder = _folder(tmp_path / "web", 0o755)
    _file(folder / "index.html", b"<html>")
    before = _snapshot(tmp_path)
    with pytest.raises(UnsafeLocation, match="chmod 700"):
        prepare(str(folder / "index.html"))
    assert _snapshot(tmp_path) == before


def test_a_memnest_folder_is_not_made_private_when_its_database_is_refused(tmp_path):
    folder = _folder(tmp_path / ".memnest", 0o755)
    _file(folder / "memory.lbug", b"not a database")
    before = _snapshot(tmp_path)
    with pytest.raises(UnsafeLocation, match="not a LadybugDB database"):
        prepare(str(folder / "memory.lbug"))
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("planted", ["link", "foreign", "hardlink", "fifo"])
def test_a_bad_file_late_in_the_list_leaves_the_earlier_ones_alone(tmp_path, planted):
    """The database and its WAL are open (0644) and the snapshot is planted: refused, and
    neither the folder nor the files checked before it were made private."""
    folder = _folder(tmp_path / ".memnest", 0o755)
    _file(folder / "memory.lbug", b"LBUG" + bytes(60))
    _file(folder / "memory.lbug.wal", b"")
    decoy = _file(tmp_path / "decoy", b"secret")
    bad = folder / "memory.lbug.vectors.npz"
    if planted == "link":
        bad.symlink_to(decoy)
    elif planted == "foreign":
        _file(bad, b"")
        os.chown(bad, NOBODY, NOBODY)
    elif planted == "hardlink":
        os.link(decoy, bad)
    else:
        os.mkfifo(bad)
    before = _snapshot(tmp_path)
    with pytest.raises(UnsafeLocation):
        prepare(str(folder / "memory.lbug"))
    assert _snapshot(tmp_path) == before


def test_a_missing_folder_other_than_memnest_is_not_created(tmp_path):
    before = _snapshot(tmp_path)
    with pytest.raises(UnsafeLocation, match="does not exist"):
        prepare(str(tmp_path / "new" / "memory.lbug"))
    assert _snapshot(tmp_path) == before


def test_memnests_own_folder_is_created_and_made_private(tmp_path):
    folder = tmp_path / ".memnest"
    prepare(str(folder / "memory.lbug"))
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / ".gitignore").exists()
    os.chmod(folder, 0o755)  # a clone's, as git made it
    _file(folder / "memory.lbug", b"LBUG" + bytes(60))
    prepare(str(folder / "memory.lbug"))
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (folder / "memory.lbug").stat().st_mode & 0o777 == 0o600


def test_an_open_folder_of_the_users_is_refused_with_the_fix(tmp_path):
    folder = _folder(tmp_path / "mine", 0o750)
    with pytest.raises(UnsafeLocation) as refused:
        prepare(str(folder / "memory.lbug"))
    assert f"chmod 700 {folder}" in str(refused.value)
    assert folder.stat().st_mode & 0o777 == 0o750
    os.chmod(folder, 0o700)
    prepare(str(folder / "memory.lbug"))  # private already: used as it is
    assert not (folder / ".gitignore").exists()
