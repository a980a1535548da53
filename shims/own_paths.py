"""What a client may create and write on this machine: the checks made before every folder
memnest makes, every mode it sets and every file it writes outside the daemon (DESIGN.md 15).

- A folder memnest keeps files in (the hooks' session state, TLS keys, config backups, the
  log) is used only when it is a real folder (not a link) of this user whose mode keeps
  others out; a missing one is made 0700, with the folders missing above it, inside a folder
  of this user (or root's) that others cannot change. A folder that was there is never
  chmodded: one too open is refused, with the fix in the message.
- A file written where the user asked (an export, an editor's config) goes into a folder that
  is there already and is this user's (or root's); it is never written through a link, never
  over another user's file or anything but a regular file, and it replaces the old one whole.

Everything is decided (lstat) before anything is made; a refusal is one `NotOurs`, whose
message says what to do, and which each caller turns into its own error.
"""
import os
import stat
from pathlib import Path

# What a folder's mode must not allow: PRIVATE, anyone else entering it (keys, session
# state, backups); UNSHARED, every user writing in it (the log, whose files are 0600 and
# appended to only when they are the user's own: a group's write bit, which a umask of 002
# gives folders, costs at most a line of log).
PRIVATE = 0o077
UNSHARED = 0o002


class NotOurs(Exception):
    """A path memnest may not use as asked; nothing was changed. The message says why and
    what to do."""


class Missing(NotOurs):
    """A folder that is not there, and was not to be made."""


def check_folder(folder: Path, closed: int = PRIVATE) -> os.stat_result:
    """`folder` (there already) is a real folder of this user whose mode has none of the
    `closed` bits; its lstat. Raises NotOurs (FileNotFoundError when it is missing)."""
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode):
        raise NotOurs(f"{folder} is a symbolic link; memnest keeps its files only in a real "
                      "folder of yours: name the folder itself, or another one")
    if not stat.S_ISDIR(info.st_mode):
        raise NotOurs(f"{folder} is not a folder")
    if info.st_uid != os.getuid():
        raise NotOurs(f"{folder} belongs to uid {info.st_uid}, not to you (uid {os.getuid()}); "
                      "use a folder of your own")
    mode = stat.S_IMODE(info.st_mode)
    if mode & closed:
        could = "change" if mode & closed & 0o022 else "see"
        raise NotOurs(f"{folder} has permissions {mode:o}, so other users could {could} what "
                      f"memnest keeps there; run `chmod 700 {folder}` if it is yours alone, or "
                      "use another folder")
    return info


def own_folder(folder: Path, closed: int = PRIVATE, create: bool = True) -> bool:
    """Make sure memnest may keep files in `folder`; whether this call made it. There: checked
    (check_folder), never changed. Missing: with `create`, made 0700 with any folders missing
    above it, once the nearest folder there is found to be one memnest may create in;
    without, Missing. Raises NotOurs before making anything."""
    folder = Path(os.path.abspath(folder))
    try:
        check_folder(folder, closed)
        return False
    except (FileNotFoundError, NotADirectoryError):
        pass  # missing (a file above it is refused below)
    if not create:
        raise Missing(f"{folder} does not exist")
    made = make_folders(folder, 0o700)
    info = check_folder(folder, closed)
    if folder in made and stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(folder, 0o700)  # made just now, under a umask that took the owner's bits
    return True


def can_make_folders(folder: Path) -> list[Path]:
    """The folders missing up to `folder`, the outermost first (none when it is there), once
    the nearest folder there is found to be one memnest may make folders in (check_parent).
    Raises NotOurs."""
    missing: list[Path] = []
    here = Path(os.path.abspath(folder))
    while not os.path.lexists(here):
        missing.insert(0, here)
        here = here.parent
    check_parent(here, "make a folder" if missing else "write")
    return missing


def make_folders(folder: Path, mode: int = 0o777) -> list[Path]:
    """The folders missing up to `folder`, made with `mode` (under the umask) once
    can_make_folders allows it; the ones made. A folder that was there is never changed."""
    made = []
    for part in can_make_folders(folder):
        try:
            os.mkdir(part, mode)
        except FileExistsError:  # made meanwhile: used only as a real folder of this user
            check_folder(part, closed=0)
            continue
        except OSError as exc:
            raise NotOurs(f"cannot make {part}: {exc.strerror}") from None
        made.append(part)
    return made


def check_parent(parent: Path, doing: str = "write") -> None:
    """`parent`, which memnest is to make a folder or file in, is there, is a folder (links
    on the way are the user's own path) of this user or root's, and not every user can
    rename or replace what memnest puts there (their write bit without the sticky bit)."""
    try:
        info = os.stat(parent)
    except FileNotFoundError:
        raise NotOurs(f"{parent} does not exist; make it first") from None
    except OSError as exc:
        raise NotOurs(f"cannot {doing} in {parent}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise NotOurs(f"{parent} is not a folder")
    if info.st_uid not in (os.getuid(), 0):
        raise NotOurs(f"{parent} belongs to uid {info.st_uid}, not to you (uid "
                      f"{os.getuid()}): memnest does not {doing} in another user's folder")
    if info.st_mode & 0o002 and not info.st_mode & stat.S_ISVTX:
        raise NotOurs(f"{parent} has permissions {stat.S_IMODE(info.st_mode):o}: others could "
                      f"replace what memnest puts there; use a folder of your own")


def check_target(path: Path) -> bool:
    """Whether `path`, a file memnest is to write where the user asked, is there; NotOurs
    when it may not be written (a link, not a regular file, another user's, or its folder
    not one to write in). Whether an existing file may be replaced is the caller's to say."""
    check_parent(path.parent)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(info.st_mode):
        raise NotOurs(f"{path} is a symbolic link; memnest does not write through links: name "
                      "the file itself")
    if not stat.S_ISREG(info.st_mode):
        raise NotOurs(f"{path} is not a regular file")
    if info.st_uid != os.getuid():
        raise NotOurs(f"{path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()})")
    return True


def write_file(path: Path, data: bytes, mode: int = 0o600) -> None:
    """`data` as `path`, replacing it whole (a new file beside it, renamed over it): written
    through no link, never leaving half a file. Checked first (check_target)."""
    check_target(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise NotOurs(f"cannot write in {path.parent}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def open_append(path: Path) -> int:
    """A descriptor appending to `path` (made 0600 when missing) in a folder already checked:
    never through a link, and only a regular file of this user with no other name (a hard
    link planted in a shared folder would lead elsewhere), or a device like /dev/null."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | \
        getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise NotOurs(f"cannot write {path}: {exc.strerror}"
                      + (" (a symbolic link)" if os.path.islink(path) else "")) from None
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and info.st_nlink == 1 \
            or stat.S_ISCHR(info.st_mode):
        return fd
    os.close(fd)
    raise NotOurs(f"{path} is not a file of yours; memnest does not write to it")
