"""The user's sealing key (core/sealing.py), in a file of memnest's own folder: read when it
is there and private, made (0600, never through a link) when it is not."""
import os
import secrets
import stat

from ..core.sealing import KEY_BYTES
from .db_files import open_private

KEY_FILE = "seal.key"


class KeyRefused(RuntimeError):
    """The key file is there but cannot be trusted; the message says what to do."""


def load_or_create(folder: str) -> bytes:
    """The key kept in `folder` (memnest's own, private: the caller made it)."""
    path = os.path.join(folder, KEY_FILE)
    try:
        fd = open_private(path, os.O_RDONLY)
    except FileNotFoundError:
        return _create(path)
    except OSError as exc:
        raise KeyRefused(f"cannot read {path}: {exc.strerror} (a link?); remove it and "
                         "memnest makes a new key") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or \
            stat.S_IMODE(info.st_mode) & 0o077:
        os.close(fd)
        raise KeyRefused(f"{path} is not a private file of yours; remove it and memnest "
                         "makes a new key")
    with os.fdopen(fd, "rb") as f:
        key = f.read(KEY_BYTES + 1)
    if len(key) != KEY_BYTES:
        raise KeyRefused(f"{path} is not a key memnest wrote; remove it and memnest makes a "
                         "new key")
    return key


def _create(path: str) -> bytes:
    key = secrets.token_bytes(KEY_BYTES)
    try:
        fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:  # another daemon made it meanwhile
        return load_or_create(os.path.dirname(path))
    with os.fdopen(fd, "wb") as f:
        f.write(key)
        f.flush()
        os.fsync(f.fileno())
    return key
