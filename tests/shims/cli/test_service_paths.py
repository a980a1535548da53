"""memnest-ctl service install / uninstall given hostile unit folders and files, with a
service manager that answers every command (no daemon is started): each file is checked
before any is written, a link or a file memnest did not write is refused or left, and no
decoy's mode, owner, times or entries changed (tests/decoys.py)."""
import os
import stat
import subprocess
from pathlib import Path

import pytest

from memnest_proto import memnest_pb2 as pb
from memnest_shims.cli import service_units as service

from decoys import OTHER_UID, Decoys


@pytest.fixture
def decoys(tmp_path) -> Decoys:
    return Decoys(tmp_path / "decoys")


@pytest.fixture
def manager(tmp_path, monkeypatch) -> list[list[str]]:
    """A systemd user manager that says yes to everything; the commands it was given."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MEMNEST_SOCKET", str(tmp_path / "run" / "memnestd.sock"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    ran: list[list[str]] = []

    def run(cmd: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
        ran.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, "0\n", "")
    monkeypatch.setattr(service, "run", run)
    monkeypatch.setattr(service.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(service, "_verify", lambda sock, report: pb.StatusResponse(
        pid=1, version="test"))
    return ran


def install(**kw) -> dict:
    return service.install(report=service.Report(out=lambda text: None), kind="systemd", **kw)


@pytest.mark.parametrize("config, says", [("others", "another user's folder"),
                                          ("file", "is not a folder"),
                                          ("file-link", "is not a folder")])
def test_no_unit_folder_is_made_inside_what_is_not_ours(manager, decoys, monkeypatch, config,
                                                        says):
    if config == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(decoys.hostile()[config]))
    for dry_run in (True, False):
        with pytest.raises(service.ServiceError, match=says):
            install(dry_run=dry_run)
    assert manager == [["systemctl", "--user", "show-environment"]] * 2  # nothing else ran
    decoys.assert_untouched()


@pytest.fixture
def units(manager) -> Path:
    folder = service.unit_dir()
    folder.mkdir(parents=True)
    return folder


@pytest.mark.parametrize("planted, says", [("link", "is a symbolic link"),
                                           ("theirs", "not written by memnest"),
                                           ("folder", "is not a regular file"),
                                           ("other-user", "belongs to uid")])
def test_a_unit_file_memnest_did_not_write_is_refused(manager, units, decoys, planted, says):
    unit = units / service.SERVICE_UNIT
    if planted == "link":
        unit.symlink_to(decoys.file)
    elif planted == "folder":
        unit.mkdir()
    else:
        unit.write_text("[Service]\nExecStart=/usr/local/bin/my-own-memnestd\n")
        if planted == "other-user":
            if not decoys.other_user:
                pytest.skip("needs root to give a file to another user")
            os.chown(unit, OTHER_UID, OTHER_UID)
    before = os.lstat(unit)
    with pytest.raises(service.ServiceError, match=says):
        install()
    after = os.lstat(unit)
    assert (after.st_mode, after.st_uid, after.st_mtime_ns, after.st_ino) == \
        (before.st_mode, before.st_uid, before.st_mtime_ns, before.st_ino)
    assert not (units / service.SOCKET_UNIT).exists()  # nor the other unit
    decoys.assert_untouched()


def test_units_are_written_then_replaced_and_uninstall_leaves_what_is_not_ours(manager, units):
    units.chmod(0o755)
    assert install()["installed"] is True
    service_unit, socket_unit = units / service.SERVICE_UNIT, units / service.SOCKET_UNIT
    assert [stat.S_IMODE(p.stat().st_mode) for p in (service_unit, socket_unit)] == [0o644] * 2
    assert install()["installed"] is True  # its own files: replaced
    assert stat.S_IMODE(units.stat().st_mode) == 0o755
    socket_unit.write_text("[Socket]\nListenStream=/run/mine.sock\n")  # now the user's
    service.uninstall(report=service.Report(out=lambda text: None), kind="systemd")
    assert not service_unit.exists()
    assert socket_unit.read_text() == "[Socket]\nListenStream=/run/mine.sock\n"


def test_uninstall_removes_a_link_by_its_name_never_what_it_leads_to(manager, units, decoys):
    (units / service.SERVICE_UNIT).symlink_to(decoys.file)
    service.uninstall(report=service.Report(out=lambda text: None), kind="systemd")
    assert (units / service.SERVICE_UNIT).is_symlink()
    decoys.assert_untouched()


@pytest.mark.parametrize("log, says", [("link", "is a symbolic link"),
                                       ("others", "belongs to uid"),
                                       ("file", "is not a folder")])
def test_launchd_log_folder_it_may_not_use_is_refused(manager, decoys, monkeypatch, log, says):
    if log == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    monkeypatch.setenv("MEMNEST_LOG_FILE", str(decoys.hostile()[log] / "memnestd.log"))
    monkeypatch.setattr(service, "manager_running", lambda kind=None: (True, "launchd"))
    with pytest.raises(service.ServiceError, match=says):
        service.install(report=service.Report(out=lambda text: None), kind="launchd")
    assert not service.plist_path().exists()
    decoys.assert_untouched()
