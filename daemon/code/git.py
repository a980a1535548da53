"""What git knows about a workspace: its HEAD and branch, which files were renamed since a
commit, whether a commit is in HEAD's history, and a file as a commit holds it.

`Repo.of` runs on every search, so it is cached per workspace and revalidated by a few stat()
calls: the worktree's HEAD file and the files holding the current branch's ref (a loose ref,
packed-refs, a reftable list). Checking out a branch or committing rewrites one of them (a
new inode and mtime), so the next call sees it. Everything git prints is read as data; git
itself runs through git_cli.run_git (repository config cannot start programs there).

The workspace may be a folder inside the repository: anchors are workspace-relative, git's
paths repository-relative; `prefix` converts.
"""
import os
import re
import threading
import time

from .git_cli import DIFF_SAFETY, run_git

# Seconds before a cached repository is looked up again although its stamp (HEAD and the
# branch's ref) did not change: a safety net, since a new git lookup costs several
# processes and an agent's searches are often minutes apart (bench/RESULTS.md#code-anchors).
FULL_TTL = 600.0
NEGATIVE_TTL = 2.0    # "not a repository" is believed this long (a `git init` is seen soon)
MAX_CACHED = 256
_COMMIT = re.compile(r"[0-9a-f]{7,64}\Z")

_Stamp = tuple[object, ...]  # what HEAD depends on, only ever compared for equality


class Repo:
    """A git repository as seen from one workspace, at one HEAD."""

    def __init__(self, workspace: str, root: str, git_dir: str, common_dir: str, prefix: str,
                 head: str, branch: str):
        self.workspace = workspace
        self.root = root            # the repository's top level, absolute
        self.git_dir = git_dir      # this worktree's git folder
        self.common_dir = common_dir
        self.prefix = prefix        # the workspace's path in the repository: "" or "sub/dir/"
        self.head = head            # HEAD's commit ("" before the first commit)
        self.branch = branch        # the short branch name ("" when detached)
        self._lock = threading.Lock()
        self._committed: dict[str, dict[str, str] | None] = {}   # since → renames to HEAD
        self._staged: tuple[_Stamp, dict[str, str]] | None = None
        self._ancestors: dict[str, bool | None] = {}

    def __repr__(self) -> str:
        return f"Repo({self.root!r}, head={self.head[:12]!r}, branch={self.branch!r})"

    # -- the cached lookup --------------------------------------------------------------------

    @classmethod
    def of(cls, workspace: str) -> "Repo | None":
        """The repository holding `workspace` (None outside git, or when git is missing)."""
        key = os.path.abspath(workspace)
        now = time.monotonic()
        with _cache_lock:
            cached = _cache.get(key)
        if cached is not None:
            repo, stamp, at = cached
            if repo is None:
                if now - at < NEGATIVE_TTL:
                    return None
            elif now - at < FULL_TTL and \
                    _stamp(repo.git_dir, repo.common_dir, repo.branch) == stamp:
                return repo
        repo, stamp = _discover(key)
        with _cache_lock:
            if len(_cache) >= MAX_CACHED and key not in _cache:
                _cache.pop(next(iter(_cache)))
            _cache[key] = (repo, stamp, now)
        return repo

    # -- questions ----------------------------------------------------------------------------

    def renamed(self, path: str, since: str) -> str | None:
        """The workspace-relative path `path` was renamed to between commit `since` and HEAD
        (a committed rename) and then in the index (a staged rename, e.g. `git mv` not yet
        committed); None when it was not renamed, or git cannot tell."""
        old = self.prefix + path
        new = old
        if since and _COMMIT.match(since) and self.head and not self.head.startswith(since):
            committed = self._committed_renames(since)
            if committed:
                new = committed.get(new, new)
        new = self._staged_renames().get(new, new)
        if new == old or not new.startswith(self.prefix):
            return None  # not renamed, or moved out of the workspace
        return new[len(self.prefix):]

    def is_ancestor(self, commit: str) -> bool | None:
        """Whether `commit` is in HEAD's history (None: unknown commit, or no HEAD)."""
        if not self.head or not _COMMIT.match(commit or ""):
            return None
        with self._lock:
            if commit in self._ancestors:
                return self._ancestors[commit]
        code, _ = run_git(self.workspace, "merge-base", "--is-ancestor", commit, self.head)
        answer = True if code == 0 else False if code == 1 else None
        with self._lock:
            self._ancestors[commit] = answer
        return answer

    def file_at(self, commit: str, path: str) -> bytes | None:
        """The bytes of the workspace-relative `path` as commit `commit` holds it (None: no
        such commit or file, or git cannot tell). Read from the object database, never the
        working tree: no filter runs."""
        if not _COMMIT.match(commit or "") or not path:
            return None
        code, out = run_git(self.workspace, "cat-file", "blob", f"{commit}:{self.prefix}{path}")
        return out if code == 0 else None

    def _committed_renames(self, since: str) -> dict[str, str] | None:
        with self._lock:
            if since in self._committed:
                return self._committed[since]
        # Two commits: git compares trees, never the working tree (no filter can run).
        code, out = run_git(self.workspace, "diff", "--name-status", "-z", "-M",
                            "--diff-filter=R", *DIFF_SAFETY, since, self.head, "--")
        renames = _renames(out) if code == 0 else None
        with self._lock:
            self._committed[since] = renames
        return renames

    def _staged_renames(self) -> dict[str, str]:
        stamp = (_file_stamp(os.path.join(self.git_dir, "index")), self.head)
        with self._lock:
            if self._staged is not None and self._staged[0] == stamp:
                return self._staged[1]
        # The index against HEAD: still no working tree content read.
        code, out = run_git(self.workspace, "diff", "--cached", "--name-status", "-z", "-M",
                            "--diff-filter=R", *DIFF_SAFETY, "--")
        renames = _renames(out) if code == 0 else {}
        with self._lock:
            self._staged = (stamp, renames)
        return renames


_cache: dict[str, tuple[Repo | None, _Stamp, float]] = {}
_cache_lock = threading.Lock()


def _discover(workspace: str) -> tuple[Repo | None, _Stamp]:
    """The repository and the stamp it is valid for. Each answer is read after the stamp of
    the files it depends on, and the stamps are taken again at the end: if anything moved
    meanwhile, the stamp returned matches nothing and the next call looks again."""
    code, out = run_git(workspace, "rev-parse", "--show-toplevel", "--absolute-git-dir",
                        "--git-common-dir", "--show-prefix")
    fields = _text(out).split("\n")
    if code != 0 or len(fields) < 4 or not fields[0] or not fields[1]:
        return None, ()  # not a repository, a bare one, or git missing
    root, git_dir, common_dir, prefix = fields[:4]
    common_dir = os.path.normpath(os.path.join(workspace, common_dir))
    before_branch = _stamp(git_dir, common_dir, "")
    code, out = run_git(workspace, "symbolic-ref", "-q", "HEAD")
    ref = _text(out).rstrip("\n") if code == 0 else ""
    branch = ref[len("refs/heads/"):] if ref.startswith("refs/heads/") else ""
    before_head = _stamp(git_dir, common_dir, branch)
    code, out = run_git(workspace, "rev-parse", "-q", "--verify", "HEAD^{commit}")
    head = _text(out).strip() if code == 0 else ""
    after = _stamp(git_dir, common_dir, branch)
    repo = Repo(workspace, root, git_dir, common_dir, prefix,
                head if _COMMIT.match(head) else "", branch)
    steady = after == before_head and after[:3] == before_branch
    return repo, after if steady else ("moving",)


def _stamp(git_dir: str, common_dir: str, branch: str) -> _Stamp:
    """What changes when HEAD moves: the worktree's HEAD file (a checkout, a detached
    commit) and wherever the branch's ref lives (a commit, a reset)."""
    files = [os.path.join(git_dir, "HEAD"),
             os.path.join(common_dir, "packed-refs"),
             os.path.join(common_dir, "reftable", "tables.list")]
    if branch:
        files.append(os.path.join(common_dir, "refs", "heads", *branch.split("/")))
    return tuple(_file_stamp(f) for f in files)


def _file_stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)  # never opened: a planted FIFO cannot block this
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _text(out: bytes) -> str:
    # surrogateescape: a path that is not UTF-8 still names the same file
    return out.decode("utf-8", errors="surrogateescape")


def _renames(out: bytes) -> dict[str, str]:
    """`git diff --name-status -z` output → {old repository path: new one}."""
    fields = _text(out).split("\0")
    renames: dict[str, str] = {}
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status[:1] in ("R", "C") and i + 2 < len(fields):
            if status[0] == "R":
                renames[fields[i + 1]] = fields[i + 2]
            i += 3
        else:
            i += 2
    return renames
