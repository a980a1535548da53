"""Which repository a linked worktree belongs to (daemon/code/worktrees.py), with the real git
CLI for the genuine cases and hand-made `.git` files for the hostile ones: only git's own
back-linked worktrees are believed."""
import os
from pathlib import Path

import pytest
from memnest_daemon.code.worktrees import NotLinked, Worktree, linked_worktree
from memnest_daemon.store.resolution import OWN_MEMORY_MARKER, resolve
from support import git


@pytest.fixture
def repo(tmp_path) -> Path:
    path = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(path))
    (path / "a.txt").write_text("a\n")
    git(path, "add", ".")
    git(path, "commit", "-qm", "one")
    return path.resolve()


def test_a_real_worktree_belongs_to_its_main_checkout(repo, tmp_path):
    wt = tmp_path / "far" / "away" / "wt"
    git(repo, "worktree", "add", "-q", "-b", "topic", str(wt))
    found = linked_worktree(str(wt))
    assert isinstance(found, Worktree)
    assert found.home == str(repo) and found.checkout == str(wt.resolve())
    assert found.common_dir == str(repo / ".git") and found.name == "wt"
    assert linked_worktree(str(repo)) is None  # the main checkout: a .git folder
    assert linked_worktree(str(tmp_path)) is None  # no repository at all
    where = resolve(str(wt))
    assert where.workspace == str(repo) and where.checkout == str(wt.resolve()) and where.moved


def test_a_bare_repositorys_worktrees_share_the_bare_folder(tmp_path, repo):
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    wt = tmp_path / "from-bare"
    git(bare, "worktree", "add", "-q", str(wt), "main")
    found = linked_worktree(str(wt))
    assert isinstance(found, Worktree) and found.home == str(bare.resolve())


def test_own_memory_is_kept_when_asked(repo, tmp_path):
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "apart", str(wt))
    assert resolve(str(wt), "own").workspace == str(wt.resolve())
    (wt / ".memnest").mkdir()
    (wt / ".memnest" / OWN_MEMORY_MARKER).write_text("")
    where = resolve(str(wt))
    assert where.workspace == str(wt.resolve()) and OWN_MEMORY_MARKER in where.why


def _planted(folder: Path, pointer: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dot_git = folder / ".git"
    if isinstance(pointer, bytes):
        dot_git.write_bytes(pointer)
    else:
        dot_git.write_text(pointer)
    return folder


def test_planted_git_files_lead_nowhere(repo, tmp_path):
    victim_common = repo / ".git"
    fake = tmp_path / "fake-admin"
    fake.mkdir()
    (fake / "commondir").write_text(str(victim_common))
    cases = {
        "garbage": "not a pointer at all",
        "missing gitdir": f"gitdir: {tmp_path / 'nowhere'}",
        "outside worktrees": f"gitdir: {fake}",
        "binary": b"gitdir: \x00\xff\xfe",
        "huge": "gitdir: " + "x" * 100_000,
    }
    for name, pointer in cases.items():
        folder = _planted(tmp_path / "hostile" / name.replace(" ", "-"), pointer)
        found = linked_worktree(str(folder))
        assert isinstance(found, NotLinked), name
        where = resolve(str(folder))
        assert where.workspace == str(folder.resolve()), name  # its own memory, never repo's


def test_a_worktree_entry_that_names_another_folder_is_not_believed(repo, tmp_path):
    """An attacker who can read the victim's worktree list points a planted .git file at a
    real entry of it: the entry's back-link names the real worktree, not the planted one."""
    real = tmp_path / "real-wt"
    git(repo, "worktree", "add", "-q", "-b", "real", str(real))
    admin = repo / ".git" / "worktrees" / "real-wt"
    planted = _planted(tmp_path / "planted", f"gitdir: {admin}")
    found = linked_worktree(str(planted))
    assert isinstance(found, NotLinked) and "does not list this folder" in found.reason
    assert resolve(str(planted)).workspace == str(planted.resolve())


def test_links_are_not_followed(repo, tmp_path):
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "linked", str(wt))
    other = _planted(tmp_path / "via-link", "ignored")
    os.unlink(other / ".git")
    os.symlink(wt / ".git", other / ".git")  # a .git that is a link to a real worktree's
    assert linked_worktree(str(other)) is None
    assert resolve(str(other)).workspace == str(other.resolve())


def test_a_moved_main_checkout_leaves_its_worktrees_apart_until_repaired(repo, tmp_path):
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "stay", str(wt))
    moved = tmp_path / "moved-repo"
    repo.rename(moved)
    found = linked_worktree(str(wt))
    assert isinstance(found, NotLinked) and "git worktree repair" in found.reason
    git(moved, "worktree", "repair", str(wt))
    again = linked_worktree(str(wt))
    assert isinstance(again, Worktree) and again.home == str(moved.resolve())
