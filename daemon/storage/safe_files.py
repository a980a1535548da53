"""Files the tools write and read on a caller's behalf (exports, imports, the graph page).

The rules:
- A relative path is taken from the workspace and must stay inside it: no `..` component,
  and no symbolic link anywhere on the way. Each directory is opened relative to the one
  before with O_NOFOLLOW (storage/beneath.py), so a link planted in `.memnest/` (or anywhere
  else in the tree) is refused rather than followed, and nothing can swap a component
  between check and use.
- Files are written only under the workspace's `.memnest/`, or under MEMNEST_OUTPUT_DIR
  when the daemon's user set one (an absolute path there). A path read (an import) may be
  absolute and point anywhere the daemon's user may read. A path inside the workspace
  follows the workspace rules however it is written.
- A remote caller (a TLS client, `confined`) reads only inside the folders its identity is
  allowed: the path as written and the folder it really leads to (the opened directory's own
  path, so no link leads out between check and use), and never through a link as the last
  component. It writes only under the workspace's `.memnest/`, or under MEMNEST_OUTPUT_DIR
  when that lies in its allowed folders. Whatever keeps it from a file (refused, missing, a
  folder, unreadable outside) gets one answer, so nothing about the daemon's machine shows.
- Writes go to a new temporary file in the target directory (O_EXCL, mode 0600) that then
  replaces the target atomically: a reader never sees half a file, and an existing symbolic
  link is never written through. An existing file is replaced only if it is one of ours
  (it starts with the expected signature), so a wrong path cannot clobber someone's source
  file or the database.
- Snapshots (write_file_keeping: the graph page) keep the file being replaced as a new
  timestamped file in a folder beside it, reached with the same rules (no link followed, the
  folder created 0700, files 0600 with O_EXCL so nothing existing is ever written). Only the
  newest few are kept, and a file is pruned only if memnest wrote it: a regular file (not a
  link) of the daemon's user starting with the signature. Anything else there, whatever its
  name, is left as it is.
"""
import os
import re
import secrets
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn, Protocol, TypedDict

try:
    import fcntl
except ImportError:  # not on Windows, where no remote confinement is served
    fcntl = None  # type: ignore[assignment]

from ..core.errors import ToolError, invalid
from .beneath import NOFOLLOW, Refused, Why, lstat_at, open_dir, open_file

_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class Confined(Protocol):
    """A remote caller's reach (tools/registry.py Confinement)."""

    def allows(self, path: str, real: str | None = None) -> bool: ...

    def where(self) -> str: ...


def unreachable(path: str, confined: Confined) -> ToolError:
    """The one answer a remote caller gets for a file it may not have, whether it exists or
    not; `path` as the caller gave it."""
    return ToolError("not_found",
                     f"no file at {path!r} that this client may read: {confined.where()}. "
                     "Give a path inside this workspace (relative to it), e.g. the path "
                     "memory_export returned")


def _real_path(fd: int) -> str | None:
    """Where an open file or directory really is, links resolved by the kernel; None when
    the system cannot say."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    getpath = getattr(fcntl, "F_GETPATH", None)
    if getpath is not None:
        try:
            return os.fsdecode(fcntl.fcntl(fd, getpath, bytes(1024)).split(b"\0", 1)[0])
        except OSError:
            pass
    return None


@dataclass
class Location:
    shown: str            # the absolute path reported to the caller
    parent: str           # the absolute directory that holds the file
    walk: list[str]       # directories to walk from the workspace (inside) or None (outside)
    name: str
    inside: bool


def locate(workspace: str, path: str | None, default: str) -> Location:
    """Where `path` (or the workspace-relative `default` when it is not given) points."""
    raw = default if path is None else path
    if not raw.strip():
        raise invalid("path is empty; leave it out to use the default, or give a file name")
    if "\x00" in raw:
        raise invalid("path contains a NUL character")
    if raw.startswith("~"):
        raw = os.path.expanduser(raw)
    if os.path.isabs(raw):
        full = os.path.normpath(raw)
        root = workspace.rstrip(os.sep) or os.sep
        if full == root or full.startswith(root.rstrip(os.sep) + os.sep):
            parts = [p for p in full[len(root):].split(os.sep) if p]
            inside = True
        else:
            parent, name = os.path.split(full)
            _check_name(name, raw)
            return Location(full, parent, [], name, False)
    else:
        raw_parts = raw.replace("\\", "/").split("/") if os.sep == "\\" else raw.split("/")
        if ".." in raw_parts:
            raise invalid(f"path {raw!r} leaves the workspace through '..'; give a path inside "
                          "the workspace, or an absolute path to write elsewhere")
        parts = [p for p in raw_parts if p not in ("", ".")]
        inside = True
    if not parts:
        raise invalid(f"path {raw!r} names the workspace itself, not a file in it")
    name = parts[-1]
    _check_name(name, raw)
    parent = os.path.join(workspace, *parts[:-1])
    return Location(os.path.join(parent, name), parent, parts[:-1], name, inside)


def _check_name(name: str, raw: str) -> None:
    if name in ("", ".", "..") or raw.endswith(("/", os.sep)):
        raise invalid(f"path {raw!r} names a directory; give a file name")


class MissingFolder(ToolError):
    """A directory on the way to the file does not exist."""

    def __init__(self, shown: str):
        super().__init__("invalid_argument", f"directory {shown} does not exist")


def _open_parent(workspace: str, loc: Location, create: bool) -> int:
    """A descriptor of the directory that holds the file (caller closes it). Outside the
    workspace the folder is opened as given; inside, each component without a link."""
    root, parts = (workspace, loc.walk) if loc.inside else (loc.parent, [])
    try:
        return open_dir(root, parts, create=create)
    except Refused as refused:
        if refused.depth < 0 and loc.inside:
            raise _storage_error("reach the directory of", loc, refused) from None
        shown = os.path.join(root, *parts[:refused.depth + 1])
        raise _dir_refusal(refused, shown, lambda r: _storage_error(
            "reach the directory of", loc, r)) from None


def _dir_refusal(refused: Refused, shown: str,
                 otherwise: Callable[[Refused], ToolError]) -> ToolError:
    """What the caller hears when the directory `shown` could not be opened."""
    if refused.why is Why.MISSING:
        return MissingFolder(shown)
    if refused.why is Why.VANISHED:
        return invalid(f"directory {shown} vanished while it was being opened")
    if refused.why is Why.LINK:
        return invalid(f"{shown} is a symbolic link; memnest does not follow links inside the "
                       "workspace. Remove it, or give an absolute path outside the workspace")
    if refused.why is Why.NOT_DIR:
        return invalid(f"{shown} is not a directory")
    if refused.why is Why.PERMISSION:
        return invalid(f"no permission to use directory {shown}")
    return otherwise(refused)


def _storage_error(what: str, loc: Location, exc: OSError | Refused) -> ToolError:
    return ToolError("storage_error", f"cannot {what} {loc.shown}: {exc.strerror or exc}")


OWN_FOLDER = ".memnest"
PUBLISHED_FOLDER = "shared"  # .memnest/shared/: the team's files, committed (team/folder.py)


class _SnapshotsKept(TypedDict):
    folder: str
    keep: int
    kept: str | None
    pruned: list[str]


class SnapshotReport(_SnapshotsKept, total=False):
    """What write_file_keeping did with the snapshots (the graph tool returns it)."""
    left_alone: list[str]


def write_file(workspace: str, path: str | None, default: str, data: bytes,
               signature: bytes, kind: str, output_dir: str = "",
               confined: Confined | None = None) -> str:
    """Write `data` atomically (mode 0600); returns the absolute path written. An existing
    file is replaced only if it starts with `signature` (an earlier file of the same kind).
    Files are written only under the workspace's own folder (.memnest/) or under
    `output_dir` (MEMNEST_OUTPUT_DIR, the user's choice): a tool call steered by text the
    agent read must not create files anywhere else. `confined`: a remote caller, for whom
    `output_dir` counts only inside its allowed folders."""
    return _write(workspace, path, default, data, signature, kind, output_dir, 0,
                  confined)[0]


def write_file_keeping(workspace: str, path: str | None, default: str, data: bytes,
                       signature: bytes, kind: str, output_dir: str,
                       keep: int, confined: Confined | None = None,
                       ) -> tuple[str, SnapshotReport | None]:
    """write_file(), keeping the file it replaces as a snapshot beside it:
    `<stem>-snapshots/<stem>-<UTC time>[-n]<suffix>` (e.g. .memnest/graph-snapshots/
    graph-20260101T120000Z.html), and only the newest `keep` snapshots memnest wrote there.
    Returns the path written and what happened to the snapshots (None when keep is 0)."""
    return _write(workspace, path, default, data, signature, kind, output_dir, keep,
                  confined)


def _write(workspace: str, path: str | None, default: str, data: bytes, signature: bytes,
           kind: str, output_dir: str, keep: int,
           confined: Confined | None) -> tuple[str, SnapshotReport | None]:
    loc = locate(workspace, path, default)
    if path is not None:
        _check_unpublished(loc, kind)
    if confined is not None and output_dir and not confined.allows(output_dir):
        output_dir = ""  # the daemon's user chose it for themselves, not for remote clients
    remote_path = None if confined is None else (default if path is None else path)
    _check_confined(loc, workspace, kind, output_dir, remote_path)
    dir_fd = _open_parent(workspace, loc, create=loc.inside)
    try:
        if confined is not None and not loc.inside:
            # the folder opened, links resolved: still under an output folder it may use
            real = _real_path(dir_fd)
            if real is None or not _under(real, os.path.realpath(output_dir)) or \
                    not confined.allows(loc.parent, real):
                raise _write_refusal(loc, workspace, kind, "", remote_path)
        return loc.shown, _replace(dir_fd, loc, data, signature, kind, keep)
    finally:
        os.close(dir_fd)


def _replace(dir_fd: int, loc: Location, data: bytes, signature: bytes, kind: str,
             keep: int) -> SnapshotReport | None:
    """Put `data` in place of `loc.name` in `dir_fd` through a new temporary file."""
    tmp = None
    snapshots = None
    try:
        _check_replaceable(dir_fd, loc, signature, kind)
        if keep > 0:  # before the file is replaced; a refusal here leaves it as it was
            snapshots = _snapshot(dir_fd, loc, signature, kind, keep).report()
        tmp = f".{loc.name[:200]}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, _NEW_FILE, 0o600, dir_fd=dir_fd)
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, loc.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        tmp = None
        os.fsync(dir_fd)
    except ToolError:
        raise
    except PermissionError as exc:
        raise invalid(f"no permission to write {loc.shown}: {exc.strerror}") from None
    except OSError as exc:
        raise _storage_error("write", loc, exc) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
    return snapshots


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _check_unpublished(loc: Location, kind: str) -> None:
    """A path a caller gave is never in .memnest/shared/: git publishes that folder, and
    only team sync writes there (its own files, at paths it makes)."""
    if loc.inside and loc.walk[:1] == [OWN_FOLDER] and \
            [part.lower() for part in loc.walk[1:2]] == [PUBLISHED_FOLDER]:
        raise ToolError("permission_denied",
                        f"{loc.shown} is in {OWN_FOLDER}/{PUBLISHED_FOLDER}/, the folder git "
                        f"publishes to the team: memnest writes no {kind} there. Give a path "
                        f"elsewhere under {OWN_FOLDER}/, or leave it out for the default")


def _check_confined(loc: Location, workspace: str, kind: str, output_dir: str,
                    remote_path: str | None = None) -> None:
    """Refuses a write outside .memnest/ and the output folder. `remote_path`: the path as
    a remote caller gave it, shown instead of where it leads on the daemon's machine."""
    if loc.inside and loc.walk[:1] == [OWN_FOLDER]:
        return
    if output_dir and not loc.inside:
        if _under(os.path.realpath(loc.parent), os.path.realpath(output_dir)):
            return
    raise _write_refusal(loc, workspace, kind, output_dir, remote_path)


def _write_refusal(loc: Location, workspace: str, kind: str, output_dir: str,
                   remote_path: str | None) -> ToolError:
    where = f"{os.path.join(workspace, OWN_FOLDER)}/" + \
        (f" or under MEMNEST_OUTPUT_DIR ({output_dir})" if output_dir else "")
    if remote_path is not None:
        return ToolError("permission_denied",
                         f"memnest writes a {kind} for a remote client only under {where}, "
                         f"not to {remote_path!r}; give a path such as {OWN_FOLDER}/"
                         f"{loc.name}, or leave the path out for the default")
    return ToolError("permission_denied",
                     f"memnest writes a {kind} only under {where}, not to {loc.shown}; give a "
                     f"path such as {OWN_FOLDER}/{loc.name}, then copy the file where you "
                     "want it (the daemon's user may set MEMNEST_OUTPUT_DIR to allow a folder)")


def _check_replaceable(dir_fd: int, loc: Location, signature: bytes, kind: str) -> None:
    try:
        fd = open_file(dir_fd, loc.name)
    except Refused as refused:
        if refused.why is Why.MISSING:
            return
        if refused.why is Why.LINK:
            raise invalid(f"{loc.shown} is a symbolic link; memnest writes only regular files "
                          "and never through a link. Remove it or choose another path") from None
        if refused.why is Why.NOT_FILE:
            raise invalid(f"{loc.shown} exists and is not a regular file; choose another "
                          "path") from None
        raise refused.error or OSError(refused.strerror) from None
    try:
        head = os.read(fd, len(signature))
    finally:
        os.close(fd)
    if head != signature:
        raise invalid(f"{loc.shown} exists and is not a {kind} written by memnest; it is left "
                      "as it is. Choose another path, or remove the file first")


# -- snapshots ------------------------------------------------------------------------------

SNAPSHOT_SCAN_LIMIT = 10_000  # entries of a snapshot folder looked at when pruning
_SNAPSHOT_NAME_TRIES = 100    # snapshots of one second: name, name-1, ... name-99
_CHUNK = 1 << 20


@dataclass
class _Snapshots:
    folder: str                 # absolute path of the snapshot folder
    keep: int
    kept: str | None = None     # the snapshot of the file just replaced
    pruned: list[str] = field(default_factory=list)
    left_alone: list[str] = field(default_factory=list)  # named like one, not memnest's

    def report(self) -> SnapshotReport:
        out: SnapshotReport = {"folder": self.folder, "keep": self.keep, "kept": self.kept,
                               "pruned": self.pruned}
        if self.left_alone:
            out["left_alone"] = self.left_alone
        return out


def snapshot_names(name: str) -> tuple[str, str, str, re.Pattern[str]]:
    """For a file name: its snapshot folder, the prefix and suffix of its snapshots, and the
    pattern a snapshot's name matches (group 1: the time, group 2: the number, if any)."""
    stem, _, ext = name.rpartition(".")
    if not stem or len(ext) > 16:
        stem, suffix = name, ""
    else:
        suffix = "." + ext
    stem = stem[:100]
    pattern = re.compile(re.escape(stem) + r"-(\d{8}T\d{6}Z)(?:-(\d{1,2}))?"
                         + re.escape(suffix) + r"\Z")
    return f"{stem}-snapshots", f"{stem}-", suffix, pattern


def _snapshot(dir_fd: int, loc: Location, signature: bytes, kind: str,
              keep: int) -> _Snapshots:
    """Copy the file at `loc` (if there is one, and it is ours) into its snapshot folder,
    then prune the folder down to the newest `keep` snapshots memnest wrote."""
    folder, prefix, suffix, pattern = snapshot_names(loc.name)
    shown = os.path.join(loc.parent, folder)
    out = _Snapshots(shown, keep)
    src = _open_ours(dir_fd, loc.name, signature)
    if src is None and lstat_at(dir_fd, loc.name) is not None:
        # _check_replaceable saw one of ours here a moment ago
        raise invalid(f"{loc.shown} changed while it was being replaced; try again")
    try:
        snap_fd = _open_snapshot_folder(dir_fd, folder, shown, create=src is not None)
        if snap_fd is None:
            return out
        try:
            name = None
            if src is not None:
                name = _copy_snapshot(src, snap_fd, prefix, suffix, pattern, shown)
                out.kept = os.path.join(shown, name)
            pruned, out.left_alone = _prune(snap_fd, pattern, signature, keep, name)
            out.pruned = [os.path.join(shown, n) for n in pruned]
        finally:
            os.close(snap_fd)
    finally:
        if src is not None:
            os.close(src)
    return out


def _open_snapshot_folder(dir_fd: int, folder: str, shown: str, create: bool) -> int | None:
    """The snapshot folder, opened without following a link (None: absent, not created)."""
    try:
        fd = open_dir(dir_fd, [folder], create=create)
    except Refused as refused:
        if refused.why is Why.MISSING and not create:
            return None
        raise _dir_refusal(refused, shown, _raise_os_error) from None
    try:
        st = os.fstat(fd)
        # private, as every folder memnest keeps; a folder outside .memnest/ (an output
        # folder's) may be the user's own, and its mode is theirs
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077 and \
                ".memnest" in Path(shown).parts:
            os.fchmod(fd, 0o700)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _raise_os_error(refused: Refused) -> NoReturn:
    """For a refusal met while writing: the system's error, to be told as a write error."""
    raise refused.error or OSError(refused.strerror)


def _open_ours(dir_fd: int, name: str, signature: bytes) -> int | None:
    """A descriptor of `name` if it is a file memnest wrote: a regular file, not a link, of
    the daemon's user, starting with `signature`; else None."""
    try:
        fd = open_file(dir_fd, name)
    except Refused:
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid == os.geteuid() and os.pread(fd, len(signature), 0) == signature:
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _copy_snapshot(src: int, snap_fd: int, prefix: str, suffix: str, pattern: re.Pattern[str],
                   shown: str) -> str:
    """Copy `src` to a new file (O_EXCL: nothing existing is written) named for this
    second, numbered after any snapshot of the same second; returns its name."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    first = 0
    with os.scandir(snap_fd) as entries:
        for n, entry in enumerate(entries):
            if n >= SNAPSHOT_SCAN_LIMIT:
                break
            found = pattern.match(entry.name)
            if found is not None and found.group(1) == stamp:
                first = max(first, int(found.group(2) or 0) + 1)
    for n in range(first, _SNAPSHOT_NAME_TRIES):
        name = f"{prefix}{stamp}{f'-{n}' if n else ''}{suffix}"
        try:
            fd = os.open(name, _NEW_FILE, 0o600, dir_fd=snap_fd)
        except FileExistsError:
            continue
        try:
            os.fchmod(fd, 0o600)
            offset = 0
            while True:
                chunk = os.pread(src, _CHUNK, offset)
                if not chunk:
                    break
                offset += len(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
            os.fsync(fd)
        except BaseException:
            _unlink_same(snap_fd, name, os.fstat(fd))
            raise
        finally:
            os.close(fd)
        return name
    raise invalid(f"{shown} already holds {_SNAPSHOT_NAME_TRIES} snapshots named for this "
                  "second; try again in a moment")


def _prune(snap_fd: int, pattern: re.Pattern[str], signature: bytes, keep: int,
           kept: str | None) -> tuple[list[str], list[str]]:
    """Delete all but the newest `keep` snapshots memnest wrote (`kept`, the one just
    written, counts as the newest whatever the clock did); returns the names deleted and
    the names of snapshot-like files that are not memnest's (left alone)."""
    ours: list[tuple[tuple[str, int], str, os.stat_result]] = []
    left_alone: list[str] = []
    with os.scandir(snap_fd) as entries:
        for n, entry in enumerate(entries):
            if n >= SNAPSHOT_SCAN_LIMIT:
                break
            found = pattern.match(entry.name)
            if found is None:
                continue
            fd = _open_ours(snap_fd, entry.name, signature)
            if fd is None:
                left_alone.append(entry.name)
                continue
            try:
                st = os.fstat(fd)
            finally:
                os.close(fd)
            ours.append(((found.group(1), int(found.group(2) or 0)), entry.name, st))
    ours.sort(key=lambda o: (o[1] == kept, o[0]), reverse=True)
    pruned = [name for _, name, st in ours[keep:] if _unlink_same(snap_fd, name, st)]
    return sorted(pruned), sorted(left_alone)


def _unlink_same(dir_fd: int, name: str, st: os.stat_result) -> bool:
    """Delete `name` only if it is still the file `st` describes (not a link, not a file
    put in its place)."""
    now = lstat_at(dir_fd, name)
    if now is None or not stat.S_ISREG(now.st_mode) or \
            (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        return False
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        return False
    return True


def read_file(workspace: str, path: str, limit: int,
              confined: Confined | None = None) -> tuple[bytes, str]:
    """The bytes of a regular file (at most `limit`) and its absolute path. `confined`: a
    remote caller, who reads only inside its allowed folders (see the module's rules)."""
    loc = locate(workspace, path, "")
    if confined is None:
        dir_fd = _open_parent(workspace, loc, create=False)
    else:
        dir_fd = _parent_to_read_remote(workspace, loc, path, confined)
    try:
        # an explicit outside path may be a link, for the local user only
        follow = not loc.inside and confined is None
        try:
            fd = open_file(dir_fd, loc.name, follow_last=follow)
        except Refused as refused:
            raise _file_refusal(refused, loc, path, confined) from None
    finally:
        os.close(dir_fd)
    try:
        return _read_capped(fd, loc, limit), loc.shown
    except OSError as exc:
        raise _storage_error("read", loc, exc) from None
    finally:
        os.close(fd)


def _file_refusal(refused: Refused, loc: Location, path: str,
                  confined: Confined | None) -> ToolError:
    """What the caller hears when the file to read could not be opened."""
    if refused.why is Why.MISSING:
        if confined is not None:
            return unreachable(path, confined)
        return ToolError("not_found", f"no file at {loc.shown}")
    if refused.why is Why.LINK:
        where = "inside the workspace" if confined is None else "for a remote client"
        return invalid(f"{loc.shown} is a symbolic link; memnest does not follow links "
                       f"{where}. Give the path of the file itself")
    if refused.why is Why.NOT_FILE:
        return invalid(f"{loc.shown} is not a regular file")
    if refused.why is Why.PERMISSION:
        return invalid(f"no permission to read {loc.shown}")
    return _storage_error("read", loc, refused)


def _read_capped(fd: int, loc: Location, limit: int) -> bytes:
    """All of the open file `fd`, refused when it is (or grows) over `limit` bytes."""
    size = os.fstat(fd).st_size
    if size > limit:
        raise invalid(f"{loc.shown} is {size} bytes, over the limit of {limit}")
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            raise invalid(f"{loc.shown} is over the limit of {limit} bytes")
        chunks.append(chunk)


def _parent_to_read_remote(workspace: str, loc: Location, path: str,
                           confined: Confined) -> int:
    """The directory holding the file, for a remote caller: inside the workspace by its
    rules (a missing folder answered as a refused one), outside only in an allowed folder,
    checked as written before anything is opened and where it really is once opened."""
    if loc.inside:
        try:
            return _open_parent(workspace, loc, create=False)
        except MissingFolder:
            raise unreachable(path, confined) from None
    if not confined.allows(loc.shown):
        raise unreachable(path, confined)
    try:
        fd = open_dir(loc.parent, [])
    except Refused:
        raise unreachable(path, confined) from None
    real = _real_path(fd)
    if real is None or not confined.allows(loc.parent, real):
        os.close(fd)
        raise unreachable(path, confined)
    return fd
