"""Which of a workspace's private files git would publish. `.memnest/` holds the databases
beside shared/, and only an ignore file keeps them out of git; a teammate can commit one
that ignores nothing (`!*`), or a repository can carry a tracked database. git itself is
asked which files under `.memnest/` it tracks or would add (only its ignore rules and index
are read, never file content), at most every RECHECK_S per workspace or when the ignore
file changes; a call on such a workspace is told, loudly, and sharing is refused."""
import os
import threading
import time

from ..code.git_cli import run_git
from ..storage.safe_files import OWN_FOLDER, PUBLISHED_FOLDER

RECHECK_S = 10.0
_SHOWN = 5  # files named in the warning, at most

_seen: dict[str, tuple[float, tuple[int, int, int], list[str]]] = {}  # workspace -> last
_lock = threading.Lock()


def exposed(workspace: str) -> list[str]:
    """The files under `.memnest/` (but shared/ and the ignore file) that git tracks or
    would add with `git add .memnest`; [] outside a git repository."""
    stamp = _ignore_file_stamp(workspace)
    now = time.monotonic()
    with _lock:
        last = _seen.get(workspace)
    if last is not None and last[1] == stamp and now - last[0] < RECHECK_S:
        return last[2]
    code, out = run_git(workspace, "ls-files", "-z", "--cached", "--others",
                        "--exclude-standard", "--", OWN_FOLDER)
    found = [] if code != 0 else [
        name for name in out.decode("utf-8", "replace").split("\0") if name and
        not name.startswith(f"{OWN_FOLDER}/{PUBLISHED_FOLDER}/") and
        name != f"{OWN_FOLDER}/.gitignore"]
    with _lock:
        if len(_seen) > 1000:
            _seen.clear()
        _seen[workspace] = (now, stamp, found)
    return found


def warning(files: list[str]) -> str:
    names = ", ".join(files[:_SHOWN]) + (f" and {len(files) - _SHOWN} more"
                                          if len(files) > _SHOWN else "")
    return (f"git would publish memnest's private files: {names} (tracked, or not ignored: "
            f"a {OWN_FOLDER}/.gitignore that ignores nothing?). `git add {OWN_FOLDER}` would "
            "commit every private memory. Put memnest's rules back in "
            f"{OWN_FOLDER}/.gitignore (two lines: /* and !/{PUBLISHED_FOLDER}/) and untrack "
            f"the files (git rm --cached FILE); sharing is refused until then")


def _ignore_file_stamp(workspace: str) -> tuple[int, int, int]:
    try:
        st = os.stat(os.path.join(workspace, OWN_FOLDER, ".gitignore"), follow_symlinks=False)
        return (st.st_size, st.st_mtime_ns, st.st_ino)
    except OSError:
        return (-1, 0, 0)
