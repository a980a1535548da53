"""memnest-ctl export PATH given hostile paths, through the real program and daemon: each is
refused in one line before the daemon is asked (nothing is written, not even under
.memnest/exports/) or served into a folder that was there, and no decoy's mode, owner, times
or entries changed (tests/decoys.py)."""
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from decoys import Decoys

CTL = Path(sys.executable).parent / "memnest-ctl"
FORMATS = {"json": [], "digest": ["--format", "claude-md", "--scope", "all"],
           "notes": ["--format", "markdown"]}


@pytest.fixture
def decoys(tmp_path) -> Decoys:
    return Decoys(tmp_path / "decoys")


@pytest.fixture
def stored(call, workspace) -> Path:
    call("memory_store", content="Exports go only where the user asked, never through a link",
         importance=5)
    return workspace


def export(daemon, workspace: Path, target: Path, kind: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CTL), "export", *FORMATS[kind], str(target)], cwd=workspace,
                          env={**daemon.env, "MEMORY_WORKSPACE": str(workspace)},
                          capture_output=True, text=True, timeout=120)


def exports(workspace: Path) -> list[str]:
    folder = workspace / ".memnest" / "exports"
    return sorted(os.listdir(folder)) if folder.is_dir() else []


def refused(out: subprocess.CompletedProcess, says: str) -> None:
    assert out.returncode == 1 and out.stderr.count("\n") == 1, out
    assert says in out.stderr and "Traceback" not in out.stderr, out.stderr


# hostile target -> what the refusal says, per format
FILE_REFUSALS = {"file": "exists and", "folder": "is not a regular file",
                 "others": "is not a regular file", "root": "is not a regular file",
                 "link": "is a symbolic link", "file-link": "is a symbolic link",
                 "project": "is not a regular file"}
NOTES_REFUSALS = {"file": "is not an empty folder", "folder": "is not an empty folder",
                  "others": "is not an empty folder", "root": "is not an empty folder",
                  "link": "is a symbolic link", "file-link": "is a symbolic link",
                  "project": "is not an empty folder"}


@pytest.mark.parametrize("kind", sorted(FORMATS))
@pytest.mark.parametrize("name", sorted(FILE_REFUSALS))
def test_a_hostile_target_is_refused_before_anything_is_written(daemon, stored, decoys, kind,
                                                                name):
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    before = exports(stored)
    says = (NOTES_REFUSALS if kind == "notes" else FILE_REFUSALS)[name]
    refused(export(daemon, stored, decoys.hostile()[name], kind), says)
    assert exports(stored) == before
    decoys.assert_untouched()


@pytest.mark.parametrize("kind", sorted(FORMATS))
@pytest.mark.parametrize("where, says", [("folder/missing/out", "does not exist; make it"),
                                         ("file/out", "is not a folder"),
                                         ("others/out", "another user's folder")])
def test_no_folder_is_made_on_the_way(daemon, stored, decoys, kind, where, says):
    name, _, rest = where.partition("/")
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    refused(export(daemon, stored, decoys.hostile()[name] / rest, kind), says)
    decoys.assert_untouched()


def test_an_empty_folder_of_another_user_takes_no_notes(daemon, stored, decoys, tmp_path):
    if not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    refused(export(daemon, stored, theirs, "notes"), "belongs to uid")
    assert os.listdir(theirs) == [] and theirs.stat().st_uid == 65534


@pytest.mark.parametrize("kind", ["json", "digest"])
def test_a_link_to_memnests_own_file_is_not_followed(daemon, stored, tmp_path, kind):
    """A link to a file memnest may replace is still a link: the file it names stays."""
    real = tmp_path / "real.out"
    assert export(daemon, stored, real, kind).returncode == 0
    written = real.read_bytes()
    link = tmp_path / "link.out"
    link.symlink_to(real)
    refused(export(daemon, stored, link, kind), "is a symbolic link")
    assert real.read_bytes() == written and os.readlink(link) == str(real)


@pytest.mark.parametrize("kind", ["json", "digest"])
def test_a_file_is_written_then_replaced_keeping_its_mode(daemon, stored, tmp_path, kind):
    target = tmp_path / "out" / "memories.out"
    target.parent.mkdir()
    target.parent.chmod(0o755)
    assert export(daemon, stored, target, kind).returncode == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    target.chmod(0o640)
    assert export(daemon, stored, target, kind).returncode == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o755
    assert sorted(os.listdir(target.parent)) == ["memories.out"]  # no temporary left
    assert exports(stored) == []  # moved, not copied


def test_notes_go_into_an_empty_folder_which_keeps_its_mode(daemon, stored, tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    vault.chmod(0o750)
    before = vault.stat()
    out = export(daemon, stored, vault, "notes")
    assert out.returncode == 0, out.stderr
    after = vault.stat()
    assert (after.st_ino, after.st_mode, after.st_uid) == \
        (before.st_ino, before.st_mode, before.st_uid)
    assert [p.suffix for p in vault.iterdir()] == [".md"]
    assert exports(stored) == []


def test_notes_into_a_new_folder(daemon, stored, tmp_path):
    vault = tmp_path / "new-vault"
    assert export(daemon, stored, vault, "notes").returncode == 0
    assert stat.S_IMODE(vault.stat().st_mode) == 0o700
    assert [p.suffix for p in vault.iterdir()] == [".md"]


@pytest.mark.parametrize("name", ["file", "folder", "others", "root", "link", "file-link",
                                  "project"])
def test_import_only_reads_what_it_is_given(daemon, stored, decoys, name):
    """import PATH reads the file (the daemon does): a path that is not an export is refused,
    and nothing given is changed."""
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    out = subprocess.run([str(CTL), "import", str(decoys.hostile()[name])], cwd=stored,
                         env={**daemon.env, "MEMORY_WORKSPACE": str(stored)},
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out
    decoys.assert_untouched()
