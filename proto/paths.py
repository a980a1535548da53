"""Where the daemon's socket, logs and caches live. Shared by the daemon and every client.

platformdirs is imported only when a default location is needed: a hook process that is told
its socket and log (MEMNEST_SOCKET, MEMNEST_LOG_FILE) starts without it.
"""
import os
import warnings
from pathlib import Path

APP = "memnest"


def runtime_dir() -> Path:
    import platformdirs
    with warnings.catch_warnings():  # no XDG_RUNTIME_DIR: platformdirs falls back, noisily
        warnings.simplefilter("ignore")
        return Path(platformdirs.user_runtime_dir(APP))


def socket_path() -> Path:
    override = os.environ.get("MEMNEST_SOCKET")
    return Path(override) if override else runtime_dir() / "memnestd.sock"


def log_dir() -> Path:
    import platformdirs
    return Path(platformdirs.user_log_dir(APP))


def log_file() -> Path:
    override = os.environ.get("MEMNEST_LOG_FILE")
    return Path(override) if override else log_dir() / "memnestd.log"


def cache_dir() -> Path:
    import platformdirs
    return Path(platformdirs.user_cache_dir(APP))


def grpc_target(path: Path) -> str:
    return f"unix://{path}"


# Folders that hold the system, not a project (and the parents of users' homes): the daemon
# keeps no memory there (store/registry.py check_workspace) and a client writes no project
# file there (memnest-ctl config).
_SYSTEM = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
           "/run", "/sbin", "/sys", "/usr", "/var", "/System", "/Library", "/private/etc",
           "/private/var")
_SYSTEM_EXACT = ("/", "/home", "/Users", "/tmp", "/var/tmp", "/private/tmp", "/opt", "/srv",
                 "/mnt", "/media", "/root" if os.geteuid() != 0 else "")
_NOT_SYSTEM = ("/var/tmp/", "/var/folders/", "/private/var/folders/", "/run/user/")


def system_folder(path: str) -> bool:
    """Whether `path` (resolved) is a system folder rather than a project."""
    if path in _SYSTEM_EXACT:
        return True
    if path.startswith(_NOT_SYSTEM) and path.rstrip("/") not in _SYSTEM_EXACT:
        return False
    return any(path == top or path.startswith(top + "/") for top in _SYSTEM)
