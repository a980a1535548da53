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
