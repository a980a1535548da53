"""The files of one database on disk, checked before the engine or the daemon touches them.

A workspace may come from a stranger (a cloned repository) and the machine may have other
users, so `.memnest/` and the files in it are not trusted: a symbolic link planted as
`memory.lbug.deferred` would have the daemon truncate and append to whatever it points at,
and a folder another user owns could get such a link at any time. Before a database opens:

- its folder must be a real directory (not a link) owned by this user, in a parent that
  not every user can write (unless sticky, as /tmp); only a `.memnest/` is created (0700)
  when missing (callers let a caller's path reach only an existing one, or the workspace's
  own: store/registry.py), and only a `.memnest/` is made 0700 when it was more open: any
  other folder that is more open is refused with the `chmod` that fixes it;
- each file the daemon or LadybugDB writes there (the database, its WAL, the journal of
  deferred rows, the vector snapshot and their temporaries) must be absent, or a regular
  file owned by this user with no other hard link; it is made 0600 when it is memnest's
  (in a `.memnest/`, or beside an existing database), and refused when more open
  otherwise. The database file itself must be a LadybugDB database if it exists: no other
  file is written over.

Every check runs before anything changes, so a refused path is left exactly as it was.
Anything else is refused with a message that says what to remove. The daemon also runs
with umask 077, so whatever the engine creates later is private too. Files are written
with O_NOFOLLOW (`open_private`), so a link that appears anyway is not followed.
"""
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
SUFFIXES = ("", ".wal", ".deferred", ".vectors.npz", ".vectors.npz.tmp")
MAGIC = b"LBUG"  # how every LadybugDB database file starts
OWN_FOLDER = ".memnest"


def unresolved(path: str) -> str:
    """`path` with the folders above the database's own folder resolved, and that folder
    and the file left as named: a link there must be seen by prepare(), not followed."""
    folder, name = os.path.split(os.path.abspath(path))
    above, own = os.path.split(folder)
    return os.path.join(os.path.realpath(above), own, name)


class UnsafeLocation(RuntimeError):
    """The database's folder or one of its files cannot be used safely."""


@dataclass
class _Plan:
    """What prepare() will change, decided before anything is changed."""
    make_folder: Path | None = None
    chmod: list[tuple[Path, int]] = field(default_factory=list)


def check(db_path: str) -> None:
    """What prepare() would refuse, changing nothing: for a database not opened yet."""
    _plan(db_path)


def prepare(db_path: str) -> None:
    """Check the folder and files of the database at `db_path` before it opens, then make
    them private. Every check runs first: a refused path has changed nothing. Raises
    UnsafeLocation."""
    path = Path(db_path)
    _carry_out(_plan(db_path))
    if path.parent.name == OWN_FOLDER:
        write_gitignore(str(path.parent))


def _plan(db_path: str) -> _Plan:
    path = Path(db_path)
    plan = _Plan()
    _check_folder(path.parent, plan)
    is_database = _database_or_nothing(path)
    # the files of an existing database, or any in a `.memnest/`, are memnest's own
    ours = is_database or path.parent.name == OWN_FOLDER
    for suffix in SUFFIXES:
        _check_file(Path(db_path + suffix), ours, plan)
    return plan


def _carry_out(plan: _Plan) -> None:
    if plan.make_folder is not None:
        try:
            os.mkdir(plan.make_folder, 0o700)
        except FileExistsError:
            _check_folder(plan.make_folder, _Plan())  # made meanwhile: checked again
        except OSError as exc:
            raise UnsafeLocation(f"cannot create {plan.make_folder}: {exc.strerror}") from None
    for target, mode in plan.chmod:
        os.chmod(target, mode, follow_symlinks=False)


def _database_or_nothing(path: Path) -> bool:
    """An existing file at the database's path must be a LadybugDB database: another file
    (or an empty one anywhere but memnest's own folder) is never turned into one. True when
    it is a database."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return False  # refused by _check_file, with its reason
    try:
        fd = open_private(str(path), os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise UnsafeLocation(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:  # a regular file of ours: checked before
        head = f.read(len(MAGIC))
    if head == MAGIC or (not head and path.parent.name == OWN_FOLDER):
        return head == MAGIC
    what = "an empty file" if not head else "not a LadybugDB database"
    raise UnsafeLocation(f"{path} exists and is {what}; memnest will not write a database "
                         "over it. Choose another database path, or remove the file")


def _check_folder(folder: Path, plan: _Plan) -> None:
    """The database's folder: ours to create (a missing `.memnest/`) and to make private
    (a `.memnest/`, memnest's own name); any other folder is used only as it is."""
    try:
        parent = os.stat(folder.parent)
    except OSError:
        parent = None
    if parent is not None and parent.st_mode & stat.S_IWOTH and \
            not parent.st_mode & stat.S_ISVTX:
        raise UnsafeLocation(f"{folder.parent} can be written by every user (mode "
                             f"{stat.S_IMODE(parent.st_mode):o}): anyone could swap the "
                             "database folder; use a folder only you can write")
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        if folder.name != OWN_FOLDER or parent is None or not stat.S_ISDIR(parent.st_mode):
            raise UnsafeLocation(f"{folder} does not exist; memnest creates no folder but a "
                                 f"workspace's own {OWN_FOLDER}/: create it first, or choose "
                                 "another database path") from None
        plan.make_folder = folder
        return
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeLocation(f"{folder} is a symbolic link; memnest does not keep a database "
                             "behind a link (it could point anywhere): remove it, and it is "
                             "created as a private folder")
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeLocation(f"{folder} is not a folder; move it away")
    if info.st_uid != os.geteuid():
        raise UnsafeLocation(f"{folder} belongs to another user (uid {info.st_uid}), who "
                             "could plant links in it; remove it or choose another database "
                             "path")
    if stat.S_IMODE(info.st_mode) & 0o077:
        if folder.name != OWN_FOLDER:
            raise UnsafeLocation(f"{folder} can be read by other users (mode "
                                 f"{stat.S_IMODE(info.st_mode):o}) and memnest changes no "
                                 f"folder it does not own: run `chmod 700 {folder}`, or "
                                 "choose another database path")
        plan.chmod.append((folder, 0o700))


def _check_file(path: Path, ours: bool, plan: _Plan) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeLocation(f"{path} is a symbolic link; memnest never writes through a "
                             "link in a database folder: remove it")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeLocation(f"{path} is not a regular file; remove it")
    if info.st_uid != os.geteuid():
        raise UnsafeLocation(f"{path} belongs to another user (uid {info.st_uid}); remove it")
    if info.st_nlink > 1:
        raise UnsafeLocation(f"{path} has another hard link (writing it would change that "
                             "file too); remove it")
    if stat.S_IMODE(info.st_mode) & 0o077:
        if not ours:
            raise UnsafeLocation(f"{path} can be read by other users (mode "
                                 f"{stat.S_IMODE(info.st_mode):o}) and is not memnest's: "
                                 f"run `chmod 600 {path}`, or choose another database path")
        plan.chmod.append((path, 0o600))


def open_private(path: str, flags: int) -> int:
    """os.open that never follows a link at the last component and creates files 0600."""
    return os.open(path, flags | _NOFOLLOW | _CLOEXEC, 0o600)


# It ignores itself too: every clone's daemon writes its own, and a committed copy would make
# a teammate's `git pull` stop at their untracked one (ignored files git may replace).
GITIGNORE = (b"# Written by memnest: the databases stay out of git; shared/ holds the\n"
             b"# memories shared with the team (memnest-ctl share). Edit freely: memnest\n"
             b"# never overwrites this file.\n"
             b"/*\n!/shared/\n")


def write_gitignore(folder: str) -> None:
    """A workspace's `.memnest/.gitignore` (everything but shared/ stays out of git) when it
    is missing. O_EXCL and O_NOFOLLOW, the folder opened without following a link: an
    existing file (a user's edit, or a link) is never written."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return
    try:
        out = os.open(".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
                      | _CLOEXEC, 0o644, dir_fd=fd)
    except OSError:
        return
    finally:
        os.close(fd)
    try:
        os.write(out, GITIGNORE)
    finally:
        os.close(out)


RESTORED = (b"\n# Added by memnest: the lines above let git publish its private files (the\n"
            b"# databases). These keep them out; delete them only to publish everything.\n"
            b"/*\n!/shared/\n")


def restore_gitignore(folder: str) -> bool:
    """Append memnest's rules to a `.memnest/.gitignore` that lets git publish private
    files (a teammate's commit): being last, they win. Never through a link; True when
    the rules were added."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return False
    try:
        out = os.open(".gitignore", os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW
                      | _CLOEXEC, 0o644, dir_fd=fd)
    except OSError:
        return False
    finally:
        os.close(fd)
    try:
        if not stat.S_ISREG(os.fstat(out).st_mode):
            return False
        os.write(out, RESTORED)
        return True
    finally:
        os.close(out)
