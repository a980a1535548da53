"""memnest-ctl tls init / tls client given hostile folders (--dir): each is refused in one line
or served, and no decoy's mode, owner, times or entries changed (tests/decoys.py)."""
import stat

import pytest

from memnest_shims.cli import main as ctl

from decoys import Decoys


@pytest.fixture
def decoys(tmp_path) -> Decoys:
    return Decoys(tmp_path / "decoys")


def _tls(capsys, *argv: str) -> tuple[int, str]:
    code = ctl.main(["tls", *argv])
    return code, capsys.readouterr().err


# each hostile --dir, and what the refusal says
REFUSED = {
    "file": "is not a folder",
    "folder": "has permissions 755",
    "others": "belongs to uid",
    "root": "has permissions 755",
    "link": "is a symbolic link",
    "project": "has permissions 755",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_init_refuses_a_folder_it_may_not_use_and_changes_nothing(decoys, capsys, name):
    folder = decoys.hostile()[name]
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    code, err = _tls(capsys, "init", "--dir", str(folder))
    assert code == 1 and REFUSED[name] in err and err.count("\n") == 1, err
    decoys.assert_untouched()


@pytest.mark.parametrize("name", ["file", "others", "file-link"])
def test_init_makes_no_folder_inside_what_is_not_ours(decoys, capsys, name):
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    code, err = _tls(capsys, "init", "--dir", str(decoys.hostile()[name] / "tls" / "deeper"))
    assert code == 1 and err.startswith("memnest-ctl: tls init: "), err
    decoys.assert_untouched()


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_client_refuses_every_hostile_folder_and_makes_nothing(decoys, capsys, name):
    if name == "others" and not decoys.other_user:
        pytest.skip("needs root to give a folder to another user")
    code, err = _tls(capsys, "client", "bob", "--dir", str(decoys.hostile()[name]))
    assert code == 1 and err.startswith("memnest-ctl: tls client: "), err
    decoys.assert_untouched()


def test_client_without_a_ca_folder_makes_none(tmp_path, capsys):
    missing = tmp_path / "nowhere" / "tls"
    code, err = _tls(capsys, "client", "bob", "--dir", str(missing))
    assert code == 1 and "run `memnest-ctl tls init` first" in err
    assert not (tmp_path / "nowhere").exists()


def test_init_makes_only_the_missing_folders_private(tmp_path, capsys):
    """New folders inside a folder of one's own: made 0700; the folder above them as it was."""
    above = tmp_path / "config"
    above.mkdir(mode=0o755)
    above.chmod(0o755)
    before = above.stat()
    target = above / "memnest" / "tls"
    code, err = _tls(capsys, "init", "--dir", str(target))
    assert code == 0, err
    assert [stat.S_IMODE(p.stat().st_mode) for p in (target, target.parent)] == [0o700] * 2
    assert (above.stat().st_mode, above.stat().st_uid) == (before.st_mode, before.st_uid)
