"""memnest-ctl tls init / tls client (commands/tls.py over tls_setup.py), without a daemon:
the files they write, with their modes, and the refusals, each one line and exit 1."""
import json
import stat

import pytest

from memnest_shims.cli import main as ctl
from memnest_shims.cli import tls_setup


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def authority(tmp_path, capsys):
    folder = tmp_path / "tls"
    assert ctl.main(["tls", "init", "--dir", str(folder), "--host", "mem.example"]) == 0
    capsys.readouterr()
    return folder


def test_init_writes_the_ca_and_the_server_certificate(authority):
    assert _mode(authority) == 0o700
    assert {p.name: _mode(p) for p in authority.iterdir()} == {
        "ca.key": 0o600, "ca.crt": 0o644, "server.key": 0o600, "server.crt": 0o644,
        "clients.json": 0o600}
    assert json.loads((authority / "clients.json").read_text()) == {}
    from cryptography import x509
    server = x509.load_pem_x509_certificate((authority / "server.crt").read_bytes())
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "mem.example" in names.get_values_for_type(x509.DNSName)


def test_init_refuses_to_replace_a_ca_without_force(authority, capsys):
    before = (authority / "ca.key").read_bytes()
    assert ctl.main(["tls", "init", "--dir", str(authority)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("memnest-ctl: tls init: ") and "give --force" in err
    assert (authority / "ca.key").read_bytes() == before
    assert ctl.main(["tls", "init", "--dir", str(authority), "--force"]) == 0
    assert (authority / "ca.key").read_bytes() != before


def test_client_writes_a_certificate_and_the_allow_list(authority, capsys):
    assert ctl.main(["tls", "client", "alice", "--dir", str(authority),
                     "--allow", "/srv/app", "--allow", "/srv/app"]) == 0
    out = capsys.readouterr().out
    assert "alice may use /srv/app" in out
    assert _mode(authority / "clients" / "alice.key") == 0o600
    assert json.loads((authority / "clients.json").read_text()) == {"alice": ["/srv/app"]}


@pytest.mark.parametrize("argv, says", [
    (["tls", "client", "-x"], "error: the following arguments are required: name"),
])
def test_a_wrong_command_line_exits_2(argv, says, capsys):
    with pytest.raises(SystemExit) as exited:
        ctl.main(argv)
    assert exited.value.code == 2 and says in capsys.readouterr().err


@pytest.mark.parametrize("name, allow, says", [
    ("bad name", [], "'bad name' is not a usable client name"),
    ("bob", ["relative/dir"], "--allow relative/dir: give an absolute path"),
])
def test_client_refusals_are_one_line(authority, name, allow, says, capsys):
    argv = ["tls", "client", name, "--dir", str(authority)]
    assert ctl.main(argv + [a for folder in allow for a in ("--allow", folder)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("memnest-ctl: tls client: ") and says in err and err.count("\n") == 1


def test_a_bad_name_creates_no_folder(tmp_path, capsys):
    folder = tmp_path / "never"
    assert ctl.main(["tls", "client", "a b", "--dir", str(folder)]) == 1
    assert not folder.exists()


def test_client_without_a_ca_says_to_run_init(tmp_path, capsys):
    assert ctl.main(["tls", "client", "bob", "--dir", str(tmp_path / "empty")]) == 1
    assert "run `memnest-ctl tls init` first" in capsys.readouterr().err


def test_a_ca_key_that_cannot_sign_is_named(authority, capsys):
    from cryptography.hazmat.primitives.asymmetric import x25519
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )
    key = x25519.X25519PrivateKey.generate()
    tls_setup.write_private(authority / "ca.key", key.private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()), force=True)
    assert ctl.main(["tls", "client", "bob", "--dir", str(authority)]) == 1
    assert "cannot sign these certificates" in capsys.readouterr().err


def test_a_folder_others_can_read_is_refused(tmp_path, capsys):
    folder = tmp_path / "open"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    assert ctl.main(["tls", "init", "--dir", str(folder)]) == 1
    assert f"run `chmod 700 {folder}`" in capsys.readouterr().err
