"""Which of a workspace's private files git would publish. `.memnest/` holds the databases
beside shared/, and only an ignore file keeps them out of git; a teammate can commit one
that ignores nothing (`!*`), or a repository can carry a tracked file. git itself is asked
which files under `.memnest/` it tracks or would add (only its ignore rules and index are
read, never file content), at most every RECHECK_S per workspace or when the ignore file
changes. Untracked files it would add are kept out by adding memnest's rules back at the
end of the ignore file (last, they win); for what is left (tracked files), a call on the
workspace is told, loudly, and sharing is refused. A tracked database is never opened
(store/registry.py)."""
import logging
import os
import threading
import time

from ..code.git_cli import run_git
from ..storage.db_files import restore_gitignore
from ..storage.safe_files import OWN_FOLDER, PUBLISHED_FOLDER

log = logging.getLogger(__name__)

RECHECK_S = 10.0
_SHOWN = 5  # files named in the warning, at most

_seen: dict[str, tuple[float, tuple[tuple[int, int, int], ...], list[str]]] = {}
_lock = threading.Lock()
restored: set[str] = set()  # workspaces whose ignore file memnest added its rules back to


def exposed(workspace: str) -> list[str]:
    """The files under `.memnest/` (but shared/ and the ignore file) that git tracks or
    would add with `git add .memnest`; [] outside a git repository."""
    stamp = _ignore_file_stamp(workspace)
    now = time.monotonic()
    with _lock:
        last = _seen.get(workspace)
    if last is not None and last[1] == stamp and now - last[0] < RECHECK_S:
        return last[2]
    found = _ask_git(workspace, "--cached", "--others", "--exclude-standard")
    if found and set(found) - set(_ask_git(workspace, "--cached")) and \
            restore_gitignore(os.path.join(workspace, OWN_FOLDER)):
        log.warning("%s/%s/.gitignore let git publish %s: memnest's rules were added back "
                    "at its end", workspace, OWN_FOLDER, ", ".join(found[:_SHOWN]))
        with _lock:
            restored.add(workspace)
        stamp = _ignore_file_stamp(workspace)
        found = _ask_git(workspace, "--cached", "--others", "--exclude-standard")
    with _lock:
        if len(_seen) > 1000:
            _seen.clear()
        _seen[workspace] = (now, stamp, found)
    return found


def take_restored(workspace: str) -> bool:
    """Whether memnest added its rules back to this workspace's ignore file since the last
    call asked (the caller is told once, to commit the change)."""
    with _lock:
        if workspace in restored:
            restored.discard(workspace)
            return True
        return False


RESTORED_NOTE = (f"memnest added its rules back at the end of {OWN_FOLDER}/.gitignore: a "
                 "committed version let git publish the private databases. Commit that "
                 "change so that the whole team's copies keep them out")


def _ask_git(workspace: str, *which: str) -> list[str]:
    """The files under `.memnest/` but shared/ and the ignore file that `git ls-files`
    lists with these options."""
    code, out = run_git(workspace, "ls-files", "-z", *which, "--", OWN_FOLDER)
    return [] if code != 0 else [
        name for name in out.decode("utf-8", "replace").split("\0") if name and
        not name.startswith(f"{OWN_FOLDER}/{PUBLISHED_FOLDER}/") and
        name != f"{OWN_FOLDER}/.gitignore"]


def warning(files: list[str]) -> str:
    names = ", ".join(files[:_SHOWN]) + (f" and {len(files) - _SHOWN} more"
                                          if len(files) > _SHOWN else "")
    return (f"git would publish memnest's private files: {names} (tracked, or not ignored: "
            f"a {OWN_FOLDER}/.gitignore that ignores nothing?). `git add {OWN_FOLDER}` would "
            "commit every private memory. Put memnest's rules back in "
            f"{OWN_FOLDER}/.gitignore (two lines: /* and !/{PUBLISHED_FOLDER}/) and untrack "
            f"the files (git rm --cached FILE); sharing is refused until then")


def _ignore_file_stamp(workspace: str) -> tuple[tuple[int, int, int], ...]:
    """The ignore file's and git's index's identity: a change to either is seen at once
    (a worktree's index lies elsewhere: RECHECK_S covers it)."""
    return tuple(_stamp(os.path.join(workspace, *parts))
                 for parts in ((OWN_FOLDER, ".gitignore"), (".git", "index")))


def _stamp(path: str) -> tuple[int, int, int]:
    try:
        st = os.stat(path, follow_symlinks=False)
        return (st.st_size, st.st_mtime_ns, st.st_ino)
    except OSError:
        return (-1, 0, 0)
