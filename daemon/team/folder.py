"""The shared/ folder on disk: `<workspace>/.memnest/shared/`, untrusted input.

Whatever a pull brings is read through storage/beneath.py: each directory on the way is
opened relative to the one before with O_NOFOLLOW (a link planted as `.memnest` or `shared`
is refused, not followed), a file is opened without following a link and must be a regular
file under the size cap, only names of the global-id pattern are read, and at most
MAX_FILES entries are looked at. Files are written with safe_files.write_file (atomic, no
link written through, only under `.memnest/`), and only when their bytes change.
"""
import os
import stat
from dataclasses import dataclass, field

from ..storage.beneath import Refused, Why, open_dir, open_file
from ..storage.db_files import write_gitignore
from ..storage.safe_files import OWN_FOLDER, PUBLISHED_FOLDER, write_file
from .format import MAX_FILE_BYTES, SIGNATURE, file_name, global_id_of

OWN = OWN_FOLDER
SHARED = PUBLISHED_FOLDER
MAX_FILES = 50_000


def shared_path(workspace: str) -> str:
    return os.path.join(workspace, OWN, SHARED)


def _open_dirs(workspace: str, parts: tuple[str, ...]) -> int | None:
    """A descriptor of workspace/parts..., each step without following a link; None when
    a step is missing, a link or not a folder."""
    try:
        return open_dir(workspace, parts)
    except Refused:
        return None


Fingerprint = tuple["tuple[int, ...] | None", ...]


def fingerprint(workspace: str) -> Fingerprint:
    """What changes when files arrive: the shared folder's identity and mtime (git adds,
    replaces and removes files there), and the git index and HEAD (a commit, a merge, a
    resolved conflict). A few stat calls: cheap enough for every call."""
    out: list[tuple[int, ...] | None] = []
    try:
        st = os.stat(shared_path(workspace), follow_symlinks=False)
        out.append((st.st_ino, st.st_mtime_ns, st.st_mode))
    except OSError:
        out.append(None)
    git = os.path.join(workspace, ".git")
    for name in ("index", "HEAD"):
        try:
            st = os.stat(os.path.join(git, name), follow_symlinks=False)
            out.append((st.st_mtime_ns, st.st_size))
        except OSError:
            out.append(None)
    return tuple(out)


@dataclass
class Listing:
    files: dict[str, tuple[int, int]] = field(default_factory=dict)  # gid -> (size, mtime)
    skipped: dict[str, str] = field(default_factory=dict)  # entry name -> why not read
    complete: bool = True  # False when the folder could not be read or held too much


def listing(workspace: str) -> Listing:
    out = Listing()
    fd = _open_dirs(workspace, (OWN, SHARED))
    if fd is None:
        try:
            st = os.stat(shared_path(workspace), follow_symlinks=False)
        except OSError:
            return out  # no shared folder: nothing shared
        out.complete = False
        what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a readable folder"
        out.skipped[SHARED] = f"{shared_path(workspace)} is {what}; nothing in it is read"
        return out
    try:
        with os.scandir(fd) as entries:
            for n, entry in enumerate(entries):
                if n >= MAX_FILES:
                    out.complete = False
                    out.skipped["…"] = f"more than {MAX_FILES} entries; the rest were not read"
                    break
                name = entry.name
                if name.startswith("."):
                    continue  # .gitkeep, editors' swap files, our own temporaries
                gid = global_id_of(name)
                if gid is None:
                    out.skipped[name[:120]] = "not named <32 hex digits>.json; not read"
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISLNK(st.st_mode):
                    out.skipped[name] = "a symbolic link; never followed"
                elif not stat.S_ISREG(st.st_mode):
                    out.skipped[name] = "not a regular file"
                elif st.st_size > MAX_FILE_BYTES:
                    out.skipped[name] = f"{st.st_size} bytes, over the limit of " \
                                        f"{MAX_FILE_BYTES}"
                else:
                    out.files[gid] = (st.st_size, st.st_mtime_ns)
    except OSError as exc:
        out.complete = False
        out.skipped[SHARED] = f"cannot list {shared_path(workspace)}: {exc.strerror}"
    finally:
        os.close(fd)
    return out


def read(workspace: str, gid: str) -> bytes:
    """A memory file's bytes (OSError or ValueError when it cannot be read safely)."""
    fd = _open_dirs(workspace, (OWN, SHARED))
    if fd is None:
        raise OSError("the shared folder cannot be opened")
    try:
        f = open_file(fd, file_name(gid))
    except Refused as refused:
        if refused.why is Why.LINK:
            raise ValueError("a symbolic link; never followed") from None
        if refused.why is Why.NOT_FILE:
            raise ValueError("not a regular file") from None
        raise refused.error or OSError(refused.strerror) from None
    finally:
        os.close(fd)
    try:
        data = os.read(f, MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise ValueError(f"over the limit of {MAX_FILE_BYTES} bytes")
        return data
    finally:
        os.close(f)


def write(workspace: str, gid: str, data: bytes) -> bool:
    """Write a memory's file when its bytes differ; True when written. Raises ToolError."""
    try:
        if read(workspace, gid) == data:
            return False
    except (OSError, ValueError):
        pass
    ensure_gitignore(workspace)
    write_file(workspace, None, f"{OWN}/{SHARED}/{file_name(gid)}", data, SIGNATURE,
               "shared memory file")
    return True


def remove(workspace: str, gid: str) -> bool:
    """Remove a memory's file (a regular file only, never what a link points at)."""
    fd = _open_dirs(workspace, (OWN, SHARED))
    if fd is None:
        return False
    try:
        st = os.stat(file_name(gid), dir_fd=fd, follow_symlinks=False)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            return False
        os.unlink(file_name(gid), dir_fd=fd)  # unlinks a link itself, never its target
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def ensure_gitignore(workspace: str) -> None:
    write_gitignore(os.path.join(workspace, OWN))
