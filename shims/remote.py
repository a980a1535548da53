"""A remote memnestd (MEMNEST_REMOTE=HOST:PORT): the secure channel to it.

Only mutual TLS: the daemon's certificate is checked against MEMNEST_TLS_CA and this client
shows its own (MEMNEST_TLS_CERT, MEMNEST_TLS_KEY), whose common name is the identity the
daemon records and authorises. Imported only when MEMNEST_REMOTE is set.
"""
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import DaemonUnavailable

if TYPE_CHECKING:
    import grpc

ENV_REMOTE = "MEMNEST_REMOTE"
ENV_CA, ENV_CERT, ENV_KEY = "MEMNEST_TLS_CA", "MEMNEST_TLS_CERT", "MEMNEST_TLS_KEY"
# The name the daemon's certificate must carry, when it is not the host in MEMNEST_REMOTE.
ENV_SERVER_NAME = "MEMNEST_TLS_SERVER_NAME"
MAX_PEM_BYTES = 1 << 20


def _read(env: str, what: str, address: str, secret: bool = False) -> bytes:
    value = os.environ.get(env, "").strip()
    if not value:
        raise DaemonUnavailable(
            f"{ENV_REMOTE}={address} is set, but {env} is not: a remote memnestd accepts only "
            f"clients that show a certificate its CA signed; set {ENV_CA}, {ENV_CERT} and "
            f"{ENV_KEY} (`memnest-ctl tls client NAME` on the daemon's machine makes them)")
    path = Path(value).expanduser()
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            data = f.read(MAX_PEM_BYTES)
    except OSError as exc:
        raise DaemonUnavailable(f"cannot read the {what} {path} ({env}): {exc.strerror}") \
            from None
    if secret and stat.S_IMODE(info.st_mode) & 0o077:
        raise DaemonUnavailable(f"the {what} {path} ({env}) has permissions "
                                f"{stat.S_IMODE(info.st_mode):o}: other users may read it; "
                                f"run `chmod 600 {path}`")
    if b"-----BEGIN" not in data:
        raise DaemonUnavailable(f"the {what} {path} ({env}) is not a PEM file")
    return data


def channel(address: str, options: Sequence[tuple[str, str | int]]) -> "grpc.Channel":
    """A secure channel to the daemon at `address` with this client's certificate."""
    import grpc
    root = _read(ENV_CA, "CA certificate", address)
    chain = _read(ENV_CERT, "client certificate", address)
    key = _read(ENV_KEY, "client key", address, secret=True)
    creds = grpc.ssl_channel_credentials(root_certificates=root, private_key=key,
                                         certificate_chain=chain)
    server_name = os.environ.get(ENV_SERVER_NAME, "").strip()
    if server_name:
        options = [*options, ("grpc.ssl_target_name_override", server_name)]
    return grpc.secure_channel(address, creds, options=options)


def certificate_problem() -> str | None:
    """What is wrong with this client's own certificate, if anything can be seen from here:
    expired, not yet valid, or not signed by the CA in MEMNEST_TLS_CA. (The daemon closes a
    TLS connection it refuses without telling the client why.)"""
    try:
        import datetime

        from cryptography import x509
    except ImportError:
        return None
    try:
        with open(Path(os.environ[ENV_CERT]).expanduser(), "rb") as f:
            cert = x509.load_pem_x509_certificate(f.read(MAX_PEM_BYTES))
        with open(Path(os.environ[ENV_CA]).expanduser(), "rb") as f:
            ca = x509.load_pem_x509_certificate(f.read(MAX_PEM_BYTES))
    except (KeyError, OSError, ValueError):
        return None
    path = os.environ[ENV_CERT]
    now = datetime.datetime.now(datetime.timezone.utc)
    if cert.not_valid_after_utc < now:
        return (f"the client certificate {path} ({ENV_CERT}) expired on "
                f"{cert.not_valid_after_utc:%Y-%m-%d %H:%M} UTC; make a new one with "
                "`memnest-ctl tls client NAME --force` on the daemon's machine")
    if cert.not_valid_before_utc > now:
        return (f"the client certificate {path} ({ENV_CERT}) is not valid before "
                f"{cert.not_valid_before_utc:%Y-%m-%d %H:%M} UTC (check this machine's clock)")
    try:
        cert.verify_directly_issued_by(ca)
    except Exception:  # noqa: BLE001 - InvalidSignature, or a key type it cannot check
        return (f"the client certificate {path} ({ENV_CERT}) was not signed by the CA in "
                f"{os.environ[ENV_CA]} ({ENV_CA}): use a certificate that `memnest-ctl tls "
                "client NAME` made with the daemon's CA")
    return None


def explain(address: str, error: str) -> str:
    """Why a remote daemon did not answer, with what to check."""
    lowered = error.lower()
    problem = certificate_problem() if error else None
    if problem:
        hint = f"the daemon refuses this client: {problem}"
    elif any(k in lowered for k in ("ssl", "tls", "handshake", "certificate", "socket closed")):
        hint = (f"the TLS handshake failed: {ENV_CA} must be the CA that signed the daemon's "
                f"certificate, and {ENV_CERT}/{ENV_KEY} a client certificate from the same "
                "CA, not expired (`memnest-ctl tls client NAME`); the host in "
                f"{ENV_REMOTE} must be a name in the daemon's certificate")
    else:
        hint = (f"check that memnestd runs there with --listen-tls {address} and that the "
                "port is reachable from here")
    return (f"memnestd did not answer at {address} ({ENV_REMOTE}; last error: "
            f"{error or 'none'}): {hint}. A remote daemon is never started or upgraded from "
            "here")
