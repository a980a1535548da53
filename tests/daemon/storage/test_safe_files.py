"""storage/safe_files.py over hostile workspaces: what the caller hears for each refusal of
the path walk, and that nothing is written or read outside where it was meant."""
import os

import pytest
from memnest_daemon.core.errors import ToolError
from memnest_daemon.storage.safe_files import read_file, write_file

SIG = b"MEMNEST"


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".memnest").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    return ws, outside


def _error(call, *args, **kwargs) -> ToolError:
    with pytest.raises(ToolError) as caught:
        call(*args, **kwargs)
    return caught.value


def _write(ws, path, data=SIG + b" data"):
    return write_file(str(ws), path, ".memnest/out.json", data, SIG, "test file")


def test_a_write_makes_its_folders_private_and_reads_back(workspace):
    ws, _ = workspace
    written = _write(ws, ".memnest/deep/er/out.json")
    assert written == str(ws / ".memnest" / "deep" / "er" / "out.json")
    assert oct(os.stat(ws / ".memnest" / "deep").st_mode & 0o777) == "0o700"
    assert read_file(str(ws), ".memnest/deep/er/out.json", 1000) == (SIG + b" data", written)


@pytest.mark.parametrize("planted", [".memnest", ".memnest/sub"])
def test_a_link_on_the_way_is_refused_and_nothing_lands_outside(workspace, planted):
    ws, outside = workspace
    if planted == ".memnest/sub":
        (ws / planted).symlink_to(outside)
        path = ".memnest/sub/out.json"
    else:
        os.rename(ws / ".memnest", ws / "old")
        (ws / ".memnest").symlink_to(outside)
        path = ".memnest/out.json"
    error = _error(_write, ws, path)
    assert error.message == (f"{ws / planted} is a symbolic link; memnest does not follow "
                             "links inside the workspace. Remove it, or give an absolute path "
                             "outside the workspace")
    assert os.listdir(outside) == []
    assert "is a symbolic link" in _error(read_file, str(ws), path, 1000).message


def test_the_file_itself_a_link_is_never_written_through_nor_read(workspace):
    ws, outside = workspace
    (outside / "target").write_bytes(SIG + b" theirs")
    (ws / ".memnest" / "out.json").symlink_to(outside / "target")
    assert "never through a link" in _error(_write, ws, ".memnest/out.json").message
    assert (outside / "target").read_bytes() == SIG + b" theirs"
    error = _error(read_file, str(ws), ".memnest/out.json", 1000)
    assert error.message.endswith("memnest does not follow links inside the workspace. "
                                  "Give the path of the file itself")


def test_missing_folders_files_and_wrong_kinds(workspace):
    ws, _ = workspace
    assert _error(read_file, str(ws), "none/x.json", 1000).message == \
        f"directory {ws / 'none'} does not exist"
    assert _error(read_file, str(ws), "x.json", 1000).message == f"no file at {ws / 'x.json'}"
    (ws / ".memnest" / "plain").write_text("x")
    assert _error(_write, ws, ".memnest/plain/out.json").message == \
        f"{ws / '.memnest' / 'plain'} is not a directory"
    os.mkfifo(ws / "fifo")
    assert _error(read_file, str(ws), "fifo", 1000).message == f"{ws / 'fifo'} is not a " \
        "regular file"
    assert _error(_write, ws, ".memnest/plain").message.startswith(
        f"{ws / '.memnest' / 'plain'} exists and is not a test file written by memnest")
    os.mkfifo(ws / ".memnest" / "fifo")
    assert _error(_write, ws, ".memnest/fifo").message == \
        f"{ws / '.memnest' / 'fifo'} exists and is not a regular file; choose another path"


def test_names_the_path_cannot_hold(workspace):
    ws, _ = workspace
    assert _error(_write, ws, "../out.json").message.startswith("path '../out.json' leaves")
    assert _error(_write, ws, "a\x00b").message == "path contains a NUL character"
    error = _error(_write, ws, ".memnest/" + "n" * 300 + "/out.json")
    assert error.code == "storage_error" and "File name too long" in error.message


def test_a_folder_made_and_removed_before_it_is_opened(workspace, monkeypatch):
    ws, _ = workspace
    real_mkdir = os.mkdir
    monkeypatch.setattr(os, "mkdir", lambda name, mode, dir_fd: (
        real_mkdir(name, mode, dir_fd=dir_fd), os.rmdir(name, dir_fd=dir_fd)))
    assert _error(_write, ws, ".memnest/new/out.json").message == \
        f"directory {ws / '.memnest' / 'new'} vanished while it was being opened"
