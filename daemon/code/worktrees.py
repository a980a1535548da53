"""Which repository a git worktree belongs to, read from git's own small files (no git run).

A linked worktree has a `.git` *file* ("gitdir: <common>/worktrees/<name>"); that folder
names the repository's common git folder (`commondir`) and, in `gitdir`, the worktree's own
`.git` file again. The repository's home is the main checkout around the common folder (or
the common folder itself for a bare repository).

The workspace is untrusted: a planted `.git` file could name any folder as its repository,
and so lead a call to another project's memory. A worktree is believed only when git's
back-link holds: its gitdir lies in `<common>/worktrees/`, a folder only git (and the
repository's owner) writes, and that gitdir's `gitdir` file names this very worktree."""
import os
import stat
from dataclasses import dataclass

MAX_POINTER = 4096  # a `.git` file, `commondir` or `gitdir` is one short line


@dataclass(frozen=True)
class Worktree:
    """A linked worktree and the repository it belongs to."""
    checkout: str  # the worktree's top folder, resolved
    home: str  # the main checkout (or the bare repository's folder), resolved
    common_dir: str  # the repository's shared git folder
    name: str  # the worktree's name in <common>/worktrees/


@dataclass(frozen=True)
class NotLinked:
    """Why a folder with a `.git` file is not taken as a worktree of a repository."""
    reason: str


def linked_worktree(folder: str) -> Worktree | NotLinked | None:
    """The repository `folder` is a linked worktree of; None when `folder` has no `.git`
    file (not a worktree: a main checkout, or no repository at all)."""
    dot_git = os.path.join(folder, ".git")
    if os.path.islink(dot_git) or not os.path.isfile(dot_git):
        return None
    pointer = _line(dot_git)
    if pointer is None or not pointer.startswith("gitdir:"):
        return NotLinked(".git is a file that names no gitdir")
    git_dir = _resolved(folder, pointer[len("gitdir:"):].strip())
    common = _line(os.path.join(git_dir, "commondir"))
    if common is None:
        return NotLinked(f"its gitdir {git_dir} is missing or names no repository (a moved "
                         "repository? `git worktree repair` mends the links)")
    common_dir = _resolved(git_dir, common)
    if os.path.dirname(git_dir) != os.path.join(common_dir, "worktrees"):
        return NotLinked(f"its gitdir {git_dir} is not inside the repository's worktrees "
                         "folder")
    back = _line(os.path.join(git_dir, "gitdir"))
    if back is None or _resolved(git_dir, back) != os.path.realpath(dot_git):
        return NotLinked(f"the repository at {common_dir} does not list this folder as its "
                         "worktree (`git worktree repair` mends the links)")
    return Worktree(os.path.realpath(folder), _home(common_dir), common_dir,
                    os.path.basename(git_dir))


def _home(common_dir: str) -> str:
    """The main checkout holding the common git folder, or that folder itself when the
    repository is bare (no checkout around it)."""
    parent = os.path.dirname(common_dir)
    if os.path.basename(common_dir) == ".git" and \
            os.path.realpath(os.path.join(parent, ".git")) == common_dir:
        return parent
    return common_dir


def _resolved(base: str, path: str) -> str:
    return os.path.realpath(os.path.join(base, path))


def _line(path: str) -> str | None:
    """The first line of a small regular file; None when it is missing, a link, not a file
    or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not _regular(fd):
            return None
        data = os.read(fd, MAX_POINTER)
    except OSError:
        return None
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace").splitlines()
    return text[0].strip() if text and "\x00" not in text[0] else None


def _regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)
