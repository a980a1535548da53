"""operations/workspace.py in process: switching to another folder opens its database now
(so a bad one fails here), counts its memories, and a remote caller may neither pick a
database file nor reach a folder outside its allow-list."""
import os
from dataclasses import dataclass

import pytest
from memnest_daemon.core.errors import ToolError
from memnest_daemon.operations.workspace import switch_workspace
from memnest_daemon.store.registry import StoreRegistry
from support import stored_memories


@pytest.fixture
def stores(ctx):
    registry = StoreRegistry(ctx.embedder.name, ctx.embedder.dim, 64, 1,
                             embed=ctx.embedder.embed)
    yield registry
    registry.close_all()


@dataclass
class Allowed:
    """A remote caller that may use the folders under `root` only."""
    root: str
    identity: str = "alice"

    def allows_workspace(self, workspace: str) -> bool:
        return workspace == self.root or workspace.startswith(self.root + "/")

    def where(self) -> str:
        return f"allowed under {self.root}"


def test_a_relative_folder_is_resolved_and_counted(ctx, stores, tmp_path):
    (tmp_path / "project" / "sub").mkdir()
    done = switch_workspace(ctx, stores, " sub ")
    assert done.workspace == str((tmp_path / "project" / "sub").resolve())
    assert done.database == done.workspace + "/.memnest/memory.lbug"
    assert done.memories == 0 and done.db_path == ""
    assert not (tmp_path / "project" / "sub" / ".memnest").exists()  # created by a write


def test_memories_already_there_are_counted(ctx, stores, tmp_path):
    stored_memories(ctx, "The payments service owns the refunds table.",
                    "Feature flags are read from LaunchDarkly at startup.")
    ctx.store.close()  # the registry opens the same file now, moved to a folder of memnest's
    folder = tmp_path / "team" / ".memnest"
    folder.mkdir(mode=0o700, parents=True)
    for file in tmp_path.glob("memory.lbug*"):
        file.rename(folder / file.name)
    shared = str(folder / "memory.lbug")
    done = switch_workspace(ctx, stores, ctx.workspace, shared)
    assert done.memories == 2 and done.database == shared


@pytest.mark.parametrize("given, words", [
    ("", "empty"), ("   ", "empty"), ("missing-folder", "not an existing directory"),
])
def test_a_bad_folder_is_refused_with_a_reason(ctx, stores, given, words):
    with pytest.raises(ToolError) as refused:
        switch_workspace(ctx, stores, given)
    assert words in refused.value.message


def test_a_remote_caller_may_not_pick_a_database_file(ctx, stores):
    with pytest.raises(ToolError) as refused:
        switch_workspace(ctx, stores, ".", "/tmp/elsewhere.lbug", Allowed(ctx.workspace))
    assert refused.value.code == "permission_denied" and "db_path" in refused.value.message


@pytest.mark.parametrize("given", ["/etc/passwd", "elsewhere.lbug", "../outside/.memnest/x.lbug",
                                   ".memnest/..", "sub/.memnest/x.lbug"])
def test_a_database_path_outside_a_memnest_folder_is_refused_before_anything(
        ctx, stores, tmp_path, given):
    """Only a file in an existing `.memnest/` (or the workspace's own) may be named: the
    refusal comes before any file operation, so nothing anywhere changes."""
    (tmp_path / "project" / "sub").mkdir()
    before, passwd = _tree(tmp_path), os.stat("/etc/passwd")
    with pytest.raises(ToolError) as refused:
        switch_workspace(ctx, stores, ".", given)
    assert refused.value.code == "permission_denied"
    assert ".memnest" in refused.value.message
    assert _tree(tmp_path) == before and os.stat("/etc/passwd") == passwd


def _tree(root):
    return sorted((str(p), os.lstat(p).st_mode, os.lstat(p).st_mtime_ns)
                  for p in [root, *root.rglob("*")])


def test_a_remote_caller_stays_in_its_folders(ctx, stores, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    with pytest.raises(ToolError) as refused:
        switch_workspace(ctx, stores, str(outside), reach=Allowed(ctx.workspace))
    assert refused.value.code == "permission_denied" and "alice" in refused.value.message
    assert not (outside / ".memnest").exists()  # refused before anything was opened
    (tmp_path / "project" / "inside").mkdir()
    assert switch_workspace(ctx, stores, "inside", reach=Allowed(ctx.workspace)).memories == 0


def test_a_link_out_of_the_allowed_folder_is_refused(ctx, stores, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "project" / "looks-inside").symlink_to(outside)
    with pytest.raises(ToolError) as refused:
        switch_workspace(ctx, stores, "looks-inside", reach=Allowed(ctx.workspace))
    assert refused.value.code == "permission_denied"
    assert not (outside / ".memnest").exists()
