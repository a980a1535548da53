"""Issue 20: memory_graph_html keeps the page it replaces as a timestamped snapshot beside it
and only the newest MEMORY_GRAPH_SNAPSHOTS; in a hostile workspace no link is followed and no
file memnest did not write is ever pruned, whatever its name."""
import os
import re
import stat
from pathlib import Path

import pytest
from memnest_daemon.storage.safe_files import write_file_keeping
from memnest_daemon.tools.graph_page import SIGNATURE
from memnest_shims.client import ToolFailure

SNAPSHOT = re.compile(r"graph-\d{8}T\d{6}Z(-\d+)?\.html\Z")


def _ours(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()
                  if SNAPSHOT.match(p.name) and not p.is_symlink() and p.is_file()
                  and p.read_bytes().startswith(SIGNATURE))


def test_each_page_keeps_the_previous_one_and_only_the_newest_five(call, workspace):
    call("memory_store", content="Snapshots keep earlier graph pages")
    first = call("memory_graph_html")
    page = workspace / ".memnest" / "graph.html"
    folder = workspace / ".memnest" / "graph-snapshots"
    assert Path(first["path"]) == page
    assert first["snapshot"] == {"folder": str(folder), "keep": 5, "kept": None, "pruned": []}
    assert not folder.exists()  # nothing to keep yet: no folder either

    kept, pages = [], []
    for n in range(7):
        call("memory_store", content=f"Graph change number {n} adds a memory")
        pages.append(page.read_bytes())
        made = call("memory_graph_html")
        snap = made["snapshot"]
        assert snap["kept"] and Path(snap["kept"]).parent == folder
        assert SNAPSHOT.match(Path(snap["kept"]).name)
        assert Path(snap["kept"]).read_bytes() == pages[-1]  # the page it replaced
        kept.append(snap["kept"])
        # the newest five stay: from the sixth snapshot on, each call prunes the oldest
        assert snap["pruned"] == ([kept[n - 5]] if n >= 5 else []), (n, snap)
    assert made["memories"] == 8
    assert _ours(folder) == sorted(Path(k).name for k in kept[-5:])
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for name in _ours(folder):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600


def test_a_page_at_another_path_keeps_its_snapshots_beside_it(call, workspace):
    call("memory_store", content="A page in a folder of its own")
    call("memory_graph_html", path=".memnest/view/map.html")
    again = call("memory_graph_html", path=".memnest/view/map.html")
    kept = Path(again["snapshot"]["kept"])
    assert kept.parent == workspace / ".memnest" / "view" / "map-snapshots"
    assert re.fullmatch(r"map-\d{8}T\d{6}Z\.html", kept.name)
    assert not (workspace / ".memnest" / "graph-snapshots").exists()


def test_planted_links_and_foreign_files_named_like_snapshots_are_never_touched(
        call, workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.html"
    victim.write_bytes(SIGNATURE + b"\n<p>the user's own page, not memnest's</p>")
    before = victim.read_bytes()
    folder = workspace / ".memnest" / "graph-snapshots"
    folder.mkdir(parents=True)
    # the oldest names of all: they would be the first pruned if they were memnest's
    (folder / "graph-19990101T000000Z.html").write_text("<p>someone's notes</p>")
    (folder / "graph-19990101T000001Z.html").symlink_to(victim)
    (folder / "graph-19990101T000002Z.html").mkdir()
    os.mkfifo(folder / "graph-19990101T000003Z.html")
    planted = ["graph-19990101T000000Z.html", "graph-19990101T000001Z.html",
               "graph-19990101T000002Z.html", "graph-19990101T000003Z.html"]

    call("memory_store", content="A hostile workspace plants files")
    for _ in range(8):
        made = call("memory_graph_html")
    snap = made["snapshot"]
    assert snap["left_alone"] == planted
    assert all(Path(p).name not in planted for p in snap["pruned"])
    assert len(_ours(folder)) == 5
    assert (folder / planted[0]).read_text() == "<p>someone's notes</p>"
    assert (folder / planted[1]).is_symlink() and os.readlink(folder / planted[1]) == str(victim)
    assert (folder / planted[2]).is_dir() and stat.S_ISFIFO((folder / planted[3]).lstat().st_mode)
    assert victim.read_bytes() == before and sorted(outside.iterdir()) == [victim]


def test_a_snapshot_folder_that_is_a_link_is_refused_and_nothing_is_lost(call, workspace,
                                                                         tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    call("memory_store", content="The snapshot folder must be a real folder")
    page = workspace / ".memnest" / "graph.html"
    call("memory_graph_html")
    before = page.read_bytes()
    (workspace / ".memnest" / "graph-snapshots").symlink_to(outside, target_is_directory=True)
    call("memory_store", content="A second memory changes the page")
    with pytest.raises(ToolFailure) as refused:
        call("memory_graph_html")
    assert refused.value.code == "invalid_argument"
    assert "symbolic link" in refused.value.message and "graph-snapshots" in \
        refused.value.message
    assert list(outside.iterdir()) == []
    assert page.read_bytes() == before  # not replaced: the previous page is not lost


def test_the_setting_sets_how_many_are_kept(fresh_daemon, workspace):
    fresh_daemon.env["MEMORY_GRAPH_SNAPSHOTS"] = "2"
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    try:
        client.call_tool("memory_store", {"content": "Two snapshots are enough"},
                         str(workspace))
        for _ in range(5):
            made = client.call_tool("memory_graph_html", {}, str(workspace))
    finally:
        client.close()
    assert made["snapshot"]["keep"] == 2 and len(made["snapshot"]["pruned"]) == 1
    assert len(_ours(workspace / ".memnest" / "graph-snapshots")) == 2


def test_no_snapshots_when_keep_is_zero(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    page = SIGNATURE + b"\n<p>one</p>"
    for _ in range(2):
        path, snapshots = write_file_keeping(str(ws), None, ".memnest/graph.html", page,
                                             SIGNATURE, "graph page", "", 0)
    assert snapshots is None and Path(path).read_bytes() == page
    assert sorted(p.name for p in (ws / ".memnest").iterdir()) == ["graph.html"]


def test_a_snapshot_folder_in_the_output_folder_keeps_its_mode(tmp_path):
    """Outside .memnest/ the snapshot folder may be the user's own: used, never chmodded
    (inside .memnest/ a more open one is made private, as every folder memnest keeps)."""
    ws, out = tmp_path / "ws", tmp_path / "out"
    ws.mkdir()
    (out / "graph-snapshots").mkdir(parents=True)
    os.chmod(out / "graph-snapshots", 0o755)
    page = SIGNATURE + b"\n<p>one</p>"
    for _ in range(2):
        path, snapshots = write_file_keeping(str(ws), str(out / "graph.html"), "graph.html",
                                             page, SIGNATURE, "graph page", str(out), 5)
    assert snapshots is not None and snapshots["kept"]
    assert stat.S_IMODE((out / "graph-snapshots").stat().st_mode) == 0o755
    assert stat.S_IMODE(Path(snapshots["kept"]).stat().st_mode) == 0o600
