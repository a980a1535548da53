"""Opening a path beneath a directory without following a link anywhere on the way.

The one no-follow walk every caller uses (the tools' files, cited source files, the team's
shared folder). The root is opened as given (the caller decides where it may be); each part
after it is opened relative to the directory before with O_NOFOLLOW, so a link planted on
any component is refused rather than followed, and a component swapped between two opens
is met as what it has become, never as what a check saw. A file is opened O_NONBLOCK (a FIFO
planted under its name does not block) and accepted only when fstat says it is a regular
file. Every refusal is one `Refused`, saying which component failed and why; each caller
turns it into its own message in one place.
"""
import enum
import errno
import os
import stat
from collections.abc import Sequence

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC
FILE_FLAGS = os.O_RDONLY | NOFOLLOW | NONBLOCK | getattr(os, "O_NOCTTY", 0) | _CLOEXEC


class Why(str, enum.Enum):
    """Why a component was refused."""
    MISSING = "missing"            # nothing by that name
    VANISHED = "vanished"          # there (or just made) a moment ago, gone when opened
    LINK = "link"                  # a symbolic link
    NOT_DIR = "not_dir"            # something other than a directory where one is expected
    NOT_FILE = "not_file"          # something other than a regular file (a folder, FIFO...)
    PERMISSION = "permission"      # there, but the daemon's user may not open it
    TOO_LONG = "too_long"          # the name (or the whole path) is over the system's limit
    NOT_A_NAME = "not_a_name"      # "", ".", "..", a "/" or a NUL: not one component
    CANNOT_CREATE = "cannot_create"  # missing, and making it failed
    UNKNOWN = "unknown"            # what is there cannot be told (its lstat failed)
    FAILED = "failed"              # there and of the right kind, yet the open failed


class Refused(Exception):
    """A component that could not be opened. `depth`: how many parts were opened before it
    (-1: the root itself); `part`: its name; `error` (its `errno`, `strerror`): the system's
    word, when it gave one; `mode`: its lstat mode, when known."""

    def __init__(self, why: Why, depth: int, part: str, error: OSError | None = None,
                 mode: int | None = None) -> None:
        self.why = why
        self.depth = depth
        self.part = part
        self.error = error
        self.errno = error.errno if error is not None else None
        self.strerror = (error.strerror or str(error)) if error is not None else why.value
        self.mode = mode
        super().__init__(f"{part!r}: {why.value} ({self.strerror})")

    @property
    def is_dir(self) -> bool:
        return self.mode is not None and stat.S_ISDIR(self.mode)


def open_dir(root: str | int, parts: Sequence[str], *, create: bool = False,
             mode: int = 0o700) -> int:
    """A descriptor of `root/parts...` (caller closes it). `root`: a path (opened as given,
    links and all) or a directory descriptor (not closed here). `create`: make missing
    directories (`mode`). Raises Refused."""
    fd = _open_root(root)
    try:
        for depth, part in enumerate(parts):
            next_fd = _open_child_dir(fd, depth, part, create, mode)
            if fd != root:
                os.close(fd)
            fd = next_fd
    except BaseException:
        if fd != root:
            os.close(fd)
        raise
    return os.dup(fd) if fd == root else fd


def open_file(dir_fd: int, name: str, *, depth: int = 0, follow_last: bool = False) -> int:
    """A descriptor of the regular file `name` in `dir_fd`, never blocking on a FIFO
    (caller closes it). What is there is looked at first, so a device is never even opened;
    `follow_last`: `name` itself may be a link (for a path the daemon's user gave outside
    the workspace). Raises Refused."""
    _check_name(name, depth)
    try:
        seen = os.stat(name, dir_fd=dir_fd, follow_symlinks=follow_last)
    except FileNotFoundError as exc:
        raise Refused(Why.MISSING, depth, name, exc) from None
    except OSError as exc:
        raise _classify(dir_fd, depth, name, exc, want_dir=False) from None
    if stat.S_ISLNK(seen.st_mode):
        raise Refused(Why.LINK, depth, name, mode=seen.st_mode)
    if not stat.S_ISREG(seen.st_mode):
        raise Refused(Why.NOT_FILE, depth, name, mode=seen.st_mode)
    flags = FILE_FLAGS if not follow_last else FILE_FLAGS & ~NOFOLLOW
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        raise _classify(dir_fd, depth, name, exc, want_dir=False) from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise Refused(Why.FAILED, depth, name, exc) from None
    if not stat.S_ISREG(st.st_mode):  # swapped since it was looked at
        os.close(fd)
        raise Refused(Why.NOT_FILE, depth, name, mode=st.st_mode)
    return fd


def open_beneath(root: str | int, parts: Sequence[str]) -> int:
    """A descriptor of the regular file `root/parts...` (the last part the file), each
    component reached without a link. Raises Refused."""
    if not parts:
        raise Refused(Why.NOT_A_NAME, 0, "")
    dir_fd = open_dir(root, parts[:-1])
    try:
        return open_file(dir_fd, parts[-1], depth=len(parts) - 1)
    finally:
        os.close(dir_fd)


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """The status of `name` itself (a link's own), or None when it cannot be had."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (OSError, ValueError):
        return None


def _open_root(root: str | int) -> int:
    if isinstance(root, int):
        return root
    try:
        return os.open(root, DIR_FLAGS)
    except ValueError:
        raise Refused(Why.NOT_A_NAME, -1, root) from None
    except OSError as exc:
        raise Refused(_root_why(exc), -1, root, exc) from None


def _root_why(exc: OSError) -> Why:
    if isinstance(exc, FileNotFoundError):
        return Why.MISSING
    if isinstance(exc, NotADirectoryError):
        return Why.NOT_DIR
    if isinstance(exc, PermissionError):
        return Why.PERMISSION
    return Why.TOO_LONG if exc.errno == errno.ENAMETOOLONG else Why.FAILED


def _open_child_dir(fd: int, depth: int, part: str, create: bool, mode: int) -> int:
    _check_name(part, depth)
    try:
        return os.open(part, DIR_FLAGS | NOFOLLOW, dir_fd=fd)
    except FileNotFoundError as exc:
        if not create:
            raise Refused(Why.MISSING, depth, part, exc) from None
    except OSError as exc:
        raise _classify(fd, depth, part, exc, want_dir=True) from None
    try:
        os.mkdir(part, mode, dir_fd=fd)
    except FileExistsError:
        pass  # made in between; opened (and checked) below
    except OSError as exc:
        raise Refused(Why.CANNOT_CREATE, depth, part, exc) from None
    try:
        return os.open(part, DIR_FLAGS | NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        raise _classify(fd, depth, part, exc, want_dir=True, made=True) from None


def _check_name(part: str, depth: int) -> None:
    if part in ("", ".", "..") or "/" in part or "\x00" in part:
        raise Refused(Why.NOT_A_NAME, depth, part)


def _classify(dir_fd: int, depth: int, part: str, exc: OSError, *, want_dir: bool,
              made: bool = False) -> Refused:
    """Why opening `part` failed, told from what lstat says is there now."""
    if isinstance(exc, FileNotFoundError):
        return Refused(Why.VANISHED if made else Why.MISSING, depth, part, exc)
    try:
        st = os.stat(part, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError as gone:
        return Refused(Why.VANISHED, depth, part, gone)
    except OSError as unknown:
        too_long = unknown.errno == errno.ENAMETOOLONG
        return Refused(Why.TOO_LONG if too_long else Why.UNKNOWN, depth, part, unknown)
    if stat.S_ISLNK(st.st_mode):
        return Refused(Why.LINK, depth, part, exc, st.st_mode)
    if want_dir and not stat.S_ISDIR(st.st_mode):
        return Refused(Why.NOT_DIR, depth, part, exc, st.st_mode)
    if not want_dir and not stat.S_ISREG(st.st_mode):
        return Refused(Why.NOT_FILE, depth, part, exc, st.st_mode)
    if isinstance(exc, PermissionError):
        return Refused(Why.PERMISSION, depth, part, exc, st.st_mode)
    return Refused(Why.FAILED, depth, part, exc, st.st_mode)
