"""Reading the workspace's source files safely, and caching what one search page read.

A cited path is relative to the workspace and stays inside it: no absolute path, no `..`,
no symbolic link on any component: the path is walked with storage/beneath.py (each directory
opened relative to the one before with O_NOFOLLOW, the file with O_NONBLOCK, so a FIFO planted
under the cited name does not block, and read only when fstat says it is a regular file).
Files over MAX_FILE_BYTES and binary files are not anchored.
"""
import hashlib
import os
import stat
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ..storage.beneath import Refused, Why, lstat_at, open_dir, open_file

MAX_FILE_BYTES = 2 << 20   # bigger files are not anchored: a search would hash them
MAX_PATH_CHARS = 1024
_BINARY_PROBE = 8192       # a NUL in the first 8 KB means binary (as git decides)
RACY_NS = 2_000_000_000    # a file modified this recently may change again within the same
#                            mtime tick: its mtime is not trusted to mean "unchanged"


class AnchorError(ValueError):
    """Code that cannot be anchored, in a sentence a model can act on."""


class FileMissing(AnchorError):
    """The cited file (or a folder on its way) does not exist."""


class NotRegular(AnchorError):
    """Something other than a regular file sits under the cited name (a link, a FIFO...)."""


def clean_path(path: str) -> str:
    """The workspace-relative posix form of `path`, or AnchorError when it could leave the
    workspace or is not a path at all."""
    if not isinstance(path, str) or not path.strip():
        raise AnchorError("the cited path is empty; give a file path relative to the workspace")
    if len(path) > MAX_PATH_CHARS:
        raise AnchorError(f"the cited path is over {MAX_PATH_CHARS} characters")
    if "\x00" in path or "\\" in path:
        raise AnchorError(f"{path!r} is not a workspace path (use / between folders)")
    if path.startswith(("/", "~")):
        raise AnchorError(f"{path} is outside the workspace: give a path relative to the "
                          "workspace")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise AnchorError(f"{path} is outside the workspace: '..' is not allowed in a cited "
                          "path")
    if not parts or path.endswith("/"):
        raise AnchorError(f"{path} is a folder, not a file; cite a file")
    return "/".join(parts)


def _open_folder(workspace: str, rel: str) -> tuple[int, str]:
    """A descriptor of the folder holding `rel` (caller closes it) and the file's name."""
    *folders, name = rel.split("/")
    try:
        return open_dir(workspace, folders), name
    except Refused as refused:
        raise _refusal(refused, workspace, rel) from None


def _refusal(refused: Refused, workspace: str, rel: str) -> AnchorError:
    """Why a folder on the way to `rel`, or the file itself, could not be opened."""
    if refused.depth < 0:
        return AnchorError(f"the workspace {workspace} cannot be opened: {refused.strerror}")
    shown = "/".join(rel.split("/")[:refused.depth + 1])
    if refused.why in (Why.MISSING, Why.VANISHED, Why.TOO_LONG, Why.UNKNOWN):
        return FileMissing(f"{rel} does not exist in the workspace")
    if refused.why is Why.LINK:
        return NotRegular(f"{shown} is a symbolic link; memnest does not follow links in the "
                          "workspace")
    if refused.why is Why.NOT_DIR:
        return FileMissing(f"{rel} does not exist in the workspace ({shown} is not a folder)")
    if refused.why is Why.NOT_FILE:
        folder = refused.is_dir
        return NotRegular(f"{rel} is a folder, not a file; cite a file" if folder
                          else f"{rel} is not a regular file")
    if refused.why is Why.PERMISSION:
        return AnchorError(f"no permission to read {shown}")
    return AnchorError(f"{shown} cannot be opened: {refused.strerror}")


def _check_regular(st: os.stat_result, rel: str) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise NotRegular(f"{rel} is a symbolic link; memnest does not follow links in the "
                         "workspace")
    if stat.S_ISDIR(st.st_mode):
        raise NotRegular(f"{rel} is a folder, not a file; cite a file")
    if not stat.S_ISREG(st.st_mode):
        raise NotRegular(f"{rel} is not a regular file")


def stat_file(workspace: str, rel: str) -> os.stat_result:
    """The cited file's own status (never a link's target); AnchorError if it is not a
    regular file reached without links."""
    fd, name = _open_folder(workspace, rel)
    try:
        st = lstat_at(fd, name)
    finally:
        os.close(fd)
    if st is None:
        raise FileMissing(f"{rel} does not exist in the workspace")
    _check_regular(st, rel)
    return st


@dataclass(frozen=True)
class Source:
    """A file as read: its lines normalised for hashing (each rstrip()ed), and its identity."""
    path: str
    lines: tuple[str, ...]
    file_hash: str
    size: int
    mtime_ns: int    # 0 when the file was modified too recently to trust (RACY_NS)


# The last files read, by the identity of what was opened: a batch anchoring many memories
# in one file (an import of a long CLAUDE.md) reads and splits it once.
_RECENT: "OrderedDict[tuple[str, str, int, int, int, int], Source]" = OrderedDict()
_RECENT_KEPT = 8


def read_source(workspace: str, rel: str) -> Source:
    fd, name = _open_folder(workspace, rel)
    try:
        file_fd = open_file(fd, name, depth=rel.count("/"))  # a device is never even opened
    except Refused as refused:
        raise _refusal(refused, workspace, rel) from None
    finally:
        os.close(fd)
    try:
        opened = os.fstat(file_fd)
        key = (workspace, rel, opened.st_dev, opened.st_ino, opened.st_size,
               opened.st_mtime_ns)
        seen = _RECENT.get(key)
        if seen is not None and seen.mtime_ns:  # unchanged since, and not racily new
            return seen
        _check_size(opened.st_size, rel)
        data = _read_all(file_fd, rel)
    finally:
        os.close(file_fd)
    if b"\x00" in data[:_BINARY_PROBE]:
        raise AnchorError(f"{rel} is a binary file; only text files are anchored")
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line does not start another
    mtime = opened.st_mtime_ns
    if time.time_ns() - mtime < RACY_NS:
        mtime = 0
    source = Source(rel, tuple(line.rstrip() for line in lines),
                    hashlib.sha256(data).hexdigest(), len(data), mtime)
    if mtime:
        _RECENT[key] = source
        while len(_RECENT) > _RECENT_KEPT:
            _RECENT.popitem(last=False)
    return source


def _check_size(size: int, rel: str) -> None:
    if size > MAX_FILE_BYTES:
        raise AnchorError(f"{rel} is {size} bytes; files over {MAX_FILE_BYTES >> 20} MiB are "
                          "not anchored (cite a smaller file)")


def _read_all(fd: int, rel: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        try:
            chunk = os.read(fd, 1 << 20)
        except OSError as exc:
            raise AnchorError(f"{rel} cannot be read: {exc.strerror or exc}") from None
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        _check_size(total, rel)  # grew while being read
        chunks.append(chunk)


def lines_hash(lines: "tuple[str, ...] | list[str]") -> str:
    """The hash of cited lines (already rstrip()ed), joined by newlines."""
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


class FileCache:
    """What one call (one search page) learned about files: each path is stat()ed and read at
    most once, so ten memories citing one file cost one read. Failures are cached too.
    `stats` and `reads` count the system work done (a fresh anchor costs a stat, no read)."""

    def __init__(self) -> None:
        self._stats: dict[tuple[str, str], "os.stat_result | AnchorError"] = {}
        self._sources: dict[tuple[str, str], "Source | AnchorError"] = {}
        self.symbols: dict[tuple[str, str, str], list[tuple[int, int]]] = {}
        # (path, file hash) → the file's code lines (code/fingerprint.py), and their hash
        self.code: dict[tuple[str, str], list[tuple[int, str]]] = {}
        self.code_hashes: dict[tuple[str, str], str] = {}
        self.stats = 0
        self.reads = 0

    def stat(self, workspace: str, rel: str) -> os.stat_result:
        if (workspace, rel) not in self._stats:
            self.stats += 1
        return _cached(self._stats, workspace, rel, stat_file)

    def read(self, workspace: str, rel: str) -> Source:
        if (workspace, rel) not in self._sources:
            self.reads += 1
        return _cached(self._sources, workspace, rel, read_source)


_Loaded = TypeVar("_Loaded")


def _cached(memo: "dict[tuple[str, str], _Loaded | AnchorError]", workspace: str, rel: str,
            load: Callable[[str, str], _Loaded]) -> _Loaded:
    """`load(workspace, rel)`, once per key: its result or the AnchorError it raised."""
    key = (workspace, rel)
    if key not in memo:
        try:
            memo[key] = load(workspace, rel)
        except AnchorError as exc:
            memo[key] = exc
    cached = memo[key]
    if isinstance(cached, AnchorError):
        raise type(cached)(str(cached))  # a new one: re-raising one object grows its traceback
    return cached
