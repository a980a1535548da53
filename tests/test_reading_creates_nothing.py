"""Reading never creates: every read-only tool, a search that looks into another folder and
the CLI's reads, on a folder with no memory, leave it exactly as it was and say there is
no memory; the first write creates `.memnest/`."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

CTL = Path(sys.executable).parent / "memnest-ctl"

READS = [("memory_search", {"query": "deploy"}), ("memory_list", {}),
         ("memory_get", {"ids": [1]}), ("memory_stats", {}), ("memory_topics", {}),
         ("memory_schema", {}), ("memory_stale", {}), ("memory_review", {}),
         ("memory_graph_html", {"inline": True})]


def _snapshot(root):
    return sorted((str(p), p.lstat().st_mode, p.lstat().st_uid, p.lstat().st_mtime_ns)
                  for p in [root, *root.rglob("*")])


@pytest.fixture
def bare(tmp_path):
    """A folder of the user's, ordinary modes, with a file in it: not a memnest project."""
    folder = tmp_path / "plain"
    folder.mkdir()
    os.chmod(folder, 0o755)
    (folder / "notes.txt").write_text("hello\n")
    return folder.resolve()


@pytest.mark.parametrize("tool,arguments", READS, ids=[t for t, _ in READS])
def test_a_read_only_tool_creates_nothing_and_says_so(call, bare, tool, arguments):
    before = _snapshot(bare)
    result = call(tool, ws=bare, **arguments)
    assert _snapshot(bare) == before
    assert "has no memory yet" in result["no_memory"] and "created nothing" in result["no_memory"]
    if tool == "memory_stats":
        assert result["memories"] == 0
        assert result["database"] == str(bare / ".memnest" / "memory.lbug")


def test_searching_another_folder_creates_nothing_there(call, workspace, bare):
    call("memory_store", content="The deploy script lives in tools/deploy.sh")
    before = _snapshot(bare)
    found = call("memory_search", query="deploy script", workspaces=[str(bare)])
    assert _snapshot(bare) == before
    assert "no_memory" not in found and found["results"]


def test_the_first_write_creates_the_memory(call, bare):
    call("memory_list", ws=bare)
    assert not (bare / ".memnest").exists()
    call("memory_store", ws=bare, content="Releases are tagged from the main branch")
    listed = call("memory_list", ws=bare)
    assert (bare / ".memnest" / "memory.lbug").exists()
    assert listed["total"] == 1 and "no_memory" not in listed


def test_a_caller_database_that_does_not_exist_is_not_created_by_a_read(daemon, tmp_path,
                                                                       bare):
    folder = tmp_path / "team" / ".memnest"
    folder.mkdir(mode=0o700, parents=True)
    client = daemon.client()
    try:
        found = client.call_tool("memory_search", {"query": "anything"}, str(bare),
                                 str(folder / "team.lbug"))
    finally:
        client.close()
    assert found["results"] == [] and "no_memory" in found
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("command,says", [
    (["search", "deploy"], "has no memory yet"), (["show", "1"], ""),
    (["stats"], "none yet"), (["stale"], ""), (["status"], ""), (["doctor"], ""),
    (["search", "deploy", "--in", "."], "has no memory yet")])
def test_the_cli_reads_create_nothing(daemon, bare, command, says):
    before = _snapshot(bare)
    done = subprocess.run([str(CTL), *command], cwd=bare, env=daemon.env,
                          capture_output=True, text=True, timeout=60)
    assert _snapshot(bare) == before, done.stdout + done.stderr
    assert says in done.stdout, done.stdout + done.stderr
