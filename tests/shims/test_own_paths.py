"""shims/own_paths.py, the checks every client-side folder and file goes through: each hostile
path is refused before anything is made, and the decoys are left exactly as they were."""
import os
import stat
from pathlib import Path

import pytest

from memnest_shims.own_paths import (
    PRIVATE,
    UNSHARED,
    NotOurs,
    check_target,
    open_append,
    own_folder,
    write_file,
)

from decoys import Decoys


@pytest.fixture
def decoys(tmp_path) -> Decoys:
    return Decoys(tmp_path / "decoys")


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


REFUSED = {"file": "is not a folder", "folder": "has permissions 755",
           "others": "belongs to uid", "root": "has permissions 755",
           "link": "is a symbolic link", "file-link": "is a symbolic link",
           "project": "has permissions 755"}


@pytest.mark.parametrize("create", [True, False])
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_folder_memnest_may_not_keep_files_in_is_refused_as_it_is(decoys, name, create):
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    with pytest.raises(NotOurs, match=REFUSED[name]):
        own_folder(decoys.hostile()[name], PRIVATE, create=create)
    decoys.assert_untouched()


def test_the_fix_is_in_the_message(decoys):
    with pytest.raises(NotOurs, match=f"run `chmod 700 {decoys.folder}`"):
        own_folder(decoys.folder)


def test_a_folder_others_can_only_read_serves_where_only_writing_is_closed(decoys, tmp_path):
    assert own_folder(decoys.folder, UNSHARED) is False
    decoys.assert_untouched()
    grouped = tmp_path / "grouped"  # as a umask of 002 makes folders
    grouped.mkdir()
    grouped.chmod(0o775)
    assert own_folder(grouped, UNSHARED) is False and _mode(grouped) == 0o775
    grouped.chmod(0o777)
    with pytest.raises(NotOurs, match="other users could change"):
        own_folder(grouped, UNSHARED)


@pytest.mark.parametrize("name, says", [("file", "is not a folder"),
                                        ("file-link", "is not a folder"),
                                        ("others", "another user's folder")])
def test_nothing_is_made_inside_what_is_not_a_folder_of_ours(decoys, name, says):
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    with pytest.raises(NotOurs, match=says):
        own_folder(decoys.hostile()[name] / "a" / "b")
    decoys.assert_untouched()


def test_nothing_is_made_in_a_folder_anyone_may_write_without_the_sticky_bit(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(NotOurs, match="others could replace"):
        own_folder(shared / "mine")
    assert os.listdir(shared) == []
    shared.chmod(0o1777)  # /tmp's mode: what is made there stays its maker's
    assert own_folder(shared / "mine") is True


def test_a_missing_folder_is_made_0700_with_the_missing_ones_above(tmp_path):
    old = os.umask(0o000)
    try:
        assert own_folder(tmp_path / "a" / "b" / "c") is True
    finally:
        os.umask(old)
    assert [_mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
    assert own_folder(tmp_path / "a" / "b" / "c") is False  # there now: checked, not made


def test_without_create_a_missing_folder_is_refused_and_not_made(tmp_path):
    with pytest.raises(NotOurs, match="does not exist"):
        own_folder(tmp_path / "a" / "b", create=False)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name, says", [("link", "is a symbolic link"),
                                        ("file-link", "is a symbolic link"),
                                        ("folder", "is not a regular file"),
                                        ("root", "is not a regular file"),
                                        ("others", "is not a regular file")])
def test_a_file_is_never_written_through_a_link_nor_over_what_is_not_ours(decoys, name, says):
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    with pytest.raises(NotOurs, match=says):
        write_file(decoys.hostile()[name], b"overwritten\n")
    decoys.assert_untouched()


def test_a_file_is_not_written_into_another_users_folder(decoys):
    if not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    with pytest.raises(NotOurs, match="another user's folder"):
        write_file(decoys.others / "new.json", b"{}\n")
    with pytest.raises(NotOurs, match="belongs to uid"):
        check_target(decoys.others / "theirs.txt")
    decoys.assert_untouched()


def test_a_file_is_replaced_whole_with_its_mode(tmp_path):
    target = tmp_path / "out.json"
    write_file(target, b"one\n")
    assert target.read_bytes() == b"one\n" and _mode(target) == 0o600
    write_file(target, b"two\n", mode=0o644)
    assert target.read_bytes() == b"two\n" and _mode(target) == 0o644
    assert sorted(os.listdir(tmp_path)) == ["out.json"]  # no temporary file left


def test_appending_never_follows_a_link_nor_writes_another_users_file(decoys, tmp_path):
    with pytest.raises(NotOurs, match="symbolic link"):
        open_append(decoys.file_link)
    if decoys.other_user:
        with pytest.raises(NotOurs, match="not a file of yours"):
            open_append(decoys.others / "theirs.txt")
    decoys.assert_untouched()
    os.link(decoys.file, tmp_path / "hard.log")  # another name of a file elsewhere
    with pytest.raises(NotOurs, match="not a file of yours"):
        open_append(tmp_path / "hard.log")
    os.unlink(tmp_path / "hard.log")
    fd = open_append(tmp_path / "new.log")
    os.close(fd)
    assert _mode(tmp_path / "new.log") == 0o600
    os.close(open_append(Path(os.devnull)))  # a device such as /dev/null is taken as it is
