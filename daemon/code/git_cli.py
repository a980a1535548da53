"""Running the git command line against a repository that is not trusted (DESIGN.md 9).

A cloned repository's own config can name programs git would run: an fsmonitor hook, hooks,
an external diff, textconv drivers, clean/smudge filters, a pager. So git runs with a fixed
argv (never a shell), options that switch those off, no terminal prompt, no optional locks
(nothing written to the repository), a timeout (the whole process group is killed), and a cap
on what it may print. Callers run only commands that never read working tree content
(rev-parse, symbolic-ref, merge-base, diff between commits or of the index, cat-file of a
committed file): those are the ones that could run a clean filter.
"""
import os
import selectors
import shutil
import signal
import subprocess
import time

TIMEOUT = 2.0
MAX_OUTPUT = 4 << 20

SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
               "-c", "diff.external=", "-c", "core.pager=cat", "-c", "core.quotePath=false",
               "-c", "protocol.allow=never", "-c", "core.untrackedCache=false")
# On every diff: no external diff program, no textconv driver.
DIFF_SAFETY = ("--no-ext-diff", "--no-textconv", "--no-color")

_executable: list[str | None] = []


def git_executable() -> str | None:
    if not _executable:
        _executable.append(shutil.which("git"))
    return _executable[0]


def _environment() -> dict[str, str]:
    # GIT_* from the daemon's own environment (GIT_DIR, GIT_INDEX_FILE, GIT_EXTERNAL_DIFF...)
    # would point git elsewhere or run something: none is passed on.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_PAGER="cat", PAGER="cat",
               GIT_NO_REPLACE_OBJECTS="1",
               GIT_ASKPASS="/bin/false", SSH_ASKPASS="/bin/false", LC_ALL="C")
    return env


def run_git(cwd: str, *args: str) -> tuple[int, bytes]:
    """(exit code, standard output) of `git <args>` in `cwd`; (-1, b"") when git is missing,
    timed out, or printed more than MAX_OUTPUT."""
    git = git_executable()
    if git is None:
        return -1, b""
    try:
        process = subprocess.Popen([git, "--no-pager", *SAFE_CONFIG, *args], cwd=cwd,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, env=_environment(),
                                   start_new_session=True, close_fds=True)
    except OSError:
        return -1, b""
    assert process.stdout is not None
    chunks: list[bytes] = []
    total = 0
    deadline = time.monotonic() + TIMEOUT
    ok = True
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                ok = False
                break
            chunk = os.read(process.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_OUTPUT:
                ok = False
                break
            chunks.append(chunk)
    process.stdout.close()
    if not ok:
        _kill(process)
        return -1, b""
    try:
        code = process.wait(timeout=max(0.05, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill(process)
        return -1, b""
    return code, b"".join(chunks)


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Git and anything it started (its own session): killed, and reaped."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        process.wait(timeout=1)
    except subprocess.TimeoutExpired:
        pass


def tracked(folder: str, names: list[str]) -> list[str]:
    """Which of the files `names` in `folder` git tracks (reads only the index); [] outside
    a repository or without git."""
    code, out = run_git(folder, "ls-files", "-z", "--cached", "--", *names)
    if code != 0:
        return []
    return [name for name in out.decode("utf-8", "replace").split("\0") if name]
