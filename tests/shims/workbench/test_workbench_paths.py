"""The workbench (`memnest-ctl ui`) and the folders a page names (`?ws=`): it only reads
through the daemon, for the folder it was started in or one the daemon has open. A page of
a folder with no memory creates nothing there; any other folder a URL names (a decoy, /, a
link, another user's) is answered 404 for every page and every change, and no decoy's mode,
owner, times or entries changed (tests/decoys.py)."""
import os
import re
from pathlib import Path

import httpx
import pytest

from decoys import Decoys
from support import Workbench
from workbench_session import http_signed_in

PAGES = ("/", "/review", "/team", "/graph", "/dream", "/workspaces", "/changes", "/forget?id=1",
         "/memory/1")
CHANGES = ("/memory/1/edit", "/memory/1/refresh", "/memory/1/share", "/forget", "/review/keep",
           "/pair/separate", "/pair/supersede", "/pair/merge", "/team/sync", "/dream")


def _snapshot(root: Path) -> list[tuple]:
    return sorted((str(p), p.lstat().st_mode, p.lstat().st_uid, p.lstat().st_mtime_ns)
                  for p in [root, *root.rglob("*")])


@pytest.fixture
def empty(tmp_path) -> Path:
    """A project with no memory: a folder of the user's, ordinary modes, one file."""
    folder = tmp_path / "no-memory"
    folder.mkdir()
    os.chmod(folder, 0o755)
    (folder / "README.md").write_text("not a memnest project yet\n")
    return folder.resolve()


@pytest.fixture
def served(daemon, empty):
    ui = Workbench(daemon, empty)
    yield ui
    ui.stop()


def signed_in(ui: Workbench) -> tuple[httpx.Client, str]:
    http = http_signed_in(ui, timeout=60)
    page = http.get("/")
    assert page.status_code == 200, page.text
    found = re.search(r'data-csrf="([^"]+)"', page.text)
    assert found is not None, page.text
    return http, found.group(1)


@pytest.mark.parametrize("path", PAGES)
def test_a_page_of_a_folder_with_no_memory_creates_nothing_there(served, empty, path):
    before = _snapshot(empty)
    http, _ = signed_in(served)
    answer = http.get(path)
    assert answer.status_code in (200, 404), (path, answer.status_code, answer.text[:300])
    assert "Traceback" not in answer.text, path
    assert _snapshot(empty) == before


def test_a_folder_the_daemon_has_not_open_is_never_reached(served, empty, tmp_path):
    decoys = Decoys(tmp_path / "decoys")
    http, token = signed_in(served)
    named = [str(p) for p in decoys.hostile().values()] + [
        str(decoys.link / ".."), f"{empty}/", f"{empty}/../{empty.name}", "/etc", "relative"]
    for ws in named:
        for path in (p for p in PAGES if p != "/workspaces"):  # the one page of every folder
            answer = http.get(path, params={"ws": ws})
            assert answer.status_code == 404, (ws, path, answer.status_code)
            assert "Not a workspace the daemon has open" in answer.text
        for path in CHANGES:
            answer = http.post(path, params={"ws": ws}, headers={"Origin": served.base},
                               data={"csrf": token, "id": "1", "keep": "1", "drop": "2",
                                     "content": "x", "importance": "3", "ids": "1"})
            # refused before the daemon is asked: the folder (404) or the form (400)
            assert answer.status_code in (400, 404), (ws, path, answer.status_code)
    decoys.assert_untouched()
