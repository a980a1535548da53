"""storage/beneath.py with hostile trees: links at every component, special files, names
that are not names, races between two opens, and no permission."""
import errno
import os
import socket
import stat

import pytest
from memnest_daemon.storage.beneath import Refused, Why, lstat_at, open_beneath, open_dir, open_file

PARTS = ["a", "b", "c"]


@pytest.fixture
def tree(tmp_path):
    """root/a/b/c/file.txt, and a folder outside the root holding a secret."""
    root = tmp_path / "root"
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "file.txt").write_text("inside\n")
    outside = tmp_path / "outside"
    (outside / "b" / "c").mkdir(parents=True)
    (outside / "secret.txt").write_text("secret\n")
    (outside / "b" / "c" / "file.txt").write_text("secret\n")
    return root, outside


def _refused(call, *args, **kwargs) -> Refused:
    with pytest.raises(Refused) as caught:
        fd = call(*args, **kwargs)
        os.close(fd)  # not reached when refused
    return caught.value


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 100)
    finally:
        os.close(fd)


def test_a_plain_path_opens(tree):
    root, _ = tree
    assert _read(open_beneath(str(root), [*PARTS, "file.txt"])) == b"inside\n"
    fd = open_dir(str(root), PARTS)
    try:
        assert sorted(os.listdir(fd)) == ["file.txt"]
    finally:
        os.close(fd)


def test_a_root_descriptor_is_walked_from_and_left_open(tree):
    root, _ = tree
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert _read(open_beneath(root_fd, [*PARTS, "file.txt"])) == b"inside\n"
        os.close(open_dir(root_fd, []))  # a copy, not the caller's own descriptor
        os.fstat(root_fd)
    finally:
        os.close(root_fd)


@pytest.mark.parametrize("depth", range(len(PARTS)))
@pytest.mark.parametrize("target", ["outside-dir", "inside-dir", "file", "dangling"])
def test_a_link_at_any_folder_is_refused(tree, depth, target):
    root, outside = tree
    here = root.joinpath(*PARTS[:depth])
    link = here / PARTS[depth]
    os.rename(link, here / "moved")
    aims = {"outside-dir": outside / "b" if depth else outside,
            "inside-dir": here / "moved", "file": outside / "secret.txt",
            "dangling": outside / "nothing"}
    link.symlink_to(aims[target])
    refused = _refused(open_beneath, str(root), [*PARTS, "file.txt"])
    assert (refused.why, refused.depth, refused.part) == (Why.LINK, depth, PARTS[depth])
    assert _refused(open_dir, str(root), PARTS).why is Why.LINK
    assert _refused(open_dir, str(root), PARTS, create=True).why is Why.LINK


@pytest.mark.parametrize("target", ["outside-file", "inside-file", "dangling", "dir"])
def test_a_link_as_the_file_is_refused(tree, target):
    root, outside = tree
    folder = root.joinpath(*PARTS)
    (folder / "file.txt").unlink()
    aims = {"outside-file": outside / "secret.txt", "inside-file": root / "a",
            "dangling": outside / "nothing", "dir": outside}
    (folder / "file.txt").symlink_to(aims[target])
    refused = _refused(open_beneath, str(root), [*PARTS, "file.txt"])
    assert (refused.why, refused.depth) == (Why.LINK, len(PARTS))


def test_a_link_as_the_file_is_followed_only_when_asked(tree):
    root, outside = tree
    (root / "a" / "to-secret").symlink_to(outside / "secret.txt")
    fd = open_dir(str(root), ["a"])
    try:
        assert _read(open_file(fd, "to-secret", follow_last=True)) == b"secret\n"
        assert _refused(open_file, fd, "to-secret").why is Why.LINK
    finally:
        os.close(fd)


def test_special_files_where_a_file_is_expected_are_never_opened(tree, monkeypatch):
    root, _ = tree
    folder = root.joinpath(*PARTS)
    os.mkfifo(folder / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "sock"))
    fd = open_dir(str(root), PARTS)
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda name, *a, **k: opened.append(name)
                        or real_open(name, *a, **k))
    try:
        for name, mode in (("fifo", stat.S_ISFIFO), ("sock", stat.S_ISSOCK)):
            refused = _refused(open_file, fd, name)
            assert refused.why is Why.NOT_FILE and mode(refused.mode)
        os.mkdir(folder / "sub")
        refused = _refused(open_file, fd, "sub")
        assert refused.why is Why.NOT_FILE and refused.is_dir
        if os.path.exists("/dev/null"):
            dev_fd = real_open("/dev", os.O_RDONLY | os.O_DIRECTORY)
            try:
                assert _refused(open_file, dev_fd, "null").why is Why.NOT_FILE
            finally:
                os.close(dev_fd)
        assert opened == []  # looked at, never opened: a FIFO cannot block, a device act
    finally:
        os.close(fd)
        server.close()


def test_a_file_where_a_folder_is_expected_is_not_a_directory(tree):
    root, _ = tree
    refused = _refused(open_dir, str(root), [*PARTS, "file.txt"])
    assert (refused.why, refused.depth) == (Why.NOT_DIR, len(PARTS))
    fifo_parent = root / "a"
    os.mkfifo(fifo_parent / "pipe")
    assert _refused(open_dir, str(root), ["a", "pipe"]).why is Why.NOT_DIR


@pytest.mark.parametrize("part", ["..", ".", "", "b/c", "/etc", "a\x00b", "\x00"])
def test_parts_that_are_not_one_name_are_refused(tree, part):
    root, _ = tree
    refused = _refused(open_dir, str(root), ["a", part])
    assert (refused.why, refused.depth) == (Why.NOT_A_NAME, 1)
    refused = _refused(open_beneath, str(root), ["a", part])
    assert refused.why is Why.NOT_A_NAME
    assert _refused(open_beneath, str(root), []).why is Why.NOT_A_NAME


def test_a_root_that_cannot_be_opened(tree):
    root, _ = tree
    for given, why in ((str(root / "none"), Why.MISSING),
                       (str(root / "a" / "b" / "c" / "file.txt"), Why.NOT_DIR),
                       (str(root) + "\x00", Why.NOT_A_NAME),
                       ("/" + "x" * 5000, Why.TOO_LONG)):
        refused = _refused(open_dir, given, [])
        assert (refused.why, refused.depth) == (why, -1)


def test_over_long_names_and_paths(tree):
    root, _ = tree
    long_name = "n" * 300
    refused = _refused(open_dir, str(root), ["a", long_name])
    assert (refused.why, refused.errno) == (Why.TOO_LONG, errno.ENAMETOOLONG)
    assert _refused(open_beneath, str(root), ["a", long_name]).why is Why.TOO_LONG
    assert _refused(open_dir, str(root), ["a", long_name], create=True).why in (
        Why.TOO_LONG, Why.CANNOT_CREATE)
    deep = ["d" * 200] * 30  # each name fine, the whole path far over PATH_MAX
    made = open_dir(str(root), deep, create=True)  # walked one component at a time
    os.close(made)


def test_missing_folders_are_made_only_when_asked(tree):
    root, _ = tree
    refused = _refused(open_dir, str(root), ["a", "new", "newer"])
    assert (refused.why, refused.depth, refused.part) == (Why.MISSING, 1, "new")
    os.close(open_dir(str(root), ["a", "new", "newer"], create=True, mode=0o700))
    assert stat.S_IMODE(os.stat(root / "a" / "new").st_mode) == 0o700
    assert _refused(open_beneath, str(root), ["a", "gone.txt"]).why is Why.MISSING


def test_a_folder_swapped_for_a_link_after_its_parent_is_open(tree):
    root, outside = tree
    parent = open_dir(str(root), ["a"])
    try:
        os.rename(root / "a" / "b", root / "a" / "b-old")
        (root / "a" / "b").symlink_to(outside / "b")
        refused = _refused(open_beneath, parent, ["b", "c", "file.txt"])
        assert (refused.why, refused.part) == (Why.LINK, "b")
    finally:
        os.close(parent)


def test_a_parent_moved_away_after_it_is_open_keeps_the_walk_inside_it(tree):
    root, outside = tree
    parent = open_dir(str(root), ["a", "b"])
    try:
        os.rename(root / "a", root / "a-moved")  # the path now names nothing, or a link
        (root / "a").symlink_to(outside)
        assert _read(open_beneath(parent, ["c", "file.txt"])) == b"inside\n"
    finally:
        os.close(parent)


def test_a_file_swapped_after_it_was_looked_at_is_checked_again(tree, monkeypatch):
    root, _ = tree
    folder = root.joinpath(*PARTS)
    fd = open_dir(str(root), PARTS)
    real_stat = os.stat

    def stat_then_swap(name, *args, **kwargs):
        seen = real_stat(name, *args, **kwargs)
        os.unlink(folder / "file.txt")
        os.mkfifo(folder / "file.txt")  # a FIFO takes the file's place before the open
        return seen

    monkeypatch.setattr(os, "stat", stat_then_swap)
    try:
        assert _refused(open_file, fd, "file.txt").why is Why.NOT_FILE
    finally:
        os.close(fd)


@pytest.mark.skipif(os.geteuid() == 0, reason="root is never refused permission")
def test_no_permission(tree):
    root, _ = tree
    folder = root.joinpath(*PARTS)
    os.chmod(folder / "file.txt", 0)
    os.chmod(root / "a" / "b", 0)
    try:
        refused = _refused(open_dir, str(root), PARTS)
        assert (refused.why, refused.depth) == (Why.PERMISSION, 1)
    finally:
        os.chmod(root / "a" / "b", 0o700)
    assert _refused(open_beneath, str(root), [*PARTS, "file.txt"]).why is Why.PERMISSION


def test_no_permission_injected(tree, monkeypatch):
    """As the test above, for a test run as root: the system's refusal injected."""
    root, _ = tree
    real_open = os.open

    def deny(name, *args, **kwargs):
        if name in ("b", "file.txt"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    refused = _refused(open_dir, str(root), PARTS)
    assert (refused.why, refused.depth, refused.strerror) == (
        Why.PERMISSION, 1, "Permission denied")
    fd = real_open(root.joinpath(*PARTS), os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert _refused(open_file, fd, "file.txt").why is Why.PERMISSION
    finally:
        os.close(fd)


def test_a_folder_that_cannot_be_made(tree, monkeypatch):
    root, _ = tree

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "mkdir", refuse)
    refused = _refused(open_dir, str(root), ["a", "new"], create=True)
    assert (refused.why, refused.strerror) == (Why.CANNOT_CREATE, "Read-only file system")


def test_a_folder_made_then_removed_before_it_is_opened_vanished(tree, monkeypatch):
    root, _ = tree
    real_mkdir = os.mkdir
    monkeypatch.setattr(os, "mkdir", lambda name, mode, dir_fd: (
        real_mkdir(name, mode, dir_fd=dir_fd), os.rmdir(name, dir_fd=dir_fd)))
    assert _refused(open_dir, str(root), ["a", "new"], create=True).why is Why.VANISHED


def test_lstat_at_never_follows_and_never_raises(tree):
    root, outside = tree
    (root / "a" / "link").symlink_to(outside / "secret.txt")
    fd = open_dir(str(root), ["a"])
    try:
        seen = lstat_at(fd, "link")
        assert seen is not None and stat.S_ISLNK(seen.st_mode)
        assert lstat_at(fd, "none") is None and lstat_at(fd, "x\x00") is None
    finally:
        os.close(fd)


def test_no_descriptor_leaks_on_refusals(tree):
    root, _ = tree
    (root / "a" / "b" / "link").symlink_to(root)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    for _ in range(50):
        for parts in (["a", "b", "link", "x"], ["a", "none"], ["a", "..", "x"]):
            with pytest.raises(Refused):
                open_beneath(str(root), parts)
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before
