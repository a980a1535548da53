"""Every tool argument and request field that names a path, given hostile paths through the
real daemon: an ordinary file and folder (0644/0755) outside any `.memnest/`, a folder of
another user, `/`, links to a folder and a file, a `.memnest/` holding no database, and the
workspace root itself. Each call is refused (a clear error, never `internal`) or served,
and afterwards no decoy, nor `/etc` or `/etc/passwd`, changed (tests/decoys.py); the
workspace changed only inside its `.memnest/`."""
import os
from pathlib import Path

import pytest
from decoys import Decoys
from memnest_shims.client import ToolFailure


def _outside_memnest(root: Path) -> list[tuple]:
    """Everything under `root` but its `.memnest/`, with mode, owner and mtime; the root's
    own mtime is left out only because creating `.memnest/` changes it."""
    seen = [(str(root), os.lstat(root).st_mode, os.lstat(root).st_uid)]
    for path in sorted(root.rglob("*")):
        if ".memnest" in path.relative_to(root).parts:
            continue
        info = os.lstat(path)
        seen.append((str(path), info.st_mode, info.st_uid, info.st_mtime_ns))
    return seen


@pytest.fixture
def decoys(tmp_path) -> Decoys:
    return Decoys(tmp_path / "decoys")


@pytest.fixture
def memnest_decoy(tmp_path) -> Path:
    """A `.memnest/` folder of the user's (0755) holding a file that is not a database."""
    folder = tmp_path / "holder" / ".memnest"
    folder.mkdir(parents=True)
    os.chmod(folder, 0o755)
    (folder / "memory.lbug").write_text("not a database\n")
    return folder


def _hostile(decoys: Decoys, memnest_decoy: Path, workspace: Path) -> dict[str, Path]:
    return {**decoys.hostile(), "memnest-not-db": memnest_decoy / "memory.lbug",
            "memnest-folder": memnest_decoy, "workspace": workspace}


def _calls(path: str) -> list[tuple[str, dict, dict]]:
    """(tool, arguments, request fields) for each way a call can name `path`."""
    return [
        ("memory_set_workspace", {"workspace": path}, {}),
        ("memory_set_workspace", {"workspace": ".", "db_path": path}, {}),
        ("memory_set_workspace", {"workspace": ".", "db_path": path + "/memory.lbug"}, {}),
        ("memory_stats", {}, {"ws": path}),
        ("memory_stats", {}, {"db_path": path}),
        ("memory_store", {"content": "a hostile database path"}, {"db_path": path}),
        ("memory_search", {"query": "anything", "workspaces": [path]}, {}),
        ("memory_export", {"path": path}, {}),
        ("memory_export", {"path": path + "/export.json"}, {}),
        ("memory_import", {"path": path}, {}),
        ("memory_import", {"path": path, "dry_run": True, "from": "markdown"}, {}),
        ("memory_graph_html", {"path": path}, {}),
        ("memory_graph_html", {"path": path + "/graph.html"}, {}),
        ("memory_store", {"content": "cites a hostile file",
                          "anchors": [{"path": path}]}, {}),
    ]


def test_every_path_a_tool_takes(daemon, workspace, decoys, memnest_decoy):
    client = daemon.client()
    pid = client.status().pid
    try:
        client.call_tool("memory_store", {"content": "The release checklist is in docs/"},
                         str(workspace))
        before = _outside_memnest(workspace)
        memnest_before = sorted((p.name, os.lstat(p).st_mode, os.lstat(p).st_mtime_ns)
                                for p in [memnest_decoy, *memnest_decoy.iterdir()])
        served = refused = 0
        for name, path in _hostile(decoys, memnest_decoy, workspace).items():
            for tool, arguments, fields in _calls(str(path)):
                where = f"{tool} {arguments} {fields} ({name})"
                try:
                    client.call_tool(tool, arguments, fields.get("ws", str(workspace)),
                                     fields.get("db_path", ""))
                    served += 1
                except ToolFailure as failure:
                    assert failure.code != "internal", (where, failure.message)
                    assert failure.message.strip(), where
                    refused += 1
                decoys.assert_untouched()
                assert _outside_memnest(workspace) == before, where
                assert sorted((p.name, os.lstat(p).st_mode, os.lstat(p).st_mtime_ns)
                              for p in [memnest_decoy, *memnest_decoy.iterdir()]) == \
                    memnest_before, where
        assert client.status().pid == pid
        assert served and refused
    finally:
        client.close()


@pytest.mark.parametrize("name", ["file", "folder", "others", "root", "link", "file-link",
                                  "project", "memnest-not-db"])
def test_a_database_path_outside_memnest_is_refused_untouched(daemon, workspace, decoys,
                                                              memnest_decoy, name):
    path = _hostile(decoys, memnest_decoy, workspace)[name]
    client = daemon.client()
    try:
        with pytest.raises(ToolFailure) as failure:
            client.call_tool("memory_set_workspace",
                             {"workspace": str(workspace), "db_path": str(path)},
                             str(workspace))
    finally:
        client.close()
    assert failure.value.code == "permission_denied", failure.value.message
    decoys.assert_untouched()


@pytest.mark.parametrize("name", ["file", "folder", "others", "root", "link", "file-link"])
def test_a_write_in_a_hostile_workspace_adds_only_its_memnest_folder(daemon, decoys, name):
    """A write names its workspace: an ordinary folder of the user's becomes one (its
    `.memnest/` is created, nothing else in it changes); anything else is refused."""
    path = decoys.hostile()[name]
    real = Path(os.path.realpath(path))
    ordinary = name in ("folder", "link")
    before = _outside_memnest(real) if ordinary else None
    client = daemon.client()
    try:
        if ordinary:
            client.call_tool("memory_store", {"content": "a hostile workspace"}, str(path))
        else:
            with pytest.raises(ToolFailure) as failure:
                client.call_tool("memory_store", {"content": "a hostile workspace"}, str(path))
            assert failure.value.code in ("permission_denied", "invalid_argument"), \
                failure.value.message
    finally:
        client.close()
    if ordinary:
        assert (real / ".memnest" / "memory.lbug").exists()
        assert _outside_memnest(real) == before
    else:
        decoys.assert_untouched()
