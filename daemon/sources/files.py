"""Finding and reading a source's files. Inside the workspace (which may be hostile) every
component is opened without following a link (storage/beneath.py), so a planted link
cannot make an import read ~/.ssh; a file is read only when it is a regular file under the
size limit and UTF-8 text. Outside the workspace only the local person's own files are
read (the per-user files of Claude Code, a path they named), as they named them; a remote
client reads nothing there. Each file left out is noted with why, and the import goes on."""
import os
import re
import stat
from collections.abc import Iterable
from itertools import islice

from ..storage.beneath import Refused, Why, open_dir, open_file
from ..storage.safe_files import Confined
from .units import Found, SourceFile

MAX_FILE_BYTES = 4 << 20  # one source file; a bigger one is not somebody's notes
MAX_FILES = 2000  # files read by one import
MAX_TOTAL_BYTES = 64 << 20  # all the files of one import
MAX_ENTRIES = 50_000  # directory entries looked at while finding them
MAX_DEPTH = 8  # folders below the one searched
MAX_WATCHED = 500  # folders a followed source's check looks at (operations/following.py)
# Folders never searched for notes: tools', builds', dependencies', memnest's own.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
                       ".memnest", ".tox", ".mypy_cache", ".pytest_cache", "dist", "build",
                       "target", ".next", ".cache"})

_WHY = {Why.LINK: "a symbolic link; memnest does not follow links in the workspace",
        Why.NOT_FILE: "not a regular file", Why.NOT_DIR: "not a folder",
        Why.PERMISSION: "no permission to read it"}


class Reader:
    """Reads the files of one import, keeping count of what it read and noting in `found`
    what it left out."""

    def __init__(self, workspace: str, found: Found, confined: Confined | None = None,
                 home: str | None = None) -> None:
        self.workspace = workspace.rstrip(os.sep) or os.sep
        self.home = home if home is not None else os.path.expanduser("~")
        self.found = found
        self.confined = confined
        self.total = 0
        self.entries = 0
        self.seen: set[str] = set()

    # -- where a path is ---------------------------------------------------------------------

    def inside(self, path: str) -> str | None:
        """`path` (absolute, or relative to the workspace) as parts-joined-by-/ inside the
        workspace; None when it is outside. '..' never climbs out."""
        full = os.path.normpath(path if os.path.isabs(path) else
                                os.path.join(self.workspace, path))
        if full == self.workspace:
            return ""
        if full.startswith(self.workspace.rstrip(os.sep) + os.sep):
            return full[len(self.workspace):].strip(os.sep).replace(os.sep, "/")
        return None

    def shown(self, path: str) -> str:
        """How a file is named to the person and in provenance: relative to the workspace,
        or with ~; a character that does not print (a planted name's terminal escape)
        shown as '?'."""
        rel = self.inside(path)
        if rel is not None:
            return _printable(rel or ".")
        full = os.path.normpath(path)
        if self.home and (full == self.home or full.startswith(self.home + os.sep)):
            return _printable("~" + full[len(self.home):])
        return _printable(full)

    def absolute(self, path: str) -> str:
        rel = self.inside(path)
        return os.path.join(self.workspace, rel) if rel is not None else os.path.normpath(path)

    def exists(self, path: str) -> bool:
        try:
            os.stat(self.absolute(path), follow_symlinks=False)
            return True
        except (OSError, ValueError):
            return False

    def is_dir(self, path: str) -> bool:
        try:
            return stat.S_ISDIR(os.stat(self.absolute(path), follow_symlinks=False).st_mode)
        except (OSError, ValueError):
            return False

    # -- reading -----------------------------------------------------------------------------

    def read(self, path: str) -> SourceFile | None:
        """The file as text, or None (noted in `found.skipped`) when it may not or cannot
        be read. A file already read by this import is not read again."""
        full, shown = self.absolute(path), self.shown(path)
        if full in self.seen:
            return None
        self.seen.add(full)
        if len(self.found.files) >= MAX_FILES:
            return self._skip(shown, f"over {MAX_FILES} files in one import; import the rest "
                                     "with a PATH of their own")
        try:
            data = self._bytes(path)
        except Refused as refused:
            return self._skip(shown, _WHY.get(refused.why, refused.strerror))
        except _TooBig as big:
            return self._skip(shown, str(big))
        except OSError as exc:
            return self._skip(shown, f"cannot be read: {exc.strerror or exc}")
        text = _text(data)
        if isinstance(text, _NotText):
            return self._skip(shown, str(text))
        rel = self.inside(path)
        read = SourceFile(shown, rel or "", text, full)
        self.found.files.append(read)
        return read

    def _bytes(self, path: str) -> bytes:
        rel = self.inside(path)
        if rel is not None:
            parts = rel.split("/")
            dir_fd = open_dir(self.workspace, parts[:-1])
            try:
                fd = open_file(dir_fd, parts[-1], depth=len(parts) - 1)
            finally:
                os.close(dir_fd)
        else:
            fd = self._outside(path)
        try:
            return self._capped(fd, self.shown(path))
        finally:
            os.close(fd)

    def _outside(self, path: str) -> int:
        if self.confined is not None:
            raise Refused(Why.PERMISSION, -1, path)
        parent, name = os.path.split(os.path.normpath(path))
        dir_fd = open_dir(parent, [])
        try:
            return open_file(dir_fd, name, follow_last=True)  # the person's own file
        finally:
            os.close(dir_fd)

    def _capped(self, fd: int, shown: str) -> bytes:
        size = os.fstat(fd).st_size
        left = MAX_TOTAL_BYTES - self.total
        if size > MAX_FILE_BYTES:
            raise _TooBig(f"{size} bytes, over the limit of {MAX_FILE_BYTES} for one file")
        if size > left:
            raise _TooBig(f"the import already read {self.total} bytes, near the limit of "
                          f"{MAX_TOTAL_BYTES}; import this one on its own")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > min(MAX_FILE_BYTES, left):
                raise _TooBig(f"{shown} grew over the limit of {MAX_FILE_BYTES} bytes")
            chunks.append(chunk)
        self.total += total
        return b"".join(chunks)

    def _skip(self, shown: str, why: str) -> SourceFile | None:
        """Note why `shown` was left out; None, for a read that returns it."""
        self.found.skipped[shown] = why
        return None

    # -- finding -----------------------------------------------------------------------------

    def files_in(self, folder: str, name: re.Pattern[str], recursive: bool = False,
                 depth: int = 0) -> list[str]:
        """The paths of the regular files in `folder` whose name matches, sorted; links and
        odd entries noted, SKIP_DIRS not entered; [] when the folder is not there."""
        shown = self.shown(folder)
        try:
            fd = self._open_folder(folder)
        except Refused as refused:
            if refused.why is not Why.MISSING:
                self._skip(shown, _WHY.get(refused.why, refused.strerror))
            return []
        out: list[str] = []
        if len(self.found.looked_in) < MAX_WATCHED:  # a new file in it shows in its mtime
            self.found.looked_in.append(self.absolute(folder))
        try:
            with os.scandir(fd) as entries:
                # at most what the budget has left is held (and sorted), however big the folder
                left = max(MAX_ENTRIES - self.entries, 0) + 1
                for entry in sorted(islice(entries, left), key=lambda e: e.name):
                    self.entries += 1
                    if self.entries > MAX_ENTRIES:
                        self._skip(shown, f"over {MAX_ENTRIES} entries searched; the rest "
                                          "were not looked at")
                        break
                    out += self._entry(folder, entry, name, recursive, depth)
        except OSError as exc:
            self._skip(shown, f"cannot be listed: {exc.strerror or exc}")
        finally:
            os.close(fd)
        return out

    def _entry(self, folder: str, entry: os.DirEntry[str], name: re.Pattern[str],
               recursive: bool, depth: int) -> Iterable[str]:
        path = os.path.join(self.absolute(folder), entry.name)
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            return []
        if stat.S_ISDIR(mode):
            if recursive and depth < MAX_DEPTH and entry.name not in SKIP_DIRS:
                return self.files_in(path, name, True, depth + 1)
            return []
        if not name.fullmatch(entry.name):
            return []
        if stat.S_ISLNK(mode):
            self._skip(self.shown(path), _WHY[Why.LINK])
            return []
        return [path] if stat.S_ISREG(mode) else []

    def _open_folder(self, folder: str) -> int:
        rel = self.inside(folder)
        if rel is not None:
            return open_dir(self.workspace, [p for p in rel.split("/") if p])
        if self.confined is not None:
            raise Refused(Why.PERMISSION, -1, folder)
        return open_dir(os.path.normpath(folder), [])


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


class _TooBig(Exception):
    pass


class _NotText(str):
    pass


def _text(data: bytes) -> str | _NotText:
    """The file's text, or why it is not text memnest reads. A NUL anywhere leaves it out
    (not only in the first 8 KiB, where a binary file shows one: the rest would come in)."""
    if b"\x00" in data:
        return _NotText("holds NUL bytes: not a text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _NotText(f"not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x}); "
                        "save it as UTF-8 to import it")
    return text.removeprefix("\ufeff")
