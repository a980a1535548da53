"""memnest-ctl tls: the certificates of a remote daemon (mutual TLS).

`tls init` makes a private certificate authority and the daemon's server certificate;
`tls client NAME` makes a client certificate with CN=NAME, signed by that authority. The
daemon accepts only clients whose certificate that authority signed, and the name in it is
the client's identity: what it writes is recorded as written by `tls:NAME`, and the
daemon's allow-list (MEMNEST_TLS_CLIENTS) says which workspaces it may use.

Keys are written 0600 (never through a symlink, never over an existing file unless --force),
in a 0700 folder. `cryptography` is imported only by these commands; commands/tls.py
reads their command lines and says what was written.
"""
from __future__ import annotations

import datetime
import ipaddress
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..own_paths import PRIVATE, Missing, NotOurs, own_folder

if TYPE_CHECKING:  # cryptography is imported by the commands that use it, not at start
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    # What signs memnest's certificates: tls init makes EC keys; an RSA CA signs as well.
    IssuerKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey

DEFAULT_PORT = 7443
CA_DAYS = 3650
SERVER_DAYS = 825
CLIENT_DAYS = 365
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


class TlsSetupError(Exception):
    """A reason to stop, phrased for the user."""


def default_dir() -> Path:
    import platformdirs
    return Path(platformdirs.user_config_dir("memnest")) / "tls"


# -- files ---------------------------------------------------------------------------------------

def prepare_dir(folder: Path, create: bool = True) -> Path:
    """The folder of the keys: a real folder of this user that no one else may enter. Made
    (0700) when missing and `create`; one that was there is never chmodded."""
    folder = folder.expanduser().absolute()
    try:
        own_folder(folder, PRIVATE, create=create)
    except Missing:
        raise TlsSetupError(f"{folder} is missing: run `memnest-ctl tls init` first "
                            "(with the same --dir)") from None
    except NotOurs as exc:
        raise TlsSetupError(str(exc)) from None
    return folder


def write_private(path: Path, data: bytes, force: bool, mode: int = 0o600) -> None:
    """Create `path` with `mode`, never through a symlink, never over a file unless `force`."""
    if force:
        try:
            os.unlink(path)  # a symlink is removed, not followed
        except FileNotFoundError:
            pass
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    except FileExistsError:
        raise TlsSetupError(f"{path} exists; give --force to replace it") from None
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
    finally:
        os.close(fd)


def read_private(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise TlsSetupError(f"{path} is missing: run `memnest-ctl tls init` first "
                            "(with the same --dir)") from None
    except OSError as exc:
        raise TlsSetupError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        return f.read()


# -- certificates --------------------------------------------------------------------------------

def new_key() -> ec.EllipticCurvePrivateKey:
    from cryptography.hazmat.primitives.asymmetric import ec
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: IssuerKey) -> bytes:
    from cryptography.hazmat.primitives import serialization
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def cert_pem(cert: x509.Certificate) -> bytes:
    from cryptography.hazmat.primitives import serialization
    return cert.public_bytes(serialization.Encoding.PEM)


def _name(common_name: str) -> x509.Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "memnest"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_ca(common_name: str = "memnest private CA",
            days: int = CA_DAYS) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    key = new_key()
    now = datetime.datetime.now(datetime.timezone.utc)
    name = _name(common_name)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                         crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


def issue(ca_key: IssuerKey, ca_cert: x509.Certificate, common_name: str, *, server: bool,
          hosts: Iterable[str] = (), not_before: datetime.datetime | None = None,
          not_after: datetime.datetime | None = None,
          days: int = CLIENT_DAYS) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A leaf certificate signed by the CA: a server's (SANs `hosts`) or a client's."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID
    key = new_key()
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(common_name))
               .issuer_name(ca_cert.subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(not_before or now - datetime.timedelta(minutes=5))
               .not_valid_after(not_after or now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=False,
                                            crl_sign=False, content_commitment=False,
                                            key_encipherment=False, data_encipherment=False,
                                            key_agreement=False, encipher_only=False,
                                            decipher_only=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage(
                   [ExtendedKeyUsageOID.SERVER_AUTH if server
                    else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                   ca_key.public_key()), critical=False))
    if server:
        names: list[x509.GeneralName] = []
        for host in dict.fromkeys(hosts):
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def load_ca(folder: Path) -> tuple[IssuerKey, x509.Certificate]:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    ca_cert = x509.load_pem_x509_certificate(read_private(folder / "ca.crt"))
    ca_key = serialization.load_pem_private_key(read_private(folder / "ca.key"), password=None)
    if not isinstance(ca_key, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)):
        raise TlsSetupError(f"{folder / 'ca.key'} holds a {type(ca_key).__name__}, which "
                            "cannot sign these certificates: make the CA with `memnest-ctl "
                            "tls init`")
    return ca_key, ca_cert


# -- the folder of `tls init` ----------------------------------------------------------------------

AUTHORITY_FILES = ("ca.key", "ca.crt", "server.key", "server.crt")


def clients_file(folder: Path) -> Path:
    """The daemon's allow-list: which client name may use which workspaces."""
    return folder / "clients.json"


def write_authority(folder: Path, hosts: list[str], common_name: str, days: int,
                    force: bool) -> None:
    """A new CA and the daemon's certificate (SANs `hosts`) in `folder`, and an empty
    allow-list when there is none."""
    ca_key, ca_cert = make_ca()
    server_key, server_cert = issue(ca_key, ca_cert, common_name, server=True, hosts=hosts,
                                    days=days)
    for path in (folder / name for name in AUTHORITY_FILES):
        if path.exists() and not force:
            raise TlsSetupError(f"{path} exists; give --force to replace the CA and the "
                                "server certificate (every client certificate signed by "
                                "the old CA stops working)")
    write_private(folder / "ca.key", key_pem(ca_key), force)
    write_private(folder / "ca.crt", cert_pem(ca_cert), force, 0o644)
    write_private(folder / "server.key", key_pem(server_key), force)
    write_private(folder / "server.crt", cert_pem(server_cert), force, 0o644)
    clients = clients_file(folder)
    if not clients.exists():
        write_private(clients, b"{}\n", False)


def check_client_name(name: str) -> None:
    if not NAME_PATTERN.fullmatch(name):
        raise TlsSetupError(f"{name!r} is not a usable client name: 1-64 letters, digits, "
                            "'.', '_', '@' or '-', starting with a letter or digit")


def write_client(folder: Path, name: str, days: int, force: bool) -> tuple[Path, Path]:
    """A key and a certificate (CN=`name`, checked first) signed by the CA in `folder`."""
    ca_key, ca_cert = load_ca(folder)
    key, cert = issue(ca_key, ca_cert, name, server=False, days=days)
    out = prepare_dir(folder / "clients")
    key_path, cert_path = out / f"{name}.key", out / f"{name}.crt"
    if not force:
        for path in (key_path, cert_path):
            if path.exists():
                raise TlsSetupError(f"{path} exists; give --force to replace it")
    write_private(key_path, key_pem(key), force)
    write_private(cert_path, cert_pem(cert), force, 0o644)
    return key_path, cert_path


def allow(clients: Path, name: str, folders: list[str]) -> list[str]:
    """Add `folders` to `name`'s entry in the daemon's allow-list; its entries now."""
    try:
        current = json.loads(read_private(clients) or b"{}") if clients.exists() else {}
    except ValueError as exc:
        raise TlsSetupError(f"{clients} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(current, dict):
        raise TlsSetupError(f"{clients} must hold a JSON object of name: [folders]")
    entries = list(current.get(name) or [])
    for folder in folders:
        if not folder.startswith("/"):
            raise TlsSetupError(f"--allow {folder}: give an absolute path on the daemon's "
                                "machine")
        if folder not in entries:
            entries.append(folder)
    current[name] = entries
    write_private(clients, (json.dumps(current, indent=2) + "\n").encode(), True)
    return entries
