"""code/files.py over hostile workspaces: the sentence an agent hears when a cited path
cannot be anchored, for each way the walk to it is refused."""
import os

import pytest
from memnest_daemon.code.files import (
    AnchorError,
    FileMissing,
    NotRegular,
    clean_path,
    read_source,
    stat_file,
)


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mod.py").write_text("secret\n")
    return ws, outside


def _refusal(kind, call, ws, rel) -> str:
    with pytest.raises(AnchorError) as caught:
        call(str(ws), rel)
    assert type(caught.value) is kind
    return str(caught.value)


@pytest.mark.parametrize("call", [read_source, stat_file])
def test_a_link_on_any_folder_or_as_the_file(workspace, call):
    ws, outside = workspace
    os.rename(ws / "src" / "pkg", ws / "src" / "real")
    (ws / "src" / "pkg").symlink_to(outside)
    assert _refusal(NotRegular, call, ws, "src/pkg/mod.py") == \
        "src/pkg is a symbolic link; memnest does not follow links in the workspace"
    (ws / "src" / "real" / "link.py").symlink_to(outside / "mod.py")
    assert _refusal(NotRegular, call, ws, "src/real/link.py") == \
        "src/real/link.py is a symbolic link; memnest does not follow links in the workspace"


@pytest.mark.parametrize("call", [read_source, stat_file])
def test_missing_and_wrong_kinds(workspace, call):
    ws, _ = workspace
    assert _refusal(FileMissing, call, ws, "src/none/mod.py") == \
        "src/none/mod.py does not exist in the workspace"
    assert _refusal(FileMissing, call, ws, "src/pkg/none.py") == \
        "src/pkg/none.py does not exist in the workspace"
    assert _refusal(FileMissing, call, ws, "src/pkg/mod.py/x.py") == \
        "src/pkg/mod.py/x.py does not exist in the workspace (src/pkg/mod.py is not a folder)"
    assert _refusal(NotRegular, call, ws, "src/pkg") == "src/pkg is a folder, not a file; " \
        "cite a file"
    os.mkfifo(ws / "src" / "fifo")
    assert _refusal(NotRegular, call, ws, "src/fifo") == "src/fifo is not a regular file"
    assert _refusal(FileMissing, call, ws, "src/" + "n" * 300) == \
        f"src/{'n' * 300} does not exist in the workspace"


def test_a_workspace_that_cannot_be_opened(workspace):
    ws, _ = workspace
    message = _refusal(AnchorError, read_source, ws / "gone", "src/pkg/mod.py")
    assert message.startswith(f"the workspace {ws / 'gone'} cannot be opened: ")


def test_paths_that_leave_the_workspace_never_reach_the_walk():
    for path in ("../x.py", "/etc/passwd", "~/x", "a\x00b", "a\\b"):
        with pytest.raises(AnchorError):
            clean_path(path)


def test_a_plain_file_reads(workspace):
    ws, _ = workspace
    assert read_source(str(ws), "src/pkg/mod.py").lines == ("def f():", "    return 1")
