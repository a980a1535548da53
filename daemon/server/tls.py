"""The daemon on TCP: mutual TLS only, each client certificate an identity with an allow-list.

`memnestd --listen-tls HOST:PORT` (or MEMNEST_TLS_LISTEN) adds a TCP port beside the Unix
socket. It speaks only TLS and accepts only clients whose certificate the configured CA signed
(gRPC's own credentials, require_client_auth): a connection without one, or with one from
another CA or out of its validity, never reaches a servicer. The certificate's common name is
the caller's identity: what it writes is recorded as `tls:<CN>`, and it may use only the
workspaces the allow-list (MEMNEST_TLS_CLIENTS, a JSON object of CN: [folder or glob, ...])
gives it. Admin calls (Shutdown, upgrades) are for the local user on the Unix socket only.
"""
import fnmatch
import json
import logging
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from ..core.config import TlsSettings

log = logging.getLogger(__name__)

ENV_CERT, ENV_KEY, ENV_CA = "MEMNEST_TLS_CERT", "MEMNEST_TLS_KEY", "MEMNEST_TLS_CA"
ENV_CLIENTS = "MEMNEST_TLS_CLIENTS"
MAX_FILE_BYTES = 1 << 20
IDENTITY_PREFIX = "tls:"
# In a client's allow-list entry: it may reach the personal tier (never granted by a folder)
PERSONAL_GRANT = "@personal"


@dataclass(frozen=True)
class TlsConfig:
    listen: str  # HOST:PORT
    cert: bytes
    key: bytes
    ca: bytes
    cert_path: Path
    clients: "ClientPolicy"


def _refuse(message: str) -> SystemExit:
    return SystemExit(f"memnestd: {message}")


def _read(path: Path, what: str, secret: bool) -> bytes:
    """A PEM file the daemon needs; refuses a missing, unreadable or (for a key) shared one."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise _refuse(f"the {what} {path} does not exist") from None
    except OSError as exc:
        raise _refuse(f"cannot read the {what} {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(f"the {what} {path} is not a regular file")
        if secret and stat.S_IMODE(info.st_mode) & 0o077:
            raise _refuse(f"the {what} {path} has permissions "
                          f"{stat.S_IMODE(info.st_mode):o}, so other users may read it; run "
                          f"`chmod 600 {path}` (and consider the key exposed)")
        data = f.read(MAX_FILE_BYTES + 1)
    if not data.strip() or len(data) > MAX_FILE_BYTES or b"-----BEGIN" not in data:
        raise _refuse(f"the {what} {path} is not a PEM file")
    return data


def parse_listen(value: str) -> str:
    host, sep, port = value.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise _refuse(f"--listen-tls {value!r}: give HOST:PORT, e.g. 0.0.0.0:7443 or "
                      "[::1]:7443")
    return f"{host}:{int(port)}"


def config_from(listen: str | None, tls_dir: str | None,
                settings: TlsSettings) -> TlsConfig | None:
    """The TLS listener's configuration, or None when none is asked for: `listen` and
    `tls_dir` (memnestd's options) before the settings. Exits with a clear message when
    anything it needs is missing, unreadable or unsafe."""
    listen = (listen or settings.listen).strip()
    if not listen:
        return None
    address = parse_listen(listen)
    folder = (tls_dir or settings.dir).strip()
    base = Path(folder).expanduser() if folder else None
    paths: dict[str, Path] = {}
    for env, value, name, what in ((ENV_CERT, settings.cert, "server.crt",
                                    "server certificate"),
                                   (ENV_KEY, settings.key, "server.key", "server key"),
                                   (ENV_CA, settings.ca, "ca.crt", "CA certificate")):
        if value:
            paths[env] = Path(value).expanduser()
        elif base is not None:
            paths[env] = base / name
        else:
            raise _refuse(f"--listen-tls needs the {what}: set {env} or give --tls-dir DIR "
                          f"holding {name} (`memnest-ctl tls init` writes them)")
    if settings.clients:
        clients_path = Path(settings.clients).expanduser()
    elif base is not None:
        clients_path = base / "clients.json"
    else:
        raise _refuse(f"--listen-tls needs the allow-list of clients: set {ENV_CLIENTS} to a "
                      'JSON file like {"alice": ["/srv/projects/app"]} (or give --tls-dir '
                      "DIR holding clients.json)")
    policy = ClientPolicy(clients_path.absolute())
    policy.load(strict=True)
    return TlsConfig(listen=address,
                     cert=_read(paths[ENV_CERT], "server certificate", False),
                     key=_read(paths[ENV_KEY], "server key", True),
                     ca=_read(paths[ENV_CA], "CA certificate", False),
                     cert_path=paths[ENV_CERT], clients=policy)


def server_credentials(config: TlsConfig):
    import grpc
    return grpc.ssl_server_credentials([(config.key, config.cert)],
                                       root_certificates=config.ca, require_client_auth=True)


# -- identities ----------------------------------------------------------------------------------

def tls_identity(context) -> str | None:
    """For a call that came over TLS: the common name of the client's certificate ("" when
    it has none). None for a call on the Unix socket."""
    try:
        auth = context.auth_context() or {}
    except Exception:  # noqa: BLE001 - a call torn down: treat as remote without a name
        return ""
    kind = b"".join(auth.get("transport_security_type", []))
    if kind != b"ssl":
        peer = str(context.peer() or "")
        if peer.startswith(("ipv4:", "ipv6:")):
            return ""  # TCP without TLS: never served as the local user
        return None
    names = auth.get("x509_common_name") or []
    return names[0].decode("utf-8", "replace").strip() if names else ""


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def _within(path: str, pattern: str) -> bool:
    """`path` is the folder `pattern` names (or matches, for a glob), or is inside it."""
    pattern = os.path.normpath(pattern)
    if _is_glob(pattern):
        parts = path.split(os.sep)
        depth = len(pattern.split(os.sep))
        return len(parts) >= depth and fnmatch.fnmatchcase(os.sep.join(parts[:depth]), pattern)
    return path == pattern or path.startswith(pattern.rstrip(os.sep) + os.sep)


def _real_within(real: str, rules: list[str]) -> bool:
    # an allowed folder that is itself a symlink counts as its target
    return any(_within(real, rule) or (not _is_glob(rule) and
                                       _within(real, os.path.realpath(rule)))
               for rule in rules)


class ClientPolicy:
    """The allow-list: CN -> folders (or simple globs) it may use as workspaces. Read again
    whenever the file changes, so access is granted or withdrawn without a restart."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._rules: dict[str, list[str]] = {}

    def load(self, strict: bool = False) -> dict[str, list[str]]:
        with self._lock:
            try:
                info = os.stat(self.path)
            except OSError as exc:
                if strict:
                    raise _refuse(f"cannot read the client allow-list {self.path} "
                                  f"({ENV_CLIENTS}): {exc.strerror}") from None
                log.warning("allow-list %s unreadable (%s): refusing every TLS client",
                            self.path, exc.strerror)
                self._rules, self._stamp = {}, None
                return self._rules
            stamp = (info.st_mtime_ns, info.st_size)
            if stamp == self._stamp:
                return self._rules
            try:
                rules = self._parse(info)
            except ValueError as exc:
                if strict:
                    raise _refuse(str(exc)) from None
                log.warning("%s; refusing every TLS client until it is fixed", exc)
                rules = {}
            self._rules, self._stamp = rules, stamp
            return rules

    def _parse(self, info: os.stat_result) -> dict[str, list[str]]:
        if stat.S_IMODE(info.st_mode) & 0o022:
            raise ValueError(f"the client allow-list {self.path} is writable by others "
                             f"(permissions {stat.S_IMODE(info.st_mode):o}); run "
                             f"`chmod 600 {self.path}`")
        try:
            with open(self.path, "rb") as f:
                raw = json.loads(f.read(MAX_FILE_BYTES))
        except (OSError, ValueError) as exc:
            raise ValueError(f"the client allow-list {self.path} is not valid JSON: {exc}")
        if not isinstance(raw, dict) or not all(
                isinstance(k, str) and isinstance(v, list) and
                all(isinstance(p, str) and (os.path.isabs(p) or p == PERSONAL_GRANT)
                    for p in v)
                for k, v in raw.items()):
            raise ValueError(f"the client allow-list {self.path} must be a JSON object of "
                             'name: [absolute folder or glob, ...], e.g. {"alice": '
                             '["/srv/projects/app", "/srv/projects/lib/*"]}, and '
                             f'"{PERSONAL_GRANT}" to grant the personal tier')
        return {k: [p if p == PERSONAL_GRANT else os.path.normpath(p) for p in v]
                for k, v in raw.items()}

    def allowed_folders(self, identity: str) -> list[str]:
        return [p for p in self.load().get(identity, []) if p != PERSONAL_GRANT]

    def allows_personal(self, identity: str) -> bool:
        """The identity's entry grants the user's personal tier (scope "user")."""
        return bool(identity) and PERSONAL_GRANT in self.load().get(identity, [])

    def allows(self, identity: str, workspace: str, real: str | None = None) -> bool:
        """`workspace` (absolute; checked as given and as its real path) is, or is inside, a
        folder the identity is allowed. `real`: where it was found to lead (an opened
        folder's own path, a resolved workspace); resolved now when not given."""
        if not identity or not os.path.isabs(workspace) or "\x00" in workspace:
            return False
        rules = self.allowed_folders(identity)
        if not rules:
            return False
        lexical = os.path.normpath(workspace)
        # as written, and where it leads (a symlink inside an allowed folder that points out
        # of it leads out)
        return any(_within(lexical, rule) for rule in rules) and \
            _real_within(os.path.realpath(workspace) if real is None else real, rules)

    def allows_real(self, identity: str, real: str) -> bool:
        """`real`, a path without links in it (a workspace as the daemon records it), is, or
        is inside, a folder the identity is allowed."""
        if not identity or not os.path.isabs(real) or "\x00" in real:
            return False
        return _real_within(os.path.normpath(real), self.allowed_folders(identity))

    def refusal(self, identity: str, workspace: str) -> str:
        if not identity:
            return ("this TLS client's certificate has no common name, so it has no "
                    "identity and may use no workspace; issue one with `memnest-ctl tls "
                    "client NAME`")
        folders = self.allowed_folders(identity)
        allowed = ", ".join(folders) if folders else "none"
        return (f"tls client {identity!r} may not use workspace {workspace!r}: its allowed "
                f"folders are {allowed}. The daemon's allow-list is {self.path} "
                f"({ENV_CLIENTS}); add the folder to {identity!r} there (on the daemon's "
                "machine)")
