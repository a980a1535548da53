"""Files the tools write and read on a caller's behalf (exports, imports, the graph page).

The rules:
- A relative path is taken from the workspace and must stay inside it: no `..` component,
  and no symbolic link anywhere on the way. Each directory is opened relative to the one
  before with O_NOFOLLOW, so a link planted in `.memnest/` (or anywhere else in the tree) is
  refused rather than followed, and nothing can swap a component between check and use.
- Files are written only under the workspace's `.memnest/`, or under MEMNEST_OUTPUT_DIR
  when the daemon's user set one (an absolute path there). A path read (an import) may be
  absolute and point anywhere the daemon's user may read. A path inside the workspace
  follows the workspace rules however it is written.
- Writes go to a new temporary file in the target directory (O_EXCL, mode 0600) that then
  replaces the target atomically: a reader never sees half a file, and an existing symbolic
  link is never written through. An existing file is replaced only if it is one of ours
  (it starts with the expected signature), so a wrong path cannot clobber someone's source
  file or the database.
"""
import os
import secrets
import stat
from dataclasses import dataclass

from ..core.errors import ToolError, invalid

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


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


def _open_parent(workspace: str, loc: Location, create: bool) -> int:
    """A descriptor of the directory that holds the file (caller closes it)."""
    if not loc.inside:
        try:
            return os.open(loc.parent, _DIR_FLAGS)
        except FileNotFoundError:
            raise invalid(f"directory {loc.parent} does not exist") from None
        except NotADirectoryError:
            raise invalid(f"{loc.parent} is not a directory") from None
        except PermissionError:
            raise invalid(f"no permission to use directory {loc.parent}") from None
    fd = os.open(workspace, _DIR_FLAGS)
    here = workspace
    try:
        for part in loc.walk:
            here = os.path.join(here, part)
            try:
                next_fd = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise invalid(f"directory {here} does not exist") from None
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass  # made in between; opened (and checked) below
                next_fd = _open_existing_dir(part, fd, here)
            except OSError:
                next_fd = _open_existing_dir(part, fd, here)
            os.close(fd)
            fd = next_fd
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open_existing_dir(part: str, dir_fd: int, shown: str) -> int:
    try:
        st = os.stat(part, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise invalid(f"directory {shown} vanished while it was being opened") from None
    if stat.S_ISLNK(st.st_mode):
        raise invalid(f"{shown} is a symbolic link; memnest does not follow links inside the "
                      "workspace. Remove it, or give an absolute path outside the workspace")
    if not stat.S_ISDIR(st.st_mode):
        raise invalid(f"{shown} is not a directory")
    try:
        return os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=dir_fd)
    except PermissionError:
        raise invalid(f"no permission to use directory {shown}") from None


def _storage_error(what: str, loc: Location, exc: OSError) -> ToolError:
    return ToolError("storage_error", f"cannot {what} {loc.shown}: {exc.strerror or exc}")


OWN_FOLDER = ".memnest"


def write_file(workspace: str, path: str | None, default: str, data: bytes,
               signature: bytes, kind: str, output_dir: str = "") -> str:
    """Write `data` atomically (mode 0600); returns the absolute path written. An existing
    file is replaced only if it starts with `signature` (an earlier file of the same kind).
    Files are written only under the workspace's own folder (.memnest/) or under
    `output_dir` (MEMNEST_OUTPUT_DIR, the user's choice): a tool call steered by text the
    agent read must not create files anywhere else."""
    loc = locate(workspace, path, default)
    _check_confined(loc, workspace, kind, output_dir)
    try:
        dir_fd = _open_parent(workspace, loc, create=loc.inside)
    except ToolError:
        raise
    except OSError as exc:
        raise _storage_error("reach the directory of", loc, exc) from None
    tmp = None
    try:
        _check_replaceable(dir_fd, loc, signature, kind)
        tmp = f".{loc.name[:200]}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
                     | getattr(os, "O_CLOEXEC", 0), 0o600, dir_fd=dir_fd)
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
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
        os.close(dir_fd)
    return loc.shown


def _check_confined(loc: Location, workspace: str, kind: str, output_dir: str) -> None:
    if loc.inside and loc.walk[:1] == [OWN_FOLDER]:
        return
    if output_dir and not loc.inside:
        allowed = os.path.realpath(output_dir)
        parent = os.path.realpath(loc.parent)
        if parent == allowed or parent.startswith(allowed.rstrip(os.sep) + os.sep):
            return
    where = f"{os.path.join(workspace, OWN_FOLDER)}/" + \
        (f" or under MEMNEST_OUTPUT_DIR ({output_dir})" if output_dir else "")
    raise ToolError("permission_denied",
                    f"memnest writes a {kind} only under {where}, not to {loc.shown}; give a "
                    f"path such as {OWN_FOLDER}/{loc.name}, then copy the file where you want "
                    "it (the daemon's user may set MEMNEST_OUTPUT_DIR to allow a folder)")


def _check_replaceable(dir_fd: int, loc: Location, signature: bytes, kind: str) -> None:
    try:
        st = os.stat(loc.name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise invalid(f"{loc.shown} is a symbolic link; memnest writes only regular files and "
                      "never through a link. Remove it or choose another path")
    if not stat.S_ISREG(st.st_mode):
        raise invalid(f"{loc.shown} exists and is not a regular file; choose another path")
    fd = os.open(loc.name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK, dir_fd=dir_fd)
    try:
        head = os.read(fd, len(signature))
    finally:
        os.close(fd)
    if head != signature:
        raise invalid(f"{loc.shown} exists and is not a {kind} written by memnest; it is left "
                      "as it is. Choose another path, or remove the file first")


def read_file(workspace: str, path: str, limit: int) -> tuple[bytes, str]:
    """The bytes of a regular file (at most `limit`) and its absolute path."""
    loc = locate(workspace, path, "")
    try:
        dir_fd = _open_parent(workspace, loc, create=False)
    except ToolError:
        raise
    except OSError as exc:
        raise _storage_error("reach the directory of", loc, exc) from None
    try:
        follow = 0 if not loc.inside else _NOFOLLOW  # an explicit outside path may be a link
        try:
            fd = os.open(loc.name, os.O_RDONLY | follow | _NONBLOCK
                         | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
        except FileNotFoundError:
            raise ToolError("not_found", f"no file at {loc.shown}") from None
        except OSError as exc:
            st = _lstat(dir_fd, loc.name)
            if st is not None and stat.S_ISLNK(st.st_mode):
                raise invalid(f"{loc.shown} is a symbolic link; memnest does not follow links "
                              "inside the workspace. Give the path of the file itself") from None
            if isinstance(exc, PermissionError):
                raise invalid(f"no permission to read {loc.shown}") from None
            raise _storage_error("read", loc, exc) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise invalid(f"{loc.shown} is not a regular file")
            if st.st_size > limit:
                raise invalid(f"{loc.shown} is {st.st_size} bytes, over the limit of {limit}")
            chunks, total = [], 0
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                total += len(chunk)
                if total > limit:
                    raise invalid(f"{loc.shown} is over the limit of {limit} bytes")
                chunks.append(chunk)
            return b"".join(chunks), loc.shown
        except ToolError:
            raise
        except OSError as exc:
            raise _storage_error("read", loc, exc) from None
        finally:
            os.close(fd)
    finally:
        os.close(dir_fd)


def _lstat(dir_fd: int, name: str):
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
